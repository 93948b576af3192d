"""The default format: ``path:row:col: CODE [*] message`` lines, then ruff's summary.

Rows and columns are 1-based. ``[*]`` marks a finding that a plain
``draft-kv-lint fix`` repairs (a safe fix), exactly where ruff's concise format puts
it, so editors' problem matchers written for ruff or flake8 read these lines too.

The summary follows ruff: nothing but ``All checks passed!`` on a clean run,
otherwise ``Found N errors.`` (unreadable files count, as ruff's E902 does) and how
many can be fixed, on stdout after the findings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from lint_plugin.findings import Finding
from lint_plugin.output.common import TOOL_NAME, has_unsafe_fix, is_fixable
from lint_plugin.printable import printable

_BOLD, _RED, _CYAN, _RESET = "\x1b[1m", "\x1b[31m", "\x1b[36m", "\x1b[0m"
_ROWS = re.compile(r"\r\n|\r|\n")


def format_finding(finding: Finding, color: bool = False) -> str:
    marker = "[*] " if is_fixable(finding) else ""
    # One finding, one line, whatever the file is called (lint_plugin.printable).
    path, message = printable(finding.path), printable(finding.message)
    if color:
        return (
            f"{_BOLD}{path}{_RESET}{_CYAN}:{_RESET}{finding.row}{_CYAN}:"
            f"{_RESET}{finding.column}{_CYAN}:{_RESET} {_BOLD}{_RED}{finding.code}"
            f"{_RESET} {marker}{message}"
        )
    return f"{path}:{finding.row}:{finding.column}: {finding.code} {marker}{message}"


def _context(finding: Finding, data: bytes | None) -> list[str]:
    """ruff's ``full`` layout: the flagged rows, a caret line under the span.
    Rows are Python's (``str.splitlines`` would also break at a form feed and
    shift every row after it); control characters show as ruff shows them."""
    if data is None:
        return []
    lines = _ROWS.split(data.decode("utf-8-sig", errors="replace"))
    last = min(finding.end_row, finding.row + 4, len(lines))
    rows = range(finding.row, last + 1)
    width = len(str(last))
    out = [f"{'':>{width}} |"]
    for row in rows:
        shown = printable(lines[row - 1], keep="\t")  # code keeps its tabs
        out.append(f"{row:>{width}} | {shown}")
    if finding.row == finding.end_row:
        carets = "^" * max(1, finding.end_column - finding.column)
        out.append(f"{'':>{width}} | {' ' * (finding.column - 1)}{carets}")
    out.append(f"{'':>{width}} |")
    return out


def _fix_lines(finding: Finding) -> list[str]:
    if finding.fix is None:
        return []
    safety = "" if finding.fix.applicability == "safe" else " (unsafe)"
    return [f"  help{safety}: {printable(finding.fix.message)}"]


def _plural(count: int, word: str) -> str:
    if count == 1:
        return f"{count} {word}"
    return f"{count} {word}es" if word.endswith("x") else f"{count} {word}s"


def summary(findings: Sequence[Finding], error_count: int = 0) -> list[str]:
    """ruff's closing lines: the error count and what ``fix`` can do about it."""
    total = len(findings) + error_count
    if total == 0:
        return ["All checks passed!"]
    lines = [f"Found {_plural(total, 'error')}."]
    safe = sum(1 for f in findings if is_fixable(f))
    unsafe = sum(1 for f in findings if has_unsafe_fix(f))
    hidden = (
        f" ({_plural(unsafe, 'unsafe fix')} available with "
        f"`{TOOL_NAME} fix --unsafe-fixes`)"
        if unsafe
        else ""
    )
    if safe:
        lines.append(f"[*] {safe} fixable with `{TOOL_NAME} fix`{hidden}.")
    elif unsafe:
        lines.append(f"No fixes available{hidden}.")
    return lines


def render(
    findings: Sequence[Finding],
    error_count: int = 0,
    *,
    sources: Mapping[str, bytes] | None = None,
    show_fixes: bool = False,
    color: bool = False,
    quiet: bool = False,
) -> str:
    lines = []
    for finding in findings:
        lines.append(format_finding(finding, color))
        if sources is not None:
            lines += _context(finding, sources.get(finding.path))
        if show_fixes:
            lines += _fix_lines(finding)
    if not quiet:
        lines += summary(findings, error_count)
    return "\n".join(lines) + "\n" if lines else ""
