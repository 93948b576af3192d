"""One file's rewrite: engine edits, oracle, imports, wrapping. Writes nothing.

Shared by ``draft-kv-lint fix`` and the libcst codemod command, so both make the
same change.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lint_plugin.edits import apply_edits_with_rows, original_text
from lint_plugin.facts import GUARD
from lint_plugin.findings import SYNTAX_ERROR_CODE, Finding
from lint_plugin.formulas import BUFFER_WIDTH, USED_LEN
from lint_plugin.noqa import apply_noqa
from lint_plugin.oracle import equivalent
from lint_plugin.scan import check_source
from lint_plugin.settings import DEFAULT_GUARD_MODULE, DEFAULT_HELPERS_MODULE, Settings


class RewriteRefused(Exception):
    """A rewrite could not be shown equal to the original: nothing is written."""


@dataclass(frozen=True)
class Options:
    unsafe_fixes: bool = False
    helpers_module: str = DEFAULT_HELPERS_MODULE
    guard_module: str = DEFAULT_GUARD_MODULE  # where KVI006's inserted guard is from
    opt_in: frozenset[str] = frozenset()  # opt-in rules to run (KVI006)
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
    settings = Settings(options.helpers_module, options.guard_module, options.opt_in)
    findings = check_source(text.encode(), path, settings)
    errors = [f for f in findings if f.code == SYNTAX_ERROR_CODE]
    if errors:
        raise SyntaxError(f"{errors[0].row}:{errors[0].column}: {errors[0].message}")
    findings = [f for f in apply_noqa(findings, text) if options.selected(f)]
    applied = [f for f in findings if _applicable(f, options)]
    if not applied:
        return _without_unused_directives(Rewrite(text), path, options)
    for finding in applied:
        if finding.fix.applicability == "safe":
            for edit in finding.fix.edits:
                reason = equivalent(original_text(text, edit), edit.content)
                if reason is not None:
                    raise RewriteRefused(
                        f"{finding.row}:{finding.column}: {finding.code} rewrite "
                        f"refused, not equal to the original: {reason}"
                    )
    # Two allocations sharing one width local share its fix: apply that edit once.
    edits = list(dict.fromkeys(e for finding in applied for e in finding.fix.edits))
    edited, rows = apply_edits_with_rows(text, edits)
    helpers = {name for edit in edits for name in _HELPER_CALL.findall(edit.content)}
    new_text = _add_imports(edited, helpers, options.helpers_module)
    if any(_GUARD_CALL.search(edit.content) for edit in edits):
        new_text = _add_imports(new_text, {GUARD}, options.guard_module)
    rows = _shift_for_import(edited, new_text, rows)
    if options.wrap:
        from lint_plugin.formatting import format_ranges

        new_text = format_ranges(new_text, rows, Path(path))
    return _without_unused_directives(Rewrite(new_text, applied), path, options)


def _without_unused_directives(rewrite: Rewrite, path: str, options: Options):
    # KVI100's safe fix: drop directive codes that suppress nothing (comments only).
    from lint_plugin.noqa import remove_unused_directives

    text, fixed = remove_unused_directives(rewrite.text, path, options.selected)
    return Rewrite(text, rewrite.applied + fixed)


def _applicable(finding: Finding, options: Options) -> bool:
    fix = finding.fix
    if fix is None:
        return False
    return fix.applicability == "safe" or options.unsafe_fixes


_HELPER_CALL = re.compile(rf"\b({USED_LEN}|{BUFFER_WIDTH})\(")
_GUARD_CALL = re.compile(rf"\b{GUARD}\(")


def _shift_for_import(
    before: str, after: str, rows: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    """``rows`` moved past the one block of lines the import change touched, which
    is itself added to them."""
    if before == after:
        return rows
    old, new = before.split("\n"), after.split("\n")
    prefix = 0
    while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < min(len(old), len(new)) - prefix
        and old[-1 - suffix] == new[-1 - suffix]
    ):
        suffix += 1
    delta = len(new) - len(old)
    shifted = [(a + delta, b + delta) if a > prefix else (a, b) for a, b in rows]
    return [(prefix + 1, max(prefix + 1, len(new) - suffix)), *shifted]


# The module's header ends where its first top-level def, class or decorator starts:
# imports live above it, so libcst only has to parse that much.
_FIRST_BLOCK = re.compile(r"^(?:async[ \t]+def|def|class|@)", re.M)


def _add_imports(text: str, helpers: set[str], helpers_module: str) -> str:
    import libcst as cst

    from lint_plugin.imports import ensure_imported

    first_block = _FIRST_BLOCK.search(text)
    cut = first_block.start() if first_block else len(text)
    head, tail = text[:cut], text[cut:]
    try:
        module = cst.parse_module(head)
    except cst.ParserSyntaxError:  # the cut fell inside a string: parse it all
        module, tail = cst.parse_module(text), ""
    wanted = {name for name in helpers if not _bound_in(tail, name)}
    new_module = ensure_imported(module, wanted, helpers_module)
    new_head = new_module.code
    if tail and new_head != head and _ends_with_import(new_module):
        # The added import now sits right above the first def or class: two blank
        # lines between them, as black and ruff format want.
        new_head = new_head.rstrip("\n") + "\n\n\n"
    return new_head + tail


def _ends_with_import(module) -> bool:
    import libcst as cst

    if not module.body or any(line.comment for line in module.footer):
        return False
    last = module.body[-1]
    return isinstance(last, cst.SimpleStatementLine) and isinstance(
        last.body[0], (cst.Import, cst.ImportFrom)
    )


def _bound_in(tail: str, name: str) -> bool:
    """Is ``name`` defined or imported at module level below the header?"""
    pattern = rf"^(?:(?:async\s+)?def\s+{name}\b|(?:from\s.*)?import\s.*\b{name}\b)"
    return re.search(pattern, tail, re.M) is not None
