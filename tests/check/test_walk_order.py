"""The walk of a whole tree visits every node a rule may read, once each, in
``ast.iter_child_nodes``' order (preorder).

The walk picks the fields it follows by node type and skips what no rule reads.
The reference here is written by node type: it leaves out the leaves (names,
constants) and the operator, context and ``import`` alias nodes. Only a helper's
own definition is not entered. A field dropped, reordered or followed twice
fails these tests.
"""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest

from lint_plugin.engine import analysis
from lint_plugin.engine.formulas import HELPER_SLOTS
from lint_plugin.engine.source import Source

# Nodes no rule reads.
_UNREAD = (
    ast.Name,
    ast.Constant,
    ast.expr_context,
    ast.operator,
    ast.unaryop,
    ast.boolop,
    ast.cmpop,
    ast.alias,
)


def expected(node: ast.AST) -> list[ast.AST]:
    order: list[ast.AST] = []
    pending = [node]
    while pending:
        current = pending.pop()
        order.append(current)
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
            current.name in HELPER_SLOTS
        ):
            continue  # a helper's own definition: recorded, not entered
        children = [
            c for c in ast.iter_child_nodes(current) if not isinstance(c, _UNREAD)
        ]
        pending.extend(reversed(children))
    return order


class _Recording(analysis.Walker):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.order: list[ast.AST] = []

    def visit(self, node, ctx, parent_arith) -> None:
        self.order.append(node)
        super().visit(node, ctx, parent_arith)


def visited(text: str) -> tuple[ast.Module, list[ast.AST]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a file's own invalid escapes
        tree = ast.parse(text)
    source = Source(text)
    walker = _Recording(
        source, "m.py", None, module=analysis.module_of(tree, source, None)
    )
    walker.walk(tree)
    return tree, walker.order


@pytest.mark.parametrize(
    "text",
    [
        "x = a.b(c)[d:e] + f * -g\n",
        "def f(a: int = 1, *b, c: 'T' = 2, **d) -> R:\n    return lambda q: q or p\n",
        "class C(B, metaclass=M):\n    x: int = 1\n    def m(self):\n"
        "        self.w = [i * j for i in r if i for j in s]\n",
        "match v:\n    case [1, *rest] if rest:\n        y = {k: w for k, w in z}\n"
        "    case {'a': A(b=c)} | None:\n        pass\n",
        "import a.b as c\nfrom . import d\nglobal g\n",
        "s = f'{x=} {y!r:>{w}}'\nt = f'{a + b = }'\n",
        "try:\n    pass\nexcept* E as e:\n    raise X from e\nelse:\n    q = 1\n"
        "finally:\n    del q\n",
        "async def f():\n    async with a as b, c:\n        async for d in e:\n"
        "            await d\n    yield from g\n",
        "def draft_kv_indices_used_len(a, b):\n    return a * b + 1\nx = 1 + 2\n",
        "@d(1)\nclass XMultiStepDraftBackend:\n    def f(self, bs):\n"
        "        return torch.zeros(bs * self.topk, dtype=t)\n",
    ],
)
def test_every_read_node_once_in_order(text: str) -> None:
    tree, order = visited(text)
    assert order == expected(tree)


def test_every_file_of_the_latest_attention_and_speculative_folders(
    latest_package: Path,
) -> None:
    checked = 0
    for folder in ("srt/layers/attention", "srt/speculative"):
        for path in sorted((Path(latest_package) / folder).rglob("*.py")):
            tree, order = visited(path.read_bytes().decode("utf-8-sig"))
            assert order == expected(tree), path
            checked += 1
    assert checked > 100
