"""A neutral tree of the arithmetic subset, built from ``ast`` or libcst nodes.

Sums and products are flattened (associativity), their operands kept unordered for
matching (commutativity); parentheses, line breaks and comments are gone because
neither parser's node types carry them into this tree. Every node keeps the parser
node it came from, so a front end can point at it or take its source text.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping

from lint_plugin.records import record
from lint_plugin.roles import Role, role_of_name


@record(frozen=True, eq=False)
class Leaf:
    node: object
    name: str | None = None  # last segment of a dotted name
    value: int | None = None  # integer literal
    role: Role | None = None


@record(frozen=True, eq=False)
class Term:
    negative: bool
    expr: Expr


@record(frozen=True, eq=False)
class Sum:
    node: object
    terms: tuple[Term, ...]


@record(frozen=True, eq=False)
class Product:
    node: object
    factors: tuple[Expr, ...]


Expr = Leaf | Sum | Product


@record(frozen=True)
class Adapter:
    """How to read one parser's nodes.

    ``binop`` returns ``(op, left, right)`` with op one of ``+ - *`` or None;
    ``name`` returns the last segment of a name or attribute chain or None;
    ``integer`` returns an integer literal's value or None.
    """

    binop: Callable[[object], tuple[str, object, object] | None]
    name: Callable[[object], str | None]
    integer: Callable[[object], int | None]


def subexpressions(expr: Expr) -> Iterator[Sum | Product]:
    """``expr`` and the sums and products inside it, outermost first (a sum's
    terms and a product's factors, in order; a leaf holds none)."""
    if isinstance(expr, Sum):
        yield expr
        for term in expr.terms:
            yield from subexpressions(term.expr)
    elif isinstance(expr, Product):
        yield expr
        for factor in expr.factors:
            yield from subexpressions(factor)


def build(node: object, adapter: Adapter, aliases: Mapping[str, Role] = {}) -> Expr:
    """Flatten ``node`` into the neutral tree; ``aliases`` gives roles to locals."""
    parts = adapter.binop(node)
    if parts is None:
        name = adapter.name(node)
        return Leaf(node, name, adapter.integer(node), name_role(name, aliases))
    op = parts[0]
    if op == "*":
        factors: list[Expr] = []
        _collect_factors(node, adapter, aliases, factors)
        return Product(node, tuple(factors))
    terms: list[Term] = []
    _collect_terms(node, adapter, aliases, False, terms)
    return Sum(node, tuple(terms))


def name_role(name: str | None, aliases: Mapping[str, Role] = {}) -> Role | None:
    """The role a ``Leaf`` of ``name`` gets: its own, else a local alias's. A
    sum or a product has no name, so no role: ``name_role(adapter.name(node))``
    is the role of ``build(node)`` when that is a leaf, without building it."""
    role = role_of_name(name)
    if role is None and name is not None:
        role = aliases.get(name)
    return role


def _collect_factors(node, adapter, aliases, out) -> None:
    # An explicit stack: a 1000-factor product must not cost 1000 Python frames.
    pending = [node]
    while pending:
        current = pending.pop()
        parts = adapter.binop(current)
        if parts is not None and parts[0] == "*":
            pending += (parts[2], parts[1])  # left first, source order kept
        else:
            out.append(build(current, adapter, aliases))


def _collect_terms(node, adapter, aliases, negative, out) -> None:
    pending = [(node, negative)]
    while pending:
        current, sign = pending.pop()
        parts = adapter.binop(current)
        if parts is not None and parts[0] in "+-":
            right_negative = sign != (parts[0] == "-")
            pending += ((parts[2], right_negative), (parts[1], sign))
        else:
            out.append(Term(sign, build(current, adapter, aliases)))


def is_arith(node: object, adapter: Adapter) -> bool:
    return adapter.binop(node) is not None


# ---- the ast adapter -------------------------------------------------------

_AST_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}
# The operator types ``AST.binop`` reads (the walk checks them by type).
AST_OPERATORS = frozenset(_AST_OPS)


def _ast_binop(node: object) -> tuple[str, object, object] | None:
    if isinstance(node, ast.BinOp):
        op = _AST_OPS.get(type(node.op))
        if op is not None:
            return op, node.left, node.right
    return None


def _ast_name(node: object) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _ast_integer(node: object) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


AST = Adapter(_ast_binop, _ast_name, _ast_integer)
