"""Where KVI006's inserted guard goes so that it checks the real used length.

The guard compares ``draft_kv_indices_used_len(seq_lens_sum, ...)`` with the
row. When the function replaces a missing ``seq_lens_sum`` by an upper bound
before the launch (Triton's ``common_template``: ``if seq_lens_sum is None:
seq_lens_sum = num_seqs * self.max_context_len``, which is only used to clamp
slices), a guard after that line would compare the bound, which exceeds the row
by construction, and fire on valid input. An upper bound is a value built from a
context length. Then the guard goes on the branch where the real value is known:
an ``else:`` of that ``if``, when the ``if`` only rebinds the name, has no
``else`` of its own, and is a statement before the launch in a block holding the
launch; the guard's other names must be bound before the ``if`` and none of them
rebound between the ``if`` and the launch. Any other shape is a refusal with its
reason.
"""

from __future__ import annotations

import ast

from lint_plugin import statements
from lint_plugin.engine.facts import FunctionFacts, Position, position
from lint_plugin.engine.nodes import walk_nodes
from lint_plugin.engine.source import Source
from lint_plugin.records import record
from lint_plugin.roles import Role, role_of_name


@record(frozen=True)
class Placement:
    """Insert at ``at`` (a line's start, an ``ast`` position); ``header`` is a
    line to put first (``else:``); ``indent`` is the guard's indentation."""

    at: Position | None = None
    indent: str = ""
    header: str = ""
    reason: str = ""


def place_guard(
    function: FunctionFacts,
    launch: ast.stmt,
    seq_lens_sum: str,
    names: list[str],
    source: Source,
) -> Placement:
    """Where the guard for ``launch`` (a statement of ``function``) goes; ``names``
    are the guard's other locals (the buffer, ``bs``); ``source`` the tree's
    (a region check parsed: its rows are the file's less its offset)."""
    lines = source.lines
    at = position(launch)
    bounds = [
        b
        for b in function.locals.all(seq_lens_sum)
        if b.at < at and b.value is not None and _is_bound(b.value)
    ]
    if not bounds:
        indent = lines[launch.lineno - 1][: launch.col_offset]
        return Placement((launch.lineno, launch.col_offset), indent)
    bound = bounds[-1]
    row = bound.at[0] + source.row_offset
    why = (
        f"`{seq_lens_sum}` is replaced by an upper bound on line {row} before "
        "the launch: a guard there checks the bound, not the used length, and "
        "fires on valid input"
    )
    branch = _branch(function.node, bound.statement)
    if branch is None or len(bounds) > 1:
        return Placement(reason=why)
    test_if, block, index = branch
    if not _tests_missing(test_if.test, seq_lens_sum) or test_if.orelse:
        return Placement(reason=why)
    if not any(_holds(s, launch) for s in block[index + 1 :]):
        return Placement(reason=why)
    start, end = position(test_if), position(launch)
    for name in names:
        if not _bound_before(function, name, start):
            return Placement(reason=f"{why}; `{name}` is not bound before its `if`")
    for name in (seq_lens_sum, *names):
        if any(start < b.at < end for b in function.locals.all(name) if b is not bound):
            return Placement(reason=f"{why}; `{name}` changes before the launch")
    last = test_if.body[-1]
    if_indent = lines[test_if.lineno - 1][: test_if.col_offset]
    first = test_if.body[0]
    if first.lineno != test_if.lineno:
        body_indent = lines[first.lineno - 1][: first.col_offset]
    else:  # `if x is None: x = ...` on one line
        body_indent = if_indent + "    "
    return Placement((last.end_lineno + 1, 0), body_indent, f"{if_indent}else:\n")


def _is_bound(value: ast.expr) -> bool:
    """A value built from a context length: an upper bound, not a length sum."""
    for node in walk_nodes(value):
        name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
        if isinstance(node, (ast.Name, ast.Attribute)) and (
            role_of_name(name) is Role.MAX_CONTEXT_LEN
        ):
            return True
    return False


def _branch(function: ast.AST, statement: ast.stmt | None):
    """``(the if, the block holding it, its index)`` when ``statement`` is the
    only statement of an ``if``'s body."""
    if statement is None:
        return None
    for node in walk_nodes(function):
        for block in statements.blocks(node):
            for index, child in enumerate(block):
                if (
                    isinstance(child, ast.If)
                    and len(child.body) == 1
                    and child.body[0] is statement
                ):
                    return child, block, index
    return None


def _tests_missing(test: ast.expr, name: str) -> bool:
    """``name is None`` or ``not name``."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return isinstance(test.operand, ast.Name) and test.operand.id == name
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == name
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Is)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


def _holds(statement: ast.stmt, target: ast.stmt) -> bool:
    return any(node is target for node in walk_nodes(statement))


def _bound_before(function: FunctionFacts, name: str, at: Position) -> bool:
    scope: FunctionFacts | None = function
    while scope is not None:
        if scope.locals.before(name, at) is not None or name in scope.params:
            return True
        scope = scope.parent
    return False
