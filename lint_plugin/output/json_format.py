"""``--output-format json``: a list with ruff's keys, so tools that read ruff's JSON
(reviewdog, editors, CI scripts) read ours.

Keys and shapes as ruff writes them: ``cell`` (null: no notebooks), ``code``,
``end_location``/``location`` (``{column, row}``, 1-based), ``filename`` (absolute),
``fix`` (null or ``{applicability, edits: [{content, end_location, location}],
message}``; the edits are complete: a helper call's fix carries the import too),
``message``, ``name`` (the rule's kebab-case name), ``noqa_row`` (where ``--add-noqa``
would write; null for syntax errors, which cannot be suppressed), ``severity``,
``url`` (null: no public docs page is known, see ``output.common.rule_url``).
Sorted by file and position; an empty run prints ``[]``. ``json-lines`` writes the
same objects one per line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence

from lint_plugin.findings import SYNTAX_ERROR_CODE, Finding
from lint_plugin.output.common import rule_name, rule_url, severity


def _location(row: int, column: int) -> dict[str, int]:
    return {"column": column, "row": row}


def finding_to_dict(finding: Finding, noqa_row: int | None = None) -> dict[str, object]:
    fix = None
    if finding.fix is not None:
        fix = {
            "applicability": finding.fix.applicability,
            "edits": [
                {
                    "content": edit.content,
                    "end_location": _location(edit.end_row, edit.end_column),
                    "location": _location(edit.row, edit.column),
                }
                for edit in finding.fix.edits
            ],
            "message": finding.fix.message,
        }
    return {
        "cell": None,
        "code": finding.code,
        "end_location": _location(finding.end_row, finding.end_column),
        "filename": os.path.abspath(finding.path),
        "fix": fix,
        "location": _location(finding.row, finding.column),
        "message": finding.message,
        "name": rule_name(finding.code),
        "noqa_row": None
        if finding.code == SYNTAX_ERROR_CODE
        else (noqa_row or finding.row),
        "severity": severity(finding.code),
        "url": rule_url(finding.code),
    }


def _noqa_rows(
    findings: Sequence[Finding], sources: Mapping[str, bytes] | None
) -> list[int | None]:
    """Where ``--add-noqa`` would write each directive (needs the file's text)."""
    rows: list[int | None] = [None] * len(findings)
    if not sources:
        return rows
    from lint_plugin.noqa.directives import noqa_rows

    by_path: dict[str, list[int]] = {}
    for index, finding in enumerate(findings):
        by_path.setdefault(finding.path, []).append(index)
    for path, indexes in by_path.items():
        data = sources.get(path)
        if data is None:
            continue
        text = data.decode("utf-8-sig", errors="replace")
        for index, row in zip(
            indexes, noqa_rows([findings[i] for i in indexes], text), strict=True
        ):
            rows[index] = row
    return rows


def _dicts(findings, sources) -> list[dict[str, object]]:
    ordered = sorted(findings, key=lambda f: f.sort_key)
    rows = _noqa_rows(ordered, sources)
    return [finding_to_dict(f, row) for f, row in zip(ordered, rows, strict=True)]


def render(
    findings: Sequence[Finding], sources: Mapping[str, bytes] | None = None
) -> str:
    return json.dumps(_dicts(findings, sources), indent=2) + "\n"


def render_lines(
    findings: Sequence[Finding], sources: Mapping[str, bytes] | None = None
) -> str:
    return "".join(
        json.dumps(item, separators=(",", ":")) + "\n"
        for item in _dicts(findings, sources)
    )
