"""One file's rewrite: engine edits, oracle, imports, wrapping. Writes nothing.

Shared by ``draft-kv-lint fix`` and the libcst codemod command, so both make the
same change.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lint_plugin.edits import apply_edits, original_text
from lint_plugin.findings import SYNTAX_ERROR_CODE, Finding
from lint_plugin.formulas import BUFFER_WIDTH, USED_LEN
from lint_plugin.noqa import apply_noqa
from lint_plugin.oracle import equivalent
from lint_plugin.scan import check_source

DEFAULT_HELPERS_MODULE = "sglang.srt.speculative.spec_utils"


class RewriteRefused(Exception):
    """A rewrite could not be shown equal to the original: nothing is written."""


@dataclass(frozen=True)
class Options:
    unsafe_fixes: bool = False
    helpers_module: str = DEFAULT_HELPERS_MODULE
    wrap: bool = True  # format rewritten statements to the line length
    # Selection (--select/--ignore); noqa directives are always honoured.
    selected: Callable[[Finding], bool] = lambda finding: True


@dataclass
class Rewrite:
    text: str
    applied: list[Finding] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.applied)


def rewrite_text(text: str, path: str, options: Options) -> Rewrite:
    """The rewritten text of one file and the findings whose fixes it applied.

    Raises SyntaxError when the file does not parse and RewriteRefused when a
    safe rewrite is not provably equal to the original.
    """
    findings = check_source(text.encode(), path)
    errors = [f for f in findings if f.code == SYNTAX_ERROR_CODE]
    if errors:
        raise SyntaxError(f"{errors[0].row}:{errors[0].column}: {errors[0].message}")
    findings = [f for f in apply_noqa(findings, text) if options.selected(f)]
    applied = [f for f in findings if _applicable(f, options)]
    if not applied:
        return Rewrite(text)
    for finding in applied:
        if finding.fix.applicability == "safe":
            for edit in finding.fix.edits:
                reason = equivalent(original_text(text, edit), edit.content)
                if reason is not None:
                    raise RewriteRefused(
                        f"{finding.row}:{finding.column}: {finding.code} rewrite "
                        f"refused, not equal to the original: {reason}"
                    )
    edits = [edit for finding in applied for edit in finding.fix.edits]
    new_text = apply_edits(text, edits)
    helpers = {name for edit in edits for name in _HELPER_CALL.findall(edit.content)}
    new_text = _add_imports(new_text, helpers, options.helpers_module)
    if options.wrap:
        from lint_plugin.formatting import changed_line_ranges, format_ranges

        ranges = changed_line_ranges(text, new_text)
        new_text = format_ranges(new_text, ranges, Path(path))
    return Rewrite(new_text, applied)


def _applicable(finding: Finding, options: Options) -> bool:
    fix = finding.fix
    if fix is None:
        return False
    return fix.applicability == "safe" or options.unsafe_fixes


_HELPER_CALL = re.compile(rf"\b({USED_LEN}|{BUFFER_WIDTH})\(")


def _add_imports(text: str, helpers: set[str], helpers_module: str) -> str:
    import libcst as cst

    from lint_plugin.imports import ensure_imported

    module = cst.parse_module(text)
    return ensure_imported(module, helpers, helpers_module).code
