"""What a statement holds: its blocks of statements, handlers and cases.

Statements live only in statement lists: ``body``, ``orelse``, ``finalbody``, a
``try``'s ``handlers`` (each with a body) and a ``match``'s ``cases`` (each with a
body). Every walk that goes from a statement to the statements inside it, without
going through its expressions, asks here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

# The fields of a statement that hold statements, handlers or cases, in the
# order of ``_fields`` (every kind lists the ones it has in this relative order).
BLOCK_FIELDS = ("body", "handlers", "orelse", "finalbody", "cases")
_FIELDS_OF: dict[type, tuple[str, ...]] = {}


def children(stmt: ast.AST) -> Iterator[ast.AST]:
    """The statements, handlers and cases ``stmt`` holds directly, in the order
    of its fields (``ast.iter_child_nodes``' order, expressions left out)."""
    kind = type(stmt)
    fields = _FIELDS_OF.get(kind)
    if fields is None:
        fields = _FIELDS_OF[kind] = tuple(f for f in BLOCK_FIELDS if f in kind._fields)
    for name in fields:
        yield from getattr(stmt, name)


def blocks(stmt: ast.AST) -> Iterator[Sequence[ast.stmt]]:
    """The non-empty statement lists ``stmt`` holds: its ``body``, ``orelse`` and
    ``finalbody``, then each handler's body and each case's body."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(stmt, field, None)
        if block and isinstance(block, list):
            yield block
    for handler in getattr(stmt, "handlers", ()):
        yield handler.body
    for case in getattr(stmt, "cases", ()):
        yield case.body


def nested_statements(stmt: ast.AST) -> Iterator[ast.stmt]:
    """The statements of ``blocks(stmt)``, one block after another."""
    for block in blocks(stmt):
        yield from block


def assignment(stmt: ast.AST) -> tuple[list[ast.expr], ast.expr | None]:
    """The targets and the value of ``x = v`` and ``x: T = v``; none of any
    other statement (an annotation without a value binds nothing)."""
    if isinstance(stmt, ast.Assign):
        return stmt.targets, stmt.value
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        return [stmt.target], stmt.value
    return [], None
