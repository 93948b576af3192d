"""Fix edits a consumer can apply as they are: the expression edit plus the import.

The engine's fix replaces an inline formula with a helper call; ``draft-kv-lint fix``
also adds the import (with libcst). A JSON or SARIF consumer applying only the
expression edit would get ``F821 undefined name``, so every fix that calls a helper
the file does not bind gets a second edit inserting ``from MODULE import HELPER`` on
its own line after the module's last top-level import before its first def or
class (after the docstring when there is no import). isort/black tidy it later, as
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

from lint_plugin.findings import Edit, Finding
from lint_plugin.records import replace

# The same default as ``rewrite.DEFAULT_HELPERS_MODULE`` (kept apart so that the
# output path does not import the rewriter); a test holds them equal.
HELPERS_MODULE = "sglang.srt.speculative.spec_utils"
_HELPER_CALL = re.compile(
    r"\b(draft_kv_indices_used_len|draft_kv_indices_buffer_width)\("
)


def _bound(text: str, name: str) -> bool:
    definition = rf"(?:async\s+)?def\s+{name}\b"
    pattern = rf"^[ \t]*(?:{definition}|(?:from\s.*)?import\s.*\b{name}\b)"
    return re.search(pattern, text, re.M) is not None


def _insertion_row(tree: ast.Module) -> int:
    """The 1-based row a new import line goes before."""
    from lint_plugin.fix.edits import header_last_row

    return header_last_row(tree) + 1


def import_edits(text: str, helpers: Sequence[str], module: str) -> list[Edit]:
    wanted = sorted({h for h in helpers if not _bound(text, h)})
    if not wanted:
        return []
    row = _insertion_row(ast.parse(text))
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
