"""Never crash on valid Python: hypothesmith programs through every engine path.

Generated programs rarely say ``topk``, so the fast path would dismiss them; here
every identifier counts as a mention, which sends them through the region finder,
the region parser and the full walk.
"""

from __future__ import annotations

import ast
import contextlib
import re

import pytest
import python_source
from hypothesis import HealthCheck, given, settings

from lint_plugin import linter
from lint_plugin.engine import scan
from lint_plugin.engine.source import Source
from lint_plugin.linter import lint_tree

# hypothesmith compiles what it generates; its SyntaxWarnings are about that code.
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")

FUZZ = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@contextlib.contextmanager
def everything_interesting():
    every_word = re.compile(r"\w+")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan, "_INTEREST_TEXT", every_word)
        patch.setattr(scan, "_ROW_INTEREST", every_word)
        patch.setattr(scan, "_SECOND_ROLE", every_word)
        patch.setattr(linter, "could_match", lambda data: True)
        yield


@FUZZ
@given(python_source.from_grammar())
def test_check_never_crashes(source: str) -> None:
    with everything_interesting():
        findings = linter.lint_source(source.encode(), "fuzz.py")
    assert all(f.code.startswith(("KVI", "E999")) for f in findings)


@FUZZ
@given(python_source.from_node())
def test_full_walk_never_crashes(source: str) -> None:
    tree = ast.parse(source)
    assert isinstance(lint_tree(tree, Source(source), "fuzz.py"), list)
