"""Reading expanded values (see :func:`lint_plugin.facts.expand`): roles, factors,
step counts and helper arguments. Shared by the rules that judge values."""

from __future__ import annotations

import ast

from lint_plugin.arith import AST
from lint_plugin.formulas import HELPER_SLOTS
from lint_plugin.roles import Role, role_of_name


def role_of(node: ast.expr) -> Role | None:
    """The role a name or attribute plays, from its last segment."""
    return role_of_name(AST.name(node))


def factors(node: ast.expr) -> list[ast.expr]:
    """``a * (b * c)`` as ``[a, b, c]``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return factors(node.left) + factors(node.right)
    return [node]


def is_steps(node: ast.expr) -> bool:
    """A draft step count: ``self.speculative_num_steps``, ``num_steps - 1``."""
    if role_of(node) is Role.NUM_STEPS:
        return True
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, (ast.Add, ast.Sub))
        and role_of(node.left) is Role.NUM_STEPS
        and isinstance(node.right, ast.Constant)
        and type(node.right.value) is int
    )


def argument(call: ast.Call, helper: str, slot: str) -> ast.expr | None:
    """The argument given for ``slot`` of a helper call, positional or keyword."""
    slots = [name for name, _ in HELPER_SLOTS[helper]]
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return None
        if index < len(slots) and slots[index] == slot:
            return arg
    for keyword in call.keywords:
        if keyword.arg == slot:
            return keyword.value
    return None


def arguments(call: ast.Call, helper: str) -> list[tuple[str, ast.expr]]:
    """``(slot, argument)`` for each argument given, in slot order."""
    found = [(slot, argument(call, helper, slot)) for slot, _ in HELPER_SLOTS[helper]]
    return [(slot, node) for slot, node in found if node is not None]
