"""The abstract values of the width analysis: integer expressions over symbols.

A symbol is a positive integer the analysis cannot pin down: a role (``topk``, a
sequence count, a context size, ...), a name of no known role (``page_size``),
or an *opaque* value (a call it cannot read, a subscript). Every name of a role is
the same symbol (``self.topk`` and a ``topk`` parameter are the class's topk).
Operators are kept as written (``max``, ``//``, rounding up), so a value can be
evaluated exactly for any binding of its symbols (:func:`evaluate`, as Python
would compute it) and bounded soundly (:mod:`lint_plugin.engine.flow.bounds`).

Nothing here reads source code: :mod:`lint_plugin.engine.flow.widths` builds these
values from ``ast`` nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from lint_plugin.algebra.arith import Adapter
from lint_plugin.algebra.helpers import HELPER_TERMS
from lint_plugin.roles import Role


class Expr:
    """An immutable expression; equal when built the same way."""

    __slots__ = ("_hash", "_key")

    def __init__(self, key: tuple) -> None:
        self._key = key
        self._hash = hash(key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expr) and self._key == other._key

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"<{render(self)}>"


class Const(Expr):
    __slots__ = ("value",)

    def __init__(self, value: int) -> None:
        self.value = value
        super().__init__(("const", value))


class Sym(Expr):
    """``key`` names the symbol: ``role:topk``, ``free:self.page_size``,
    ``opaque:...``; ``text`` is how the source spelled it (for messages)."""

    __slots__ = ("key", "opaque", "role", "text")

    def __init__(
        self, key: str, text: str, role: Role | None = None, opaque: bool = False
    ) -> None:
        self.key = key
        self.role = role
        self.text = text
        self.opaque = opaque
        super().__init__(("sym", key))


class Op(Expr):
    """``kind`` is one of ``KINDS``; ``info`` a comparison's operator or a
    helper's name."""

    __slots__ = ("args", "info", "kind")

    def __init__(self, kind: str, args: tuple[Expr, ...], info: str = "") -> None:
        self.kind = kind
        self.args = args
        self.info = info
        super().__init__((kind, info, args))


class Tup(Expr):
    """A tuple or list of values (a shape)."""

    __slots__ = ("items",)

    def __init__(self, items: tuple[Expr, ...]) -> None:
        self.items = items
        super().__init__(("tuple", items))


# Integer operators: "+" and "*" take any number of arguments, the rest as
# Python does; "cdiv" is rounding-up division, "np2" the next power of two,
# "helper" one of the two helpers (``info``), read as its formula.
INTEGER_KINDS = frozenset(
    {"+", "*", "-", "neg", "//", "%", "pow", "max", "min", "cdiv", "or", "np2", "abs"}
    | {"helper"}
)
# Conditions: "cmp" (``info`` the operator), "not", "and", "bor", "truth", and
# "none": a size ``is None`` (``info`` its spelling), which no binding of
# numbers decides (:func:`holds` raises :class:`Undefined`).
CONDITION_KINDS = frozenset({"cmp", "not", "and", "bor", "truth", "none"})


def role_symbol(role: Role, text: str) -> Sym:
    return Sym(f"role:{role.value}", text, role)


def free_symbol(text: str) -> Sym:
    return Sym(f"free:{text}", text)


def opaque_symbol(text: str, where: str = "") -> Sym:
    return Sym(f"opaque:{text}@{where}", text, opaque=True)


def add(*args: Expr) -> Expr:
    return _flat("+", args)


def mul(*args: Expr) -> Expr:
    return _flat("*", args)


def _flat(kind: str, args: tuple[Expr, ...]) -> Expr:
    parts: list[Expr] = []
    for arg in args:
        if isinstance(arg, Op) and arg.kind == kind:
            parts += arg.args
        else:
            parts.append(arg)
    # Constants folded together, kept last: `2 * w * 3` reads `w * 6`.
    neutral = 0 if kind == "+" else 1
    folded = neutral
    others = []
    for part in parts:
        if isinstance(part, Const):
            folded = folded + part.value if kind == "+" else folded * part.value
        else:
            others.append(part)
    if kind == "*" and folded == 0:
        return Const(0)
    if folded != neutral or not others:
        others.append(Const(folded))
    return others[0] if len(others) == 1 else Op(kind, tuple(others))


def op(kind: str, *args: Expr, info: str = "") -> Expr:
    """An operation, in a normal form: sums and products flattened, constants
    folded, rounding up in any of its spellings read as ``cdiv``."""
    if kind == "+":
        return add(*args)
    if kind == "*":
        return mul(*args)
    if kind == "-" and isinstance(args[1], Const):
        return add(args[0], Const(-args[1].value))
    if kind == "neg" and isinstance(args[0], Op):
        inner = args[0]
        if inner.kind == "neg":
            return inner.args[0]
        numerator = inner.args[0] if inner.kind == "//" else None
        if isinstance(numerator, Op) and numerator.kind == "neg":  # -(-x // b)
            return op("cdiv", numerator.args[0], inner.args[1])
    if kind == "//":
        rounded = _round_up(args[0], args[1])
        if rounded is not None:
            return rounded
    if all(isinstance(a, Const) for a in args) and kind in INTEGER_KINDS - {"helper"}:
        try:
            return Const(_apply(kind, [a.value for a in args]))  # type: ignore[attr-defined]
        except Undefined:
            pass
    return Op(kind, tuple(args), info)


def _round_up(total: Expr, divisor: Expr) -> Expr | None:
    """``(x + b - 1) // b`` (also ``(x + 63) // 64``) is ``cdiv(x, b)``."""
    if not (isinstance(total, Op) and total.kind == "+"):
        return None
    parts = list(total.args)
    if isinstance(divisor, Const) and divisor.value > 0:
        if isinstance(parts[-1], Const) and parts[-1].value == divisor.value - 1:
            return op("cdiv", add(*parts[:-1]), divisor)
        return None
    if divisor in parts and Const(-1) in parts:
        parts.remove(divisor)
        parts.remove(Const(-1))
        return op("cdiv", add(*parts), divisor)
    return None


# ---- walking -----------------------------------------------------------------


def symbols(expr: Expr) -> Iterator[Sym]:
    """Every symbol in ``expr`` (repeats included)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Sym):
            yield node
        elif isinstance(node, Op):
            stack.extend(node.args)
        elif isinstance(node, Tup):
            stack.extend(node.items)


def none_test(sym: Sym) -> Op:
    """``sym is None``, keyed by its spelling: two sizes the model takes for
    one symbol (``topk``, ``self.topk``) may differ in being None."""
    return Op("none", (sym,), sym.text)


def none_tests(expr: Expr) -> Iterator[Op]:
    """The ``None`` tests in ``expr`` (which no binding decides)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Op):
            if node.kind == "none":
                yield node
            stack.extend(node.args)
        elif isinstance(node, Tup):
            stack.extend(node.items)


def tests_none(expr: Expr) -> bool:
    return next(none_tests(expr), None) is not None


def helper_formula(expr: Op) -> Expr:
    """A helper call as its formula of its arguments' values."""
    return add(
        *(mul(*(expr.args[i] for i in term)) for term in HELPER_TERMS[expr.info])
    )


# ---- evaluation --------------------------------------------------------------


class Undefined(ArithmeticError):
    """The expression has no value for this binding (a division by zero, an
    opaque symbol)."""


def evaluate(expr: Expr, values: Mapping[str, int]) -> int:
    """The value Python would compute, each symbol bound by its key."""
    if isinstance(expr, Const):
        return expr.value
    if isinstance(expr, Sym):
        if expr.opaque or expr.key not in values:
            raise Undefined(expr.text)
        return values[expr.key]
    if isinstance(expr, Op):
        if expr.kind == "helper":
            return evaluate(helper_formula(expr), values)
        if expr.kind in CONDITION_KINDS:
            return int(holds(expr, values))
        if expr.kind == "or":  # short-circuit, as Python
            left = evaluate(expr.args[0], values)
            return left if left else evaluate(expr.args[1], values)
        return _apply(expr.kind, [evaluate(a, values) for a in expr.args])
    raise Undefined("a tuple is no integer")


def holds(
    cond: Expr, values: Mapping[str, int], atom: Callable[[object], bool] | None = None
) -> bool:
    """A condition's truth for a binding; with ``atom``, what is not a ``not``,
    an ``and`` or an ``or`` of conditions is an atom, ``atom(it)`` its truth."""
    if isinstance(cond, Op) and cond.kind in ("not", "and", "bor"):
        if cond.kind == "not":
            return not holds(cond.args[0], values, atom)
        if cond.kind == "and":
            return all(holds(a, values, atom) for a in cond.args)
        return any(holds(a, values, atom) for a in cond.args)
    if atom is not None:
        return atom(cond)
    if isinstance(cond, Op) and cond.kind == "cmp":
        left, right = (evaluate(a, values) for a in cond.args)
        return _COMPARE[cond.info](left, right)
    if isinstance(cond, Op) and cond.kind == "truth":
        return bool(evaluate(cond.args[0], values))
    if isinstance(cond, Op) and cond.kind == "none":
        raise Undefined(f"{cond.info} is None")
    return bool(evaluate(cond, values))


_COMPARE = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}

_LIMIT = 1 << 256  # a witness search never needs numbers this large


def _apply(kind: str, args: list[int]) -> int:
    if kind == "+":
        result = sum(args)
    elif kind == "*":
        result = 1
        for arg in args:
            result *= arg
    elif kind == "-":
        result = args[0] - args[1]
    elif kind == "neg":
        result = -args[0]
    elif kind in ("//", "%", "cdiv"):
        if args[1] == 0:
            raise Undefined("division by zero")
        if kind == "//":
            result = args[0] // args[1]
        elif kind == "%":
            result = args[0] % args[1]
        else:
            result = -(-args[0] // args[1])
    elif kind == "pow":
        if args[1] < 0 or args[1] > 64:
            raise Undefined("exponent")
        result = args[0] ** args[1]
    elif kind == "max":
        result = max(args)
    elif kind == "min":
        result = min(args)
    elif kind == "np2":  # triton.next_power_of_2 / sglang's next_power_of_2
        result = 1 if args[0] <= 1 else 1 << (args[0] - 1).bit_length()
    elif kind == "abs":
        result = abs(args[0])
    else:
        raise Undefined(kind)
    if abs(result) > _LIMIT:
        raise Undefined("too large")
    return result


# ---- rendering -----------------------------------------------------------------

_PRECEDENCE = {"or": 1, "+": 3, "-": 3, "*": 4, "//": 4, "%": 4, "neg": 5, "pow": 6}
_FUNCTIONS = {"max": "max", "min": "min", "cdiv": "cdiv", "np2": "next_power_of_2"}


def render(expr: Expr) -> str:
    """``expr`` as Python-like text, symbols as the source spelled them."""
    return _render(expr, 0)


def _render(expr: Expr, outer: int) -> str:
    if isinstance(expr, Const):
        return str(expr.value)
    if isinstance(expr, Sym):
        return expr.text
    if isinstance(expr, Tup):
        items = ", ".join(_render(i, 0) for i in expr.items)
        return f"({items},)" if len(expr.items) == 1 else f"({items})"
    assert isinstance(expr, Op)
    kind, args = expr.kind, expr.args
    if kind == "helper":
        return f"{expr.info}({', '.join(_render(a, 0) for a in args)})"
    if kind in _FUNCTIONS or kind == "abs":
        name = _FUNCTIONS.get(kind, kind)
        return f"{name}({', '.join(_render(a, 0) for a in args)})"
    if kind == "cmp":
        return f"{_render(args[0], 2)} {expr.info} {_render(args[1], 2)}"
    if kind == "not":
        return f"not {_render(args[0], 2)}"
    if kind in ("and", "bor"):
        word = " and " if kind == "and" else " or "
        return word.join(_render(a, 2) for a in args)
    if kind == "truth":
        return _render(args[0], outer)
    if kind == "none":
        return f"{_render(args[0], 2)} is None"
    mine = _PRECEDENCE[kind]
    if kind == "neg":
        text = f"-{_render(args[0], mine)}"
    elif kind == "+":
        text = _render(args[0], mine)
        for arg in args[1:]:
            if isinstance(arg, Const) and arg.value < 0:
                text += f" - {-arg.value}"
            else:
                text += f" + {_render(arg, mine)}"
    else:
        symbol = {"pow": "**"}.get(kind, kind)
        # Left-associative: the right operand of - // % binds tighter.
        parts = [_render(args[0], mine)] + [
            _render(a, mine + (kind in ("-", "//", "%", "pow"))) for a in args[1:]
        ]
        text = f" {symbol} ".join(parts)
    return f"({text})" if mine < outer else text


def replace(expr: Expr, values: Mapping[Expr, Expr]) -> Expr:
    """``expr`` with each sub-expression in ``values`` replaced."""
    found = values.get(expr)
    if found is not None:
        return found
    if isinstance(expr, Op):
        args = tuple(replace(a, values) for a in expr.args)
        return expr if args == expr.args else op(expr.kind, *args, info=expr.info)
    if isinstance(expr, Tup):
        return Tup(tuple(replace(i, values) for i in expr.items))
    return expr


# ---- values read as the formulas' neutral tree (lint_plugin.algebra.arith) ----------


def _symbolic_binop(node):
    if isinstance(node, Op) and node.kind in ("+", "*") and len(node.args) >= 2:
        rest = node.args[:-1]
        left = rest[0] if len(rest) == 1 else Op(node.kind, rest)
        return node.kind, left, node.args[-1]
    if isinstance(node, Op) and node.kind == "-":
        return "-", node.args[0], node.args[1]
    if isinstance(node, Const) and node.value < 0:
        return None
    return None


def _symbolic_name(node) -> str | None:
    if isinstance(node, Sym) and not node.opaque:
        return node.text.rsplit(".", 1)[-1]
    return None


def _symbolic_integer(node) -> int | None:
    return node.value if isinstance(node, Const) else None


SYMBOLIC = Adapter(_symbolic_binop, _symbolic_name, _symbolic_integer)
