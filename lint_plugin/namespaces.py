"""How a module's namespace (``globals()``, ``vars()``, a module's
``__dict__``) is used: read, or possibly written.

A write through the namespace can bind any name at run time, out of sight of
every static reading of the module; a read binds nothing. Shared by the reading
of what a module defines (:mod:`lint_plugin.engine.package_tree`) and ``fix``'s
refusal of files that rebind a helper at run time
(:mod:`lint_plugin.fix.dynamic_names`). Nothing is run: only the ``ast`` is read.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

# Methods of a dict that read one key, and all that never change it.
KEY_READ_METHODS = frozenset({"get", "__contains__", "__getitem__"})
READ_METHODS = KEY_READ_METHODS | {"keys", "items", "values", "copy"}
# Builtins that only read the dict they are given (a copy, a count, a text).
READERS = frozenset(
    {"len", "dict", "list", "sorted", "set", "tuple", "frozenset", "iter", "repr"}
)


def only_read(node: ast.expr, parent: ast.AST | None) -> bool:
    """Is ``node`` (a namespace dict) only read where it stands in ``parent``: a
    subscript that loads, a comparison (``"x" in globals()``), a read-only
    method, a builtin that reads it, a loop over it, an expression statement?"""
    if isinstance(parent, ast.Subscript):
        return parent.value is node and isinstance(parent.ctx, ast.Load)
    if isinstance(parent, ast.Compare):
        return True
    if isinstance(parent, ast.Attribute):
        return parent.attr in READ_METHODS
    if isinstance(parent, ast.Call):
        func = parent.func
        return (
            node is not func
            and node in parent.args
            and isinstance(func, ast.Name)
            and func.id in READERS
        )
    if isinstance(parent, (ast.For, ast.comprehension)):
        return parent.iter is node
    return isinstance(parent, ast.Expr)


def with_parents(tree: ast.AST) -> Iterator[tuple[ast.AST, ast.AST | None]]:
    """Every node of ``tree`` with the node it hangs from (None for the root)."""
    pending: list[tuple[ast.AST, ast.AST | None]] = [(tree, None)]
    while pending:
        node, parent = pending.pop()
        yield node, parent
        pending.extend((child, node) for child in ast.iter_child_nodes(node))


def is_globals_call(node: ast.AST) -> bool:
    """``globals()``: the module's namespace as a dict."""
    return (
        isinstance(node, ast.Call)
        and not node.args
        and not node.keywords
        and isinstance(node.func, ast.Name)
        and node.func.id == "globals"
    )
