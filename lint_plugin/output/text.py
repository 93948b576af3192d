"""The default format: ``path:row:col: CODE [*] message`` lines, then ruff's summary.

Rows and columns are 1-based. ``[*]`` marks a finding that a plain
``draft-kv-lint fix`` repairs (a safe fix), exactly where ruff's concise format puts
it, so editors' problem matchers written for ruff or flake8 read these lines too.

The summary follows ruff: nothing but ``All checks passed!`` on a clean run,
otherwise ``Found N errors.`` (unreadable files count, as ruff's E902 does) and how
many can be fixed, on stdout after the findings.
"""

from __future__ import annotations

from collections.abc import Sequence

from lint_plugin.findings import Finding
from lint_plugin.output import TOOL_NAME, has_unsafe_fix, is_fixable


def format_finding(finding: Finding) -> str:
    marker = "[*] " if is_fixable(finding) else ""
    return (
        f"{finding.path}:{finding.row}:{finding.column}: "
        f"{finding.code} {marker}{finding.message}"
    )


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


def render(findings: Sequence[Finding], error_count: int = 0) -> str:
    lines = [format_finding(f) for f in findings]
    lines += summary(findings, error_count)
    return "\n".join(lines) + "\n"
