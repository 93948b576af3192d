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

Only the output path pays for this (an ``ast`` parse of files with fixable
findings); ``check``'s text output never does.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence

from lint_plugin.engine.settings import DEFAULT_HELPERS_MODULE
from lint_plugin.engine.vocabulary import HELPERS
from lint_plugin.findings import Edit, Finding
from lint_plugin.records import replace

# The engine's own names (both modules are on check's path already): the
# default helpers module, and a call of either helper in a fix's text.
HELPERS_MODULE = DEFAULT_HELPERS_MODULE
_HELPER_CALL = re.compile(rf"\b({'|'.join(map(re.escape, HELPERS))})\(")


def import_edits(text: str, helpers: Sequence[str], module: str) -> list[Edit]:
    """The lines importing ``helpers`` from ``module`` that ``text`` lacks, where
    ``fix`` puts that import: the header's names decide what is bound, and
    ``fix``'s own placement (isort's order beside the module's or its package's
    imports, else after the last import, else after the docstring) which
    statement the import goes before. (``fix`` merges into an existing import
    of the module; a consumer's edit is a line of its own next to it.)"""
    from lint_plugin.fix.edits import header_statements
    from lint_plugin.fix.imports.by_text import bound_names, import_position

    last, header = header_statements(ast.parse(text))
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
    """``findings`` with the import edit added to each fix that needs one."""
    texts: dict[str, str | None] = {}
    completed = []
    for finding in findings:
        fix = finding.fix
        helpers = (
            [n for e in fix.edits for n in _HELPER_CALL.findall(e.content)]
            if fix is not None
            else []
        )
        if not helpers or finding.path not in sources:
            completed.append(finding)
            continue
        if finding.path not in texts:
            try:
                texts[finding.path] = sources[finding.path].decode("utf-8-sig")
            except UnicodeDecodeError:
                texts[finding.path] = None
        text = texts[finding.path]
        try:
            extra = import_edits(text, helpers, module) if text is not None else []
        except SyntaxError:
            extra = []
        if extra:
            fix = replace(fix, edits=(*fix.edits, *extra))
            finding = replace(finding, fix=fix)
        completed.append(finding)
    return completed
