"""check parses only the regions of a file that can match; what a width flows
from outside them (module constants and functions, imports, base classes) is
parsed on first need (lint_plugin.engine.module_scope). The pieces must give the same
module-level definitions as the whole tree, name by name, on real files."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lint_plugin.engine.flow.scopes import Scope
from lint_plugin.engine.module_scope import TextModuleScope, TreeModuleScope
from lint_plugin.engine.scan import Layout, StringSpans
from lint_plugin.engine.source import Source

SNIPPET = '''\
"""A docstring naming PAD = 1 and def fake(): no binding."""
import torch
import torch as th
from functools import partial

PAD = 64
if torch.cuda.is_available():
    LIMIT = PAD * 2
else:
    LIMIT = 1
try:
    from triton import cdiv
except ImportError:
    cdiv = None


@decorator
def round_up(x, m):
    return (x + m - 1) // m * m


class Base:
    WIDTH = 3


def round_up(x, m):  # redefined: the last one counts
    return x
'''


def definitions(module, text: str, name: str) -> list[tuple]:
    """What a function sees of ``name`` at the module's end: each reaching
    definition's kind, row and (for a block) what it is once parsed."""
    scope = Scope(None, Source(text), None, module)
    found = []
    for fact in scope.flow(name).end:
        defn = fact.defn
        if defn.kind == "block":
            block = module.block(defn.stmt)
            kind = "class" if isinstance(block, ast.ClassDef) else "function"
            found.append((kind, block.lineno, ast.dump(block)))
        elif defn.stmt is None:
            found.append((defn.kind,))
        else:
            node = defn.value if defn.value is not None else defn.stmt
            kind = "function" if defn.kind in ("function", "class") else defn.kind
            if defn.kind == "class":
                kind = "class"
            found.append((kind, defn.stmt.lineno, ast.dump(node)))
    return sorted(found)


def both(text: str):
    lines = text.split("\n")
    layout = Layout(text, lines, StringSpans(text))
    pieces = TextModuleScope(text, lines, layout.top_level_blocks)
    whole = TreeModuleScope(ast.parse(text), Source(text))
    return pieces, whole


def module_names(text: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.split(".")[0])
    return names


@pytest.mark.parametrize(
    "name", ["torch", "th", "partial", "PAD", "LIMIT", "cdiv", "round_up", "Base", "x"]
)
def test_the_pieces_define_what_the_tree_does(name: str) -> None:
    pieces, whole = both(SNIPPET)
    assert definitions(pieces, SNIPPET, name) == definitions(whole, SNIPPET, name)


def test_a_redefined_function_is_the_last_one() -> None:
    pieces, _ = both(SNIPPET)
    ((kind, row, _),) = definitions(pieces, SNIPPET, "round_up")
    assert (kind, row) == ("function", 26)


def _files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.py"))


@pytest.mark.parametrize("version", ["0.5.12.post1", "0.5.13"])
def test_real_files_give_the_same_definitions(version, old_attention, new_attention):
    from corpus import attention_dir, speculative_dir

    checked = 0
    for folder in (attention_dir(version), speculative_dir(version)):
        for path in _files(folder):
            text = path.read_text().replace("\r\n", "\n")
            try:
                pieces, whole = both(text)
            except SyntaxError:
                continue
            for name in sorted(module_names(text))[:60]:
                assert definitions(pieces, text, name) == definitions(
                    whole, text, name
                ), (path, name)
                checked += 1
    assert checked > 1000
