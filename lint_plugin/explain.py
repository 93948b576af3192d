"""``draft-kv-lint check --explain FILE:ROW``: why an allocation is sized or not.

For every torch allocation whose statement spans ROW, in any class, it prints
each path of the width analysis (:mod:`lint_plugin.engine.flow.widths`): the row width
it derived, the branch conditions of the path and the rows of the definitions it
followed, and KVI003's verdict for that path (sized, unsized with the values that show
it, not judged and why), then the allocation's verdict. The whole file is parsed and
walked (no shortcut): what is explained is what ``check`` decides. A sized verdict
names its premise, upstream's contract (:mod:`lint_plugin.envelope`), and what
happens at the context wall SGLang really reaches.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from lint_plugin import envelope
from lint_plugin.algebra import symbolic
from lint_plugin.engine.analysis import walk
from lint_plugin.engine.flow import per_step_rows, row_sizing
from lint_plugin.engine.settings import DEFAULT_SETTINGS, Settings
from lint_plugin.engine.source import Source
from lint_plugin.rules import DECISIONS
from lint_plugin.rules import kvi003_unsized_draft_buffer as kvi003


class NothingToExplain(ValueError):
    """No allocation spans the row (the reason says what is there instead)."""


def explain(text: str, path: str, row: int, settings: Settings = DEFAULT_SETTINGS):
    """``(report, verdict)``: the text to print and the worst verdict of the
    allocations spanning ``row`` (``unsized``, ``not judged``, ``sized`` or
    ``not a row``)."""
    tree = ast.parse(text, filename=path)
    source = Source(text)
    checker = walk(tree, source, path, settings)
    facts = checker.facts
    lines: list[str] = []
    verdicts: list[str] = []
    inner = per_step_rows.InnerCalls(checker.analysis, facts)
    unguarded = _unguarded_rows(checker)
    for cls in facts.classes:
        # A call of a function of the file that allocates is shown when what
        # it makes is judged as a row at the call.
        for allocation in (*cls.allocations, *cls.calls):
            call = allocation.call
            stmt = checker.analysis.statement(
                checker.analysis.frame_of(allocation.function), call
            )
            node = stmt if stmt is not None else call
            spans = node.lineno <= row <= node.end_lineno
            if not spans and not cls.is_draft_backend:
                continue
            judgement = row_sizing.judge_in_class(
                cls, allocation, checker.analysis, inner
            )
            # Asked at the row check reports it at (which may lie outside the
            # statement: a width shown where it is made).
            at = _reported_at(judgement, checker) if cls.is_draft_backend else None
            if not spans and (at is None or at[0] != row):
                continue
            if judgement is None and allocation not in cls.allocations:
                continue
            lines += _allocation(
                allocation, cls, judgement, checker, path, at, unguarded
            )
            verdicts.append(lines.pop())
    if not lines:
        raise NothingToExplain(
            f"{path}:{row}: no torch allocation in a class spans this row"
        )
    order = (row_sizing.UNSIZED, row_sizing.NOT_JUDGED, row_sizing.SIZED, "not a row")
    worst = min(verdicts, key=order.index)
    return "\n".join(lines) + "\n", worst


def _reported_at(judgement, checker) -> tuple[int, int] | None:
    """Where ``check`` puts this allocation's KVI003 finding (its first
    unsized path's width) or its note (its first path not judged): None for
    a sized row, or no row."""
    if judgement is None or judgement.verdict == row_sizing.SIZED:
        return None
    if judgement.verdict == row_sizing.UNSIZED:
        shown = judgement.unsized[0].row.shown
    else:
        shown = judgement.paths[0].row.shown
    return checker.source.position(checker.span(shown)[0])


def _unguarded_rows(checker) -> set[int]:
    """The rows where ``check`` reports KVI006 (a launch with no guard): the
    rule decided on the walk already made."""
    dict(DECISIONS)["KVI006"](checker)
    return {f.row for f in checker.findings if f.code == "KVI006"}


def _guards(cls, unguarded: set[int], path: str) -> Iterator[str]:
    """What KVI006 says of this class's launches of the index kernel: a guard
    is what stops the wall's overrun (where it runs: KVI006 reads one function)."""
    if not cls.launches:
        yield (
            "  this class launches no index kernel: KVI006 judges the launch that "
            "writes this row where it is"
        )
    for launch in cls.launches:
        row = launch.call.lineno
        if any(launch.call.lineno <= r <= launch.call.end_lineno for r in unguarded):
            yield (
                f"  the launch at {path}:{row} has no capacity guard before it "
                "(KVI006): at the context wall it writes past a row only as wide as "
                "upstream's helper"
            )
        else:
            yield (
                f"  the launch at {path}:{row} has a capacity guard before it (no "
                "KVI006): where the guard runs, an overrun raises instead of writing"
            )


def _allocation(
    allocation, cls, judgement, checker, path: str, at, unguarded: set[int]
) -> list[str]:
    """``at``: where check reports the allocation, the head's position then;
    the call's otherwise."""
    source = checker.source
    call = allocation.call
    function = allocation.function.node.name
    row, column = at or source.position(source.index(call.lineno, call.col_offset))
    head = ast.unparse(call)  # one line, as Python would write it
    if len(head) > 100:
        head = head[:97] + "..."
    lines = [f"{path}:{row}:{column}: {head}"]
    kind = (
        "a multi-step draft backend"
        if cls.is_draft_backend
        else "not a multi-step draft backend: KVI003 does not judge it"
    )
    lines.append(f"  in {cls.node.name}.{function} ({kind})")
    if judgement is None:
        lines.append(
            "  not a kv_indices row: no path is per step with a context size "
            "(or it is another per-step buffer, by its name)"
        )
        lines.append("not a row")
        return lines
    paths = judgement.paths
    for index, verdict in enumerate(paths, 1):
        lines += list(_path(verdict, index, len(paths), allocation, cls, checker))
    final = judgement.verdict if cls.is_draft_backend else "not a row"
    shown = {
        row_sizing.UNSIZED: "unsized (KVI003)",
        row_sizing.NOT_JUDGED: "not judged (no finding)",
        row_sizing.SIZED: "sized",
        "not a row": "not judged by KVI003 (not a draft backend)",
    }[final]
    if final == row_sizing.SIZED:
        # "Sized" is a claim about the kernel's writes under a premise SGLang
        # does not keep: say which, and what covers the rest.
        shown = f"sized against {envelope.SIZED_AGAINST}"
    lines.append(f"  verdict: {shown}")
    if final == row_sizing.SIZED:
        lines.append(f"  at the context wall: {envelope.AT_THE_WALL}")
        lines += _guards(cls, unguarded, path)
    lines.append(final)
    return lines


def _path(verdict, index: int, total: int, allocation, cls, checker) -> Iterator[str]:
    row = verdict.row
    width = symbolic.render(row.width)
    made = ""
    if row.rows:
        rows = ", ".join(map(str, row.rows))
        made = f" (through row{'s' if len(row.rows) > 1 else ''} {rows})"
    yield f"  path {index} of {total}: width {width}{made}"
    for text, positive in verdict.conditions:
        yield f"    when {'' if positive else 'not '}{text}"
    if verdict.goal is not None:
        yield f"    needs at least {symbolic.render(verdict.goal)}"
    if verdict.verdict == row_sizing.SIZED:
        yield (
            "    sized: at least that for all positive sizes (proven; premise: "
            f"{envelope.CONTRACT_PREMISE})"
        )
    elif verdict.verdict == row_sizing.UNSIZED:
        # What the finding says: no counterexample an instance cannot reach.
        reading, clauses = kvi003.read_unsized(verdict, cls, allocation, checker)
        if reading.fits:
            yield f"    unsized, though it fits today only {clauses}"
        elif reading.witness is not None:
            witness = row_sizing.describe_witness(verdict, reading.witness)
            yield f"    unsized: {witness}"
        else:
            yield (
                "    unsized: not proven to fit, and no counterexample is found "
                f"given that {clauses}"
            )
    else:
        yield f"    not judged: {verdict.reason}"
