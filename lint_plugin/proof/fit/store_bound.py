"""The largest in-row offset one derived store can write, for one program.

A store's offset is ``kv_indices_stride * row + in_row`` and ``in_row = base + X``,
``X`` the part that moves with lanes and loop iterations. Two bounds of ``X``:

- the mask's: a conjunct ``X < M`` (or ``<=``, ``>``, ``>=``) gives ``base + M - 1``;
- the domain's: ``X`` at the largest lane (``N - 1``) and the last iteration of
  every enclosing loop, when ``X`` grows with each.

The bound is the smaller one when the prover orders them, else their ``Min``; in a
loop the mask's (a loop's last block is per program, the mask is what bounds the
row). A store of a single lane, ``X = j`` with the mask ``j < M``, writes every lane
below ``min(M, N)``, so it reaches its bound exactly when ``M >= 1``: that is its
``attain`` condition. For any other shape the bound is an upper bound only.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .extent import ROW_STRIDE, Derivation, Store
from .positivity import nonneg, strengthen


@dataclass(frozen=True)
class Bound:
    """The largest in-row offset one store can write, for one program."""

    store: Store
    row: sp.Expr  # the row the store writes (a program id, before renaming)
    value: sp.Expr | None  # None: no bound derived
    attain: sp.Basic | None  # the bound is written when this holds; None: unknown
    why: str = ""


def bound(derivation: Derivation, store: Store) -> Bound:
    """The mask's and the domain's bound of ``store`` (see the module doc)."""
    if store.offset is None:
        return Bound(store, sp.nan, None, None, store.why)
    stride = derivation.params.get(ROW_STRIDE)
    offset = sp.expand(store.offset)
    row = offset.coeff(stride) if stride is not None else sp.Integer(0)
    in_row = sp.expand(offset - row * stride) if stride is not None else offset
    if stride is not None and stride in in_row.free_symbols:
        return Bound(store, row, None, None, "the row stride enters non-linearly")
    moving = set(derivation.lanes) | {loop.counter for loop in store.loops}
    varying = in_row.free_symbols & moving
    at_zero = {v: 0 for v in varying}
    base = in_row.xreplace(at_zero)
    x = sp.expand(in_row - base)
    facts = list(derivation.facts) + [loop.fact for loop in store.loops]
    for cond in store.conds:
        facts += strengthen(cond, facts)
    if not varying:
        return Bound(store, row, base, store.mask if store.mask is not None else None)
    mask_bound = None
    single = None
    if store.mask is not None:
        for conjunct in sp.And.make_args(store.mask):
            limit = _upper(conjunct, x, moving)
            if limit is not None:
                mask_bound = base + limit
                if conjunct == store.mask:
                    single = limit + 1  # X <= limit: written when limit >= 0
                break
    domain = _domain_max(derivation, store, x, facts)
    domain_bound = None if domain is None else base + domain
    if mask_bound is None and domain_bound is None:
        return Bound(store, row, None, None, "neither the mask nor the lanes bound it")
    if mask_bound is None:
        value = domain_bound
    elif (
        domain_bound is None
        or store.loops  # a loop's last block is per program: the mask bounds it
        or nonneg(domain_bound - mask_bound, facts)
    ):
        value = mask_bound
    elif nonneg(mask_bound - domain_bound, facts):
        value = domain_bound
    else:
        value = sp.Min(mask_bound, domain_bound)
    if value.free_symbols & moving:
        return Bound(store, row, None, None, "the bound still moves with a lane")
    attain = None
    lane_only = varying <= set(derivation.lanes) and len(varying) == 1
    if lane_only and x in derivation.lanes and single is not None:
        attain = sp.Ge(single, 1)  # lanes 0 .. min(M, N) - 1 are all written
    elif lane_only and x in derivation.lanes and store.mask == sp.true:
        attain = sp.true
    return Bound(store, row, value, attain)


def _upper(conjunct: sp.Basic, x: sp.Expr, moving: set) -> sp.Expr | None:
    """``L`` such that ``conjunct`` says ``x <= L`` (L free of lanes and loops)."""
    if isinstance(conjunct, sp.StrictLessThan | sp.LessThan):
        lhs, rhs = conjunct.lhs, conjunct.rhs
    elif isinstance(conjunct, sp.StrictGreaterThan | sp.GreaterThan):
        lhs, rhs = conjunct.rhs, conjunct.lhs
    else:
        return None
    if rhs.free_symbols & moving:
        return None
    at_zero = {v: 0 for v in lhs.free_symbols & moving}
    rest = lhs.xreplace(at_zero)
    if sp.expand(lhs - rest - x) != 0:
        return None
    strict = isinstance(conjunct, sp.StrictLessThan | sp.StrictGreaterThan)
    return rhs - rest - (1 if strict else 0)


def _domain_max(
    derivation: Derivation, store: Store, x: sp.Expr, facts: list
) -> sp.Expr | None:
    """``x`` at the largest lane and iteration, when it grows with each."""
    top = {}
    for lane, length in derivation.lanes.items():
        top[lane] = length - 1
    for loop in store.loops:
        top[loop.counter] = sp.floor((loop.stop - 1 - loop.start) / loop.step)
    poly_vars = [v for v in x.free_symbols if v in top]
    for v in poly_vars:
        coeff = sp.expand(x).coeff(v)
        if coeff.free_symbols & set(top) or not nonneg(coeff, facts):
            return None
    return x.xreplace({v: top[v] for v in poly_vars})
