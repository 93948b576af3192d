"""Sound bounds on symbolic values, and concrete counterexamples.

Two questions about a value ``v`` (:mod:`lint_plugin.algebra.symbolic`) and a goal
``g``:

* *Is ``v >= g`` for every positive value of the symbols?* :func:`proves` answers
  yes only with a proof: a polynomial lower bound ``L`` of ``v`` (rational
  coefficients, kept as an integer polynomial over a positive denominator, in
  :mod:`lint_plugin.algebra.polynomial`'s type) such that ``L - g``, rewritten in
  ``symbol - 1 >= 0``, has no negative coefficient. Each operator bounds soundly:
  ``max`` is at least each argument, ``min`` at least a common lower bound,
  ``x // k >= (x - k + 1) / k``, ``cdiv(x, b) * b >= x``, a product of
  non-negative factors at least the product of their bounds, ``a - b`` at least
  ``lower(a) - upper(b)``; where no bound is known there is none (an opaque
  symbol has none). A value with ``min``/``max``/``or`` inside is also proven by
  cases: at every binding ``min(a, b)`` is ``a`` or ``b``, so proving both
  rewritten values proves the original.
* *Is there a binding where ``v < g``?* :func:`find_witness` evaluates both
  exactly (as Python would) over a grid of small positive bindings, and returns
  the first one that shows it. A finding made from it is never a guess.

A token count is at least the sequence count (each sequence brings a token):
both questions hold ``tokens >= num_seqs``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence

from lint_plugin.algebra import polynomial as poly
from lint_plugin.algebra.polynomial import Poly
from lint_plugin.algebra.symbolic import (
    Const,
    Expr,
    Op,
    Sym,
    Undefined,
    evaluate,
    helper_formula,
    holds,
    replace,
    symbols,
    tests_none,
)
from lint_plugin.roles import Role

Bound = tuple[Poly, int]  # (numerator, positive denominator)
_CAP = 6  # bounds kept per sub-expression; losing one loses a proof, never soundness
_SPLITS = 4  # case splits on min/max/or per proof

COUNT_KEY = f"role:{Role.NUM_SEQS.value}"
TOKENS_KEY = f"role:{Role.TOKENS.value}"


class Atoms:
    """Poly atom ids for symbol keys; ``slack`` is the atom ``u >= 0`` of
    ``tokens = num_seqs + u``."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def of(self, key: str) -> int:
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = len(self.ids)
        return found


class _Bounder:
    def __init__(self, atoms: Atoms) -> None:
        self.atoms = atoms
        self._low: dict[Expr, list[Bound]] = {}
        self._high: dict[Expr, list[Bound]] = {}

    # ---- exact polynomials -------------------------------------------------

    def exact(self, expr: Expr) -> Poly | None:
        if isinstance(expr, Const):
            return poly.constant(expr.value)
        if isinstance(expr, Sym):
            return None if expr.opaque else poly.variable(self.atoms.of(expr.key))
        if not isinstance(expr, Op):
            return None
        if expr.kind == "helper":
            return self.exact(helper_formula(expr))
        if expr.kind not in ("+", "*", "-", "neg", "pow"):
            return None
        parts = [self.exact(a) for a in expr.args]
        if any(p is None for p in parts):
            return None
        try:
            if expr.kind == "+":
                total: Poly = {}
                for part in parts:
                    total = poly.add(total, part)
                return total
            if expr.kind == "*":
                product: Poly = {(): 1}
                for part in parts:
                    product = poly.multiply(product, part)
                return product
            if expr.kind == "-":
                return poly.subtract(parts[0], parts[1])
            if expr.kind == "neg":
                return poly.scale(parts[0], -1)
            exponent = expr.args[1]
            if not (isinstance(exponent, Const) and 0 <= exponent.value <= 8):
                return None
            product = {(): 1}
            for _ in range(exponent.value):
                product = poly.multiply(product, parts[0])
            return product
        except poly.TooLarge:
            return None

    # ---- bounds ------------------------------------------------------------

    def low(self, expr: Expr) -> list[Bound]:
        found = self._low.get(expr)
        if found is None:
            found = self._low[expr] = _dedupe(self._bounds(expr, True))[:_CAP]
        return found

    def high(self, expr: Expr) -> list[Bound]:
        found = self._high.get(expr)
        if found is None:
            found = self._high[expr] = _dedupe(self._bounds(expr, False))[:_CAP]
        return found

    def bound(self, expr: Expr, lower: bool) -> list[Bound]:
        return self.low(expr) if lower else self.high(expr)

    def nonnegative(self, expr: Expr) -> bool:
        return any(_nonneg(b) for b in self.low(expr))

    def positive(self, expr: Expr) -> bool:
        """At least 1 (a topk, ``max(x, 1)``)."""
        return any(_nonneg(_shift(b, -1)) for b in self.low(expr))

    def _bounds(self, expr: Expr, lower: bool) -> list[Bound]:
        exact = self.exact(expr)
        if exact is not None:
            return [(exact, 1)]
        if not isinstance(expr, Op):
            return []
        kind, args = expr.kind, expr.args
        if kind == "helper":
            return self.bound(helper_formula(expr), lower)
        if kind == "+":
            return _sums([self.bound(a, lower) for a in args])
        if kind == "-":
            return _sums(
                [self.bound(args[0], lower), _negate(self.bound(args[1], not lower))]
            )
        if kind == "neg":
            return _negate(self.bound(args[0], not lower))
        if kind == "*":
            return self._product(args, lower)
        if kind == "//":
            return self._floor_div(args[0], args[1], lower)
        if kind == "cdiv":
            return self._ceil_div(args[0], args[1], lower)
        if kind == "%":
            if not (self.nonnegative(args[0]) and self.positive(args[1])):
                return []
            if lower:
                return [(poly.constant(0), 1)]
            return [_shift(b, -1) for b in self.high(args[1])]
        if kind == "max":
            if lower:
                return [b for a in args for b in self.low(a)]
            if all(self.nonnegative(a) for a in args):  # max <= the sum
                return _sums([self.high(a) for a in args])
            return []
        if kind == "min":
            if not lower:
                return [b for a in args for b in self.high(a)]
            return self._common_lower(args)
        if kind == "or":
            # `x or y` is x wherever x is not 0: x >= 1 makes it x.
            return self.bound(args[0], lower) if self.positive(args[0]) else []
        if kind == "np2":
            if not self.positive(args[0]):
                return []
            if lower:
                return self.low(args[0])
            return [_scale(b, 2) for b in self.high(args[0])]
        if kind == "abs":
            return self.bound(args[0], lower) if self.nonnegative(args[0]) else []
        if kind == "pow":
            exponent = args[1]
            if not (isinstance(exponent, Const) and 0 <= exponent.value <= 8):
                return []
            return self._product((args[0],) * exponent.value, lower)
        return []

    def _product(self, factors: Sequence[Expr], lower: bool) -> list[Bound]:
        """Non-negative factors: the product of their bounds (a factor with no
        non-negative lower bound contributes 0 to a lower bound)."""
        factors = list(factors)
        parts: list[tuple[list[Bound], list[Bound], bool]] = []
        # cdiv(x, b) * b >= x and (x // b) * b >= x - b + 1: rounding to a
        # multiple keeps (nearly) the bound of what was rounded.
        for divided in [f for f in factors if isinstance(f, Op)]:
            if divided.kind not in ("cdiv", "//") or divided not in factors:
                continue
            x, b = divided.args
            if b not in factors or not self.positive(b):
                continue
            factors.remove(divided)
            factors.remove(b)
            one = [(poly.constant(1), 1)]
            if divided.kind == "cdiv":
                lows = self.low(x)
                highs = _sums([self.high(x), self.high(b), _negate(one)])
            else:
                lows = _sums([self.low(x), _negate(self.high(b)), one])
                highs = self.high(x)
            parts.append((lows, highs, self.nonnegative(x)))
        scale = 1
        for factor in factors:
            if isinstance(factor, Const):
                scale *= factor.value
            else:
                parts.append(
                    (self.low(factor), self.high(factor), self.nonnegative(factor))
                )
        if not all(nonneg for _, _, nonneg in parts):
            return []
        if scale < 0:
            lower = not lower
        chosen = []
        for lows, highs, _ in parts:
            if lower:
                kept = [b for b in lows if _nonneg(b)]
                chosen.append(kept or [(poly.constant(0), 1)])
            else:
                chosen.append(highs)
        return [_scale(b, scale) for b in _products(chosen)]

    def _floor_div(self, x: Expr, b: Expr, lower: bool) -> list[Bound]:
        if isinstance(b, Const) and b.value > 0:
            k = b.value
            if lower:  # x // k >= (x - k + 1) / k
                return [
                    (poly.subtract(p, poly.constant((k - 1) * d)), d * k)
                    for p, d in self.low(x)
                ]
            return [(p, d * k) for p, d in self.high(x)]
        if not (self.positive(b) and self.nonnegative(x)):
            return []
        return [(poly.constant(0), 1)] if lower else self.high(x)

    def _ceil_div(self, x: Expr, b: Expr, lower: bool) -> list[Bound]:
        if isinstance(b, Const) and b.value > 0:
            k = b.value
            if lower:
                return [(p, d * k) for p, d in self.low(x)]
            return [
                (poly.add(p, poly.constant((k - 1) * d)), d * k)
                for p, d in self.high(x)
            ]
        if not (self.positive(b) and self.nonnegative(x)):
            return []
        return [(poly.constant(0), 1)] if lower else self.high(x)

    def _common_lower(self, args: Sequence[Expr]) -> list[Bound]:
        """Lower bounds of one argument that are at most every other one."""
        found = []
        for index, arg in enumerate(args):
            for candidate in self.low(arg):
                if all(
                    any(_ge(other, candidate) for other in self.low(o))
                    for j, o in enumerate(args)
                    if j != index
                ):
                    found.append(candidate)
        return found


def _dedupe(bounds: list[Bound]) -> list[Bound]:
    seen, kept = set(), []
    for numerator, denominator in bounds:
        key = (tuple(sorted(numerator.items())), denominator)
        if key not in seen:
            seen.add(key)
            kept.append((numerator, denominator))
    return kept


def _nonneg(bound: Bound) -> bool:
    return poly.is_nonnegative(bound[0], {})


def _ge(a: Bound, b: Bound) -> bool:
    """``a >= b`` for all positive symbols."""
    (pa, da), (pb, db) = a, b
    return poly.is_nonnegative(
        poly.subtract(poly.scale(pa, db), poly.scale(pb, da)), {}
    )


def _shift(bound: Bound, amount: int) -> Bound:
    p, d = bound
    return poly.add(p, poly.constant(amount * d)), d


def _scale(bound: Bound, factor: int) -> Bound:
    return poly.scale(bound[0], factor), bound[1]


def _negate(bounds: list[Bound]) -> list[Bound]:
    return [_scale(b, -1) for b in bounds]


def _sums(parts: list[list[Bound]]) -> list[Bound]:
    totals: list[Bound] = [({}, 1)]
    for part in parts:
        if not part:
            return []
        totals = [
            (poly.add(poly.scale(p, e), poly.scale(q, d)), d * e)
            if d != e
            else (poly.add(p, q), d)
            for (p, d), (q, e) in itertools.islice(
                itertools.product(totals, part), _CAP
            )
        ]
    return totals


def _products(parts: list[list[Bound]]) -> list[Bound]:
    totals: list[Bound] = [({(): 1}, 1)]
    for part in parts:
        if not part:
            return []
        try:
            totals = [
                (poly.multiply(p, q), d * e)
                for (p, d), (q, e) in itertools.islice(
                    itertools.product(totals, part), _CAP
                )
            ]
        except poly.TooLarge:
            return []
    return totals


# ---- the two questions ---------------------------------------------------------


def proves(value: Expr, goals: Sequence[Expr], splits: int = _SPLITS) -> bool:
    """``value >= goal`` for some goal, for all positive symbols (a proof)."""
    atoms = Atoms()
    bounder = _Bounder(atoms)
    goal_polys = [bounder.exact(g) for g in goals]
    goal_polys = [g for g in goal_polys if g is not None]
    if not goal_polys:
        return False
    return _proves(value, goal_polys, atoms, splits)


def _proves(value: Expr, goals: list[Poly], atoms: Atoms, splits: int) -> bool:
    bounder = _Bounder(atoms)
    tokens = {
        atoms.of(TOKENS_KEY): poly.add(
            poly.variable(atoms.of(COUNT_KEY)), poly.variable(atoms.of("slack"))
        )
    }
    least = {atoms.of("slack"): 0}
    for numerator, denominator in bounder.low(value):
        for goal in goals:
            difference = poly.subtract(numerator, poly.scale(goal, denominator))
            try:
                difference = poly.substitute(difference, tokens)
            except poly.TooLarge:
                continue
            if poly.is_nonnegative(difference, least):
                return True
    choice = _choice(value) if splits else None
    if choice is None:
        return False
    options = choice.args if choice.kind in ("min", "max") else choice.args[:2]
    return all(
        _proves(replace(value, {choice: option}), goals, atoms, splits - 1)
        for option in options
    )


def _choice(expr: Expr) -> Op | None:
    """The first ``min``/``max``/``or`` in ``expr``, outermost first."""
    stack = [expr]
    while stack:
        node = stack.pop(0)
        if isinstance(node, Op):
            if node.kind in ("min", "max", "or"):
                return node
            stack.extend(node.args)
    return None


def evaluable(expr: Expr) -> bool:
    """Has ``expr`` a value for every binding of its symbols? Not where it
    holds an opaque symbol or a ``None`` test."""
    return not any(s.opaque for s in symbols(expr)) and not tests_none(expr)


_SMALL = (1, 2, 3)
_LARGE = (4, 5, 7, 16, 100, 4097)
_MAX_POINTS = 3000


def bindings(keys: Sequence[str]) -> Iterator[dict[str, int]]:
    """Positive bindings of ``keys``, the small ones first (a missing factor
    shows at 2), then one or two symbols large; tokens never below the count."""
    keys = list(keys)
    seen: set[tuple[int, ...]] = set()

    def points() -> Iterator[tuple[int, ...]]:
        yield (1,) * len(keys)
        for index in range(len(keys)):
            for value in (*_SMALL[1:], *_LARGE):
                point = [1] * len(keys)
                point[index] = value
                yield tuple(point)
        if len(keys) <= 6:
            yield from itertools.product(_SMALL, repeat=len(keys))
        for i, j in itertools.combinations(range(len(keys)), 2):
            for a, b in itertools.product(_LARGE, repeat=2):
                point = [2] * len(keys)
                point[i], point[j] = a, b
                yield tuple(point)

    count = 0
    for point in points():
        if point in seen:
            continue
        seen.add(point)
        binding = dict(zip(keys, point, strict=True))
        if binding.get(TOKENS_KEY, 1 << 60) < binding.get(COUNT_KEY, 0):
            binding[TOKENS_KEY] = binding[COUNT_KEY]
        yield binding
        count += 1
        if count >= _MAX_POINTS:
            return


def find_witness(
    value: Expr, goal: Expr, conditions: Iterable[tuple[Expr, bool]] = ()
) -> dict[str, int] | None:
    """A positive binding where ``value < goal`` and every evaluable condition
    has its polarity; None when none is found (or the value is opaque)."""
    conditions = list(conditions)
    parts = [value, goal, *(c for c, _ in conditions)]
    if not all(evaluable(p) for p in parts):
        return None
    keys = sorted({s.key for p in parts for s in symbols(p)})
    for binding in bindings(keys):
        try:
            if not all(holds(c, binding) == want for c, want in conditions):
                continue
            if evaluate(value, binding) < evaluate(goal, binding):
                return binding
        except Undefined:
            continue
    return None


def values_of(binding: Mapping[str, int], syms: Iterable[Sym]) -> list[tuple[str, int]]:
    """``(text, value)`` for the symbols a binding sets, each key once."""
    shown, seen = [], set()
    for sym in syms:
        if sym.key in binding and sym.key not in seen:
            seen.add(sym.key)
            shown.append((sym.text, binding[sym.key]))
    return shown
