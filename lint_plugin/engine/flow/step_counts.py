"""Can an expression hold a draft step count at all? Asked before any value is
computed: most allocations are not per step, and this reads only the walk's
bindings (every one of a name, whatever the path), never evaluating anything.
It may say maybe where the values would say no, never the reverse.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from lint_plugin.engine.flow.dataflow import ENTRY
from lint_plugin.engine.flow.known_values import (
    ALLOCATORS,
    BUILTIN_NAMES,
    MEMBERS,
    MODULES,
    NAMED_ATTRIBUTES,
    OPAQUE_BUILTINS,
    PASSING,
)
from lint_plugin.engine.flow.widths import Analysis
from lint_plugin.roles import Role, role_of_name


def may_hold_steps(
    analysis: Analysis, node: ast.AST, function, call: CallParameters | None = None
) -> bool:
    """Can ``node``'s value, in the walked ``function`` (a :class:`FunctionFacts`),
    hold a step count at all? Asked before any value is computed: most
    allocations are not per step. It reads the walk's bindings, every one of a
    name whatever the path (so it can only say maybe where the values would say
    no), and never evaluates anything; False only where
    :meth:`Analysis.values` could not give a step count either. ``call``: the
    function is read as a call runs it, its parameters holding what the call
    gives them."""
    key = (id(node), id(function), id(call))
    found = analysis._steps.get(key)
    if found is None:
        analysis._steps[key] = False  # through itself: the other definitions decide
        found = analysis._steps[key] = _holds_steps(analysis, node, function, call)
    return found


class CallParameters:
    """A call of a walked function: whether a parameter may hold a step count
    is whether the call's value for it may (``may_be_steps``, asked in the
    caller). Kept alive with the frame it stands for (the analysis's memo
    keys hold ids)."""

    __slots__ = ("frame", "function", "may_be_steps")

    def __init__(self, frame, function, may_be_steps) -> None:
        self.frame = frame
        self.function = function
        self.may_be_steps = may_be_steps


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


def _holds_steps(analysis: Analysis, node: ast.AST, function, call) -> bool:
    kind = type(node)
    if kind is ast.Constant:
        return False
    split = _SPLIT.get(kind)
    if split is not None:
        return any(
            may_hold_steps(analysis, part, function, call) for part in split(node)
        )
    if kind is ast.Attribute:
        role = role_of_name(node.attr)
        owner = node.value
        if (
            isinstance(owner, ast.Name)
            and owner.id == "self"
            and function
            and function.cls
        ):
            if role in NAMED_ATTRIBUTES:
                return role is Role.NUM_STEPS
            return _class_holds_steps(analysis, function.cls, node.attr, role)
        if role is not None:
            return role is Role.NUM_STEPS
        if node.attr in MEMBERS:
            return True
        # Of no role and no module's, tensor's or class's member: a named
        # quantity, unless the owner may be a class of the file.
        return isinstance(owner, ast.Name) and not _bound_locally(owner.id, function)
    if kind is ast.Name:
        return _name_holds_steps(analysis, node.id, function, call)
    if kind is ast.Call:
        func = node.func
        if isinstance(func, ast.Attribute):
            # A tensor (no integer, no shape read), or a method of a named
            # quantity (opaque), holds no step count; a module's function or
            # a class's method may.
            owner = func.value
            if func.attr in ALLOCATORS:
                return False
            if func.attr in MEMBERS:
                return True
            if isinstance(owner, ast.Name) and owner.id == "self":
                return True
            return isinstance(owner, ast.Name) and not _bound_locally(
                owner.id, function
            )
        if isinstance(func, ast.Name):
            name = func.id
            if analysis.helper_names.get(name) or (
                name in PASSING and not _bound_locally(name, function)
            ):
                return any(
                    may_hold_steps(analysis, a, function, call) for a in node.args
                )
            if not _bound_locally(name, function):
                if name in OPAQUE_BUILTINS:
                    return False  # len(...): an opaque value
                return _module_call_holds_steps(analysis, name)
        return True
    return True


def _module_call_holds_steps(analysis: Analysis, name: str) -> bool:
    """A call of a module-level name: an import's function returns an opaque
    value, a class an object; a function of the file may return a step count."""
    for fact in analysis.module_scope.flow(name).end:
        defn = fact.defn
        if defn is ENTRY or defn.kind in ("import", "class"):
            continue
        if defn.kind == "block":
            block = analysis.module.block(defn.stmt)
            if isinstance(block, ast.ClassDef):
                continue
        return True
    return False


def _module_name_holds_steps(analysis: Analysis, name: str) -> bool:
    """A module-level name as a value: what its module-level assignments hold
    (imports, functions and classes are no integers)."""
    key = ("module", name)
    found = analysis._steps.get(key)
    if found is not None:
        return found
    analysis._steps[key] = False
    found = False
    for fact in analysis.module_scope.flow(name).end:
        defn = fact.defn
        if defn is ENTRY:
            found = found or role_of_name(name) is Role.NUM_STEPS
        elif defn.kind == "assign":
            found = found or may_hold_steps(analysis, defn.value, None)
        elif defn.kind not in ("import", "function", "class", "block"):
            found = True
    analysis._steps[key] = found
    return found


def _bound_locally(name: str, function) -> bool:
    while function is not None:
        if name in function.locals or name in function.params:
            return True
        function = function.parent
    return False


def _name_holds_steps(analysis: Analysis, name: str, function, call) -> bool:
    scope = function
    while scope is not None:
        bindings = scope.locals.all(name)
        if bindings and any(
            _binding_holds_steps(analysis, name, b, scope, call) for b in bindings
        ):
            return True
        if name in scope.params:  # its value on entry, rebound or not
            if call is not None and scope is call.function:
                return call.may_be_steps(name)
            return role_of_name(name) is Role.NUM_STEPS
        if bindings:
            return False
        scope = scope.parent
    if name in MODULES or name in BUILTIN_NAMES or name in OPAQUE_BUILTINS:
        return False  # a module or a function: no integer
    return _module_name_holds_steps(analysis, name)


def _binding_holds_steps(analysis: Analysis, name: str, binding, scope, call) -> bool:
    if binding.value is not None:
        return may_hold_steps(analysis, binding.value, binding.owner or scope, call)
    statement = binding.statement
    if isinstance(statement, ast.Assign):
        # An element unpacked from a value that is no literal tuple (`steps, w =
        # self._dims(n)`): what the whole value may hold.
        return may_hold_steps(analysis, statement.value, binding.owner or scope, call)
    return role_of_name(name) is Role.NUM_STEPS  # a loop's target, an import, ...


def _class_holds_steps(analysis: Analysis, cls, attr: str, role) -> bool:
    """``self.<attr>`` as any method of the walked class may assign it."""
    key = (id(cls), attr)
    found = analysis._steps.get(key)
    if found is not None:
        return found
    analysis._steps[key] = False
    found = True
    node = cls.node
    # Bases of another module are not read (as the values do not read them):
    # a base named as no class of the file is one of those.
    own_lineage = not any(
        not isinstance(base, ast.Name) or analysis.module.defines_class(base.id)
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
                _binding_holds_steps(analysis, attr, b, b.owner, None) for b in bindings
            )
    analysis._steps[key] = found
    return found


def unwalked_call_test(
    scope, given: dict[str, ast.expr], caller: Callable[[ast.expr], bool]
) -> Callable[[ast.expr], bool]:
    """``may_hold_steps`` for a function the walk did not read (a function of
    the module), as a call of it runs (``scope``: its scope, ``given``: the
    call's argument for each parameter, ``caller``: the test in the caller),
    read with no bindings: a parameter holds a step count where the call's
    argument for it may; any other name the function binds may (it
    may come from a parameter), as may a name of no role; an attribute or a
    method of an object the function binds is an opaque value (no step
    count), one of ``self`` or of a module may be one."""
    bound = set(scope.params)

    def local(name: str) -> bool:
        return name in bound or scope._may_bind(name)

    def name(node: ast.Name) -> bool:
        if node.id in given and not scope._may_bind(node.id):
            return caller(given[node.id])
        if node.id in OPAQUE_BUILTINS or node.id in MODULES:
            return False
        return local(node.id) or role_of_name(node.id) in (None, Role.NUM_STEPS)

    def attribute(node: ast.Attribute) -> bool:
        role = role_of_name(node.attr)
        if role is not None:
            return role is Role.NUM_STEPS
        owner = node.value
        if node.attr in MEMBERS or not isinstance(owner, ast.Name):
            return True
        return owner.id == scope.self_name or not local(owner.id)

    def may_be_steps(node: ast.expr) -> bool:
        pending = [node]
        while pending:
            sub = pending.pop()
            if isinstance(sub, ast.Name):
                if name(sub):
                    return True
            elif isinstance(sub, ast.Attribute):
                if attribute(sub):
                    return True
            elif isinstance(sub, ast.Call):
                func = sub.func
                if isinstance(func, ast.Attribute):
                    pending.append(func)  # the method's owner decides
                elif isinstance(func, ast.Name) and func.id in PASSING:
                    pending += sub.args
                elif not (isinstance(func, ast.Name) and func.id in OPAQUE_BUILTINS):
                    return True
            else:
                pending.extend(ast.iter_child_nodes(sub))
        return False

    return may_be_steps
