"""Is an integer expression nonnegative wherever some facts hold? A certificate, or no.

Every symbol stands for a nonnegative integer (sizes, program ids, lanes, lengths,
prefix sums: the whole vocabulary of :mod:`.extent`). A fact ``f`` means
``f >= 0``. :func:`nonneg` answers True only with a proof, and False means "no
proof found", never "false":

1. ``Min``/``Max`` are split into cases (``Min(a, b)`` is ``a`` where
   ``b - a >= 0`` and ``b`` where ``a - b >= 0``: the cases cover every point),
   ``floor(N/D)`` becomes a fresh ``q`` with ``D*q <= N <= D*q + D - 1`` (for
   ``N >= 0`` and ``D >= 1`` proven first, so ``q`` is a nonnegative integer as
   well), ``Mod`` and ``ceiling`` are written with ``floor``. Each case must hold.
2. A fact linear in some symbol ``v`` with coefficient 1, ``f = v + h``, is the
   substitution ``v = s - h`` with a fresh slack ``s >= 0`` (and ``v >= 0``
   becomes the fact ``s - h >= 0``); coefficient -1 likewise. This parametrises
   exactly the points where the fact holds, so the goal keeps its truth value.
   A fact may also be dropped (fewer facts, a stronger claim).
3. A polynomial in nonnegative symbols whose coefficients are all nonnegative is
   nonnegative. That is the certificate.

The substitutions are searched depth first (coefficient 1 first, then -1, then
dropping the fact), within a budget of nodes: the obligations the kernel proof
poses have a handful of facts each.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Sequence

import numpy
import sympy as sp

from .numeric import NotEvaluable, evaluate

_fresh = itertools.count()
BUDGET = 60


def symbol(name: str) -> sp.Symbol:
    """A symbol of the vocabulary: a nonnegative integer."""
    return sp.Symbol(name, integer=True, nonnegative=True)


def _slack(prefix: str) -> sp.Symbol:
    return symbol(f"_{prefix}{next(_fresh)}")


def certified(expr: sp.Expr) -> bool:
    """All coefficients of ``expr`` (a polynomial in nonnegative symbols) >= 0."""
    expr = sp.expand(expr)
    if expr.is_number:
        return bool(expr >= 0)
    if _special(expr) is not None:
        return False
    terms = expr.as_coefficients_dict()
    for term, coeff in terms.items():
        if coeff < 0:
            return False
        if term != 1 and not all(
            (s.is_Symbol or (s.is_Pow and s.exp.is_Integer and s.exp > 0))
            for s in sp.Mul.make_args(term)
        ):
            return False
    return True


def _special(expr: sp.Basic) -> sp.Basic | None:
    """The first Min/Max/floor/ceiling/Mod/Piecewise term in ``expr``."""
    for node in sp.preorder_traversal(expr):
        if isinstance(node, sp.Min | sp.Max | sp.floor | sp.ceiling | sp.Mod):
            return node
        if isinstance(node, sp.Piecewise):
            return node
    return None


def nonneg(
    goal: sp.Expr, facts: Iterable[sp.Expr] = (), *, budget: int = BUDGET
) -> bool:
    """Proven: ``goal >= 0`` at every nonnegative integer point where every fact
    is >= 0."""
    goal = sp.sympify(goal)
    facts = _relevant(goal, [_expand(sp.sympify(f)) for f in facts])
    goal, facts = _equalities(goal, facts)
    facts = _relevant(goal, facts)
    key = (goal, tuple(facts), budget)
    if key not in _memo:
        if len(_memo) > 20000:
            _memo.clear()
        _memo[key] = not refuted(goal, facts) and _cases(goal, facts, [budget], 0)
    return _memo[key]


_memo: dict = {}


@functools.lru_cache(maxsize=8192)
def _expand(expr: sp.Expr) -> sp.Expr:
    return sp.expand(expr)


def _equalities(goal: sp.Expr, facts: list[sp.Expr]) -> tuple[sp.Expr, list]:
    """Facts ``f >= 0`` and ``-f >= 0`` together say ``f == 0``: solved for a
    symbol of coefficient 1 or -1 and substituted everywhere (exact, no slack)."""
    changed = True
    while changed:
        changed = False
        present = set(facts)
        for fact in facts:
            if fact.is_number or _expand(-fact) not in present:
                continue
            heads = _linear_heads(fact)
            if not heads:
                continue
            v, coeff = heads[0]
            value = sp.expand(-(fact - coeff * v) / coeff)
            rest = [f for f in facts if f not in (fact, _expand(-fact))]
            # v >= 0 stays a fact about what replaced it.
            facts = [sp.expand(f.xreplace({v: value})) for f in rest] + [value]
            goal = goal.xreplace({v: value})
            changed = True
            break
    return goal, facts


def _relevant(goal: sp.Expr, facts: list[sp.Expr]) -> list[sp.Expr]:
    """The facts linked to the goal through shared symbols; the others say
    nothing about it (every symbol ranges independently over the rest)."""
    facts = list(dict.fromkeys(facts))
    by_symbol: dict[sp.Symbol, list[int]] = {}
    for index, fact in enumerate(facts):
        for sym in fact.free_symbols:
            by_symbol.setdefault(sym, []).append(index)
    keep = {index for index, fact in enumerate(facts) if not fact.free_symbols}
    frontier = list(goal.free_symbols)
    seen = set(frontier)
    while frontier:
        for index in by_symbol.get(frontier.pop(), ()):
            if index not in keep:
                keep.add(index)
                new = facts[index].free_symbols - seen
                seen |= new
                frontier.extend(new)
    return [facts[index] for index in sorted(keep)]


def _cases(goal: sp.Expr, facts: list[sp.Expr], budget: list[int], depth: int) -> bool:
    if depth > 12:
        return False
    term = _special(goal)
    for fact in facts:
        if term is not None:
            break
        term = _special(fact)
    if term is None:
        return _search(goal, facts, budget)

    def replaced(value: sp.Expr) -> tuple[sp.Expr, list[sp.Expr]]:
        return goal.xreplace({term: value}), [f.xreplace({term: value}) for f in facts]

    if isinstance(term, sp.Min | sp.Max):
        args = term.args
        for k, chosen in enumerate(args):
            # Case: args[k] is the minimum (maximum); ties fall in both cases.
            sign = 1 if isinstance(term, sp.Min) else -1
            extra = [sign * (a - chosen) for j, a in enumerate(args) if j != k]
            g, fs = replaced(chosen)
            if not _cases(g, fs + extra, budget, depth + 1):
                return False
        return True
    if isinstance(term, sp.Piecewise):
        # Only as an upper bound of any branch would be sound; not needed here.
        return False
    if isinstance(term, sp.ceiling):
        g, fs = replaced(-sp.floor(-term.args[0]))
        return _cases(g, fs, budget, depth + 1)
    if isinstance(term, sp.Mod):
        a, m = term.args
        g, fs = replaced(a - m * sp.floor(a / m))
        return _cases(g, fs, budget, depth + 1)
    # floor(N / D) = q with D*q <= N <= D*q + D - 1, q >= 0 when N >= 0, D >= 1.
    num, den = sp.fraction(sp.together(term.args[0]))
    plain = [f for f in facts if _special(f) is None]
    if not (nonneg(den - 1, plain) and nonneg(num, plain)):
        return False
    q = _slack("q")
    g, fs = replaced(q)
    return _cases(g, [*fs, num - den * q, den * q + den - 1 - num], budget, depth + 1)


def _search(goal: sp.Expr, facts: Sequence[sp.Expr], budget: list[int]) -> bool:
    if refuted(goal, facts):
        return False
    return _substitute(sp.expand(goal), _useful(facts), budget, set())


def _useful(facts: Iterable[sp.Expr]) -> list[sp.Expr] | None:
    """The facts that say something; None when no point satisfies them."""
    kept = []
    for fact in facts:
        fact = sp.expand(fact)
        if fact.is_number:
            if fact < 0:
                return None
        elif not certified(fact):
            kept.append(fact)
    return kept


def _linear_heads(fact: sp.Expr) -> list[tuple[sp.Symbol, int]]:
    """The symbols ``fact`` holds only as ``+v`` or ``-v`` (coefficient 1 or -1)."""
    terms = fact.as_coefficients_dict()
    heads = []
    for term, coeff in terms.items():
        if term.is_Symbol and coeff in (1, -1):
            others = (t for t in terms if t is not term)
            if not any(term in t.free_symbols for t in others):
                heads.append((term, int(coeff)))
    return sorted(heads, key=lambda h: (-h[1], h[0].name))


def _negative_terms(expr: sp.Expr) -> int:
    return sum(1 for c in expr.as_coefficients_dict().values() if c < 0)


def _substitute(
    goal: sp.Expr, facts: list[sp.Expr] | None, budget: list[int], failed: set
) -> bool:
    if facts is None:
        return True  # vacuous: no point satisfies the facts
    if certified(goal):
        return True
    key = (goal, frozenset(facts))
    if key in failed:
        return False
    budget[0] -= 1
    if budget[0] < 0:
        return False
    # Only a symbol of the goal is worth eliminating; a fact not chosen here is
    # dropped (a stronger claim), one chosen later may still reach the goal.
    in_goal = goal.free_symbols
    children = []
    for index, fact in enumerate(facts):
        for v, coeff in _linear_heads(fact):
            if v not in in_goal:
                continue
            h = sp.expand(fact - coeff * v)
            s = _slack("s")
            value = s - h if coeff == 1 else h - s
            rest = [f.xreplace({v: value}) for i, f in enumerate(facts) if i != index]
            rest.append(value)  # v >= 0, in the new symbols
            new_goal = sp.expand(goal.xreplace({v: value}))
            children.append((_negative_terms(new_goal), len(children), new_goal, rest))
    # Best first: the substitution leaving the fewest negative terms.
    for _, _, new_goal, rest in sorted(children, key=lambda c: c[:2]):
        if _substitute(new_goal, _useful(rest), budget, failed):
            return True
    failed.add(key)
    return False


def refuted(goal: sp.Expr, facts: Sequence[sp.Expr], samples: int = 512) -> bool:
    """A point (small integers) where every fact holds and the goal is negative:
    the goal is false, no search needed. Points are drawn small and then pushed
    onto the facts' boundaries, where counterexamples live."""
    symbols = sorted(
        set().union(goal.free_symbols, *(f.free_symbols for f in facts)),
        key=lambda s: s.name,
    )
    rng = numpy.random.default_rng(len(symbols))
    # Mostly tiny values, some large ones: a counterexample often needs one
    # length far above the others.
    point = {
        s: numpy.where(
            rng.random(samples) < 0.75,
            rng.integers(0, 4, size=samples),
            rng.integers(0, 64, size=samples),
        )
        for s in symbols
    }
    repairs = []
    for fact in facts:
        for v, coeff in _linear_heads(fact):
            repairs.append((v, coeff, sp.expand(fact - coeff * v)))
            break
    previous = numpy.seterr(all="ignore")
    try:
        for _ in range(6):
            # Move a fact's head onto (or one past) its bound where the fact is
            # broken, and at random elsewhere: tight points where facts hold.
            for v, coeff, rest in repairs:
                value = numpy.broadcast_to(evaluate(rest, point), (samples,))
                slack = rng.integers(0, 2, size=samples)
                target = numpy.maximum(
                    -value + slack if coeff == 1 else value - slack, 0
                )
                broken = coeff * point[v] + value < 0
                tighten = rng.random(samples) < 0.3
                point[v] = numpy.where(broken | tighten, target, point[v])
        holds = numpy.ones(samples, dtype=bool)
        for fact in facts:
            holds &= numpy.broadcast_to(evaluate(fact, point) >= 0, (samples,))
        negative = numpy.broadcast_to(evaluate(goal, point) < 0, (samples,))
    except (NotEvaluable, ZeroDivisionError, FloatingPointError):
        return False
    finally:
        numpy.seterr(**previous)
    return bool((holds & negative).any())


def contradictory(facts: Sequence[sp.Expr]) -> bool:
    """Proven: no point satisfies every fact (one fact's negation follows from the
    others). Claims made under such facts would hold vacuously."""
    facts = list(facts)
    return any(
        nonneg(-fact - 1, facts[:k] + facts[k + 1 :]) for k, fact in enumerate(facts)
    )


def fact_of(cond: sp.Basic) -> list[sp.Expr]:
    """The facts (each ``>= 0``) a relational condition states over integers;
    [] for what is not a plain inequality (an ``Or``, a ``!=``)."""
    if isinstance(cond, sp.And):
        return [f for arg in cond.args for f in fact_of(arg)]
    if isinstance(cond, sp.StrictLessThan):
        return [cond.rhs - cond.lhs - 1]
    if isinstance(cond, sp.LessThan):
        return [cond.rhs - cond.lhs]
    if isinstance(cond, sp.StrictGreaterThan):
        return [cond.lhs - cond.rhs - 1]
    if isinstance(cond, sp.GreaterThan):
        return [cond.lhs - cond.rhs]
    if isinstance(cond, sp.Eq):
        return [cond.lhs - cond.rhs, cond.rhs - cond.lhs]
    return []


def decide(cond: sp.Basic, facts: Sequence[sp.Expr]) -> bool | None:
    """True or False when the facts prove it either way, else None."""
    if cond is sp.true or cond is True:
        return True
    if cond is sp.false or cond is False:
        return False
    if isinstance(cond, sp.And):
        results = [decide(a, facts) for a in cond.args]
        if all(r is True for r in results):
            return True
        return False if any(r is False for r in results) else None
    if isinstance(cond, sp.Or):
        results = [decide(a, facts) for a in cond.args]
        if any(r is True for r in results):
            return True
        return False if all(r is False for r in results) else None
    if isinstance(cond, sp.Not):
        inner = decide(cond.args[0], facts)
        return None if inner is None else not inner
    if isinstance(cond, sp.Eq | sp.Ne):
        diff = sp.expand(cond.lhs - cond.rhs)
        equal: bool | None = True if diff == 0 else None
        if equal is None and (nonneg(diff - 1, facts) or nonneg(-diff - 1, facts)):
            equal = False
        if equal is None:
            return None
        return equal if isinstance(cond, sp.Eq) else not equal
    if isinstance(cond, sp.Rel):
        (fact,) = fact_of(cond)
        if nonneg(fact, facts):
            return True
        (negated,) = fact_of(cond.negated)
        if nonneg(negated, facts):
            return False
    return None


def strengthen(cond: sp.Basic, facts: Sequence[sp.Expr]) -> list[sp.Expr]:
    """The facts of ``cond``, with ``a != b`` read as ``a > b`` or ``a < b`` when
    the facts already order them (``NUM_STEPS != 0`` is ``NUM_STEPS >= 1``)."""
    if isinstance(cond, sp.And):
        return [f for arg in cond.args for f in strengthen(arg, facts)]
    if isinstance(cond, sp.Ne):
        diff = cond.lhs - cond.rhs
        if nonneg(diff, facts):
            return [diff - 1]
        if nonneg(-diff, facts):
            return [-diff - 1]
        return []
    return fact_of(cond)
