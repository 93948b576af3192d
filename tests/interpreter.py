"""A tiny interpreter of our own for the generated functions (never ``eval``).

It runs the statement subset the generator writes: a docstring, assignments to
names or tuples of names, and a ``return``; expressions of integers, strings,
names, attributes, tuples, ``+ - *``, unary ``-`` and calls of the two helpers
(on the bundled reference runtime) and of ``abs``/``max``/``min``. A name or an
attribute that was never assigned takes a value chosen from its text and a seed,
so the same seed gives the same inputs before and after a rewrite.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Callable

from lint_plugin import runtime

FUNCTIONS: dict[str, Callable[..., object]] = {
    "draft_kv_indices_used_len": runtime.draft_kv_indices_used_len,
    "draft_kv_indices_buffer_width": runtime.draft_kv_indices_buffer_width,
    "abs": abs,
    "max": max,
    "min": min,
}


class Unsupported(Exception):
    """The generator wrote something this interpreter does not run (a test bug)."""


def run_function(module: ast.Module, name: str, seed: int) -> object:
    """The value function ``name`` of ``module`` returns, inputs drawn from ``seed``."""
    (function,) = (
        n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == name
    )
    frame = _Frame(seed)
    for statement in function.body:
        if isinstance(statement, ast.Expr) and isinstance(
            statement.value, ast.Constant
        ):
            continue  # a docstring
        if isinstance(statement, ast.Assign):
            value = frame.evaluate(statement.value)
            for target in statement.targets:
                frame.assign(target, value)
        elif isinstance(statement, ast.Return):
            return frame.evaluate(statement.value)
        else:
            raise Unsupported(type(statement).__name__)
    return None


class _Frame:
    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.values: dict[str, object] = {}

    def input(self, key: str) -> int:
        # Small enough that every buffer width stays below the int32 refusal.
        return random.Random(f"{self.seed}:{key}").randint(0, 40)

    def assign(self, target: ast.expr, value: object) -> None:
        if isinstance(target, ast.Name):
            self.values[target.id] = value
        elif isinstance(target, ast.Tuple):
            items = list(value)  # type: ignore[call-overload]
            if len(items) != len(target.elts):
                raise Unsupported("unpacking length")
            for element, item in zip(target.elts, items, strict=True):
                self.assign(element, item)
        else:
            raise Unsupported(type(target).__name__)

    def evaluate(self, node: ast.expr) -> object:
        if isinstance(node, ast.Constant) and type(node.value) in (int, str):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.values:
                return self.values[node.id]
            return self.input(node.id)
        if isinstance(node, ast.Attribute):
            return self.input(_dotted(node))
        if isinstance(node, ast.Tuple):
            return tuple(self.evaluate(e) for e in node.elts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.evaluate(node.operand)  # type: ignore[operator]
        if isinstance(node, ast.BinOp):
            left, right = self.evaluate(node.left), self.evaluate(node.right)
            if isinstance(node.op, ast.Add):
                return left + right  # type: ignore[operator]
            if isinstance(node.op, ast.Sub):
                return left - right  # type: ignore[operator]
            if isinstance(node.op, ast.Mult):
                return left * right  # type: ignore[operator]
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in FUNCTIONS
        ):
            args = [self.evaluate(a) for a in node.args]
            kwargs = {k.arg: self.evaluate(k.value) for k in node.keywords}
            return FUNCTIONS[node.func.id](*args, **kwargs)
        raise Unsupported(ast.dump(node)[:80])


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    raise Unsupported(ast.dump(node)[:80])
