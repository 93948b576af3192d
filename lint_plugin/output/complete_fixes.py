"""Fix edits a consumer can apply as they are: the expression edit plus the import.

The engine's fix replaces an inline formula with a helper call; ``draft-kv-lint fix``
also adds the import (with libcst). A JSON or SARIF consumer applying only the
expression edit would get ``F821 undefined name``, so every fix that calls a helper
the file does not bind gets a second edit inserting ``from MODULE import HELPER`` on
its own line, where ``fix`` places that import (one placement policy:
:func:`lint_plugin.fix.imports.by_text.import_position`). isort/black tidy it later, as
they would a hand edit. Each fix stays complete on its own, as ruff's are: two fixes
needing the same import carry the same insertion, and a consumer applying every
edit applies identical edits once (ruff's own fix loop does the same).

A fix whose helper (or guard) the tree does not define where the import would
name it (the module lacks it, or is missing from its package: a tree before
0.5.3) carries no edits: applied alone it would leave an import that fails.
Its message says so; ``draft-kv-lint fix`` adds the definitions with the
rewrite.

Only the output path pays for this (an ``ast`` parse of files with fixable
findings); ``check``'s text output never does.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence

from lint_plugin.engine.settings import DEFAULT_HELPERS_MODULE
from lint_plugin.engine.vocabulary import GUARD, HELPERS
from lint_plugin.findings import Edit, Finding
from lint_plugin.records import replace

# The engine's own names (both modules are on check's path already): the
# default helpers module, and a call of either helper in a fix's text.
HELPERS_MODULE = DEFAULT_HELPERS_MODULE
_HELPER_CALL = re.compile(rf"\b({'|'.join(map(re.escape, HELPERS))})\(")
_GUARD_CALL = re.compile(rf"\b{GUARD}\(")


def import_edits(
    text: str, helpers: Sequence[str], module: str, tree: ast.Module | None = None
) -> list[Edit]:
    """The lines importing ``helpers`` from ``module`` that ``text`` lacks, where
    ``fix`` puts that import: the header's names decide what is bound, and
    ``fix``'s own placement (isort's order beside the module's or its package's
    imports, else after the last import, else after the docstring) which
    statement the import goes before. (``fix`` merges into an existing import
    of the module; a consumer's edit is a line of its own next to it.)
    ``tree``: ``text`` already parsed."""
    from lint_plugin.fix.edits import header_statements
    from lint_plugin.fix.imports.by_text import bound_names, import_position

    last, header = header_statements(tree or ast.parse(text))
    wanted = sorted({h for h in helpers if h not in bound_names(header)})
    if not wanted:
        return []
    index = import_position(header, module, wanted[0], aliased=False)
    row = header[index].lineno if index < len(header) else last + 1
    lines = text.splitlines(keepends=True)
    if row > len(lines) and lines and not lines[-1].endswith(("\n", "\r")):
        # The last line has no newline: start the import on a line of its own.
        end = len(lines[-1].rstrip("\r\n")) + 1
        return [
            Edit(f"\nfrom {module} import {name}", len(lines), end, len(lines), end)
            for name in wanted
        ]
    return [Edit(f"from {module} import {name}\n", row, 1, row, 1) for name in wanted]


def complete(
    findings: Sequence[Finding],
    sources: Mapping[str, bytes],
    module: str = HELPERS_MODULE,
) -> list[Finding]:
    """``findings`` with the import edits added to each fix that needs them,
    or without edits where the tree lacks what the import would name."""
    # Each file decoded and parsed once, whatever its number of findings.
    parsed: dict[str, tuple[str, ast.Module] | None] = {}
    completed = []
    for finding in findings:
        fix = finding.fix
        contents = [e.content for e in fix.edits] if fix is not None else []
        helpers = [n for c in contents for n in _HELPER_CALL.findall(c)]
        guarded = any(_GUARD_CALL.search(c) for c in contents)
        if not (helpers or guarded) or finding.path not in sources:
            completed.append(finding)
            continue
        if finding.path not in parsed:
            parsed[finding.path] = _parsed(sources[finding.path])
        if parsed[finding.path] is None:
            completed.append(finding)
            continue
        text, tree = parsed[finding.path]
        wanted = [(module, helpers)] if helpers else []
        if guarded:
            from lint_plugin.fix.guard_home import guard_module_for

            wanted.append((guard_module_for(tree, finding.path), [GUARD]))
        lacking = _lacking(finding.path, wanted)
        if lacking is not None:
            fix = replace(
                fix,
                edits=(),
                message=f"{fix.message} (not applicable alone: {lacking})",
            )
            completed.append(replace(finding, fix=fix))
            continue
        extra = [e for m, names in wanted for e in import_edits(text, names, m, tree)]
        if extra:
            fix = replace(fix, edits=(*fix.edits, *extra))
            finding = replace(finding, fix=fix)
        completed.append(finding)
    return completed


def _parsed(data: bytes) -> tuple[str, ast.Module] | None:
    try:
        text = data.decode("utf-8-sig")
        return text, ast.parse(text)
    except (UnicodeDecodeError, SyntaxError):
        return None


def _lacking(path: str, wanted: list[tuple[str, list[str]]]) -> str | None:
    """What the tree lacks for ``path`` to import ``wanted`` (module, names),
    or None."""
    from lint_plugin.rules.kvi007_undefined_helper import undefined_home

    for module, names in wanted:
        for name in names:
            home = undefined_home(name, module, 0, True, path)
            if home is None:
                continue
            where = "missing from this tree" if home.missing else "does not define it"
            return (
                f"{module} ({home.shown}) {where}; `draft-kv-lint fix` adds "
                f"{name} there with the rewrite"
            )
    return None
