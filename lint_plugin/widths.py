"""The width analysis: what an expression can be worth, on every path, by value.

:meth:`Analysis.values` reads an ``ast`` expression as the alternatives
(:class:`Alt`) it can take: each a symbolic value (:mod:`lint_plugin.symbolic`),
the branch conditions of its path and the rows of the definitions followed. Names
are followed through every reaching definition (:mod:`lint_plugin.dataflow`),
``self.`` attributes through every assignment in the class and its bases of the
file, module names through the module (:mod:`lint_plugin.module_scope`), calls of
the module's functions and methods through their ``return`` statements with the
arguments' values (no recursion), the two helpers through their formulas. A
name of a role is its role's symbol where it is a parameter, an attribute of
another object, or a ``self.`` attribute naming a topk, a step count or a context
size; a local is what it holds (``topk = 1`` is 1), its name only where that is
unknown. What cannot be read is an opaque symbol, never a guess.

:meth:`Analysis.rows` reads a torch allocation as per-step rows: the allocator
through aliases and ``functools.partial``, the shape in every spelling, and a
row built once per step (a comprehension or a loop over the steps).

Everything is computed on demand and remembered per node and frame: a value
that is never asked for costs nothing.
"""

from __future__ import annotations

import ast
import builtins
import itertools
import math
from collections.abc import Iterable, Sequence

from lint_plugin import symbolic as sy
from lint_plugin.arith import Adapter
from lint_plugin.dataflow import ENTRY, Def, Fact
from lint_plugin.formulas import HELPER_SLOTS
from lint_plugin.module_scope import ModuleScope
from lint_plugin.roles import CONTEXT_ROLES, Role, role_of_name
from lint_plugin.scopes import REACH, ClassInfo, Scope
from lint_plugin.source import Source, one_line
from lint_plugin.symbolic import Const, Expr, Op, Sym, Tup

_MAX_ALTS = 32
_MAX_DEPTH = 4  # calls followed inside calls
_SERIAL = itertools.count()  # opaque symbols made from nothing nameable

# Roles whose `self.` attribute is the class's own, by its name: the kernel is
# launched with it, whatever it was assigned from.
_NAMED_ATTRIBUTES = frozenset({Role.TOPK, Role.NUM_STEPS}) | CONTEXT_ROLES

TORCH_ALLOCATORS = frozenset(
    {"empty", "zeros", "ones", "full", "empty_strided", "rand", "randn", "randint"}
)
TENSOR_ALLOCATORS = frozenset({"new_empty", "new_zeros", "new_ones", "new_full"})
ALLOCATORS = TORCH_ALLOCATORS | TENSOR_ALLOCATORS
_SHAPE_FIRST = frozenset({"full", "empty_strided", "new_full"})
_RESHAPES = frozenset({"view", "reshape"})

# Functions known by what they compute, wherever a file imports them from.
_KNOWN_FUNCTIONS = {
    "max": "max",
    "min": "min",
    "int": "int",
    "abs": "abs",
    "sum": "sum",
    "tuple": "tuple",
    "list": "tuple",
    "Size": "tuple",
    "prod": "prod",
    "ceil": "ceil",
    "index": "int",
    "partial": "partial",
    "cdiv": "cdiv",
    "ceil_div": "cdiv",
    "next_power_of_2": "np2",
}
_MODULES = frozenset({"torch", "math", "functools", "operator", "triton"})
_BUILTIN_NAMES = frozenset({"max", "min", "int", "abs", "sum", "tuple", "list"})
# Attributes whose owner's value decides what they are (torch.zeros, x.view).
_MEMBERS = (
    ALLOCATORS
    | _RESHAPES
    | frozenset(_KNOWN_FUNCTIONS)
    | frozenset({"int32", "int64", "cuda", "language"})
)


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


class Frame:
    """A scope being read, with the values of its parameters when it is a call;
    ``instance``: the class ``self`` is an instance of, when that is a subclass
    of the one whose code this is (a base class's method, read for it)."""

    __slots__ = ("args", "calling", "depth", "instance", "scope")

    def __init__(
        self,
        scope: Scope,
        args: dict[str, list[Alt]] | None = None,
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


class Analysis:
    """The values of one parsed tree (a region of a file, or the whole file).

    ``helper_names``: the names the helpers are called by (their own, and
    trusted import aliases)."""

    def __init__(
        self, module: ModuleScope, helper_names: dict[str, str], source: Source
    ) -> None:
        self.module = module
        self.helper_names = helper_names
        self.source = source
        self.module_scope = Scope(None, module.source, None, module)
        self.module_frame = Frame(self.module_scope)
        self._frames: dict[tuple, Frame] = {
            (id(self.module_scope), id(None)): self.module_frame
        }
        self._memo: dict[tuple[int, int, int], list[Alt]] = {}
        self._busy: set[tuple[int, int, int]] = set()
        self._classes: dict[int, ClassInfo] = {}
        self._scopes: dict[int, Scope] = {}
        self._class_values: dict[tuple[int, str], list[Alt]] = {}
        self._module_names: dict[str, list[Alt]] = {}
        self._conditions: dict[tuple, Expr | None] = {}
        self._steps: dict[tuple[int, int, int], bool] = {}
        # Memo keys hold ids: every frame made is kept alive with the analysis.
        self._alive: list[Frame] = []

    def new_frame(
        self,
        scope: Scope,
        args=None,
        depth: int = 0,
        calling=frozenset(),
        instance=None,
    ) -> Frame:
        frame = Frame(scope, args, depth, calling, instance)
        self._alive.append(frame)
        return frame

    # ---- scopes of the walked tree -----------------------------------------

    def class_info(self, node: ast.ClassDef, source: Source | None = None) -> ClassInfo:
        found = self._classes.get(id(node))
        if found is None:
            found = self._classes[id(node)] = ClassInfo(
                node, source or self.source, self.module_scope
            )
        return found

    def scope_of(self, function) -> Scope:
        """The scope of a walked function (a :class:`FunctionFacts`)."""
        found = self._scopes.get(id(function))
        if found is None:
            if function.cls is not None:
                found = self.class_info(function.cls.node).scope(function.node)
            else:
                parent = (
                    self.scope_of(function.parent)
                    if function.parent is not None
                    else self.module_scope
                )
                found = Scope(function.node, self.source, parent, self.module)
            self._scopes[id(function)] = found
        return found

    def frame_of(self, function) -> Frame:
        """A frame for a walked function (None: the module)."""
        if function is None:
            return self.module_frame
        scope = self.scope_of(function)
        return self._frame(scope)

    def statement(self, frame: Frame, node: ast.AST) -> ast.stmt | None:
        chain = frame.scope.locate(node)
        return chain[-1] if chain else None

    # ---- values --------------------------------------------------------------

    def values(
        self, node: ast.AST, frame: Frame, stmt: ast.AST | None = None
    ) -> list[Alt]:
        """Every value ``node`` (read in ``frame`` before ``stmt``) can take."""
        key = (id(node), id(frame), id(stmt))
        found = self._memo.get(key)
        if found is not None:
            return found
        if key in self._busy:  # a value defined through itself
            return [Alt(self._opaque(node, frame))]
        self._busy.add(key)
        try:
            found = self._values(node, frame, stmt)
        finally:
            self._busy.discard(key)
        if len(found) > _MAX_ALTS:
            found = [Alt(sy.opaque_symbol("(too many paths)", str(next(_SERIAL))))]
        # What has no site of its own was made here.
        found = [
            a
            if a.site is not None
            else Alt(a.value, a.conds, a.rows, (node, frame.scope))
            for a in found
        ]
        self._memo[key] = found
        return found

    def _opaque(self, node: ast.AST, frame: Frame) -> Sym:
        try:
            text = one_line(frame.scope.source.segment(node))
        except (AttributeError, IndexError, TypeError):
            text = type(node).__name__
        return sy.opaque_symbol(text, f"{id(node)}:{id(frame)}")  # both kept alive

    def _values(self, node: ast.AST, frame: Frame, stmt) -> list[Alt]:
        kind = type(node)
        if kind is ast.Constant:
            value = node.value
            if type(value) in (int, bool):
                return [Alt(Const(int(value)))]
            return [Alt(self._opaque(node, frame))]
        if kind is ast.Name:
            return self._name(node, frame, stmt)
        if kind is ast.Attribute:
            return self._attribute(node, frame, stmt)
        if kind is ast.BinOp:
            return self._binop(node, frame, stmt)
        if kind is ast.UnaryOp:
            return self._unary(node, frame, stmt)
        if kind is ast.BoolOp:
            return self._boolop(node, frame, stmt)
        if kind is ast.IfExp:
            yes = self.values(node.body, frame, stmt)
            no = self.values(node.orelse, frame, stmt)
            return [_also(a, ("ifexp", node, True, frame), stmt) for a in yes] + [
                _also(a, ("ifexp", node, False, frame), stmt) for a in no
            ]
        if kind is ast.Compare:
            return self._compare(node, frame, stmt)
        if kind is ast.Call:
            return self._call(node, frame, stmt)
        if kind in (ast.Tuple, ast.List):
            return self._tuple(node.elts, frame, stmt)
        if kind is ast.Subscript:
            return self._subscript(node, frame, stmt)
        if kind is ast.NamedExpr:
            return self.values(node.value, frame, stmt)
        return [Alt(self._opaque(node, frame))]

    # ---- names -------------------------------------------------------------

    def _name(self, node: ast.Name, frame: Frame, stmt) -> list[Alt]:
        name = node.id
        scope = frame.scope
        if scope.is_module:
            return self._module_name(name, node, frame)
        flow = scope.flow(name)
        facts = flow.at(stmt) if stmt is not None else [Fact(ENTRY, frozenset())]
        if not facts:  # unreachable code
            return [Alt(self._opaque(node, frame))]
        found: list[Alt] = []
        for fact in facts:
            for alt in self._fact(fact, name, node, frame):
                found.append(_with_conds(alt, fact.conds, frame))
        return found

    def _fact(self, fact: Fact, name: str, node: ast.AST, frame: Frame) -> list[Alt]:
        defn = fact.defn
        scope = frame.scope
        if defn is ENTRY:
            if "." in name:  # self.<attr>: as any method may have left it
                attr = name.split(".", 1)[1]
                return self._class_wide(
                    frame.cls, attr, role_of_name(attr), f"self.{attr}"
                )
            if name in scope.params:
                if frame.args is not None and name in frame.args:
                    return frame.args[name]
                return [Alt(_named(name, name))]
            if scope.parent is not None and not scope.parent.is_module:
                # A closure: the enclosing function's value where this one is defined.
                outer = self._frame(scope.parent, frame.instance)
                chain = scope.parent.locate(scope.node)
                return self.values(node, outer, chain[-1] if chain else None)
            if name in _MODULES or name in _BUILTIN_NAMES or name in _OPAQUE_BUILTINS:
                # torch, math, max, len...: taken at their word when the
                # function does not rebind them (a module rebinding torch or
                # len is no backend).
                return [Alt(_global(name))]
            return self._module_name(name, node, self.module_frame)
        return self._definition(defn, node, frame, name)

    def _definition(self, defn: Def, node, frame: Frame, name: str) -> list[Alt]:
        row = _row(defn.stmt, frame)
        kind = defn.kind
        if kind == "assign":
            alts = self.values(defn.value, frame, defn.stmt)
            alts = _project(alts, defn.path)
            if defn.path:
                return [_step(a, row, None) for a in alts]
            return [_step(a, row, a.site or (defn.value, frame.scope)) for a in alts]
        if kind == "aug":
            before = [
                _with_conds(a, fact.conds, frame)
                for fact in defn.previous
                for a in self._fact(fact, name, node, frame)
            ]
            right = self.values(defn.value, frame, defn.stmt)
            operator = _OPERATORS.get(type(defn.op))
            return [
                _step(alt, row, None)
                for alt in _combine(
                    [before, right],
                    lambda v: _arith(operator, v[0], v[1]) if operator else None,
                )
            ]
        if kind == "import":
            return [Alt(_imported(defn.stmt, defn.alias), rows=(row,))]
        if kind in ("function", "class", "block"):
            stmt = defn.stmt
            scope = frame.scope
            if kind == "block":
                stmt = scope.module.block(stmt)
                if stmt is None:
                    return [Alt(self._opaque(node, frame))]
            if isinstance(stmt, ast.ClassDef):
                source = scope.module.source if kind == "block" else scope.source
                return [Alt(Ref("class", stmt.name, self.class_info(stmt, source)))]
            return [Alt(Ref("function", stmt.name, (stmt, scope)))]
        # unknown, deleted: the name's role when it has one
        role = role_of_name(name)
        if role is not None:
            return [Alt(sy.role_symbol(role, name), rows=(row,))]
        return [Alt(self._opaque(node, frame), rows=(row,))]

    def _module_name(self, name: str, node: ast.AST, frame: Frame) -> list[Alt]:
        found = self._module_names.get(name)
        if found is None:
            found = self._module_names[name] = self._module_value(name, node)
        return found

    def _module_value(self, name: str, node: ast.AST) -> list[Alt]:
        flow = self.module_scope.flow(name)
        found: list[Alt] = []
        for fact in flow.end:
            if fact.defn is ENTRY:
                found.append(Alt(_global(name)))
            else:
                # Module-level branches are not conditions of the caller's path.
                found += self._definition(fact.defn, node, self.module_frame, name)
        return found or [Alt(_global(name))]

    def _frame(self, scope: Scope, instance: ClassInfo | None = None) -> Frame:
        """The frame of a scope read with no arguments (for ``instance``)."""
        key = (id(scope), id(instance))
        found = self._frames.get(key)
        if found is None:
            found = self._frames[key] = self.new_frame(scope, instance=instance)
        return found

    # ---- attributes --------------------------------------------------------

    def _attribute(self, node: ast.Attribute, frame: Frame, stmt) -> list[Alt]:
        scope = frame.scope
        role = role_of_name(node.attr)
        owner = node.value
        text = _dotted(node)
        is_self = (
            isinstance(owner, ast.Name)
            and scope.self_name is not None
            and owner.id == scope.self_name
        )
        if node.attr in TENSOR_ALLOCATORS:  # `buffer.new_zeros(...)`: any tensor
            return [Alt(Ref("alloc", node.attr))]
        if is_self:
            if role in _NAMED_ATTRIBUTES:
                return [Alt(sy.role_symbol(role, text))]
            return self._self_attribute(node, frame, stmt, role, text)
        if role is not None:
            return [Alt(sy.role_symbol(role, text))]
        if node.attr not in _MEMBERS and not isinstance(owner, ast.Name):
            # Only a module's, a tensor's or a class's members are worth the
            # owner's value; anything else of a dotted name is a named
            # quantity of no known role, whatever it is an attribute of.
            label = text or one_line(scope.source.segment(node))
            return [Alt(sy.free_symbol(label))]
        if isinstance(owner, (ast.Name, ast.Attribute)):
            bases = self.values(owner, frame, stmt)
            found = []
            for base in bases:
                value = base.value
                if isinstance(value, Ref):
                    found.append(_member(value, node.attr, base, self, node, frame))
                elif text is not None and isinstance(value, Sym) and not value.opaque:
                    found.append(Alt(sy.free_symbol(text), base.conds))
                else:
                    found.append(Alt(self._opaque(node, frame), base.conds))
            return found
        # An attribute of a call's or a subscript's result is a named quantity
        # of no known role (`get_schedule().page_size`), as a dotted name is.
        text = one_line(scope.source.segment(node))
        bases = self.values(owner, frame, stmt)
        return [
            _member(b.value, node.attr, b, self, node, frame)
            if isinstance(b.value, Ref)
            else Alt(sy.free_symbol(text), b.conds)
            for b in bases
        ]

    def _self_attribute(self, node, frame: Frame, stmt, role, text) -> list[Alt]:
        scope = frame.scope
        key = f"{scope.self_name}.{node.attr}"
        facts = (
            scope.flow(key).at(stmt) if stmt is not None else [Fact(ENTRY, frozenset())]
        )
        found: list[Alt] = []
        for fact in facts:
            if fact.defn is ENTRY:
                alts = self._class_wide(frame.cls, node.attr, role, text)
            else:
                alts = self._definition(fact.defn, node, frame, key)
            found += [_with_conds(a, fact.conds, frame) for a in alts]
        return found

    def _class_wide(self, cls: ClassInfo | None, attr: str, role, text) -> list[Alt]:
        """``self.<attr>`` as any method may have left it: every assignment in
        the class and its bases of the file, a class attribute, a property."""
        fallback = [Alt(sy.role_symbol(role, text) if role else sy.free_symbol(text))]
        if cls is None:
            return fallback
        key = (id(cls), attr)
        found = self._class_values.get(key)
        if found is not None:
            return found
        self._class_values[key] = [Alt(sy.opaque_symbol(text, f"cycle:{id(cls)}"))]
        found = []
        method_found = False
        for info in self._lineage(cls):
            instance = cls if info is not cls else None
            for stmt, function in info.attribute_sites(attr):
                scope = info.scope(function)
                frame = self._frame(scope, instance)
                flow = scope.flow(f"{scope.self_name}.{attr}")
                for defn in flow.defined_by(stmt):
                    found += self._definition(defn, stmt, frame, attr)
            for stmt in info.class_assignments(attr):
                value = getattr(stmt, "value", None)
                if value is not None:
                    found += [
                        _step(a, _row(stmt, self.module_frame), None)
                        for a in self.values(value, self._frame(info.outer), None)
                    ]
            method = info.methods.get(attr)
            if method is not None and not method_found:
                method_found = True  # the nearest class's, as Python looks it up
                if any(
                    isinstance(d, ast.Name) and d.id == "property"
                    for d in method.decorator_list
                ):
                    found += self._returns(
                        method, info.scope(method), {}, 0, frozenset(), instance
                    )
                else:
                    found.append(Alt(Ref("method", attr, (method, info))))
        # Another method's branches are not this path's: what held when it ran
        # (``if topk > 1: raise`` in __init__) is an invariant the gate does
        # not lean on.
        found = [Alt(a.value, frozenset(), a.rows, a.site) for a in found] or fallback
        self._class_values[key] = found
        return found

    def _lineage(self, cls: ClassInfo) -> list[ClassInfo]:
        """The class and its bases defined in the file, nearest first."""
        order, pending, seen = [], [cls], set()
        while pending:
            info = pending.pop(0)
            if id(info) in seen:
                continue
            seen.add(id(info))
            order.append(info)
            if info.bases is None:
                info.bases = []
                for base in info.node.bases:
                    for alt in self.values(base, self._frame(info.outer), None):
                        if isinstance(alt.value, Ref) and alt.value.kind == "class":
                            info.bases.append(alt.value.payload)
            pending += info.bases
        return order

    # ---- operators -----------------------------------------------------------

    def _binop(self, node: ast.BinOp, frame: Frame, stmt) -> list[Alt]:
        operator = _OPERATORS.get(type(node.op))
        left = self.values(node.left, frame, stmt)
        right = self.values(node.right, frame, stmt)
        if isinstance(node.op, ast.Div):
            return _combine([left, right], lambda v: _truediv(v[0], v[1]))
        return _combine([left, right], lambda v: _arith(operator, v[0], v[1]))

    def _unary(self, node: ast.UnaryOp, frame: Frame, stmt) -> list[Alt]:
        operand = self.values(node.operand, frame, stmt)
        if isinstance(node.op, ast.USub):
            return _combine([operand], lambda v: _integer("neg", v[0]))
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.Not):
            return _combine([operand], lambda v: Op("not", (_condition(v[0]),)))
        return [Alt(self._opaque(node, frame))]

    def _boolop(self, node: ast.BoolOp, frame: Frame, stmt) -> list[Alt]:
        parts = [self.values(v, frame, stmt) for v in node.values]
        if isinstance(node.op, ast.Or):

            def either(values):
                result = values[-1]
                for value in reversed(values[:-1]):
                    result = _integer("or", value, result)
                return result

            return _combine(parts, either)
        return _combine(parts, lambda v: Op("and", tuple(_condition(x) for x in v)))

    def _compare(self, node: ast.Compare, frame: Frame, stmt) -> list[Alt]:
        names = {
            ast.Lt: "<",
            ast.LtE: "<=",
            ast.Gt: ">",
            ast.GtE: ">=",
            ast.Eq: "==",
            ast.NotEq: "!=",
        }
        if not all(type(o) in names for o in node.ops):
            return [Alt(self._opaque(node, frame))]
        parts = [self.values(v, frame, stmt) for v in [node.left, *node.comparators]]

        def compare(values):
            pairs = []
            for index, operator in enumerate(node.ops):
                a, b = values[index], values[index + 1]
                if not (_is_int(a) and _is_int(b)):
                    return None
                pairs.append(Op("cmp", (a, b), names[type(operator)]))
            return pairs[0] if len(pairs) == 1 else Op("and", tuple(pairs))

        return _combine(parts, compare)

    # ---- tuples and subscripts -------------------------------------------------

    def _tuple(self, elements: Sequence[ast.expr], frame: Frame, stmt) -> list[Alt]:
        parts = []
        starred = []
        for element in elements:
            if isinstance(element, ast.Starred):
                parts.append(self.values(element.value, frame, stmt))
                starred.append(True)
            else:
                parts.append(self.values(element, frame, stmt))
                starred.append(False)

        def build(values):
            items: list[Expr] = []
            for value, spliced in zip(values, starred, strict=True):
                if spliced:
                    if not isinstance(value, Tup):
                        return None
                    items += value.items
                else:
                    items.append(value)
            return Tup(tuple(items))

        return _combine(parts, build)

    def _subscript(self, node: ast.Subscript, frame: Frame, stmt) -> list[Alt]:
        index = node.slice
        position = _literal_int(index)
        container = self.values(node.value, frame, stmt)

        def pick(values):
            value = values[0]
            if (
                isinstance(value, Tup)
                and position is not None
                and -len(value.items) <= position < len(value.items)
            ):
                return value.items[position]
            return None

        found = []
        for alt in container:
            picked = pick([alt.value])
            if picked is None:
                found.append(Alt(self._opaque(node, frame), alt.conds, alt.rows))
            else:
                found.append(Alt(picked, alt.conds, alt.rows))
        return found

    # ---- calls -------------------------------------------------------------

    def _call(self, node: ast.Call, frame: Frame, stmt) -> list[Alt]:
        helper = self.helper_names.get(_last_name(node.func) or "")
        if helper is not None:
            return self._helper(node, helper, frame, stmt)
        callees = self.values(node.func, frame, stmt)
        found: list[Alt] = []
        for callee in callees:
            for alt in self._apply(callee.value, node, frame, stmt):
                found.append(_with_all(alt, callee.conds))
        return found

    def _helper(self, node: ast.Call, helper: str, frame: Frame, stmt) -> list[Alt]:
        slots = [name for name, _ in HELPER_SLOTS[helper]]
        given: dict[str, ast.expr] = {}
        if any(isinstance(a, ast.Starred) for a in node.args) or len(node.args) > len(
            slots
        ):
            return [Alt(self._opaque(node, frame))]
        given.update(zip(slots, node.args, strict=False))
        for keyword in node.keywords:
            if keyword.arg not in slots or keyword.arg in given:
                return [Alt(self._opaque(node, frame))]
            given[keyword.arg] = keyword.value
        if len(given) != len(slots):
            return [Alt(self._opaque(node, frame))]
        parts = [self.values(given[s], frame, stmt) for s in slots]
        return _combine(
            parts,
            lambda v: Op("helper", tuple(v), helper) if all(map(_is_int, v)) else None,
        )

    def _apply(self, callee: Expr, node: ast.Call, frame: Frame, stmt) -> list[Alt]:
        if not isinstance(callee, Ref):
            return [Alt(self._opaque(node, frame))]
        if callee.kind == "known":
            return self._known(callee.name, node, frame, stmt)
        if callee.kind in ("alloc", "partial"):
            return [Alt(Ref("tensor", "", node))]
        if callee.kind == "function":
            function, scope = callee.payload
            return self._invoke(function, scope, node, frame, stmt, method=False)
        if callee.kind == "method":
            function, info = callee.payload
            return self._invoke(function, info, node, frame, stmt, method=True)
        if callee.kind == "tensor_method":
            return [Alt(Ref("tensor", callee.name, node))]
        return [Alt(self._opaque(node, frame))]

    def _known(self, name: str, node: ast.Call, frame: Frame, stmt) -> list[Alt]:
        args = node.args
        if node.keywords and name != "partial":
            return [Alt(self._opaque(node, frame))]
        if any(isinstance(a, ast.Starred) for a in args):
            if name in ("tuple",) and len(args) == 1:
                pass
            else:
                return [Alt(self._opaque(node, frame))]
        parts = [self.values(a, frame, stmt) for a in args]
        if name == "partial":
            return self._partial(node, frame, stmt)
        if name in ("max", "min"):

            def extreme(values):
                if len(values) == 1:
                    if not isinstance(values[0], Tup) or not values[0].items:
                        return None
                    values = list(values[0].items)
                if not all(map(_is_int, values)):
                    return None
                return values[0] if len(values) == 1 else Op(name, tuple(values))

            return _combine(parts, extreme)
        if name == "int" and len(parts) == 1:
            # A no-op wrapper: the value, and where it was made, are its argument's.
            return [
                a
                if _is_int(a.value)
                else Alt(
                    sy.op("//", *a.value.args)
                    if isinstance(a.value, Op) and a.value.kind == "truediv"
                    else self._opaque(node, frame),
                    a.conds,
                    a.rows,
                )
                for a in parts[0]
            ]
        if name in ("abs", "np2") and len(parts) == 1:
            return _combine(parts, lambda v: _integer(name, v[0]))
        if name == "ceil" and len(parts) == 1:
            return _combine(
                parts,
                lambda v: (
                    sy.op("cdiv", *v[0].args)
                    if isinstance(v[0], Op) and v[0].kind == "truediv"
                    else (v[0] if _is_int(v[0]) else None)
                ),
            )
        if name == "cdiv" and len(parts) == 2:
            return _combine(parts, lambda v: _integer("cdiv", v[0], v[1]))
        if name in ("sum", "prod") and len(parts) == 1:

            def fold(values):
                value = values[0]
                if not isinstance(value, Tup) or not all(map(_is_int, value.items)):
                    return None
                return sy.add(*value.items) if name == "sum" else sy.mul(*value.items)

            return _combine(parts, fold)
        if name == "tuple" and len(parts) == 1:
            return _combine(parts, lambda v: v[0] if isinstance(v[0], Tup) else None)
        return [Alt(self._opaque(node, frame))]

    def _partial(self, node: ast.Call, frame: Frame, stmt) -> list[Alt]:
        if not node.args or any(isinstance(a, ast.Starred) for a in node.args):
            return [Alt(self._opaque(node, frame))]
        found = []
        for base in self.values(node.args[0], frame, stmt):
            if isinstance(base.value, Ref) and base.value.kind == "alloc":
                payload = (base.value.name, node, frame, stmt)
                found.append(Alt(Ref("partial", base.value.name, payload), base.conds))
            else:
                found.append(Alt(self._opaque(node, frame), base.conds))
        return found

    def _invoke(
        self, function, where, node: ast.Call, frame: Frame, stmt, method: bool
    ):
        """A call of a function or method of the file: its returns, with the
        arguments' values bound to its parameters."""
        if frame.depth >= _MAX_DEPTH or id(function) in frame.calling:
            return [Alt(self._opaque(node, frame))]  # too deep, or recursion
        if isinstance(where, ClassInfo):
            scope = where.scope(function)
        else:
            scope = self._function_scope(function, where)
        args = function.args
        positional = [a.arg for a in (*args.posonlyargs, *args.args)]
        if method:
            positional = positional[1:]
        if (
            args.vararg
            or args.kwarg
            or len(node.args) > len(positional)
            or any(isinstance(a, ast.Starred) for a in node.args)
        ):
            return [Alt(self._opaque(node, frame))]
        bound: dict[str, list[Alt]] = {}
        for name, arg in zip(positional, node.args, strict=False):
            bound[name] = self.values(arg, frame, stmt)
        every = [*positional, *(a.arg for a in args.kwonlyargs)]
        for keyword in node.keywords:
            if keyword.arg is None or keyword.arg not in every or keyword.arg in bound:
                return [Alt(self._opaque(node, frame))]
            bound[keyword.arg] = self.values(keyword.value, frame, stmt)
        defaults = dict(
            zip(
                positional[len(positional) - len(args.defaults) :],
                args.defaults,
                strict=False,
            )
        )
        defaults.update(
            (a.arg, d)
            for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
            if d is not None
        )
        outer = scope.parent or self.module_scope
        where_defined = (
            None if outer.is_module else (outer.locate(function) or [None])[-1]
        )
        for name in every:
            if name not in bound:
                if name not in defaults:
                    return [Alt(self._opaque(node, frame))]
                bound[name] = self.values(
                    defaults[name], self._frame(outer), where_defined
                )
        calling = frame.calling | {id(function)}
        instance = frame.cls if method and frame.cls is not where else None
        return self._returns(function, scope, bound, frame.depth + 1, calling, instance)

    def _function_scope(self, function, outer: Scope) -> Scope:
        """A function of the module (or one nested in a function): its scope."""
        found = self._scopes.get(id(function))
        if found is None:
            found = self._scopes[id(function)] = Scope(
                function,
                outer.source,
                outer,
                self.module,
                outer.cls,
                outer.self_name,
            )
        return found

    def _returns(
        self, function, scope: Scope, bound, depth: int, calling, instance=None
    ) -> list[Alt]:
        callee = self.new_frame(scope, bound, depth, calling, instance)
        flow = scope.flow(REACH)
        found: list[Alt] = []
        for ret, facts in flow.returns:
            if ret.value is None:
                continue
            for alt in self.values(ret.value, callee, ret):
                for fact in facts:
                    found.append(_with_conds(alt, fact.conds, callee))
        if flow.end or not found:
            found.append(
                Alt(sy.opaque_symbol(f"{function.name}(...)", str(next(_SERIAL))))
            )
        return found

    # ---- conditions ---------------------------------------------------------

    def condition(self, cond: Cond) -> tuple[Expr | None, bool]:
        """A literal's condition and polarity: None when it is opaque (an atom
        keyed by its literal)."""
        kind, node, positive, frame = cond
        key = (kind, id(node), id(frame))
        if key not in self._conditions:
            self._conditions[key] = self._condition_of(kind, node, frame)
        return self._conditions[key], positive

    def _condition_of(self, kind: str, node, frame: Frame) -> Expr | None:
        if kind == "test":
            test, stmt = node.test, node
        elif kind == "ifexp":
            chain = frame.scope.locate(node) if not frame.scope.is_module else []
            test, stmt = node.test, (chain[-1] if chain else None)
        elif kind == "loop" and isinstance(node, (ast.For, ast.AsyncFor)):
            return self._runs(node, frame)
        else:
            return None
        alts = self.values(test, frame, stmt)
        if len({a.value for a in alts}) != 1:
            return None
        return _condition(alts[0].value)

    def _runs(self, loop: ast.For, frame: Frame) -> Expr | None:
        """``for ... in range(...)`` runs at least once iff the range is not empty."""
        it = loop.iter
        if not (
            isinstance(it, ast.Call)
            and _last_name(it.func) == "range"
            and not it.keywords
            and 1 <= len(it.args) <= 2
        ):
            return None
        parts = [self.values(a, frame, loop) for a in it.args]
        if any(len(p) != 1 or not _is_int(p[0].value) for p in parts):
            return None
        if len(parts) == 1:
            return Op("cmp", (parts[0][0].value, Const(0)), ">")
        return Op("cmp", (parts[1][0].value, parts[0][0].value), ">")


# ---- helpers for values ----------------------------------------------------------

_OPERATORS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "pow",
}


def _is_int(value: Expr) -> bool:
    if isinstance(value, (Tup, Ref)):
        return False
    return not (
        isinstance(value, Op)
        and (value.kind in sy.CONDITION_KINDS or value.kind == "truediv")
    )


def _integer(kind: str, *args: Expr) -> Expr | None:
    if not all(map(_is_int, args)):
        return None
    return sy.op(kind, *args)


def _arith(operator: str | None, left: Expr, right: Expr) -> Expr | None:
    if operator is None:
        return None
    if operator == "+" and isinstance(left, Tup) and isinstance(right, Tup):
        return Tup(left.items + right.items)
    if operator == "*" and isinstance(left, Tup) and isinstance(right, Const):
        return Tup(left.items * max(right.value, 0))
    return _integer(operator, left, right)


def _truediv(left: Expr, right: Expr) -> Expr | None:
    if not (_is_int(left) and _is_int(right)):
        return None
    return Op("truediv", (left, right))


def _condition(value: Expr) -> Expr:
    if isinstance(value, Op) and value.kind in sy.CONDITION_KINDS:
        return value
    return Op("truth", (value,))


def _combine(parts: list[list[Alt]], build) -> list[Alt]:
    """Every combination of the parts' values, ``build`` applied (None: opaque);
    past ``_MAX_ALTS`` of them, one opaque value."""
    if math.prod(len(p) for p in parts) > _MAX_ALTS:
        return [Alt(sy.opaque_symbol("(too many paths)", str(next(_SERIAL))))]
    found = []
    for combination in itertools.product(*parts):
        value = build([a.value for a in combination])
        conds = frozenset().union(*(a.conds for a in combination))
        rows = tuple(dict.fromkeys(r for a in combination for r in a.rows))
        site = None
        if value is None:
            value = sy.opaque_symbol("(unreadable)", str(next(_SERIAL)))
        found.append(Alt(value, conds, rows, site))
    return found


def _also(alt: Alt, cond: Cond, stmt) -> Alt:
    return Alt(alt.value, alt.conds | {cond}, alt.rows, alt.site)


def _with_all(alt: Alt, conds: frozenset) -> Alt:
    return alt if not conds else Alt(alt.value, alt.conds | conds, alt.rows, alt.site)


def _with_conds(alt: Alt, literals: Iterable, frame: Frame) -> Alt:
    if frame.scope.is_module:
        return alt
    extra = frozenset(
        (kind, node, positive, frame) for kind, node, positive in literals
    )
    return _with_all(alt, extra)


def _step(alt: Alt, row: int | None, site) -> Alt:
    rows = alt.rows if row is None or row in alt.rows else (row, *alt.rows)
    return Alt(alt.value, alt.conds, rows, site)


def _row(stmt, frame: Frame) -> int | None:
    lineno = getattr(stmt, "lineno", None)
    if lineno is None:
        return None
    return lineno + frame.scope.source.row_offset


def _project(alts: list[Alt], path: tuple[int, ...]) -> list[Alt]:
    if not path:
        return alts
    found = []
    for alt in alts:
        value = alt.value
        for index in path:
            if isinstance(value, Tup) and 0 <= index < len(value.items):
                value = value.items[index]
            else:
                value = sy.opaque_symbol("(unpacked)", str(next(_SERIAL)))
                break
        found.append(Alt(value, alt.conds, alt.rows))
    return found


def _literal_int(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return -node.operand.value
    return None


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _last_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _named(name: str, text: str) -> Sym:
    """A parameter or an unknown name: its role's symbol, else a free symbol."""
    role = role_of_name(name)
    return sy.role_symbol(role, text) if role is not None else sy.free_symbol(text)


def _global(name: str) -> Expr:
    """A name the module does not bind: a builtin, or nothing known."""
    if name in _BUILTIN_NAMES:
        return Ref("known", _KNOWN_FUNCTIONS[name])
    if name in _MODULES:  # used without its import: read as the module
        return Ref("module", name)
    return _named(name, name)


def _imported(stmt: ast.AST, alias: ast.alias) -> Expr:
    if isinstance(stmt, ast.Import):
        module = alias.name if alias.asname else alias.name.split(".")[0]
        return Ref("module", module)
    module = stmt.module or ""
    name = alias.name
    top = module.split(".")[0]
    if top == "torch" and name in TORCH_ALLOCATORS:
        return Ref("alloc", name)
    if name in ("next_power_of_2", "cdiv", "ceil_div") and (
        top in ("triton", "sglang") or module.endswith("utils")
    ):
        return Ref("known", _KNOWN_FUNCTIONS[name])
    if (top, name) in (
        ("torch", "Size"),
        ("math", "ceil"),
        ("math", "prod"),
        ("functools", "partial"),
        ("operator", "index"),
    ):
        return Ref("known", _KNOWN_FUNCTIONS[name])
    if (
        top in ("torch", "math", "functools", "operator", "triton")
        and "." not in module
    ):
        return Ref("module", f"{module}.{name}")
    return sy.opaque_symbol(f"{module}.{name}", str(id(alias)))


def _member(ref: Ref, attr: str, base: Alt, analysis: Analysis, node, frame) -> Alt:
    """``ref.attr``: a module's function, a tensor's method, a class's method."""
    conds = base.conds
    if ref.kind == "module":
        module = ref.name
        if module == "torch" and attr in TORCH_ALLOCATORS:
            return Alt(Ref("alloc", attr), conds)
        if (module, attr) in (
            ("torch", "Size"),
            ("math", "ceil"),
            ("math", "prod"),
            ("functools", "partial"),
            ("operator", "index"),
            ("triton", "cdiv"),
            ("triton", "next_power_of_2"),
        ):
            return Alt(Ref("known", _KNOWN_FUNCTIONS[attr]), conds)
        if module in ("torch", "triton") and attr in (
            "int32",
            "int64",
            "cuda",
            "language",
        ):
            return Alt(Ref("module", f"{module}.{attr}"), conds)
        return Alt(analysis._opaque(node, frame), conds)
    if ref.kind == "tensor":
        if attr in TENSOR_ALLOCATORS:
            return Alt(Ref("alloc", attr), conds)
        if attr in _RESHAPES:
            return Alt(Ref("tensor_method", attr, ref.payload), conds)
        return Alt(analysis._opaque(node, frame), conds)
    if ref.kind == "class":
        info = ref.payload
        method = info.methods.get(attr)
        if method is not None:
            return Alt(Ref("function", attr, (method, info.outer)), conds)
    return Alt(analysis._opaque(node, frame), conds)


def role_of_value(alts: Sequence[Alt]) -> Role | None:
    """The role a value plays when every path gives the same role's symbol."""
    roles = {
        a.value.role if isinstance(a.value, Sym) and not a.value.opaque else None
        for a in alts
    }
    return roles.pop() if len(roles) == 1 else None


# ---- allocations as per-step rows ------------------------------------------------


class Row:
    """One path of an allocation read as per-step rows: ``width`` is a row's
    value; ``shown`` the node a finding points at; ``written`` the width's own
    node when the shape spells it as the second of two dimensions (the unsafe
    fix sizes it where it is made: ``site``); ``rows``: the rows of the
    definitions the width was followed through; ``how``: ``steps`` (a steps
    dimension first), ``flat`` (steps times the row), ``loop`` (one allocation
    per step), ``view`` (a flat buffer viewed per step)."""

    __slots__ = ("conds", "how", "rows", "shown", "site", "width", "written")

    def __init__(self, width, conds, rows, site, shown, written, how) -> None:
        self.width = width
        self.conds = conds
        self.rows = rows
        self.site = site
        self.shown = shown
        self.written = written
        self.how = how


def is_steps(value: Expr) -> bool:
    """A draft step count, give or take a constant (``num_steps - 1``)."""
    if isinstance(value, Sym):
        return value.role is Role.NUM_STEPS
    return (
        isinstance(value, Op)
        and value.kind == "+"
        and len(value.args) == 2
        and isinstance(value.args[1], Const)
        and isinstance(value.args[0], Sym)
        and value.args[0].role is Role.NUM_STEPS
    )


def _without_steps(value: Expr) -> Expr | None:
    """``steps * w`` (in any order) as ``w``."""
    factors = (
        list(value.args) if isinstance(value, Op) and value.kind == "*" else [value]
    )
    steps = [f for f in factors if is_steps(f)]
    if len(steps) != 1:
        return None
    factors.remove(steps[0])
    return sy.mul(*factors) if factors else Const(1)


def _divide(total: Expr, divisor: Expr) -> Expr | None:
    factors = (
        list(total.args) if isinstance(total, Op) and total.kind == "*" else [total]
    )
    if divisor in factors:
        factors.remove(divisor)
        return sy.mul(*factors) if factors else Const(1)
    return None


class _Shape:
    __slots__ = ("conds", "dims", "rows", "shown", "width_alt", "written")

    def __init__(self, dims, width_alt, conds, rows, shown, written) -> None:
        self.dims = dims
        self.width_alt = width_alt
        self.conds = conds
        self.rows = rows
        self.shown = shown
        self.written = written


def allocation_rows(self: Analysis, function, call: ast.Call) -> list[Row] | None:
    """The per-step rows an allocation call makes, one per path; None when it
    is no allocation (or none of its paths is per step)."""
    frame = self.frame_of(function)
    stmt = self.statement(frame, call)
    text = frame.scope.source.segment(stmt) if stmt is not None else ""
    loop = _per_step_loop(self, frame, stmt, call, text)
    viewed = ("view" in text or "reshape" in text) and _viewed(call, stmt)
    func = call.func
    if (
        not (loop or viewed)
        and isinstance(func, ast.Attribute)
        and func.attr in ALLOCATORS
        and not any(may_hold_steps(self, d, function) for d in _first_dims(call))
    ):
        return None  # torch.zeros((max_bs, n)): no step count where it could be
    allocators = [
        c
        for c in self.values(call.func, frame, stmt)
        if isinstance(c.value, Ref) and c.value.kind in ("alloc", "partial")
    ]
    if not allocators:
        return None
    found: list[Row] = []
    reach = None
    for allocator in allocators:
        for shape in _shapes(
            self, allocator.value, call, frame, stmt, loop or viewed, function
        ):
            if reach is None:
                reach = [
                    frozenset((k, n, p, frame) for k, n, p in fact.conds)
                    for fact in (
                        frame.scope.flow(REACH).at(stmt) if stmt is not None else ()
                    )
                ] or [frozenset()]
            shape.conds |= allocator.conds
            row = _per_step(self, shape, call, frame, stmt, loop)
            if row is None:
                continue
            for conds in reach:
                found.append(
                    Row(
                        row[0],
                        shape.conds | conds,
                        shape.rows,
                        row[1],
                        shape.shown,
                        shape.written,
                        row[2],
                    )
                )
    return found or None


def _per_step(self: Analysis, shape: _Shape, call, frame, stmt, loop) -> tuple | None:
    """``(width, site, how)`` when the shape is per step on this path."""
    dims = shape.dims
    site = shape.width_alt.site if shape.width_alt is not None else None
    if len(dims) >= 2 and is_steps(dims[0]):
        return sy.mul(*dims[1:]), site if len(dims) == 2 else None, "steps"
    if len(dims) == 1:
        width = _without_steps(dims[0])
        if width is not None:
            return width, None, "flat"
    viewed = _view(self, call, frame, stmt, dims)
    if viewed is not None:
        return viewed, None, "view"
    if loop and dims:
        return sy.mul(*dims), site if len(dims) == 1 else None, "loop"
    return None


def _shapes(
    self: Analysis,
    ref: Ref,
    call: ast.Call,
    frame: Frame,
    stmt,
    any_first: bool,
    function=None,
) -> list[_Shape]:
    """The dimensions an allocator call asks for, on each path (only those
    whose first dimension is a step count, unless ``any_first``: a single
    dimension, a loop over the steps, a view)."""
    name = ref.name
    args: list[tuple[ast.expr, Frame, object]] = []
    keywords: dict[str, tuple[ast.expr, Frame, object]] = {}
    own_args = True
    if ref.kind == "partial":
        _, partial, p_frame, p_stmt = ref.payload
        args += [(a, p_frame, p_stmt) for a in partial.args[1:]]
        keywords.update(
            (k.arg, (k.value, p_frame, p_stmt)) for k in partial.keywords if k.arg
        )
        own_args = not args
    args += [(a, frame, stmt) for a in call.args]
    keywords.update((k.arg, (k.value, frame, stmt)) for k in call.keywords if k.arg)
    if any(isinstance(a, ast.Starred) for a, _, _ in args[:1]) and len(args) == 1:
        spec = [args[0]]
        literal = None
    elif "size" in keywords:
        spec = [keywords["size"]]
        literal = _literal_dims(keywords["size"][0])
    elif not args:
        return []
    elif name in _SHAPE_FIRST or (name == "randint" and len(args) >= 2):
        spec = [args[-1]] if name == "randint" else [args[0]]
        literal = _literal_dims(spec[0][0])
    elif len(args) == 1:
        spec = [args[0]]
        literal = _literal_dims(args[0][0])
    else:
        spec = args  # varargs: each argument a dimension
        literal = (
            [a for a, _, _ in args]
            if own_args and not any(isinstance(a, ast.Starred) for a, _, _ in args)
            else None
        )
    if literal is not None:
        # Each dimension on its own: the width's path keeps its site and rows.
        where = spec[0][1:] if len(spec) == 1 else (frame, stmt)
        if not any_first and function is not None and where[0] is frame:
            # Most allocations are not per step: their first dimension (or a
            # flat one's factors) holds no step count, often plainly so.
            if not may_hold_steps(self, literal[0], function):
                return []
            if len(literal) >= 2 and not any(
                is_steps(a.value) for a in self.values(literal[0], *where)
            ):
                return []
        parts = [self.values(d, *where) for d in literal]
        if math.prod(len(p) for p in parts) > _MAX_ALTS:
            return [
                _Shape(
                    [sy.opaque_symbol("(too many paths)", "shape")] * len(literal),
                    None,
                    frozenset(),
                    (),
                    literal[-1],
                    None,
                )
            ]
        shapes = []
        for combination in itertools.product(*parts):
            width_alt = combination[1] if len(combination) >= 2 else combination[0]
            dims = [a.value for a in combination]
            if not all(map(_is_int, dims)):
                continue
            conds = frozenset().union(*(a.conds for a in combination))
            shown = literal[1] if len(literal) >= 2 else literal[0]
            written = (
                literal[1]
                if len(literal) == 2
                else (literal[0] if len(literal) == 1 else None)
            )
            if width_alt.site is None and written is not None:
                # Written here: the width is made where the shape spells it.
                width_alt = Alt(
                    width_alt.value,
                    width_alt.conds,
                    width_alt.rows,
                    (written, where[0].scope),
                )
            shapes.append(
                _Shape(dims, width_alt, conds, width_alt.rows, shown, written)
            )
        return shapes
    if len(spec) == 1:
        node, where_frame, where_stmt = spec[0]
        target = node.value if isinstance(node, ast.Starred) else node
        alts = self.values(target, where_frame, where_stmt)
    else:
        alts = self._tuple([a for a, _, _ in spec], frame, stmt)
        node = call
    shapes = []
    for alt in alts:
        value = alt.value
        dims = list(value.items) if isinstance(value, Tup) else [value]
        if not dims or not all(map(_is_int, dims)):
            continue
        shown = node if not isinstance(node, ast.Call) else call.args[0]
        shapes.append(_Shape(dims, None, alt.conds, alt.rows, shown, None))
    return shapes


def _first_dims(call: ast.Call) -> list[ast.expr]:
    """Where a per-step allocation's step count must be, as the call is
    written: the first dimension of a shape of several, or the one dimension
    of a flat buffer (anything else, say a shape variable, whole)."""
    attr = call.func.attr  # type: ignore[attr-defined]
    shape = next((k.value for k in call.keywords if k.arg == "size"), None)
    if shape is None:
        if not call.args or any(isinstance(a, ast.Starred) for a in call.args):
            return [*call.args, *(k.value for k in call.keywords)]
        if attr in _SHAPE_FIRST or len(call.args) == 1:
            shape = call.args[0]
        elif attr == "randint":
            shape = call.args[-1]
        else:
            return [call.args[0]]  # varargs: the first is the steps
    dims = _literal_dims(shape)
    if dims is None:
        return [shape]
    return dims[:1]


def may_hold_steps(self: Analysis, node: ast.AST, function) -> bool:
    """Can ``node``'s value, in the walked ``function`` (a :class:`FunctionFacts`),
    hold a step count at all? Asked before any value is computed: most
    allocations are not per step. It reads the walk's bindings, every one of a
    name whatever the path (so it can only say maybe where the values would say
    no), and never evaluates anything; False only where
    :meth:`Analysis.values` could not give a step count either."""
    key = (id(node), id(function))
    found = self._steps.get(key)
    if found is None:
        self._steps[key] = False  # through itself: the other definitions decide
        found = self._steps[key] = _holds_steps(self, node, function)
    return found


_SPLIT = {
    ast.BinOp: lambda n: (n.left, n.right),
    ast.UnaryOp: lambda n: (n.operand,),
    ast.BoolOp: lambda n: n.values,
    ast.IfExp: lambda n: (n.body, n.orelse),  # a test picks, never makes one
    ast.Compare: lambda n: (),  # a truth value
    ast.Tuple: lambda n: n.elts,
    ast.List: lambda n: n.elts,
    ast.Starred: lambda n: (n.value,),
    ast.Subscript: lambda n: (n.value,),  # an index picks a value, never makes one
    ast.NamedExpr: lambda n: (n.value,),
}
_PASSING = frozenset({"max", "min", "int", "abs", "sum", "tuple", "list"})
# Builtins taken at their word where a function does not rebind them: what a
# call of one returns is opaque (len(...)), and none of them is an integer.
_OPAQUE_BUILTINS = (
    frozenset(n for n in dir(builtins) if not n.startswith("_") and n[0].islower())
    - _PASSING
)


def _holds_steps(self: Analysis, node: ast.AST, function) -> bool:
    kind = type(node)
    if kind is ast.Constant:
        return False
    split = _SPLIT.get(kind)
    if split is not None:
        return any(may_hold_steps(self, part, function) for part in split(node))
    if kind is ast.Attribute:
        role = role_of_name(node.attr)
        owner = node.value
        if (
            isinstance(owner, ast.Name)
            and owner.id == "self"
            and function
            and function.cls
        ):
            if role in _NAMED_ATTRIBUTES:
                return role is Role.NUM_STEPS
            return _class_holds_steps(self, function.cls, node.attr, role)
        if role is not None:
            return role is Role.NUM_STEPS
        if node.attr in _MEMBERS:
            return True
        # Of no role and no module's, tensor's or class's member: a named
        # quantity, unless the owner may be a class of the file.
        return isinstance(owner, ast.Name) and not _bound_locally(owner.id, function)
    if kind is ast.Name:
        return _name_holds_steps(self, node.id, function)
    if kind is ast.Call:
        func = node.func
        if isinstance(func, ast.Attribute):
            # A tensor (no integer, no shape read), or a method of a named
            # quantity (opaque), holds no step count; a module's function or
            # a class's method may.
            owner = func.value
            if func.attr in ALLOCATORS:
                return False
            if func.attr in _MEMBERS:
                return True
            if isinstance(owner, ast.Name) and owner.id == "self":
                return True
            return isinstance(owner, ast.Name) and not _bound_locally(
                owner.id, function
            )
        if isinstance(func, ast.Name):
            name = func.id
            if self.helper_names.get(name) or (
                name in _PASSING and not _bound_locally(name, function)
            ):
                return any(may_hold_steps(self, a, function) for a in node.args)
            if not _bound_locally(name, function):
                if name in _OPAQUE_BUILTINS:
                    return False  # len(...): an opaque value
                return _module_call_holds_steps(self, name)
        return True
    return True


def _module_call_holds_steps(self: Analysis, name: str) -> bool:
    """A call of a module-level name: an import's function returns an opaque
    value, a class an object; a function of the file may return a step count."""
    for fact in self.module_scope.flow(name).end:
        defn = fact.defn
        if defn is ENTRY or defn.kind in ("import", "class"):
            continue
        if defn.kind == "block":
            block = self.module.block(defn.stmt)
            if isinstance(block, ast.ClassDef):
                continue
        return True
    return False


def _module_name_holds_steps(self: Analysis, name: str) -> bool:
    """A module-level name as a value: what its module-level assignments hold
    (imports, functions and classes are no integers)."""
    key = ("module", name)
    found = self._steps.get(key)
    if found is not None:
        return found
    self._steps[key] = False
    found = False
    for fact in self.module_scope.flow(name).end:
        defn = fact.defn
        if defn is ENTRY:
            found = found or role_of_name(name) is Role.NUM_STEPS
        elif defn.kind == "assign":
            found = found or may_hold_steps(self, defn.value, None)
        elif defn.kind not in ("import", "function", "class", "block"):
            found = True
    self._steps[key] = found
    return found


def _bound_locally(name: str, function) -> bool:
    while function is not None:
        if name in function.locals or name in function.params:
            return True
        function = function.parent
    return False


def _name_holds_steps(self: Analysis, name: str, function) -> bool:
    scope = function
    while scope is not None:
        bindings = scope.locals.all(name)
        if bindings:
            return any(
                role_of_name(name) is Role.NUM_STEPS
                if b.value is None
                else may_hold_steps(self, b.value, b.owner or scope)
                for b in bindings
            )
        if name in scope.params:
            return role_of_name(name) is Role.NUM_STEPS
        scope = scope.parent
    if name in _MODULES or name in _BUILTIN_NAMES or name in _OPAQUE_BUILTINS:
        return False  # a module or a function: no integer
    return _module_name_holds_steps(self, name)


def _class_holds_steps(self: Analysis, cls, attr: str, role) -> bool:
    """``self.<attr>`` as any method of the walked class may assign it."""
    key = (id(cls), attr)
    found = self._steps.get(key)
    if found is not None:
        return found
    self._steps[key] = False
    found = True
    node = cls.node
    # Bases of another module are not read (as the values do not read them):
    # a base named as no class of the file is one of those.
    own_lineage = not any(
        not isinstance(base, ast.Name) or self.module.defines_class(base.id)
        for base in node.bases
    )
    if (
        own_lineage
        and not any(
            isinstance(s, ast.FunctionDef) and s.name == attr for s in node.body
        )
        and not any(
            isinstance(t, ast.Name) and t.id == attr
            for s in node.body
            if isinstance(s, (ast.Assign, ast.AnnAssign))
            for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
        )
    ):
        bindings = [b for f in cls.functions for b in f.attrs.all(attr)]
        if not bindings:
            found = role is Role.NUM_STEPS
        else:
            found = any(
                role is Role.NUM_STEPS
                if b.value is None
                else may_hold_steps(self, b.value, b.owner)
                for b in bindings
            )
    self._steps[key] = found
    return found


def _literal_dims(node: ast.expr) -> list[ast.expr] | None:
    """The dimension nodes of a shape written out (``(a, b)``, ``[a, b]``,
    ``torch.Size((a, b))``); None for anything else."""
    if (
        isinstance(node, ast.Call)
        and _last_name(node.func) == "Size"
        and len(node.args) == 1
        and not node.keywords
    ):
        node = node.args[0]
    if isinstance(node, (ast.Tuple, ast.List)):
        if any(isinstance(e, ast.Starred) for e in node.elts) or not node.elts:
            return None
        return list(node.elts)
    return None


def _viewed(call: ast.Call, stmt) -> bool:
    """Is the allocation the receiver of ``.view``/``.reshape``?"""
    if stmt is None or call.end_lineno is None:
        return False
    if not (
        isinstance(
            stmt, ast.Assign | ast.AnnAssign | ast.Expr | ast.Return | ast.AugAssign
        )
    ):
        return False
    return any(
        isinstance(node, ast.Attribute)
        and node.value is call
        and node.attr in _RESHAPES
        for node in ast.walk(stmt)
    )


def _view(self: Analysis, call, frame: Frame, stmt, dims) -> Expr | None:
    """``alloc(n).view(steps, -1)`` (or ``.reshape``) on the allocation itself."""
    if stmt is None:
        return None
    for node in ast.walk(stmt):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.value is call
            and node.func.attr in _RESHAPES
            and not node.keywords
        ):
            shape = self._tuple(
                node.args[0].elts
                if len(node.args) == 1
                and isinstance(node.args[0], (ast.Tuple, ast.List))
                else node.args,
                frame,
                stmt,
            )
            if len(shape) != 1 or not isinstance(shape[0].value, Tup):
                return None
            parts = list(shape[0].value.items)
            if len(parts) < 2 or not is_steps(parts[0]):
                return None
            rest = parts[1:]
            if Const(-1) in rest:
                if rest != [Const(-1)]:
                    return None
                return _divide(sy.mul(*dims), parts[0])
            return sy.mul(*rest)
    return None


def _per_step_loop(
    self: Analysis, frame: Frame, stmt, call: ast.Call, text: str
) -> bool:
    """Is ``call`` made once per draft step: in the body of a ``for`` loop, or
    the element of a comprehension, over ``range(steps)``?"""
    if stmt is None:
        return False
    chain = frame.scope.locate(call)
    for outer in chain:
        if (
            isinstance(outer, (ast.For, ast.AsyncFor))
            and _over_steps(self, outer.iter, frame, outer)
            and any(_holds(s, call) for s in outer.body)
        ):
            return True
    if type(stmt) in _COMPOUND_STATEMENTS or " for " not in text:
        return False  # a comprehension lives in a simple statement (or a header)
    for node in ast.walk(stmt):
        if (
            isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp))
            and _holds(node.elt, call)
            and len(node.generators) == 1
            and _over_steps(self, node.generators[0].iter, frame, stmt)
        ):
            return True
    return False


_COMPOUND_STATEMENTS = frozenset(
    {ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith}
)


def _over_steps(self: Analysis, iterator: ast.expr, frame: Frame, stmt) -> bool:
    if not (
        isinstance(iterator, ast.Call)
        and _last_name(iterator.func) == "range"
        and len(iterator.args) == 1
        and not iterator.keywords
    ):
        return False
    alts = self.values(iterator.args[0], frame, stmt)
    return bool(alts) and all(is_steps(a.value) for a in alts)


def _holds(outer: ast.AST, node: ast.AST) -> bool:
    return (outer.lineno, outer.col_offset) <= (node.lineno, node.col_offset) and (
        node.end_lineno,
        node.end_col_offset,
    ) <= (outer.end_lineno, outer.end_col_offset)


# ---- values read as the formulas' neutral tree (lint_plugin.arith) ----------


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
