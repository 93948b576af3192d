"""Values on paths: what one expression can be worth, one alternative at a time.

An :class:`Alt` is one value (a :mod:`lint_plugin.algebra.symbolic` expression, or a
:class:`Ref` to something that is no integer) on one path: the branch
conditions taken (each a literal of :mod:`lint_plugin.engine.flow.dataflow`, in the
:class:`Frame` it was read in) and the rows of the definitions followed. The
functions here combine alternatives the way the operators combine values,
every combination of the parts' paths, up to ``MAX_ALTS`` of them.
"""

from __future__ import annotations

import ast
import itertools
import math
from collections.abc import Callable, Iterable, Sequence

from lint_plugin.algebra import symbolic as sy
from lint_plugin.algebra.symbolic import Const, Expr, Op, Sym, Tup
from lint_plugin.engine.flow.scopes import ClassInfo, Scope
from lint_plugin.roles import Role

MAX_ALTS = 32


SERIAL = itertools.count()  # opaque symbols made from nothing nameable


class Ref(Expr):
    """A value that is no integer: a module, a known function, an allocator (and
    its partials), a function or method of the file, a class, a tensor."""

    __slots__ = ("kind", "name", "payload")

    def __init__(self, kind: str, name: str = "", payload: object = None) -> None:
        self.kind = kind
        self.name = name
        self.payload = payload
        super().__init__(("ref", kind, name, id(payload)))


Cond = tuple  # (kind, node, positive, frame): a literal of a path, in its frame


class Alt:
    """One value an expression can take: ``value``, on a path with ``conds``,
    through the definitions on ``rows`` (the file's rows); ``site`` is the node
    (and scope) that made it, when followed through plain assignments only."""

    __slots__ = ("conds", "rows", "site", "value")

    def __init__(
        self,
        value: Expr,
        conds: frozenset = frozenset(),
        rows: tuple[int, ...] = (),
        site: tuple[ast.AST, Scope] | None = None,
    ) -> None:
        self.value = value
        self.conds = conds
        self.rows = rows
        self.site = site

    def __repr__(self) -> str:
        return f"Alt({sy.render(self.value)}, rows={self.rows})"


class Arguments:
    """A call's values of its function's parameters, each read when first
    asked for: most calls read few of them, and an argument's value can take
    a walk of the caller's flow. Holds what to read (the argument, the frame
    and statement it is read in), not the analysis that reads it: no cycle
    keeps a file's analysis alive past its release."""

    __slots__ = ("_given", "_values")

    def __init__(self, given: dict[str, tuple[ast.AST, Frame, object]]) -> None:
        self._given = given
        self._values: dict[str, list[Alt]] = {}

    def __contains__(self, name: object) -> bool:
        return name in self._given

    def read(self, name: str, values: Callable[..., list[Alt]]) -> list[Alt]:
        """The value of parameter ``name`` (``values``: the analysis's)."""
        found = self._values.get(name)
        if found is None:
            found = self._values[name] = values(*self._given[name])
        return found


class Frame:
    """A scope being read, with the values of its parameters when it is a call;
    ``instance``: the class ``self`` is an instance of, when that is a subclass
    of the one whose code this is (a base class's method, read for it)."""

    __slots__ = ("args", "calling", "depth", "instance", "scope")

    def __init__(
        self,
        scope: Scope,
        args: Arguments | None = None,
        depth: int = 0,
        calling: frozenset[int] = frozenset(),
        instance: ClassInfo | None = None,
    ) -> None:
        self.scope = scope
        self.args = args
        self.depth = depth
        self.calling = calling
        self.instance = instance

    @property
    def cls(self) -> ClassInfo | None:
        """The class whose attributes ``self.`` reads (Python looks them up on
        the instance's class first)."""
        return self.instance or self.scope.cls


OPERATORS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "pow",
    ast.LShift: "<<",
    ast.RShift: ">>",
}


def is_int(value: Expr) -> bool:
    if isinstance(value, (Tup, Ref)):
        return False
    return not (
        isinstance(value, Op)
        and (value.kind in sy.CONDITION_KINDS or value.kind == "truediv")
    )


def never_none(value: Expr) -> bool:
    """Is ``value`` a number whatever its path: a literal, or arithmetic
    (Python computes a number or raises)? A name's value may be None, a
    size's too: a topk parameter defaulting to None, an attribute set from
    one (SGLang's ``speculative_eagle_topk`` is None without speculation)."""
    if isinstance(value, Const):
        return True
    if isinstance(value, Op) and value.kind == "or":
        return never_none(value.args[-1])  # `x or 1`: None is falsy
    return isinstance(value, Op) and value.kind in sy.INTEGER_KINDS


def integer(kind: str, *args: Expr) -> Expr | None:
    if not all(map(is_int, args)):
        return None
    return sy.op(kind, *args)


def arithmetic(operator: str | None, left: Expr, right: Expr) -> Expr | None:
    if operator is None:
        return None
    if operator in ("<<", ">>"):  # times (floor divided by) a power of two
        power = integer("pow", Const(2), right)
        if power is None:
            return None
        return integer("*" if operator == "<<" else "//", left, power)
    if operator == "+" and isinstance(left, Tup) and isinstance(right, Tup):
        return Tup(left.items + right.items)
    if operator == "*" and isinstance(left, Tup) and isinstance(right, Const):
        return Tup(left.items * max(right.value, 0))
    return integer(operator, left, right)


def truediv(left: Expr, right: Expr) -> Expr | None:
    if not (is_int(left) and is_int(right)):
        return None
    return Op("truediv", (left, right))


def as_condition(value: Expr) -> Expr:
    if isinstance(value, Op) and value.kind in sy.CONDITION_KINDS:
        return value
    return Op("truth", (value,))


def combine(parts: list[list[Alt]], build) -> list[Alt]:
    """Every combination of the parts' values, ``build`` applied (None: opaque);
    past ``MAX_ALTS`` of them, one opaque value."""
    if math.prod(len(p) for p in parts) > MAX_ALTS:
        return [Alt(sy.opaque_symbol("(too many paths)", str(next(SERIAL))))]
    found = []
    for combination in itertools.product(*parts):
        value = build([a.value for a in combination])
        conds = frozenset().union(*(a.conds for a in combination))
        rows = tuple(dict.fromkeys(r for a in combination for r in a.rows))
        site = None
        if value is None:
            value = sy.opaque_symbol("(unreadable)", str(next(SERIAL)))
        found.append(Alt(value, conds, rows, site))
    return found


def also(alt: Alt, cond: Cond, stmt) -> Alt:
    return Alt(alt.value, alt.conds | {cond}, alt.rows, alt.site)


def with_all(alt: Alt, conds: frozenset) -> Alt:
    return alt if not conds else Alt(alt.value, alt.conds | conds, alt.rows, alt.site)


def with_conds(alt: Alt, literals: Iterable, frame: Frame) -> Alt:
    if frame.scope.is_module:
        return alt
    extra = frozenset(
        (kind, node, positive, frame) for kind, node, positive in literals
    )
    return with_all(alt, extra)


def via_row(alt: Alt, row: int | None, site) -> Alt:
    rows = alt.rows if row is None or row in alt.rows else (row, *alt.rows)
    return Alt(alt.value, alt.conds, rows, site)


def file_row(stmt, frame: Frame) -> int | None:
    lineno = getattr(stmt, "lineno", None)
    if lineno is None:
        return None
    return lineno + frame.scope.source.row_offset


def project(alts: list[Alt], path: tuple[int, ...]) -> list[Alt]:
    if not path:
        return alts
    found = []
    for alt in alts:
        value = alt.value
        for index in path:
            if isinstance(value, Tup) and 0 <= index < len(value.items):
                value = value.items[index]
            else:
                value = sy.opaque_symbol("(unpacked)", str(next(SERIAL)))
                break
        found.append(Alt(value, alt.conds, alt.rows))
    return _merged(found)


def _merged(alts: list[Alt]) -> list[Alt]:
    """One alternative where every path gives the same value, under the
    conditions every path shares: an element unpacked beside one that differs
    by path (``steps, w = self._dims(w)``) would otherwise multiply the paths
    of every shape it is read in with its sibling's."""
    if len(alts) < 2 or any(a.value != alts[0].value for a in alts[1:]):
        return alts
    conds = frozenset.intersection(*(a.conds for a in alts))
    rows = tuple(dict.fromkeys(r for a in alts for r in a.rows))
    return [Alt(alts[0].value, conds, rows)]


def role_of_value(alts: Sequence[Alt]) -> Role | None:
    """The role a value plays when every path gives the same role's symbol."""
    roles = {
        a.value.role if isinstance(a.value, Sym) and not a.value.opaque else None
        for a in alts
    }
    return roles.pop() if len(roles) == 1 else None
