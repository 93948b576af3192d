"""``--statistics``: one line (or JSON object) per code, most frequent first, as ruff.

Text lines are ``COUNT<TAB>CODE<TAB>[*] name`` with the count right-aligned and the
code padded; the ``[*]``/``[ ]`` column only appears when something is fixable.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from lint_plugin.findings import Finding
from lint_plugin.output.common import is_fixable, rule_name
from lint_plugin.records import record


@record(frozen=True)
class CodeStatistics:
    code: str
    name: str
    count: int
    fixable_count: int


def collect(findings: Sequence[Finding]) -> list[CodeStatistics]:
    counts = Counter(f.code for f in findings)
    fixable = Counter(f.code for f in findings if is_fixable(f))
    rows = [
        CodeStatistics(code, rule_name(code), n, fixable[code])
        for code, n in counts.items()
    ]
    rows.sort(key=lambda row: (-row.count, row.code))
    return rows


def render_text(findings: Sequence[Finding], notes: Sequence[Finding] = ()) -> str:
    """``notes``: allocations a rule could not judge, one row per code after
    the findings' (``[-]``: nothing to fix)."""
    rows = collect(findings)
    judged = collect(notes)
    if not rows and not judged:
        return ""
    every = rows + judged
    count_width = max(len(str(row.count)) for row in every)
    code_width = max(len(row.code) for row in every)
    any_fixable = any(row.fixable_count for row in rows)
    lines = []
    for row in rows:
        marker = ("[*] " if row.fixable_count else "[ ] ") if any_fixable else ""
        lines.append(
            f"{row.count:>{count_width}}\t{row.code:<{code_width}}\t{marker}{row.name}"
        )
    for row in judged:
        marker = "[-] " if any_fixable else ""
        lines.append(
            f"{row.count:>{count_width}}\t{row.code:<{code_width}}\t{marker}"
            f"{row.name} (not judged: see check --explain FILE:ROW)"
        )
    return "\n".join(lines) + "\n"


def render_json(findings: Sequence[Finding], notes: Sequence[Finding] = ()) -> str:
    import json

    rows = [
        {
            "code": row.code,
            "name": row.name,
            "count": row.count,
            "fixable": row.fixable_count > 0,
            "fixable_count": row.fixable_count,
        }
        for row in collect(findings)
    ]
    rows += [
        {
            "code": row.code,
            "name": row.name,
            "count": row.count,
            "fixable": False,
            "fixable_count": 0,
            "judged": False,
        }
        for row in collect(notes)
    ]
    return json.dumps(rows, indent=2) + "\n"
