"""A flat writer's extents and their fit: each store, per path, against a size.

:mod:`.flat` derives the stores of a kernel; here each becomes the range of
offsets a program ``b`` writes, ``[lo(b), hi(b))`` (a base plus a position: the
lane plus the loop's index times the lane count, bounded by the lanes, the loop
and the mask's bounds on the position), and each is held to the size a caller
states for its output: proven for every value (``b <= programs - 1``; a total
is the entries before ``b``, ``b``'s own and those after), refuted by the first
small values that break it, or not proven. :func:`describe` prints it.
"""

from __future__ import annotations

import ast
import itertools
import math
import re
from dataclasses import dataclass

import sympy as sp

from .flat import (
    _DATA,
    BLK,
    NOT_PROVEN,
    NUM_BLK,
    PROGRAMS,
    PROVEN,
    REFUTED,
    REST_PROGRAMS,
    B,
    Derivation,
    Facts,
    FlatError,
    Store,
)
from .positivity import fact_of, nonneg, symbol


@dataclass(frozen=True)
class Extent:
    store: Store
    lo: sp.Expr | None
    hi: sp.Expr | None  # exclusive
    conds: tuple  # sympy conditions the store runs under
    why: str = ""
    # A mask part was not read (on data, or no bound on the position): the
    # extent is an upper bound, which proves a fit but refutes nothing.
    widened: bool = False


def extent(store: Store) -> Extent:
    """``[lo, hi)`` program ``b`` writes through one store on its path."""
    lanes = dict(store.lanes)
    off = store.offset
    used_lanes = [s for s in off.free_symbols if s in lanes]
    loops = [(i, lo, hi) for i, lo, hi in store.loops if i in off.free_symbols]
    conds = list(store.conds)
    if len(used_lanes) > 1 or len(loops) > 1:
        return Extent(store, None, None, tuple(conds), "an address of several lanes")
    t = symbol("t")
    lane = used_lanes[0] if used_lanes else None
    count = lanes[lane] if lane is not None else sp.Integer(1)
    base = off
    if lane is not None:
        if off.coeff(lane) != 1:
            return Extent(store, None, None, tuple(conds), "lanes not one apart")
        base = sp.expand(base - lane)
    span_lo, span_hi = sp.Integer(0), count
    index = None
    if loops:
        index, lo, hi = loops[0]
        step = sp.expand(off).coeff(index)
        if sp.simplify(step - count) != 0:
            return Extent(store, None, None, tuple(conds), "a loop not one block apart")
        base = sp.expand(base - step * index)
        span_lo, span_hi = count * lo, count * hi
    if any(s in lanes or s == index for s in base.free_symbols):
        return Extent(store, None, None, tuple(conds), "an address not lane plus base")
    bounds, lowers, widened = [span_hi], [span_lo], False
    if store.mask is not None:
        if not isinstance(store.mask, sp.Basic):
            widened = True  # a mask on data: the lanes bound the extent
        else:
            for part in sp.And.make_args(store.mask):
                names = part.free_symbols
                if _DATA in names:
                    widened = True  # narrows by what memory holds
                elif lane in names or (index is not None and index in names):
                    inner = part
                    if lane is not None:
                        inner = inner.subs(
                            lane, t - (count * index if index is not None else 0)
                        )
                    upper = lower = None
                    if index is None or index not in inner.free_symbols:
                        upper, lower = _upper(inner, t), _lower(inner, t)
                    if upper is not None:
                        bounds.append(upper)
                    elif lower is not None:
                        lowers.append(lower)
                    else:
                        widened = True
                elif part not in (sp.true,):
                    conds.append(part)
    hi = bounds[0] if len(bounds) == 1 else sp.Min(*bounds)
    lo_t = lowers[0] if len(lowers) == 1 else sp.Max(*lowers)
    if index is not None:
        # range(cdiv(X, N)) covers [0, N*cdiv(X, N)), at least [0, X): a mask
        # bound U <= X ends the writes first (the loop's last block ends at X).
        stop = next(i_hi for i, _, i_hi in store.loops if i == index)
        target = _cdiv_argument(stop, count)
        inner = [u for u in bounds[1:] if target is not None and nonneg(target - u)]
        if inner:
            hi = inner[0] if len(inner) == 1 else sp.Min(*inner)
    return Extent(
        store, sp.expand(base) + lo_t, sp.expand(base) + hi, tuple(conds), "", widened
    )


def _cdiv_argument(stop: sp.Expr, count: sp.Expr) -> sp.Expr | None:
    """``X`` of a loop bound ``ceiling(X / count)``, or None."""
    if isinstance(stop, sp.ceiling):
        argument = sp.expand(stop.args[0] * count)
        if sp.simplify(sp.ceiling(argument / count) - stop) == 0:
            return argument
    return None


_ORDERS = (sp.StrictLessThan, sp.LessThan, sp.StrictGreaterThan, sp.GreaterThan)


def _side(cond, t) -> tuple[str, sp.Expr, bool] | None:
    """``cond`` as a bound on ``t``: ``("upper" or "lower", bound, strict)``
    (``t < bound``, ``t >= bound``...), or None: a test of (in)equality, or
    one ``t`` does not stand alone in, bounds nothing."""
    if not isinstance(cond, _ORDERS):
        return None
    diff = sp.expand(cond.lhs - cond.rhs)
    coeff = diff.coeff(t)
    rest = sp.expand(diff - coeff * t)
    if t in rest.free_symbols or coeff not in (1, -1):
        return None
    strict = isinstance(cond, (sp.StrictLessThan, sp.StrictGreaterThan))
    below = isinstance(cond, (sp.StrictLessThan, sp.LessThan)) == (coeff == 1)
    return ("upper" if below else "lower"), (-rest if coeff == 1 else rest), strict


def _lower(cond, t) -> sp.Expr | None:
    """The inclusive bound ``cond`` puts below ``t`` (``t >= L``: L), or None."""
    side = _side(cond, t)
    if side is None or side[0] != "lower":
        return None
    return side[1] + 1 if side[2] else side[1]


def _upper(cond, t) -> sp.Expr | None:
    """The exclusive bound ``cond`` puts on ``t`` (``t < U``: U), or None."""
    side = _side(cond, t)
    if side is None or side[0] != "upper":
        return None
    return side[1] if side[2] else side[1] + 1


@dataclass(frozen=True)
class Claim:
    output: str
    extent: Extent
    status: str
    size: str
    detail: str = ""


def judge(derivation: Derivation, facts: Facts) -> list[Claim]:
    """Each store's extent against its output's stated size, for every program."""
    claims = []
    for store in derivation.stores:
        ext = extent(store)
        size_text = facts.numel.get(store.base)
        if size_text is None:
            claims.append(Claim(store.base, ext, NOT_PROVEN, "", "no size stated"))
            continue
        if ext.hi is None:
            claims.append(Claim(store.base, ext, NOT_PROVEN, size_text, ext.why))
            continue
        size = _size(size_text, derivation, facts)
        claims.append(_claim(store.base, ext, size, size_text, derivation, facts))
    for output, size_text in facts.numel.items():
        if output not in derivation.outputs:
            # A size stated for an output no store was followed into: whatever
            # writes it was not read, so nothing about it is claimed.
            missing = Extent(
                Store(0, output, sp.Integer(0), None, (), (), ()),
                None,
                None,
                (),
                "no store of it followed",
            )
            claims.append(Claim(output, missing, NOT_PROVEN, size_text, missing.why))
    if derivation.notes:
        # A construct not followed may change any value or write: no verdict
        # stands on the rest alone.
        why = f"not followed: {derivation.notes[0]}"
        claims = [
            c
            if c.status == NOT_PROVEN
            else Claim(c.output, c.extent, NOT_PROVEN, c.size, why)
            for c in claims
        ]
    return claims


def _size(text: str, derivation: Derivation, facts: Facts) -> sp.Expr:
    """A stated size: integers, ``programs``, ``sum(x)`` (over every program),
    scalar arguments, ``+ - *`` and parentheses (our own reading, nothing run)."""

    def value(node) -> sp.Expr:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return sp.Integer(node.value)
        if isinstance(node, ast.Name):
            if node.id == "programs":
                return PROGRAMS
            if node.id in facts.equal:
                return value(ast.parse(facts.equal[node.id], mode="eval").body)
            return symbol(node.id)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "sum"
            and len(node.args) == 1
            and isinstance(node.args[0], ast.Name)
        ):
            return _total(node.args[0].id)
        if isinstance(node, ast.BinOp) and isinstance(
            node.op, (ast.Add, ast.Sub, ast.Mult)
        ):
            a, b = value(node.left), value(node.right)
            return (
                a + b
                if isinstance(node.op, ast.Add)
                else (a - b if isinstance(node.op, ast.Sub) else a * b)
            )
        raise FlatError(f"a size of no known form: {text!r}")

    return value(ast.parse(text, mode="eval").body)


def _total(name: str) -> sp.Expr:
    """``sum(x)`` over every program: the entries before ``b``, ``b``'s own and
    those after it."""
    return (
        symbol(f"sum_{name}_before_b")
        + symbol(f"{name}[b]")
        + symbol(f"sum_{name}_after_b")
    )


def _claim(output, ext: Extent, size, size_text, derivation, facts) -> Claim:
    programs = {PROGRAMS: B + 1 + REST_PROGRAMS}
    substitutions = dict(programs)
    for name, value in facts.equal.items():
        substitutions[symbol(name)] = _size(value, derivation, facts).subs(programs)
    for big, small in facts.ordered:
        # a[j] >= c[j] for every j: a = c + d, before, at and after b.
        for kind in ("sum_{}_before_b", "{}[b]", "sum_{}_after_b"):
            substitutions[symbol(kind.format(big))] = symbol(
                kind.format(small)
            ) + symbol(kind.format(f"{big}-{small}"))
    for name, text in facts.bounded.items():
        # x[j] <= E for every j: x[j] = E - slack, before, at and after b.
        bound = _size(text, derivation, facts).subs(substitutions, simultaneous=True)
        for kind, count in (
            ("sum_{}_before_b", B),
            ("{}[b]", 1),
            ("sum_{}_after_b", REST_PROGRAMS),
        ):
            slack = symbol(kind.format(f"{name}-slack"))
            substitutions[symbol(kind.format(name))] = count * bound - slack
    lo = sp.expand(ext.lo.subs(substitutions, simultaneous=True))
    hi = sp.expand(ext.hi.subs(substitutions, simultaneous=True))
    size = sp.expand(size.subs(substitutions, simultaneous=True))
    # What a symbol replaced stood for is still a nonnegative integer.
    cond_facts = [
        value for value in substitutions.values() if not sp.sympify(value).is_Symbol
    ]
    for cond in ext.conds:
        if cond.free_symbols & {BLK, NUM_BLK}:
            continue  # the programs of axis 1 are taken together
        cond = cond.subs(substitutions, simultaneous=True)
        cond_facts += fact_of(cond)
    writes = hi - lo - 1  # the store writes something
    fits = nonneg(size - hi, [*cond_facts, writes]) and nonneg(
        lo, [*cond_facts, writes]
    )
    if fits:
        return Claim(output, ext, PROVEN, size_text)
    if ext.widened:
        why = "a mask part not read widens the extent: neither a proof nor a case"
        return Claim(output, ext, NOT_PROVEN, size_text, why)
    found = _counterexample(size - hi, lo, [*cond_facts, writes])
    if found is not None:
        return Claim(output, ext, REFUTED, size_text, found)
    return Claim(output, ext, NOT_PROVEN, size_text, "neither a proof nor a case")


_NUMERIC = {"Min": min, "Max": max, "ceiling": math.ceil, "floor": math.floor}


def _counterexample(gap: sp.Expr, lo: sp.Expr, facts: list) -> str | None:
    """The first small values (0-3 each, smallest sums first) where every fact
    holds and the store writes past the size (or below 0)."""
    names = sorted(
        set().union(
            gap.free_symbols, lo.free_symbols, *(f.free_symbols for f in facts)
        ),
        key=str,
    )
    if len(names) > 9:
        return None  # too many sizes to search: "not proven"
    try:
        compiled = [
            sp.lambdify(names, expr, modules=[_NUMERIC, "math"])
            for expr in (gap, lo, *facts)
        ]
    except (TypeError, NameError, SyntaxError):
        return None
    # A prefix sum over no program is 0: at b = 0, and after the last one.
    before = [i for i, n in enumerate(names) if n.name.endswith("_before_b")]
    after = [i for i, n in enumerate(names) if n.name.endswith("_after_b")]
    first = [i for i, n in enumerate(names) if n == B]
    last = [i for i, n in enumerate(names) if n == REST_PROGRAMS]
    points = sorted(itertools.product(range(4), repeat=len(names)), key=sum)
    for combo in points:
        if any(combo[i] == 0 for i in first) and any(combo[i] for i in before):
            continue
        if any(combo[i] == 0 for i in last) and any(combo[i] for i in after):
            continue
        try:
            gap_at, lo_at, *held = (float(f(*combo)) for f in compiled)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError):
            continue
        if any(value < 0 for value in held):
            continue
        shown = ", ".join(f"{k}={v}" for k, v in zip(names, combo, strict=True))
        if gap_at < 0:
            return f"{shown}: writes {int(-gap_at)} past the end"
        if lo_at < 0:
            return f"{shown}: writes at {int(lo_at)}, before the start"
    return None


def _shown(expr) -> str:
    """An expression in the kernel's own words: ``sum(x[:b])`` for the entries
    before program ``b``, ``sum(x[b+1:])`` for those after it."""
    text = str(expr)
    text = re.sub(r"sum_(\S+?)_before_b", r"sum(\1[:b])", text)
    return re.sub(r"sum_(\S+?)_after_b", r"sum(\1[b+1:])", text)


def _at_last_program(hi: sp.Expr) -> sp.Expr | None:
    """``hi`` of the last program, ``b = programs - 1``, in totals: what every
    program's writes fit in together (each entry after the last is none)."""
    if hi is None:
        return None
    names = {s.name for s in hi.free_symbols}
    values = {}
    for name in names:
        if m := re.fullmatch(r"sum_(.+)_before_b", name):
            own, total = symbol(f"{m.group(1)}[b]"), symbol(f"sum({m.group(1)})")
            values[own] = total - symbol(name)
    last = sp.expand(hi.subs(values, simultaneous=True).subs(B, PROGRAMS - 1))
    if any(
        s.name.endswith("[b]") or s.name.endswith("_before_b")
        for s in last.free_symbols
    ):
        return None
    return last


def describe(derivation: Derivation, claims: list[Claim], facts: Facts) -> list[str]:
    """What was read, the facts, each store's extent and its fit (paths with
    the same extent and verdict shown once, with their count)."""
    lines = [
        f"kernel {derivation.name}: pointers {', '.join(derivation.pointers)}; "
        f"outputs {', '.join(derivation.outputs) or 'none'}"
    ]
    for what in sorted(set(derivation.loads.values())):
        lines.append(f"  read: {_shown(what)}")
    for fact in facts.texts:
        lines.append(f"  fact: {fact}")
    lines.append(
        "  assumes: every value a program loads at its own index, and every "
        "sum of them, is a nonnegative integer; 32- and 64-bit casts keep "
        "offsets; proven = for all values, with b <= programs - 1"
    )
    groups: dict = {}
    for claim in claims:
        ext = claim.extent
        key = (ext.store.line, claim.output, str(ext.lo), str(ext.hi), claim.status)
        groups.setdefault(key, []).append(claim)
    for (line, output, _, _, status), group in sorted(groups.items()):
        claim, ext = group[0], group[0].extent
        paths = f"{len(group)} path{'s' if len(group) > 1 else ''}"
        if ext.hi is None:
            lines.append(
                f"  store line {line} into {output} ({paths}): not derived ({ext.why})"
            )
            continue
        lines.append(
            f"  store line {line} into {output} ({paths}): program b writes "
            f"[{_shown(ext.lo)}, {_shown(ext.hi)})"
        )
        last = _at_last_program(ext.hi)
        if last is not None:
            lines.append(f"    all programs: needs numel({output}) >= {_shown(last)}")
        against = f"numel({output}) = {claim.size}" if claim.size else "its size"
        details = sorted({c.detail for c in group if c.detail})
        lines.append(
            f"    fits {against}: {status}"
            + (f" ({_shown(details[0])})" if details else "")
        )
    for note in derivation.notes:
        lines.append(f"  not followed: {note}")
    return lines
