"""Is a buffer at least what its contract's writer writes, on every path?

A contract's buffer (:mod:`lint_plugin.contracts`) is one flat allocation: its
size is the product of the dimensions an allocator call asks for, read on each
path as KVI003 reads a row's width (every allocator and shape spelling,
:func:`lint_plugin.engine.flow.per_step_rows.shapes`), and judged by the same
verdicts (:mod:`lint_plugin.engine.flow.row_sizing`): ``sized`` when it is at
least the contract's least size for all positive sizes, ``unsized`` when a
binding shows it smaller, ``not judged`` otherwise. A token count in the size is
what the contract's phase makes it (``max_num_tokens`` is ``max_bs *
num_draft_tokens`` when a verify graph is captured).
"""

from __future__ import annotations

import ast

from lint_plugin.algebra import symbolic
from lint_plugin.algebra.symbolic import Expr
from lint_plugin.contracts import Contract
from lint_plugin.engine.facts import Allocation
from lint_plugin.engine.flow.alternatives import Ref
from lint_plugin.engine.flow.per_step_rows import Row, reach_conditions, shapes
from lint_plugin.engine.flow.row_sizing import (
    Judgement,
    contexts_of,
    contract_goals,
    group_rows,
    judge_paths,
    least_size,
)
from lint_plugin.engine.flow.widths import Analysis
from lint_plugin.roles import Role


def numel_rows(analysis: Analysis, function, call) -> list[Row] | None:
    """The number of elements an allocation call makes, one :class:`Row` per
    path (``how``: ``numel``); None when the call allocates nothing."""
    frame = analysis.frame_of(function)
    stmt = analysis.statement(frame, call)
    callees = analysis.values(call.func, frame, stmt)
    allocators = [
        c
        for c in callees
        if isinstance(c.value, Ref) and c.value.kind in ("alloc", "partial")
    ]
    found: list[Row] = []
    reach = None
    for allocator in allocators:
        for shape in shapes(analysis, allocator.value, call, frame, stmt, True):
            if reach is None:
                reach = reach_conditions(frame, stmt)
            one = len(shape.dims) == 1
            site = shape.width_alt.site if one and shape.width_alt else None
            written = shape.written if one else None
            if one and written is None and _made_here(shape.shown, call):
                # `zeros((max_bs * n), ...)`: the size is made in the call.
                written, site = shape.shown, (shape.shown, frame.scope)
            width = symbolic.mul(*shape.dims)
            # Several dimensions: the message shows the whole shape.
            shown = shape.shown if one else _shape_argument(call)
            for conds in reach:
                found.append(
                    Row(
                        width,
                        shape.conds | allocator.conds | conds,
                        shape.rows,
                        site,
                        shown,
                        written,
                        "numel",
                    )
                )
    return found or None


def _shape_argument(call):
    """The argument a call's shape is given by (``size=``, the first), or the
    call where its dimensions are several arguments."""
    for keyword in call.keywords:
        if keyword.arg == "size":
            return keyword.value
    first = call.args[0] if call.args else None
    if isinstance(first, (ast.Tuple, ast.List)) or (
        len(call.args) == 1 and not isinstance(first, ast.Starred)
    ):
        return first
    return call


def _made_here(node, call) -> bool:
    """Is ``node`` an expression of the call's own arguments that computes the
    size (not a name or a tuple that holds it)?"""
    return isinstance(node, ast.BinOp) and any(
        node is a for a in (*call.args, *(k.value for k in call.keywords))
    )


# Where a writer's per-request writes name the context size.
CONTEXT = symbolic.free_symbol("<context>")


def judge_buffer(
    allocation: Allocation,
    analysis: Analysis,
    contract: Contract,
    sizes: dict[str, Expr],
    per_request: Expr | None = None,
) -> Judgement | None:
    """The allocation's size on each path against ``contract.least``; ``sizes``
    gives the formula's names the width may not hold (the draft-token count
    the writer writes); ``per_request``, what the writer writes for one
    request at the wall (``CONTEXT`` standing for the context size), replaces
    the contract's own per-request share where the writer says more exactly.
    None when the call allocates nothing."""
    rows = numel_rows(analysis, allocation.function, allocation.call)
    if rows is None:
        return None
    tokens = tuple(
        sorted(
            {
                s.text
                for r in rows
                for s in symbolic.symbols(r.width)
                if s.role is Role.TOKENS
            }
        )
    )
    rows = [_in_phase(row, contract, sizes) for row in rows]

    def goals_of(width: Expr):
        goals, goal, reason = contract_goals(contract, width, _sizes_of(width, sizes))
        if per_request is None or goal is None or _exact(width):
            return goals, goal, reason
        count = next(
            (s for s in symbolic.symbols(width) if s.role is Role.NUM_SEQS),
            symbolic.role_symbol(Role.NUM_SEQS, "num_seqs"),
        )
        contexts = contexts_of(width) or [
            symbolic.role_symbol(Role.MAX_CONTEXT_LEN, "max_context_len")
        ]
        own = [
            symbolic.mul(count, symbolic.replace(per_request, {CONTEXT: c}))
            for c in contexts
        ]
        return own, own[0], ""

    judgement = judge_paths(allocation, group_rows(rows), analysis, goals_of)
    if judgement is not None:
        judgement.tokens = tokens
    return judgement


def _exact(width: Expr) -> bool:
    """Sized from the batch's lengths' sum: held to that batch's writes."""
    return any(s.role is Role.SEQ_LENS_SUM for s in symbolic.symbols(width))


def _sizes_of(width: Expr, sizes: dict[str, Expr]) -> dict[str, Expr]:
    """``sizes`` with the draft-token count the width itself names, if any."""
    own = next(
        (s for s in symbolic.symbols(width) if s.role is Role.NUM_DRAFT_TOKENS), None
    )
    return {**sizes, "num_draft_tokens": own} if own is not None else sizes


def _in_phase(row: Row, contract: Contract, sizes: dict[str, Expr]) -> Row:
    """``row`` with its token count what the contract's phase makes it."""
    tokens = [s for s in symbolic.symbols(row.width) if s.role is Role.TOKENS]
    if not tokens:
        return row
    count = next(
        (s for s in symbolic.symbols(row.width) if s.role is Role.NUM_SEQS),
        None,
    ) or symbolic.role_symbol(Role.NUM_SEQS, "max_bs")
    value = least_size(
        contract.tokens, {**_sizes_of(row.width, sizes), "num_seqs": count}
    )
    width = symbolic.replace(row.width, dict.fromkeys(tokens, value))
    return Row(width, row.conds, row.rows, row.site, row.shown, row.written, row.how)
