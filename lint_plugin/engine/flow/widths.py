"""The width analysis: what an expression can be worth, on every path, by value.

:meth:`Analysis.values` reads an ``ast`` expression as the alternatives
(:class:`lint_plugin.engine.flow.alternatives.Alt`) it can take: each a symbolic value
(:mod:`lint_plugin.algebra.symbolic`), the branch conditions of its path and the
rows of the definitions followed. Names are followed through every reaching definition
(:mod:`lint_plugin.engine.flow.dataflow`), ``self.`` attributes through every assignment
in the class and its bases of the file, module names through the module
(:mod:`lint_plugin.engine.module_scope`), calls through
:mod:`lint_plugin.engine.flow.call_values`. A name of a role is its role's symbol where
it is a parameter, an attribute of another object, or a ``self.`` attribute naming a
topk, a step count or a context size; a local is what it holds (``topk = 1`` is 1), its
name only where that is unknown. What cannot be read is an opaque symbol, never a guess.

Allocations are read as per-step rows by :mod:`lint_plugin.engine.flow.per_step_rows`.
Everything is computed on demand and remembered per node and frame: a value
that is never asked for costs nothing.
"""

from __future__ import annotations

import ast
import functools
import itertools
import re
from collections.abc import Callable, Sequence

from lint_plugin.algebra import symbolic as sy
from lint_plugin.algebra.symbolic import Const, Expr, Op, Sym, Tup
from lint_plugin.engine.flow.alternatives import (
    MAX_ALTS,
    OPERATORS,
    SERIAL,
    Alt,
    Arguments,
    Cond,
    Frame,
    Ref,
    also,
    arithmetic,
    as_condition,
    combine,
    file_row,
    integer,
    is_int,
    never_none,
    project,
    truediv,
    via_row,
    with_conds,
)
from lint_plugin.engine.flow.call_values import CallValues
from lint_plugin.engine.flow.dataflow import ENTRY, Def, Fact, literal_order
from lint_plugin.engine.flow.known_values import (
    BUILTIN_NAMES,
    MEMBERS,
    MODULES,
    NAMED_ATTRIBUTES,
    OPAQUE_BUILTINS,
    TENSOR_ALLOCATORS,
    dotted,
    global_value,
    imported_value,
    last_name,
    literal_int,
    member,
    named_value,
)
from lint_plugin.engine.flow.scopes import ClassInfo, Scope
from lint_plugin.engine.module_scope import ModuleScope
from lint_plugin.engine.source import Source, one_line
from lint_plugin.roles import Role, role_of_member, role_of_name


class Analysis(CallValues):
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

    def release(self) -> None:
        """Drop what points back up (each class's scopes point to the class):
        the analysis is done with."""
        for info in self._classes.values():
            info.release()
        self._classes.clear()

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
        if len(found) > MAX_ALTS:
            found = [Alt(sy.opaque_symbol("(too many paths)", str(next(SERIAL))))]
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
            return [also(a, ("ifexp", node, True, frame), stmt) for a in yes] + [
                also(a, ("ifexp", node, False, frame), stmt) for a in no
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
                found.append(with_conds(alt, fact.conds, frame))
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
                    return frame.args.read(name, self.values)
                return [Alt(named_value(name, name))]
            if scope.parent is not None and not scope.parent.is_module:
                # A closure: the enclosing function's value where this one is defined.
                outer = self._frame(scope.parent, frame.instance)
                chain = scope.parent.locate(scope.node)
                return self.values(node, outer, chain[-1] if chain else None)
            if name in MODULES or name in BUILTIN_NAMES or name in OPAQUE_BUILTINS:
                # torch, math, max, len...: taken at their word when the
                # function does not rebind them (a module rebinding torch or
                # len is no backend).
                return [Alt(global_value(name))]
            return self._module_name(name, node, self.module_frame)
        return self._definition(defn, node, frame, name)

    def _definition(self, defn: Def, node, frame: Frame, name: str) -> list[Alt]:
        row = file_row(defn.stmt, frame)
        kind = defn.kind
        if kind == "assign":
            alts = self.values(defn.value, frame, defn.stmt)
            alts = project(alts, defn.path)
            if defn.path:
                return [via_row(a, row, None) for a in alts]
            return [via_row(a, row, a.site or (defn.value, frame.scope)) for a in alts]
        if kind == "aug":
            before = [
                with_conds(a, fact.conds, frame)
                for fact in defn.previous
                for a in self._fact(fact, name, node, frame)
            ]
            right = self.values(defn.value, frame, defn.stmt)
            operator = OPERATORS.get(type(defn.op))
            return [
                via_row(alt, row, None)
                for alt in combine(
                    [before, right],
                    lambda v: arithmetic(operator, v[0], v[1]) if operator else None,
                )
            ]
        if kind == "import":
            return [Alt(imported_value(defn.stmt, defn.alias), rows=(row,))]
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
                found.append(Alt(global_value(name)))
            else:
                # Module-level branches are not conditions of the caller's path.
                found += self._definition(fact.defn, node, self.module_frame, name)
        return found or [Alt(global_value(name))]

    def _frame(self, scope: Scope, instance: ClassInfo | None = None) -> Frame:
        """The frame of a scope read with no arguments (for ``instance``)."""
        key = (id(scope), id(instance))
        found = self._frames.get(key)
        if found is None:
            found = self._frames[key] = self.new_frame(scope, instance=instance)
        return found

    def _attribute(self, node: ast.Attribute, frame: Frame, stmt) -> list[Alt]:
        scope = frame.scope
        owner = node.value
        role = role_of_name(node.attr) or role_of_member(last_name(owner), node.attr)
        text = dotted(node)
        is_self = (
            isinstance(owner, ast.Name)
            and scope.self_name is not None
            and owner.id == scope.self_name
        )
        if node.attr in TENSOR_ALLOCATORS:  # `buffer.new_zeros(...)`: any tensor
            return [Alt(Ref("alloc", node.attr))]
        if is_self:
            if role in NAMED_ATTRIBUTES:
                return [Alt(sy.role_symbol(role, text))]
            return self._self_attribute(node, frame, stmt, role, text)
        if role is not None:
            # `self.backends[0].max_context_len`: a role whatever it is an
            # attribute of, spelled as the source has it (not a dotted name).
            label = text or one_line(scope.source.segment(node))
            return [Alt(sy.role_symbol(role, label))]
        if node.attr not in MEMBERS and not isinstance(owner, ast.Name):
            # Only a module's, a tensor's or a class's members are worth the
            # owner's value; anything else of a dotted name is a named
            # quantity of no known role, whatever it is an attribute of.
            label = text or one_line(scope.source.segment(node))
            return [Alt(sy.free_symbol(label))]
        opaque = functools.partial(self._opaque, node, frame)
        if isinstance(owner, (ast.Name, ast.Attribute)):
            bases = self.values(owner, frame, stmt)
            found = []
            for base in bases:
                value = base.value
                if isinstance(value, Ref):
                    found.append(member(value, node.attr, base, opaque))
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
            member(b.value, node.attr, b, opaque)
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
            found += [with_conds(a, fact.conds, frame) for a in alts]
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
                        via_row(a, file_row(stmt, self.module_frame), None)
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
                        method,
                        self.new_frame(
                            info.scope(method), Arguments({}), instance=instance
                        ),
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

    def _binop(self, node: ast.BinOp, frame: Frame, stmt) -> list[Alt]:
        operator = OPERATORS.get(type(node.op))
        left = self.values(node.left, frame, stmt)
        right = self.values(node.right, frame, stmt)
        if isinstance(node.op, ast.Div):
            return combine([left, right], lambda v: truediv(v[0], v[1]))
        return combine([left, right], lambda v: arithmetic(operator, v[0], v[1]))

    def _unary(self, node: ast.UnaryOp, frame: Frame, stmt) -> list[Alt]:
        operand = self.values(node.operand, frame, stmt)
        if isinstance(node.op, ast.USub):
            return combine([operand], lambda v: integer("neg", v[0]))
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.Not):
            return combine([operand], lambda v: Op("not", (as_condition(v[0]),)))
        return [Alt(self._opaque(node, frame))]

    def _boolop(self, node: ast.BoolOp, frame: Frame, stmt) -> list[Alt]:
        parts = [self.values(v, frame, stmt) for v in node.values]
        if isinstance(node.op, ast.Or):

            def either(values):
                # Tests (`topk is None or topk == 1`): true where one holds.
                if all(
                    isinstance(v, Op) and v.kind in sy.CONDITION_KINDS for v in values
                ):
                    return Op("bor", tuple(values))
                result = values[-1]
                for value in reversed(values[:-1]):
                    result = integer("or", value, result)
                return result

            return combine(parts, either)
        return combine(parts, lambda v: Op("and", tuple(as_condition(x) for x in v)))

    def _compare(self, node: ast.Compare, frame: Frame, stmt) -> list[Alt]:
        names = {
            ast.Lt: "<",
            ast.LtE: "<=",
            ast.Gt: ">",
            ast.GtE: ">=",
            ast.Eq: "==",
            ast.NotEq: "!=",
        }
        if (
            len(node.ops) == 1
            and type(node.ops[0]) in (ast.In, ast.NotIn)
            and isinstance(node.comparators[0], (ast.Tuple, ast.List, ast.Set))
            and node.comparators[0].elts
        ):
            return self._membership(node, frame, stmt)
        if len(node.ops) == 1 and (
            type(node.ops[0]) in (ast.Is, ast.IsNot)
            or (
                type(node.ops[0]) in (ast.Eq, ast.NotEq)
                and (_is_none(node.left) or _is_none(node.comparators[0]))
            )
        ):
            return self._none_test(node, frame, stmt)
        if not all(type(o) in names for o in node.ops):
            return [Alt(self._opaque(node, frame))]
        parts = [self.values(v, frame, stmt) for v in [node.left, *node.comparators]]

        def compare(values):
            pairs = []
            for index, operator in enumerate(node.ops):
                a, b = values[index], values[index + 1]
                if not (is_int(a) and is_int(b)):
                    return None
                pairs.append(Op("cmp", (a, b), names[type(operator)]))
            return pairs[0] if len(pairs) == 1 else Op("and", tuple(pairs))

        return combine(parts, compare)

    def _none_test(self, node: ast.Compare, frame: Frame, stmt) -> list[Alt]:
        """``x is None`` (``is not``, ``== None``, ``!= None``): false (true)
        where a value of ``x`` is a literal or arithmetic; a test of the topk
        where it is the topk (a size may be None: KVI003 does not judge a path
        where the backend's own topk is, no draft step runs there); opaque
        otherwise, as any other test it cannot read."""
        left, right = node.left, node.comparators[0]
        if _is_none(left):
            left, right = right, left
        if not _is_none(right) or _is_none(left):
            return [Alt(self._opaque(node, frame))]
        negated = type(node.ops[0]) in (ast.IsNot, ast.NotEq)  # `!= None` too
        found = []
        for alt in self.values(left, frame, stmt):
            value = alt.value
            if never_none(value):
                test: Expr = Const(int(negated))
            elif (
                isinstance(value, Sym) and value.role is Role.TOPK and not value.opaque
            ):
                test = sy.none_test(value)
                test = Op("not", (test,)) if negated else test
            else:
                return [Alt(self._opaque(node, frame))]
            found.append(Alt(test, alt.conds, alt.rows))
        return found

    def _membership(self, node: ast.Compare, frame: Frame, stmt) -> list[Alt]:
        """``x in (1, k)``: ``x == 1 or x == k``, as Python tests it (``not in``:
        its negation); with a starred element, or a value that may be no
        integer, opaque as any other test it cannot read."""
        elements = node.comparators[0].elts
        if any(isinstance(e, ast.Starred) for e in elements):
            return [Alt(self._opaque(node, frame))]
        parts = [self.values(v, frame, stmt) for v in [node.left, *elements]]
        if not all(is_int(a.value) for part in parts for a in part):
            return [Alt(self._opaque(node, frame))]  # as any other test

        def member(values):
            either = _equals_one_of(values[0], values[1:])
            return Op("not", (either,)) if type(node.ops[0]) is ast.NotIn else either

        return combine(parts, member)

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

        return combine(parts, build)

    def _subscript(self, node: ast.Subscript, frame: Frame, stmt) -> list[Alt]:
        index = node.slice
        position = literal_int(index)
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
            if isinstance(alt.value, Ref) and alt.value.kind == "tensor":
                # A slice of a tensor is a tensor (of the same storage).
                found.append(Alt(Ref("tensor", "slice", node), alt.conds, alt.rows))
                continue
            picked = pick([alt.value])
            if picked is None:
                found.append(Alt(self._opaque(node, frame), alt.conds, alt.rows))
            else:
                found.append(Alt(picked, alt.conds, alt.rows))
        return found

    def condition(self, cond: Cond) -> tuple[Expr | None, bool]:
        """A literal's condition and polarity: None when it is opaque (an atom
        keyed by its literal)."""
        kind, node, positive, frame = cond
        key = (kind, id(node), id(frame))
        if key not in self._conditions:
            self._conditions[key] = None  # through itself: opaque
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
        elif kind == "loop" and isinstance(node, ast.While):
            # Entered at least once iff the test holds on entry: the names'
            # values before the `while` (its own body's reach it only later).
            test, stmt = node.test, node
        elif kind == "case":
            return self._matches(node, frame)
        else:
            return None
        alts = self.values(test, frame, stmt)
        if len({a.value for a in alts}) != 1:
            return self._per_path(alts, frame)
        return as_condition(alts[0].value)

    def _per_path(
        self,
        alts: list[Alt],
        frame: Frame,
        test: Callable[[Expr], Expr | None] = as_condition,
    ) -> Expr | None:
        """A test whose value differs by path (a helper's ``if topk == 1:``,
        its ``topk`` passed as ``self.topk if self.topk > 1 else 1``): it holds
        where some path's conditions and its value (``test`` of it) do. Only
        for paths that exclude one another (one's conditions deny another's):
        then the negation is where it does not hold. Opaque otherwise, or
        where a path's own condition is."""
        if len(alts) > _PATHS_READ or not _exclusive(alts):
            return None
        # A name a nested function rebinds (`nonlocal`, `global`) may hold
        # another value at each read: the flow does not follow it there.
        frames = {id(f): f for alt in alts for *_, f in alt.conds}
        frames[id(frame)] = frame
        if any(_rebound_from_inside(f) for f in frames.values()):
            return None
        options = []
        for alt in alts:
            holds = test(alt.value)
            if holds is None:
                return None
            parts = [holds]
            for literal in sorted(alt.conds, key=literal_order):
                expr, positive = self.condition(literal)
                if expr is None:
                    return None
                parts.append(expr if positive else Op("not", (expr,)))
            options.append(Op("and", tuple(parts)))
        either = Op("bor", tuple(options))
        # Only sizes and literals, each size spelt one way. A name of no role
        # is a symbol by its text, which may stand for another value where it
        # is read again (a parameter beside a `self.` attribute of its name,
        # an object's attribute set in between, an alias bound again); two
        # spellings of one size (`self.draft_topk`, `self.topk`) are one
        # symbol only by the model's rule, and either may be None.
        spellings: dict[object, set[str]] = {}
        for symbol in sy.symbols(either):
            if symbol.role is None or symbol.opaque:
                return None
            spellings.setdefault(symbol.role, set()).add(symbol.text)
        if any(len(texts) > 1 for texts in spellings.values()):
            return None
        return either

    def _matches(self, case: ast.match_case, frame: Frame) -> Expr | None:
        """``case 1:`` or ``case 1 | 2:``: the subject equals one of them (a
        case is taken exactly when it does, ``match`` compares a value pattern
        with ``==``), and its guard holds. Any other pattern is opaque."""
        patterns = (
            case.pattern.patterns
            if isinstance(case.pattern, ast.MatchOr)
            else [case.pattern]
        )
        numbers = [
            literal_int(p.value) if isinstance(p, ast.MatchValue) else None
            for p in patterns
        ]
        if None in numbers or frame.scope.is_module:
            return None
        chain = frame.scope.locate(case.body[0])
        match = next(
            (
                s
                for s in reversed(chain)
                if isinstance(s, ast.Match) and any(c is case for c in s.cases)
            ),
            None,
        )
        if match is None:
            return None
        values = [Const(n) for n in numbers]
        alts = self.values(match.subject, frame, match)
        if len({a.value for a in alts}) == 1 and is_int(alts[0].value):
            taken = _equals_one_of(alts[0].value, values)
        else:  # a subject that differs by path (`k = self.topk if flag else 1`)
            taken = self._per_path(
                alts, frame, lambda v: _equals_one_of(v, values) if is_int(v) else None
            )
            if taken is None:
                return None
        if case.guard is None:
            return taken
        guards = self.values(case.guard, frame, match)
        guard = (
            guards[0].value
            if len({a.value for a in guards}) == 1
            else self._opaque(case.guard, frame)
        )
        return Op("and", (taken, as_condition(guard)))

    def _runs(self, loop: ast.For, frame: Frame) -> Expr | None:
        """``for ... in range(...)`` runs at least once iff the range is not empty."""
        it = loop.iter
        if not (
            isinstance(it, ast.Call)
            and last_name(it.func) == "range"
            and not it.keywords
            and 1 <= len(it.args) <= 2
        ):
            return None
        parts = [self.values(a, frame, loop) for a in it.args]
        if any(len(p) != 1 or not is_int(p[0].value) for p in parts):
            return None
        if len(parts) == 1:
            return Op("cmp", (parts[0][0].value, Const(0)), ">")
        return Op("cmp", (parts[1][0].value, parts[0][0].value), ">")


# A test read path by path, at most over this many paths.
_PATHS_READ = 8


def _rebound_from_inside(frame: Frame) -> bool:
    """Does the code ``frame`` reads hold a ``nonlocal`` or ``global``
    statement (by its text: a superset)? A module's is not read per path."""
    scope = frame.scope
    if scope.node is None:
        return True
    text = scope.source.segment(scope.node)
    return re.search(r"\b(?:nonlocal|global)\b", text) is not None


def _exclusive(alts: list[Alt]) -> bool:
    """Does each pair of paths hold a test taken one way and the other?"""
    return all(
        any((k, n, not p, f) in b.conds for k, n, p, f in a.conds)
        for a, b in itertools.combinations(alts, 2)
    )


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _equals_one_of(subject: Expr, values: Sequence[Expr]) -> Expr:
    """``subject == a or subject == b ...``: what ``in (a, b)`` and
    ``case a | b`` test."""
    found = [Op("cmp", (subject, v), "==") for v in values]
    return found[0] if len(found) == 1 else Op("bor", tuple(found))
