"""Values of calls: the two helpers through their formulas, the known functions
(``max``, ``min``, ``math.prod``, ``triton.cdiv``...), allocators and their
``functools.partial``, and the functions and methods of the file through their
``return`` statements with the arguments' values bound (no recursion, at most
``MAX_DEPTH`` calls deep).

:class:`CallValues` is the part of :class:`lint_plugin.engine.flow.widths.Analysis` that
reads calls; it uses the analysis's ``values``.
"""

from __future__ import annotations

import ast

from lint_plugin.algebra import symbolic as sy
from lint_plugin.algebra.symbolic import Expr, Op, Tup
from lint_plugin.engine.flow.alternatives import (
    SERIAL,
    Alt,
    Arguments,
    Frame,
    Ref,
    combine,
    integer,
    is_int,
    with_all,
    with_conds,
)
from lint_plugin.engine.flow.known_values import last_name
from lint_plugin.engine.flow.scopes import REACH, ClassInfo, Scope, is_staticmethod
from lint_plugin.engine.formulas import HELPER_SLOTS

MAX_DEPTH = 4  # calls followed inside calls


class CallValues:
    """The values of calls, mixed into the analysis: it gives ``values``,
    ``_opaque``, ``_frame``, ``new_frame`` and the scopes it has made."""

    def _call(self, node: ast.Call, frame: Frame, stmt) -> list[Alt]:
        helper = self.helper_names.get(last_name(node.func) or "")
        if helper is not None:
            return self._helper(node, helper, frame, stmt)
        callees = self.values(node.func, frame, stmt)
        found: list[Alt] = []
        for callee in callees:
            for alt in self._apply(callee.value, node, frame, stmt):
                found.append(with_all(alt, callee.conds))
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
        return combine(
            parts,
            lambda v: Op("helper", tuple(v), helper) if all(map(is_int, v)) else None,
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
                if not all(map(is_int, values)):
                    return None
                return values[0] if len(values) == 1 else Op(name, tuple(values))

            return combine(parts, extreme)
        if name == "int" and len(parts) == 1:
            # A no-op wrapper: the value, and where it was made, are its argument's.
            return [
                a
                if is_int(a.value)
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
            return combine(parts, lambda v: integer(name, v[0]))
        if name == "ceil" and len(parts) == 1:
            return combine(
                parts,
                lambda v: (
                    sy.op("cdiv", *v[0].args)
                    if isinstance(v[0], Op) and v[0].kind == "truediv"
                    else (v[0] if is_int(v[0]) else None)
                ),
            )
        if name == "cdiv" and len(parts) == 2:
            return combine(parts, lambda v: integer("cdiv", v[0], v[1]))
        if name in ("sum", "prod") and len(parts) == 1:

            def fold(values):
                value = values[0]
                if not isinstance(value, Tup) or not all(map(is_int, value.items)):
                    return None
                return sy.add(*value.items) if name == "sum" else sy.mul(*value.items)

            return combine(parts, fold)
        if name == "tuple" and len(parts) == 1:
            return combine(parts, lambda v: v[0] if isinstance(v[0], Tup) else None)
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
        call = self.call_frame(function, where, node, frame, stmt, method)
        if call is None:
            return [Alt(self._opaque(node, frame))]
        callee, _ = call
        return self._returns(function, callee)

    def call_frame(
        self, function, where, node: ast.Call, frame: Frame, stmt, method: bool
    ) -> tuple[Frame, dict[str, ast.expr]] | None:
        """The frame ``function`` runs in when ``node`` calls it from ``frame``:
        the arguments' values bound to its parameters, with the argument each
        parameter was given (a default's is none); None when it cannot be read
        (too deep, recursion, starred or unknown arguments)."""
        if frame.depth >= MAX_DEPTH or id(function) in frame.calling:
            return None
        if isinstance(where, ClassInfo):
            scope = where.scope(function)
        else:
            scope = self._function_scope(function, where)
        args = function.args
        positional = [a.arg for a in (*args.posonlyargs, *args.args)]
        if method and not is_staticmethod(function):
            positional = positional[1:]  # the instance (or class) it is bound to
        if (
            args.vararg
            or args.kwarg
            or len(node.args) > len(positional)
            or any(isinstance(a, ast.Starred) for a in node.args)
        ):
            return None
        given: dict[str, ast.expr] = dict(zip(positional, node.args, strict=False))
        every = [*positional, *(a.arg for a in args.kwonlyargs)]
        for keyword in node.keywords:
            if keyword.arg is None or keyword.arg not in every or keyword.arg in given:
                return None
            given[keyword.arg] = keyword.value
        bound = {name: (arg, frame, stmt) for name, arg in given.items()}
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
                    return None
                bound[name] = (defaults[name], self._frame(outer), where_defined)
        calling = frame.calling | {id(function)}
        instance = frame.cls if method and frame.cls is not where else None
        callee = self.new_frame(
            scope, Arguments(bound), frame.depth + 1, calling, instance
        )
        return callee, given

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

    def _returns(self, function, callee: Frame) -> list[Alt]:
        scope = callee.scope
        flow = scope.flow(REACH)
        found: list[Alt] = []
        for ret, facts in flow.returns:
            if ret.value is None:
                continue
            for alt in self.values(ret.value, callee, ret):
                for fact in facts:
                    found.append(with_conds(alt, fact.conds, callee))
        if flow.end or not found:
            found.append(
                Alt(sy.opaque_symbol(f"{function.name}(...)", str(next(SERIAL))))
            )
        return found
