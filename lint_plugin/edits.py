"""Applying the engine's edits to text: the one way ``fix`` changes an expression.

The edits are exactly those ``check --output-format json`` reports. Comments that
sat inside a replaced expression are not dropped: they move, unchanged, onto their
own lines just above the line where the expression started.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from lint_plugin.findings import Edit
from lint_plugin.source import COMMENT


def line_starts(text: str) -> list[int]:
    starts = [0]
    for match in re.finditer("\n", text):
        starts.append(match.end())
    return starts


def offsets(edit: Edit, starts: Sequence[int]) -> tuple[int, int]:
    return (
        starts[edit.row - 1] + edit.column - 1,
        starts[edit.end_row - 1] + edit.end_column - 1,
    )


def original_text(text: str, edit: Edit) -> str:
    start, end = offsets(edit, line_starts(text))
    return text[start:end]


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """``text`` with non-overlapping ``edits`` applied."""
    return apply_edits_with_rows(text, edits)[0]


def apply_edits_with_rows(
    text: str, edits: Sequence[Edit]
) -> tuple[str, list[tuple[int, int]]]:
    """``text`` with ``edits`` applied, and the 1-based rows each edit's lines
    occupy afterwards (for formatting just those statements)."""
    starts = line_starts(text)
    spans = sorted(((*offsets(e, starts), e) for e in edits), key=lambda s: s[0])
    for (_, end, _), (start, _, _) in itertools.pairwise(spans):
        if start < end:
            raise ValueError("overlapping edits")
    rows: list[tuple[int, int]] = []
    shift = 0
    for start, end, edit in spans:  # rows first, top down, on the original text
        comments = COMMENT.findall(text[start:end])
        old_lines = edit.end_row - edit.row + 1
        new_lines = len(comments) + edit.content.count("\n") + 1
        first = edit.row + shift
        rows.append((first, first + new_lines - 1))
        shift += new_lines - old_lines
    for start, end, edit in reversed(spans):  # then text, bottom up
        comments = COMMENT.findall(text[start:end])
        text = text[:start] + edit.content + text[end:]
        if comments:
            line_start = text.rfind("\n", 0, start) + 1
            line = text[line_start:start]
            indent = line[: len(line) - len(line.lstrip())]
            moved = "".join(f"{indent}{c.strip()}\n" for c in comments)
            text = text[:line_start] + moved + text[line_start:]
    return text, rows
