"""Statements that can rebind a helper's name at run time, out of the gate's sight.

The gate (:mod:`lint_plugin.fix.gate.verify`) proves what a name means from the
module's static bindings (:mod:`lint_plugin.fix.names`). A module can also bind
names while it runs: through its namespace (``globals()[...] = ...``,
``vars()``, a class body's ``locals()``, a frame's ``f_globals``), through its
module object (``setattr(sys.modules[__name__], ...)``), through code it builds
(``exec("def draft_kv_indices_used_len...")``), or by changing the helpers'
module under the import ``fix`` adds or reuses (a ``sys.modules`` entry for it,
an attribute assigned on it). ``fix`` refuses such a file, naming the statement,
rather than guess the order things run in.

What is refused, for the names the rewritten file binds or calls (the helpers,
the guard, the names it imports them as) and the modules they come from (and
the packages above them):

* a namespace dict written through, or handed on (assigned, passed to a call)
  where it could be written: a constant key that is none of the names is
  harmless, a computed one is not. A read sees the names the rewrite's import
  binds (``"draft_kv_indices_used_len" in globals()`` turns true): harmless
  only where it asks for another constant key; ``dir()`` lists them all;
  Namespaces: ``globals()``, ``vars()``, ``locals()``, a frame's ``f_globals``
  or ``f_locals``, a function's ``__globals__``, a module's ``__dict__``;
* an attribute of that name assigned or deleted on anything, ``setattr``,
  ``delattr`` or ``__setattr__`` naming it, and either with a computed name on
  a module that matters: this one (``sys.modules[__name__]``, kept in a
  variable or not), the helpers' modules and the packages above them, or one
  looked up by a computed name (``getattr(torch, name)`` is not refused);
  ``hasattr``/``getattr``/``dir`` of such a module read what the import binds;
* a ``sys.modules`` entry for one of the modules set, removed or replaced
  (or any entry, when the key is computed), and ``sys.modules`` itself handed on;
* ``exec``/``eval`` (also ``builtins.exec``, or either handed on under another
  name) of code that names one of the names or reaches a namespace, and of
  computed code run in the module's own namespace.

Code elsewhere that patches the rewritten module (``import backend;
backend.draft_kv_indices_used_len = f``) is not read: only this file is.

Nothing is run: only the ``ast`` is read.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from lint_plugin.namespaces import (
    KEY_READ_METHODS,
    is_globals_call,
    only_read,
    with_parents,
)

# Words whose presence in code handed to exec/eval may reach a namespace.
_REACHING = frozenset(
    {
        "globals",
        "vars",
        "locals",
        "setattr",
        "delattr",
        "modules",
        "__dict__",
        "__import__",
        "import_module",
        "exec",
        "eval",
        "f_globals",
        "f_locals",
    }
)
# What runs code it is given in the module's namespace.
_RUNNERS = frozenset({"exec", "eval"})
_WRITE_METHODS = frozenset(
    {"__setitem__", "__delitem__", "setdefault", "pop", "update", "clear", "popitem"}
)


class Rebinding:
    """The first statement found that can rebind a name at run time."""

    def __init__(self, row: int, what: str) -> None:
        self.row = row
        self.what = what

    def __str__(self) -> str:
        return f"line {self.row} {self.what} at run time"


def rebinding(
    tree: ast.Module, names: Iterable[str], modules: Iterable[str]
) -> Rebinding | None:
    """The first place in ``tree`` that can rebind one of ``names`` in the
    module's namespace, or an attribute of one of ``modules`` (dotted), at run
    time; None when there is none."""
    modules = _with_packages(modules)
    parents: dict[int, ast.AST | None] = {}
    for node, parent in with_parents(tree):
        parents[id(node)] = parent
    file = _File(tree, frozenset(names), modules, parents)
    found: list[Rebinding] = []
    for node, parent in with_parents(tree):
        reason = file.rebinds(node, parent)
        if reason is not None:
            found.append(Rebinding(getattr(node, "lineno", 0), reason))
    return min(found, key=lambda r: r.row) if found else None


def _with_packages(modules: Iterable[str]) -> frozenset[str]:
    """Each module and every package above it (replacing ``a`` in
    ``sys.modules`` changes what ``import a.b`` finds)."""
    found = set()
    for module in modules:
        parts = module.split(".")
        found.update(".".join(parts[:n]) for n in range(1, len(parts) + 1))
    return frozenset(found)


class _File:
    """One file's names, modules and ``sys`` spellings, and the judgement of
    each of its nodes."""

    def __init__(self, tree: ast.Module, names, modules, parents) -> None:
        self.names = names
        self.modules = modules
        self.parents = parents
        # The module names' last parts: ``stubpkg.spec_utils = ...`` replaces
        # the module ``from stubpkg import spec_utils`` finds.
        self.module_leaves = frozenset(m.rsplit(".", 1)[-1] for m in modules)
        self.module_names, self.sys_names, self.sys_modules = _imports(tree, modules)
        self.follow_assigned_modules(tree)

    def follow_assigned_modules(self, tree: ast.Module) -> None:
        """Add to ``module_names`` the names assigned a module object (``mod =
        sys.modules[__name__]``, ``importlib.import_module(...)``), followed
        through chains of them."""
        found: set[str] = set()
        while True:
            before = len(found)
            for node in ast.walk(tree):
                targets: list[ast.expr] = []
                value = None
                if isinstance(node, ast.Assign):
                    targets, value = node.targets, node.value
                elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)):
                    targets, value = [node.target], node.value
                if targets and value is not None and self.is_module(value):
                    for target in targets:
                        if isinstance(target, ast.Name):
                            found.add(target.id)
            self.module_names = self.module_names | found
            if len(found) == before:
                return

    def rebinds(self, node: ast.AST, parent: ast.AST | None) -> str | None:
        if self.is_namespace(node):
            return self.namespace_use(node, parent)
        if self.is_sys_modules(node):
            return self.sys_modules_use(node, parent)
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            if node.attr in self.names or (
                node.attr in self.module_leaves and self.is_module(node.value)
            ):
                return f"assigns the attribute {node.attr}"
            return None
        if isinstance(node, ast.Name) and node.id in _RUNNERS:
            call = parent if isinstance(parent, ast.Call) else None
            if call is None or call.func is not node:
                return f"hands {node.id} on, to run code out of sight"
            return None
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr in _RUNNERS and _is_builtins(func.value) and node.args:
                return self.exec_use(node, func.attr)
            if func.attr in ("__setattr__", "__delattr__"):
                return self.dunder_setattr_use(node)
            return None
        if not isinstance(func, ast.Name):
            return None
        function = func.id
        if function == "dir":
            if not node.args:
                return "lists the names with dir(), where the import fix adds shows"
            if self.is_module(node.args[0]):
                return (
                    "lists a module's names with dir(), where the import fix adds shows"
                )
            return None
        if function in ("setattr", "delattr") and node.args:
            return self.setattr_use(node)
        if function in ("hasattr", "getattr") and len(node.args) > 1:
            return self.getattr_use(node)
        if function in _RUNNERS and node.args:
            return self.exec_use(node, function)
        return None

    def is_namespace(self, node: ast.AST) -> bool:
        """``globals()``, ``vars()``, ``locals()``, a frame's ``f_globals`` or
        ``f_locals``, or a module's ``__dict__`` or ``vars(module)``."""
        if is_globals_call(node):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("vars", "locals") and not node.args:
                return True
            if node.func.id == "vars" and len(node.args) == 1:
                return self.is_module(node.args[0])
            return False
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            if node.attr in ("f_globals", "f_locals", "__globals__"):
                return True
            return node.attr == "__dict__" and self.is_module(node.value)
        return False

    def is_module(self, node: ast.AST) -> bool:
        """A module whose names matter here: this module itself
        (``sys.modules[__name__]``, ``importlib.import_module(__name__)``), one
        of the modules the helpers come from or a package above one (imported,
        or looked up by that name), any module looked up by a computed name, or
        a name or attribute chain bound to one of those. ``torch`` is not."""
        if isinstance(node, ast.Subscript):
            return self.is_sys_modules(node.value) and self.relevant_key(node.slice)
        if isinstance(node, ast.Attribute):
            return self.is_module(node.value)
        if isinstance(node, ast.Name):
            return node.id in self.module_names
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "get":
                return self.is_sys_modules(func.value) and self.relevant_key(
                    node.args[0]
                )
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else getattr(func, "id", "")
            )
            return name in ("import_module", "__import__") and self.relevant_key(
                node.args[0]
            )
        return False

    def relevant_key(self, key: ast.AST) -> bool:
        """A module name that is this module's, one of the modules', or not
        known."""
        if isinstance(key, ast.Name) and key.id == "__name__":
            return True
        text = _constant_text(key)
        return text is None or text in self.modules

    def is_sys_modules(self, node: ast.AST) -> bool:
        """``sys.modules`` (under any name ``sys`` is imported as), or
        ``modules`` imported from ``sys``."""
        if isinstance(node, ast.Attribute):
            return (
                node.attr == "modules"
                and isinstance(node.value, ast.Name)
                and node.value.id in self.sys_names
            )
        return isinstance(node, ast.Name) and node.id in self.sys_modules

    def namespace_use(self, node, parent) -> str | None:
        shown = _spelled(node)
        if only_read(node, parent):
            # A read sees the names the rewrite's import binds: harmless only
            # where it asks for one other name.
            key = self.key_read(node, parent)
            if key is not None and key not in self.names:
                return None
            if key is not None:
                return f"reads {shown}[{key!r}], which the import fix adds binds"
            return f"reads the whole of {shown}, where the import fix adds shows"
        if isinstance(parent, ast.Subscript) and parent.value is node:
            key = _constant_text(parent.slice)
            if key is not None and key not in self.names:
                return None
            return f"writes {shown}[{_spelled(parent.slice)}]"
        if isinstance(parent, ast.Attribute) and parent.value is node:
            if self.writes_only_other_keys(parent, self.names):
                return None
            return f"writes {shown} through .{parent.attr}"
        return f"hands {shown} on where it can be written"

    def key_read(self, node: ast.AST, parent: ast.AST | None) -> str | None:
        """The constant key a read of the namespace ``node`` asks for (a
        subscript, an ``in`` test, ``.get``), or None when it reads more."""
        if isinstance(parent, ast.Subscript):
            return _constant_text(parent.slice)
        if isinstance(parent, ast.Compare):
            operands = [parent.left, *parent.comparators]
            for index, op in enumerate(parent.ops):
                if operands[index + 1] is node and isinstance(op, (ast.In, ast.NotIn)):
                    return _constant_text(operands[index])
            return None
        if isinstance(parent, ast.Attribute) and parent.attr in KEY_READ_METHODS:
            call = self.parents.get(id(parent))
            if isinstance(call, ast.Call) and call.func is parent and call.args:
                return _constant_text(call.args[0])
        return None

    def writes_only_other_keys(self, method: ast.Attribute, keys) -> bool:
        """``method`` is a dict method called with constant keys none of ``keys``."""
        call = self.parents.get(id(method))
        if not (
            isinstance(call, ast.Call)
            and call.func is method
            and method.attr in _WRITE_METHODS
        ):
            return False
        written = _keys_written(method.attr, call)
        return written is not None and not written & keys

    def sys_modules_use(self, node, parent) -> str | None:
        if isinstance(parent, ast.Subscript) and parent.value is node:
            if isinstance(parent.ctx, ast.Load):
                return None  # a module read from it (what it does next is judged)
            key = _constant_text(parent.slice)
            if key is not None and key not in self.modules:
                return None
            return f"replaces the module sys.modules[{_spelled(parent.slice)}]"
        if only_read(node, parent):
            return None
        if isinstance(parent, ast.Attribute) and parent.value is node:
            if self.writes_only_other_keys(parent, self.modules):
                return None
            return f"changes sys.modules through .{parent.attr}"
        return "hands sys.modules on where it can be changed"

    def getattr_use(self, call: ast.Call) -> str | None:
        """``hasattr``/``getattr`` of a module: it sees the name the import
        binds (a constant other name, or a non-module, is harmless)."""
        if not self.is_module(call.args[0]):
            return None
        key = _constant_text(call.args[1])
        if key is not None and key not in self.names:
            return None
        return (
            f"reads a module attribute with {call.func.id}(), which the import "
            "fix adds binds"
        )

    def dunder_setattr_use(self, call: ast.Call) -> str | None:
        """``object.__setattr__(module, name, value)`` or
        ``module.__setattr__(name, value)``."""
        keys = [_constant_text(arg) for arg in call.args]
        if any(key in self.names for key in keys if key is not None):
            return f"calls {call.func.attr} naming a helper"
        targets = [call.func.value, *call.args[:1]]
        if any(self.is_module(t) for t in targets) and None in keys[:2]:
            return f"calls {call.func.attr} on a module with a computed name"
        return None

    def setattr_use(self, call: ast.Call) -> str | None:
        function = call.func.id
        key = _constant_text(call.args[1]) if len(call.args) > 1 else None
        target = call.args[0]
        if key is not None:
            if key in self.names or (
                key in self.module_leaves and self.is_module(target)
            ):
                return f"calls {function}(..., {key!r})"
            return None
        if self.is_module(target) or self.is_namespace(target):
            return f"calls {function} on a module with a computed name"
        return None

    def exec_use(self, call: ast.Call, function: str) -> str | None:
        text = _constant_text(call.args[0])
        if text is None:
            if len(call.args) > 1 and not self.is_namespace(call.args[1]):
                return None  # run in a namespace of its own
            return f"runs computed code with {function}() in this module's namespace"
        try:
            words = _identifiers(ast.parse(text))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return f"runs code with {function}() that does not parse"
        touched = words & (self.names | self.module_leaves | _REACHING)
        if touched:
            return f"runs code with {function}() naming {sorted(touched)[0]}"
        return None


def _imports(tree: ast.Module, modules: frozenset[str]):
    """Names the file binds by an import to one of ``modules`` (or a package
    above one), to ``sys``, and to ``sys.modules``."""
    module_names, sys_names, sys_modules = set(), set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                if (alias.name if alias.asname else bound) in modules:
                    module_names.add(bound)
                if alias.name == "sys":
                    sys_names.add(bound)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                bound = alias.asname or alias.name
                if f"{node.module}.{alias.name}" in modules:
                    module_names.add(bound)
                if node.module == "sys" and alias.name == "modules":
                    sys_modules.add(bound)
    return frozenset(module_names), frozenset(sys_names), frozenset(sys_modules)


def _keys_written(method: str, call: ast.Call) -> frozenset[str] | None:
    """The constant keys a dict method call writes, or None when not known."""
    if method in ("clear", "popitem"):
        return None
    if method == "update":
        keys = [k.arg for k in call.keywords]
        if any(k is None for k in keys):
            return None  # ``**mapping``
        for arg in call.args:
            if not isinstance(arg, ast.Dict):
                return None
            for key in arg.keys:
                text = _constant_text(key) if key is not None else None
                if text is None:
                    return None
                keys.append(text)
        return frozenset(keys)
    if not call.args:
        return None
    key = _constant_text(call.args[0])
    return None if key is None else frozenset({key})


def _identifiers(tree: ast.AST) -> frozenset[str]:
    """Every name, attribute, definition, import and string in ``tree``."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.alias):
            found.add(node.asname or node.name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.add(node.value)
    return frozenset(found)


def _constant_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _spelled(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_builtins(node: ast.AST) -> bool:
    """``builtins`` or ``__builtins__`` (``builtins.exec`` is ``exec``)."""
    return isinstance(node, ast.Name) and node.id in ("builtins", "__builtins__")
