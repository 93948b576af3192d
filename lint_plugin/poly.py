"""Exact equality of Python code over the integers: canonical polynomial forms.

Every ``+``, ``-`` and ``*`` (and unary ``-``/``+``) is read as integer arithmetic
and multiplied out into a polynomial whose variables are the non-arithmetic
sub-expressions (names, attributes, calls, subscripts...); a call of one of the two
helpers is expanded into its formula. Two polynomials with integer coefficients are
equal as functions of integer variables exactly when their canonical forms are
equal, so comparing forms is a proof, not a sample.

Everything else is compared by structure (node types and fields, positions and
comments aside), with the arithmetic inside it in canonical form: so a whole module
can be compared with another, which is what the ``fix`` gate does.

The walk is iterative: a 10,000-term sum or a 1,000-deep attribute chain costs
memory, not Python stack. Nothing is imported, executed or ``eval``-ed.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence

from lint_plugin.formulas import HELPER_SLOTS, HELPER_TERMS

# Helper -> its parameters and its formula as sums of products of parameter
# indices, as the matching engine (formulas.py) defines them.
HELPER_FORMULAS: Mapping[str, tuple[tuple[str, ...], tuple[tuple[int, ...], ...]]] = {
    helper: (tuple(name for name, _ in slots), HELPER_TERMS[helper])
    for helper, slots in HELPER_SLOTS.items()
}

# A product of sums can multiply out exponentially; past this many monomials the
# expression is compared by structure instead (equal only if spelled the same).
MAX_MONOMIALS = 4096

Poly = dict[tuple[int, ...], int]  # sorted atom ids -> coefficient


class _TooLarge(Exception):
    pass


class Canonicalizer:
    """Canonical ids for nodes; one instance must serve both sides of a comparison
    (equal structures get equal ids from the same table)."""

    def __init__(self, expand_helpers: bool = True) -> None:
        self._ids: dict[tuple, int] = {}
        self.expand_helpers = expand_helpers

    def _intern(self, key: tuple) -> int:
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self._ids)
        return found

    def canonical(self, root: object) -> int:
        """The canonical id of ``root`` (an ``ast`` node, list or plain value)."""
        # Post-order on an explicit stack: each entry is (node, children or None).
        results: list[object] = []  # an id (int) or a Poly (dict)
        stack: list[tuple[object, list | None, Callable | None]] = [(root, None, None)]
        while stack:
            node, children, combine = stack.pop()
            if children is not None:
                args = results[len(results) - len(children) :]
                del results[len(results) - len(children) :]
                results.append(combine(node, args))
                continue
            arith = self._arith(node)
            if arith is not None:
                kids, combine = arith
            else:
                kids, combine = self._generic(node)
            if kids is None:
                results.append(combine(node, []))
                continue
            stack.append((node, kids, combine))
            for kid in reversed(kids):
                stack.append((kid, None, None))
        (result,) = results
        return self._as_id(result)

    # ---- arithmetic --------------------------------------------------------

    def _arith(self, node: object):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return None, lambda n, a: {(): n.value} if n.value else {}
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            operator = type(node.op)
            return [node.left, node.right], lambda n, a: self._binop(operator, a)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            sign = -1 if isinstance(node.op, ast.USub) else 1
            return [node.operand], lambda n, a: _scale(self._as_poly(a[0]), sign)
        if self.expand_helpers and isinstance(node, ast.Call):
            arguments = helper_arguments(node)
            if arguments is not None:
                name, values = arguments
                terms = HELPER_FORMULAS[name][1]
                return values, lambda n, a: self._formula(terms, a, n)
        return None

    def _binop(self, operator: type, args: Sequence[object]) -> object:
        left, right = (self._as_poly(a) for a in args)
        if left is None or right is None:
            return self._fallback(operator, args)
        if operator is ast.Add:
            return _add(left, right, 1)
        if operator is ast.Sub:
            return _add(left, right, -1)
        try:
            return _multiply(left, right)
        except _TooLarge:
            return self._fallback(operator, args)

    def _formula(self, terms, args: Sequence[object], node: ast.Call) -> object:
        polys = [self._as_poly(a) for a in args]
        if any(p is None for p in polys):
            return self._generic_id(node, args)
        total: Poly = {}
        try:
            for indices in terms:
                product: Poly = {(): 1}
                for index in indices:
                    product = _multiply(product, polys[index])
                total = _add(total, product, 1)
        except _TooLarge:
            return self._generic_id(node, args)
        return total

    def _fallback(self, operator: type, args: Sequence[object]) -> int:
        return self._intern(("BinOp", operator.__name__, *map(self._as_id, args)))

    def _generic_id(self, node: ast.Call, args: Sequence[object]) -> int:
        name = node.func.id  # type: ignore[attr-defined]
        return self._intern(("helper", name, *map(self._as_id, args)))

    # ---- everything else ---------------------------------------------------

    def _generic(self, node: object):
        if isinstance(node, ast.AST):
            fields = [getattr(node, f, None) for f in node._fields]
            kind = type(node).__name__
            names = node._fields
            return fields, lambda n, a: self._intern(
                (kind, names, *map(self._as_id, a))
            )
        if isinstance(node, list):
            return list(node), lambda n, a: self._intern(("list", *map(self._as_id, a)))
        # A plain value: its type and repr (1, 1.0 and True must differ).
        key = ("value", type(node).__name__, repr(node))
        return None, lambda n, a: self._intern(key)

    def _as_poly(self, result: object) -> Poly | None:
        if isinstance(result, dict):
            return result
        return {(result,): 1}  # an atom (its id)

    def _as_id(self, result: object) -> int:
        if isinstance(result, dict):
            if len(result) == 1:
                ((monomial, coefficient),) = result.items()
                if coefficient == 1 and len(monomial) == 1:
                    return monomial[0]  # `x + 0` is `x`
            return self._intern(("poly", *sorted(result.items())))
        return result  # type: ignore[return-value]


_BINOPS = (ast.Add, ast.Sub, ast.Mult)


def _accumulate(total: Poly, monomial: tuple[int, ...], coefficient: int) -> None:
    """Add a term, dropping a monomial whose coefficient cancels to zero."""
    value = total.get(monomial, 0) + coefficient
    if value:
        total[monomial] = value
    else:
        total.pop(monomial, None)


def _add(left: Poly, right: Poly, sign: int) -> Poly:
    total = dict(left)
    for monomial, coefficient in right.items():
        _accumulate(total, monomial, sign * coefficient)
    return total


def _scale(poly: Poly | None, factor: int) -> Poly:
    return {m: c * factor for m, c in (poly or {}).items()}


def _multiply(left: Poly, right: Poly) -> Poly:
    if len(left) * len(right) > MAX_MONOMIALS:
        raise _TooLarge
    total: Poly = {}
    for m1, c1 in left.items():
        for m2, c2 in right.items():
            _accumulate(total, tuple(sorted(m1 + m2)), c1 * c2)
    return total


def helper_arguments(node: ast.Call) -> tuple[str, list[ast.expr]] | None:
    """``(helper, argument nodes in parameter order)`` for a readable call of a
    helper by its bare name, else None."""
    func = node.func
    if not isinstance(func, ast.Name) or func.id not in HELPER_FORMULAS:
        return None
    params = HELPER_FORMULAS[func.id][0]
    if len(node.args) > len(params) or any(
        isinstance(a, ast.Starred) for a in node.args
    ):
        return None
    values: dict[str, ast.expr] = dict(zip(params, node.args, strict=False))
    for keyword in node.keywords:
        if keyword.arg not in params or keyword.arg in values:
            return None
        values[keyword.arg] = keyword.value
    if len(values) != len(params):
        return None
    return func.id, [values[p] for p in params]


def expression_form(text: str, canon: Canonicalizer) -> int:
    """The canonical id of one expression's text (raises SyntaxError)."""
    # Parenthesised, a span that crosses lines or holds comments parses alone.
    tree = ast.parse(f"(\n{text}\n)", mode="eval")
    return canon.canonical(tree.body)


# ---- polynomials as values -------------------------------------------------
# The width analysis (:mod:`lint_plugin.bounds`) reads the same polynomials as
# bounds on a value: atoms are its symbols' ids, and a polynomial is known to be
# non-negative for all positive symbols when shifting each symbol to its least
# value leaves no negative coefficient.

TooLarge = _TooLarge  # raised by ``multiply`` past MAX_MONOMIALS


def constant(value: int) -> Poly:
    return {(): value} if value else {}


def variable(atom: int) -> Poly:
    return {(atom,): 1}


def add(left: Poly, right: Poly) -> Poly:
    return _add(left, right, 1)


def subtract(left: Poly, right: Poly) -> Poly:
    return _add(left, right, -1)


def multiply(left: Poly, right: Poly) -> Poly:
    """``left * right``; raises ``TooLarge`` past ``MAX_MONOMIALS`` terms."""
    return _multiply(left, right)


def scale(poly: Poly, factor: int) -> Poly:
    return {m: c * factor for m, c in poly.items() if c * factor}


def substitute(poly: Poly, values: Mapping[int, Poly]) -> Poly:
    """``poly`` with each atom in ``values`` replaced by its polynomial."""
    total: Poly = {}
    for monomial, coefficient in poly.items():
        product: Poly = {(): coefficient}
        kept: list[int] = []
        for atom in monomial:
            if atom in values:
                product = _multiply(product, values[atom])
            else:
                kept.append(atom)
        if kept:
            product = _multiply(product, {tuple(kept): 1})
        total = _add(total, product, 1)
    return total


def is_nonnegative(poly: Poly, least: Mapping[int, int]) -> bool:
    """A sufficient test that ``poly >= 0`` wherever each atom ``a`` is an integer
    of at least ``least[a]`` (1 when not given): written in ``a - least[a] >= 0``
    instead of ``a``, no coefficient is negative."""
    atoms = {atom for monomial in poly for atom in monomial}
    shifted = substitute(
        poly, {a: _add({(a,): 1}, constant(least.get(a, 1)), 1) for a in atoms}
    )
    return all(coefficient >= 0 for coefficient in shifted.values())


def evaluate(poly: Poly, values: Mapping[int, int]) -> int:
    total = 0
    for monomial, coefficient in poly.items():
        term = coefficient
        for atom in monomial:
            term *= values[atom]
        total += term
    return total
