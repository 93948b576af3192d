"""Integer expressions of sympy evaluated exactly over numpy arrays.

sympy's own ``lambdify`` prints and compiles a function per expression (milliseconds
each); the proof evaluates thousands of small expressions once each, so it walks
them instead. Floors divide integers (``floor(N/D)`` is ``N // D``), nothing goes
through floating point.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable

import numpy
import sympy as sp


class NotEvaluable(ValueError):
    """An expression the evaluator cannot take (a fraction, an unknown symbol)."""


def evaluate(expr: sp.Basic, env: dict) -> numpy.ndarray | int | bool:
    """``expr`` over integers (numpy arrays broadcast), exactly."""
    return compiled(expr)(env)


@functools.lru_cache(maxsize=4096)
def compiled(expr: sp.Basic) -> Callable[[dict], object]:
    """``expr`` as a closure over an environment: the tree is walked once."""
    if expr is sp.true:
        return lambda env: True
    if expr is sp.false:
        return lambda env: False
    if isinstance(expr, sp.Symbol):

        def lookup(env: dict, name: sp.Symbol = expr) -> object:
            if name not in env:
                raise NotEvaluable(f"no value for {name}")
            return env[name]

        return lookup
    if expr.is_Integer:
        value = int(expr)
        return lambda env: value
    if expr.is_Rational:
        raise NotEvaluable(f"a fraction {expr} outside a floor")
    if isinstance(expr, sp.floor | sp.ceiling):
        num, den = (compiled(e) for e in sp.fraction(sp.together(expr.args[0])))
        if isinstance(expr, sp.floor):
            return lambda env: numpy.floor_divide(num(env), den(env))
        return lambda env: -numpy.floor_divide(-num(env), den(env))
    if isinstance(expr, sp.Pow):
        if not (expr.exp.is_Integer and expr.exp >= 0):
            raise NotEvaluable(f"a power {expr}")
        base, exp = compiled(expr.base), int(expr.exp)
        return lambda env: base(env) ** exp
    if isinstance(expr, sp.Piecewise):
        pieces = [(compiled(v), compiled(c)) for v, c in expr.args]

        def piecewise(env: dict) -> object:
            result = None
            for value, cond in reversed(pieces):
                v = value(env)
                result = v if result is None else numpy.where(cond(env), v, result)
            return result

        return piecewise
    if isinstance(expr, sp.Not):
        inner = compiled(expr.args[0])
        return lambda env: numpy.logical_not(inner(env))
    fold = _FOLDS.get(type(expr))
    if fold is None:
        for kind, fn in _FOLDS.items():
            if isinstance(expr, kind):
                fold = fn
                break
    if fold is None:
        raise NotEvaluable(f"cannot evaluate {expr}")
    parts = [compiled(a) for a in expr.args]

    def folded(env: dict) -> object:
        result = parts[0](env)
        for part in parts[1:]:
            result = fold(result, part(env))
        return result

    return folded


_FOLDS: dict = {
    sp.Add: operator.add,
    sp.Mul: operator.mul,
    sp.Mod: numpy.mod,
    sp.Min: numpy.minimum,
    sp.Max: numpy.maximum,
    sp.StrictLessThan: numpy.less,
    sp.LessThan: numpy.less_equal,
    sp.StrictGreaterThan: numpy.greater,
    sp.GreaterThan: numpy.greater_equal,
    sp.Eq: numpy.equal,
    sp.Ne: numpy.not_equal,
    sp.And: numpy.logical_and,
    sp.Or: numpy.logical_or,
}
