"""The statement walker that fix's row bookkeeping uses finds what ``ast.walk`` finds."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import python_source
from hypothesis import HealthCheck, given, settings

from lint_plugin.fix.edits import iter_statements

# Warnings about the parsed code (invalid escapes: a SyntaxWarning, or on 3.11 a
# DeprecationWarning) are that code's business.
pytestmark = [
    pytest.mark.filterwarnings("ignore::SyntaxWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]


def reference(tree: ast.AST) -> list[ast.stmt]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]


def same_statements(tree: ast.AST) -> bool:
    found = list(iter_statements(tree))
    return len(found) == len({id(n) for n in found}) and {id(n) for n in found} == {
        id(n) for n in reference(tree)
    }


SHAPES = """\
@deco
class C(B):
    x: int = 1

    async def f(self):
        async with a as b, c:
            async for i in g():
                if i:
                    pass
                elif j:
                    continue
                else:
                    break
            else:
                return
        try:
            y = lambda: (z if q else w)
        except* ValueError as e:
            raise
        else:
            del y
        finally:
            nonlocal_ = 1
        match y:
            case [1, *rest] if rest:
                assert rest
            case _:
                def inner():
                    global G
                    yield from ()
        while x:
            x -= 1
        else:
            import os
"""


def test_every_kind_of_statement_list() -> None:
    tree = ast.parse(SHAPES)
    assert same_statements(tree)
    assert len(list(iter_statements(tree))) == len(reference(tree)) == 24


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(python_source.from_grammar())
def test_generated_programs(source: str) -> None:
    assert same_statements(ast.parse(source))


def test_every_backend_and_worker_of_the_latest_release(latest_package) -> None:
    """Where fix works: the attention backends and the speculative workers."""
    checked = 0
    for folder in ("srt/layers/attention", "srt/speculative"):
        for path in (Path(latest_package) / folder).rglob("*.py"):
            assert same_statements(ast.parse(path.read_bytes())), path
            checked += 1
    assert checked > 100
