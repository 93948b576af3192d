"""The engine's view of libcst nodes: the same matching as ``ast`` nodes get.

``check`` never imports this (it must not import libcst); it is for libcst-based
tools that want to ask the engine about a node they hold, e.g. a Fixit rule or a
codemod that matches without going through text.
"""

from __future__ import annotations

import libcst as cst

from lint_plugin.algebra.arith import Adapter

_OPS = {cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*"}


def _binop(node: object) -> tuple[str, object, object] | None:
    if isinstance(node, cst.BinaryOperation):
        op = _OPS.get(type(node.operator))
        if op is not None:
            return op, node.left, node.right
    return None


def _name(node: object) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


def _integer(node: object) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    return None


CST = Adapter(_binop, _name, _integer)


def code_of(node: cst.CSTNode) -> str:
    """A node's source without the parentheses around it (argument text)."""
    if isinstance(node, cst.BaseExpression) and (node.lpar or node.rpar):
        node = node.with_changes(lpar=[], rpar=[])
    return cst.Module(body=[]).code_for_node(node)
