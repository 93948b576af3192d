"""Reading helper calls and products as written: a call's argument for each of a
helper's parameters, the factors of a product. What they are worth is the width
analysis's (:mod:`lint_plugin.engine.flow.widths`)."""

from __future__ import annotations

import ast

from lint_plugin.engine.formulas import HELPER_SLOTS


def factors(node: ast.expr) -> list[ast.expr]:
    """``a * (b * c)`` as ``[a, b, c]``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return factors(node.left) + factors(node.right)
    return [node]


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
