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

from lint_plugin.algebra import polynomial
from lint_plugin.algebra.helpers import HELPER_SLOTS, HELPER_TERMS
from lint_plugin.algebra.polynomial import Poly

# Helper -> its parameters and its formula as sums of products of parameter
# indices, as the matching engine (formulas.py) defines them.
HELPER_FORMULAS: Mapping[str, tuple[tuple[str, ...], tuple[tuple[int, ...], ...]]] = {
    helper: (tuple(name for name, _ in slots), HELPER_TERMS[helper])
    for helper, slots in HELPER_SLOTS.items()
}

# What an atom is made of when reading it can neither have an effect nor see one
# but through what it reads: names, attributes, subscripts, constants, displays,
# operators. Anything else (a call, an assignment expression, a comprehension,
# ``await``/``yield``) may have an effect.
_PURE = frozenset(
    {
        "Name",
        "Attribute",
        "Subscript",
        "Slice",
        "Constant",
        "Tuple",
        "List",
        "Set",
        "Dict",
        "BinOp",
        "UnaryOp",
        "BoolOp",
        "Compare",
        "IfExp",
        "Starred",
        "JoinedStr",
        "FormattedValue",
        "Lambda",
        "arguments",
        "arg",
        "keyword",
    }
)
_PURE_BASES = (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
# Fields whose text, not value, is what a program keeps: annotations (strings
# under ``from __future__ import annotations``, and read back as text by tools
# such as ``typing.get_type_hints`` and PEP 649's STRING format).
_LITERAL_FIELDS = frozenset({"annotation", "returns"})

Trace = tuple  # (pure atoms, effect, pure atoms, effect, ..., pure atoms)


class _Sum:
    """A polynomial, and the order its atoms are evaluated in when that matters
    (``trace`` is None while no atom in it may have an effect)."""

    __slots__ = ("terms", "trace")

    def __init__(self, terms: Poly, trace: Trace | None = None) -> None:
        self.terms = terms
        self.trace = trace


class Canonicalizer:
    """Canonical ids for nodes; one instance must serve both sides of a comparison
    (equal structures get equal ids from the same table).

    ``resolve(call)`` names the helper a call provably calls (None: it is an
    ordinary call); without it a call is a helper's by its bare name, as in an
    expression seen alone (:mod:`lint_plugin.fix.gate.oracle`).

    Evaluation order is part of the form: where an atom may have an effect (a
    call, a walrus), the atoms read before it, it, and the atoms read after it
    are kept in that order, so ``f() + x`` and ``x + f()`` differ while ``x + y``
    and ``y + x`` do not."""

    def __init__(
        self,
        expand_helpers: bool = True,
        resolve: Callable[[ast.Call], str | None] | None = None,
    ) -> None:
        self._ids: dict[tuple, int] = {}
        self._effects: set[int] = set()  # ids of atoms that may have an effect
        self.expand_helpers = expand_helpers
        self.resolve = resolve

    def _intern(self, key: tuple) -> int:
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self._ids)
        return found

    def canonical(self, root: object) -> int:
        """The canonical id of ``root`` (an ``ast`` node, list or plain value)."""
        # Post-order on an explicit stack: each entry is (node, literal, children
        # or None, combine). ``literal``: compared as written (an annotation).
        results: list[object] = []  # an id (int) or a _Sum
        stack: list[tuple[object, bool, list | None, Callable | None]] = [
            (root, False, None, None)
        ]
        while stack:
            node, literal, children, combine = stack.pop()
            if children is not None:
                args = results[len(results) - len(children) :]
                del results[len(results) - len(children) :]
                results.append(combine(node, args))
                continue
            arith = None if literal else self._arith(node)
            if arith is not None:
                kids, combine = arith
                flags = [False] * len(kids or ())
            else:
                kids, flags, combine = self._generic(node, literal)
            if kids is None:
                results.append(combine(node, []))
                continue
            stack.append((node, literal, kids, combine))
            for kid, flag in zip(reversed(kids), reversed(flags), strict=True):
                stack.append((kid, flag, None, None))
        (result,) = results
        return self._as_id(result)

    # ---- arithmetic --------------------------------------------------------

    def _arith(self, node: object):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return None, lambda n, a: _Sum({(): n.value} if n.value else {})
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            operator = type(node.op)
            return [node.left, node.right], lambda n, a: self._binop(operator, a)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            sign = -1 if isinstance(node.op, ast.USub) else 1
            return [node.operand], lambda n, a: self._negated(a[0], sign)
        if self.expand_helpers and isinstance(node, ast.Call):
            if self.resolve is not None:
                helper = self.resolve(node)
                arguments = None if helper is None else helper_arguments(node, helper)
            else:
                arguments = helper_arguments(node)
            if arguments is not None:
                name, values = arguments
                terms = HELPER_FORMULAS[name][1]
                # Arguments are evaluated as written: positional, then keywords.
                order = [*node.args, *(k.value for k in node.keywords)]
                slots = [next(i for i, o in enumerate(order) if o is v) for v in values]
                return order, lambda n, a: self._formula(name, terms, a, slots)
        return None

    def _negated(self, result: object, sign: int) -> _Sum:
        return _Sum(
            polynomial.scale(self._as_poly(result) or {}, sign), self._trace(result)
        )

    def _binop(self, operator: type, args: Sequence[object]) -> object:
        left, right = (self._as_poly(a) for a in args)
        if left is None or right is None:
            return self._fallback(operator, args)
        trace = self._joined(args)
        if operator is ast.Add:
            return _Sum(polynomial.add(left, right), trace)
        if operator is ast.Sub:
            return _Sum(polynomial.subtract(left, right), trace)
        try:
            return _Sum(polynomial.multiply(left, right), trace)
        except polynomial.TooLarge:
            return self._fallback(operator, args)

    def _formula(
        self, name: str, terms, args: Sequence[object], slots: Sequence[int]
    ) -> object:
        polys = [self._as_poly(args[slot]) for slot in slots]
        if any(p is None for p in polys):
            return self._generic_id(name, args)
        total: Poly = {}
        try:
            for indices in terms:
                product: Poly = {(): 1}
                for index in indices:
                    product = polynomial.multiply(product, polys[index])
                total = polynomial.add(total, product)
        except polynomial.TooLarge:
            return self._generic_id(name, args)
        return _Sum(total, self._joined(args))

    def _fallback(self, operator: type, args: Sequence[object]) -> int:
        found = self._intern(("BinOp", operator.__name__, *map(self._as_id, args)))
        if self._trace_id(self._joined(args)) is not None:
            self._effects.add(found)
        return found

    def _generic_id(self, name: str, args: Sequence[object]) -> int:
        found = self._intern(("helper", name, *map(self._as_id, args)))
        if self._joined(args) is not None:
            self._effects.add(found)
        return found

    # ---- evaluation order -----------------------------------------------------

    def _trace(self, result: object) -> Trace | None:
        if isinstance(result, _Sum):
            return result.trace
        if result in self._effects:
            return (frozenset(), result, frozenset())
        return None

    def _joined(self, results: Sequence[object]) -> Trace | None:
        """The trace of evaluating ``results`` in order (None: no effects)."""
        traces = [self._trace(r) for r in results]
        if all(t is None for t in traces):
            return None
        joined: Trace = (frozenset(),)
        for result, trace in zip(results, traces, strict=True):
            if trace is None:
                trace = (frozenset(polynomial.atoms(self._as_poly(result))),)
            joined = (*joined[:-1], joined[-1] | trace[0], *trace[1:])
        return joined

    def _trace_id(self, trace: Trace | None) -> tuple | None:
        if trace is None:
            return None
        return tuple(p if isinstance(p, int) else tuple(sorted(p)) for p in trace)

    # ---- everything else ---------------------------------------------------

    def _generic(self, node: object, literal: bool):
        if isinstance(node, ast.AST):
            names = node._fields
            fields = [getattr(node, f, None) for f in names]
            flags = [literal or f in _LITERAL_FIELDS for f in names]
            kind = type(node).__name__
            pure = kind in _PURE or isinstance(node, _PURE_BASES)
            return fields, flags, lambda n, a: self._node_id((kind, names), a, pure)
        if isinstance(node, list):
            items = list(node)
            return (
                items,
                [literal] * len(items),
                lambda n, a: self._node_id(("list",), a, True),
            )
        # A plain value: its type and repr (1, 1.0 and True must differ).
        key = ("value", type(node).__name__, repr(node))
        return None, [], lambda n, a: self._intern(key)

    def _node_id(self, head: tuple, children: Sequence[object], pure: bool) -> int:
        ids = [self._as_id(child) for child in children]
        found = self._intern((*head, *ids))
        if not pure or any(i in self._effects for i in ids):
            self._effects.add(found)
        return found

    def _as_poly(self, result: object) -> Poly | None:
        if isinstance(result, _Sum):
            return result.terms
        return {(result,): 1}  # an atom (its id)

    def _as_id(self, result: object) -> int:
        if isinstance(result, _Sum):
            terms = result.terms
            if len(terms) == 1:
                ((monomial, coefficient),) = terms.items()
                if coefficient == 1 and len(monomial) == 1:
                    atom = monomial[0]  # `x + 0` is `x`
                    if result.trace is None or result.trace == self._trace(atom):
                        return atom
            order = self._trace_id(result.trace)
            if order is None:
                return self._intern(("poly", *sorted(terms.items())))
            found = self._intern(("poly", *sorted(terms.items()), ("order", *order)))
            self._effects.add(found)
            return found
        return result  # type: ignore[return-value]


_BINOPS = (ast.Add, ast.Sub, ast.Mult)


def helper_arguments(
    node: ast.Call, helper: str | None = None
) -> tuple[str, list[ast.expr]] | None:
    """``(helper, argument nodes in parameter order)`` for a readable call of
    ``helper`` (by default: the helper its bare name says), else None."""
    if helper is None:
        func = node.func
        if not isinstance(func, ast.Name) or func.id not in HELPER_FORMULAS:
            return None
        helper = func.id
    params = HELPER_FORMULAS[helper][0]
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
    return helper, [values[p] for p in params]
