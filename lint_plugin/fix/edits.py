"""Applying the engine's edits to text: the one way ``fix`` changes an expression.

The edits are exactly those ``check --output-format json`` reports. Comments that
sat inside a replaced expression are not dropped: they move, character for
character, onto their
own lines just above the expression's first line when that line cannot begin
inside a string, a backslash continuation or another edit, else above the
statement it belongs to (whose first line is never inside a string or a
backslash continuation).

All offsets are taken on the text the edits were computed on, and the result is
assembled in one pass from left to right: no edit ever sees another's shifted
offsets, and the cost is linear in the text and the number of edits.
"""

from __future__ import annotations

import ast
import bisect
import itertools
from collections.abc import Callable, Iterator, Sequence

from lint_plugin.engine.source import COMMENT
from lint_plugin.findings import Edit
from lint_plugin.statements import BLOCK_FIELDS


def header_last_row(tree: ast.Module) -> int:
    """The last row of a module's header: its docstring and the imports above the
    first def or class (0 when there is none). New imports go below it."""
    last = 0
    for index, statement in enumerate(tree.body):
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
        docstring = (
            index == 0
            and isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
        )
        if docstring or isinstance(statement, (ast.Import, ast.ImportFrom)):
            last = statement.end_lineno or last
    return last


def header_statements(tree: ast.Module) -> tuple[int, list[ast.stmt]]:
    """``header_last_row`` and the top-level statements that end by it: what a
    new import is placed among."""
    last = header_last_row(tree)
    return last, [s for s in tree.body if (s.end_lineno or s.lineno) <= last]


def line_starts(text: str) -> list[int]:
    """The offset each line of ``text`` starts at (lines end at ``\\n``)."""
    lengths = (len(line) + 1 for line in text.split("\n"))
    starts = list(itertools.accumulate(lengths, initial=0))
    starts.pop()  # the offset past a last newline that does not exist
    return starts


def offsets(edit: Edit, starts: Sequence[int]) -> tuple[int, int]:
    return (
        starts[edit.row - 1] + edit.column - 1,
        starts[edit.end_row - 1] + edit.end_column - 1,
    )


def iter_statements(tree: ast.AST) -> Iterator[ast.stmt]:
    """Every statement in ``tree``, in no particular order. Statements live only
    in statement lists (and the handlers' and cases' bodies), so expressions,
    most of a tree's nodes, are never visited (``ast.walk`` visits them all)."""
    pending = [tree]
    while pending:
        node = pending.pop()
        for name in BLOCK_FIELDS:
            children = getattr(node, name, None)
            if type(children) is not list:
                continue  # `IfExp.body` is an expression, never pushed anyway
            for child in children:
                if isinstance(child, ast.stmt):
                    yield child
                pending.append(child)


def statement_rows(tree: ast.Module) -> Callable[[int], int]:
    """For a row inside an expression, the first row of its statement (for a
    ``def`` or ``class``, of its first decorator)."""
    starts: list[int] = []
    for node in iter_statements(tree):
        first = node.lineno
        decorators = getattr(node, "decorator_list", None)
        if decorators:
            first = min(first, *(d.lineno for d in decorators))
        starts.append(first)
    starts.sort()

    def first_row(row: int) -> int:
        index = bisect.bisect_right(starts, row) - 1
        return starts[index] if index >= 0 else 1

    return first_row


def splice(text: str, edits: Sequence[Edit]) -> str:
    """``text`` with each edit's span replaced by its content, nothing moved."""
    starts = line_starts(text)
    spans = sorted((*offsets(e, starts), e.content) for e in edits)
    pieces, position = [], 0
    for start, end, content in spans:
        if start < position:
            raise ValueError("overlapping edits")
        pieces += [text[position:start], content]
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def apply_edits_with_rows(
    text: str,
    edits: Sequence[Edit],
    anchor: Callable[[int], int] | None = None,
) -> tuple[str, list[tuple[int, int]]]:
    """``text`` with ``edits`` applied, and the 1-based rows each edit's lines
    occupy afterwards (for formatting just those statements).

    ``anchor(row)`` gives the row above which comments from an edit starting on
    ``row`` go (default: that row itself).
    """
    starts = line_starts(text)
    spans = sorted(((*offsets(e, starts), e) for e in edits), key=lambda s: s[:2])
    for (_, end, _), (start, _, _) in itertools.pairwise(spans):
        if start < end:
            raise ValueError("overlapping edits")
    inserts: dict[int, list[str]] = {}
    anchor_rows: list[int | None] = []
    previous_end = 0
    for start, end, edit in spans:
        comments = COMMENT.findall(text[start:end])
        reach, previous_end = previous_end, end
        if not comments:
            anchor_rows.append(None)
            continue
        row = edit.row
        if anchor is not None and not _line_start_free(text, starts, row, reach):
            row = anchor(row)
        line = text[starts[row - 1] : starts[row] if row < len(starts) else None]
        indent = line[: len(line) - len(line.lstrip(" \t\f"))].replace("\f", "")
        # Every character of a comment is kept, trailing spaces included.
        block = "".join(f"{indent}{c}\n" for c in comments)
        inserts.setdefault(starts[row - 1], []).append(block)
        anchor_rows.append(row)
    pieces: list[str] = []
    rows: list[tuple[int, int]] = []
    position = 0
    new_row = 1  # row of `position` in the output
    pending = sorted(inserts.items())
    next_insert = 0
    insert_rows: dict[int, int] = {}  # original row -> output row of moved block

    def copy_to(offset: int) -> None:
        nonlocal position, new_row, next_insert
        while next_insert < len(pending) and pending[next_insert][0] <= offset:
            at, blocks = pending[next_insert]
            row = bisect.bisect_right(starts, at)
            at = max(at, position)  # never inside an edit already made
            chunk = text[position:at]
            pieces.append(chunk)
            new_row += chunk.count("\n")
            position = at
            insert_rows[row] = new_row
            for block in blocks:
                pieces.append(block)
                new_row += block.count("\n")
            next_insert += 1
        chunk = text[position:offset]
        pieces.append(chunk)
        new_row += chunk.count("\n")
        position = offset

    for (start, end, edit), row in zip(spans, anchor_rows, strict=True):
        copy_to(start)
        first = new_row if row is None else insert_rows[row]
        pieces.append(edit.content)
        new_row += edit.content.count("\n")
        rows.append((first, new_row))
        position = end
    copy_to(len(text))
    return "".join(pieces), rows


def _line_start_free(text: str, starts: Sequence[int], row: int, reach: int) -> bool:
    """Can a comment line go right above ``row``? Yes unless its start lies in an
    earlier edit's span, a backslash continues the line above, or the text before
    the expression holds a quote (the line may begin inside a string)."""
    line_start = starts[row - 1]
    if line_start < reach:
        return False
    previous = text[starts[row - 2] : line_start] if row > 1 else ""
    if previous.rstrip("\r\n").endswith("\\"):
        return False
    line_end = starts[row] if row < len(starts) else len(text)
    return not any(q in text[line_start:line_end].split("#")[0] for q in "'\"")


def row_mapper(text: str, edits: Sequence[Edit]) -> Callable[[int], int]:
    """Where a row of ``text`` outside every edit lands once ``edits`` (and their
    moved comments) are applied: for rows computed on an earlier round."""
    starts = line_starts(text)
    changes: list[tuple[int, int]] = []  # (original end row, cumulative delta)
    delta = 0
    for edit in sorted(edits, key=lambda e: (e.row, e.column)):
        start, end = offsets(edit, starts)
        moved = len(COMMENT.findall(text[start:end]))
        delta += moved + edit.content.count("\n") - (edit.end_row - edit.row)
        changes.append((edit.row, delta))
    keys = [row for row, _ in changes]

    def mapped(row: int) -> int:
        index = bisect.bisect_left(keys, row) - 1
        return row + (changes[index][1] if index >= 0 else 0)

    return mapped
