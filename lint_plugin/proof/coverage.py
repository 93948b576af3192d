"""Which lines and branches of the class under test ran, and which changed ones
never did.

Equal records prove only what ran. The class is compiled under its own file
name (:mod:`.loader`), so its code objects are known; a ``sys.settrace`` tracer
that follows only those (Python 3.11 has no ``sys.monitoring``) notes every line
event, and is lifted while the interpreted kernel runs (:mod:`.guarded_launch`),
where it would see nothing of the class. A line that differs between the two
versions, holds code, and never ran on its side makes the proof refuse
"proven": those lines are what it prints.

Line events are not branches: CPython 3.11 reports a line event for the arm of
a multi-line conditional expression that was not taken. So the tracer also
notes each instruction that runs (``f_trace_opcodes``), and every arm of a
conditional expression and every operand a boolean operator may skip is
mapped to its instructions by their source positions (``co_positions``): an
arm on a changed line none of whose instructions ran is a branch that never
ran, and refuses "proven" too. (Python 3.10 has no instruction positions:
there, lines only.)
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any

from .loader import ClassSource


def _codes(code: CodeType) -> Iterator[CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _codes(const)


def _lines(code: CodeType) -> set[int]:
    return {line for _, _, line in code.co_lines() if line is not None}


class Coverage:
    """Lines of one compiled class that ran, over every run it is passed to."""

    def __init__(self, source: ClassSource) -> None:
        self.source = source
        self.filename = source.filename
        codes = list(_codes(source.code))
        self._ids = {id(c) for c in codes}
        self._keep = codes  # ids stay valid while the objects live
        # The class statement and its body (def lines, decorators, class
        # attributes) run when the class is loaded, before any tracer.
        body = [c for c in source.code.co_consts if isinstance(c, CodeType)]
        self.ran: set[int] = _lines(source.code).union(*(_lines(c) for c in body))
        self.executable: set[int] = set().union(*(_lines(c) for c in codes))
        self.arms = _arms(source.node, codes)
        self.executed: set[tuple[int, int]] = set()

    def _global(self, frame: FrameType, event: str, arg: Any):
        if id(frame.f_code) in self._ids:
            if self.arms:
                frame.f_trace_opcodes = True
            return self._local
        return None

    def _local(self, frame: FrameType, event: str, arg: Any):
        if event == "opcode":
            self.executed.add((id(frame.f_code), frame.f_lasti))
        elif event == "line":
            self.ran.add(frame.f_lineno)
        return self._local

    def unran_arms(self, lines: set[int]) -> list[Arm]:
        """The arms on ``lines`` none of whose instructions ran."""
        return [
            arm
            for arm in self.arms
            if lines.intersection(range(arm.line, arm.end_line + 1))
            and not arm.instructions & self.executed
        ]

    @contextmanager
    def measuring(self) -> Iterator[None]:
        previous = sys.gettrace()
        sys.settrace(self._global)
        try:
            yield
        finally:
            sys.settrace(previous)


@dataclass(frozen=True)
class Arm:
    """One branch of an expression: where it stands and its instructions
    (``(id(code), offset)``)."""

    line: int
    end_line: int
    what: str
    instructions: frozenset


def _arms(node, codes: list[CodeType]) -> list[Arm]:
    """Every arm of a conditional expression, every operand after the first of
    a boolean operator, with the instructions inside its source span."""
    import ast

    if not codes or not hasattr(codes[0], "co_positions"):
        return []  # Python 3.10: lines only
    spans = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.IfExp):
            spans += [
                (sub.body, "the conditional's first arm"),
                (sub.orelse, "its else arm"),
            ]
        elif isinstance(sub, ast.BoolOp):
            spans += [
                (v, f"an operand of `{type(sub.op).__name__.lower()}`")
                for v in sub.values[1:]
            ]
    if not spans:
        return []
    positions = [
        (id(code), 2 * index, position)
        for code in codes
        for index, position in enumerate(code.co_positions())
        if position[0] is not None and position[2] is not None
    ]
    arms = []
    for part, what in spans:
        start = (part.lineno, part.col_offset)
        end = (part.end_lineno, part.end_col_offset)
        inside = frozenset(
            (code, offset)
            for code, offset, (line, end_line, col, end_col) in positions
            if start <= (line, col) and (end_line, end_col) <= end
        )
        if inside:
            arms.append(Arm(part.lineno, part.end_lineno, what, inside))
    return arms


@dataclass(frozen=True)
class UnranLine:
    """A changed line of one version that never ran on the grid."""

    side: str  # "before" or "after"
    filename: str
    line: int
    text: str

    def describe(self) -> str:
        return f"{self.side}: {self.filename}:{self.line}: {self.text.strip()}"


def _class_lines(source: ClassSource, text: str) -> tuple[int, list[str]]:
    node = source.node
    lines = text.splitlines()
    return node.lineno, lines[node.lineno - 1 : node.end_lineno]


def changed_lines(
    before: ClassSource, before_text: str, after: ClassSource, after_text: str
) -> tuple[set[int], set[int]]:
    """File line numbers of each version's class that the other lacks (lines
    compared without their indentation)."""
    start_b, lines_b = _class_lines(before, before_text)
    start_a, lines_a = _class_lines(after, after_text)
    matcher = difflib.SequenceMatcher(
        None, [x.strip() for x in lines_b], [x.strip() for x in lines_a], False
    )
    old: set[int] = set()
    new: set[int] = set()
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        old.update(range(start_b + i1, start_b + i2))
        new.update(range(start_a + j1, start_a + j2))
    return old, new


def never_ran(
    before: Coverage, before_text: str, after: Coverage, after_text: str
) -> list[UnranLine]:
    """The changed lines holding code that did not run on their side."""
    old, new = changed_lines(before.source, before_text, after.source, after_text)
    found = []
    for side, cov, lines, text in (
        ("before", before, old, before_text),
        ("after", after, new, after_text),
    ):
        all_lines = text.splitlines()
        unran = (lines & cov.executable) - cov.ran
        for line in sorted(unran):
            found.append(UnranLine(side, cov.filename, line, all_lines[line - 1]))
        for arm in cov.unran_arms(lines):
            if arm.line in unran:
                continue  # its line never ran: said already
            text_ = f"{all_lines[arm.line - 1].rstrip()}  [{arm.what} never ran]"
            found.append(UnranLine(side, cov.filename, arm.line, text_))
    return found
