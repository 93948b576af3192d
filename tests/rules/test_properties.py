"""Property tests: generated spellings of both formulas are found, rewritten and
proven equal; generated near misses are never touched (hypothesis; the CI profile
runs 2,000 examples per property). A formula with a call among its operands
(``len(reqs)``) is rewritten only where the call can keep its place in the order
of evaluation, else it is reported with no fix."""

from __future__ import annotations

import ast

from formula_variants import buffer_width, near_miss, used_len
from hypothesis import given

from lint_plugin.engine.settings import Settings
from lint_plugin.fix.gate.oracle import equivalent
from lint_plugin.fix.rewrite import Options, rewrite_text
from lint_plugin.linter import lint_source

OPTIONS = Options(helpers_module="helpers", wrap=False)
SETTINGS = Settings(helpers_module="helpers")  # the rewritten file imports from it


def statement(expr: str) -> str:
    return f"n = (\n{expr}\n)\n"


def value_text(source: str) -> str:
    assign = ast.parse(source).body[-1]
    return ast.unparse(assign.value)


def assert_found_rewritten_and_equal(expr: str, code: str) -> None:
    source = statement(expr)
    (finding,) = lint_source(source.encode(), "g.py")
    assert finding.code == code
    result = rewrite_text(source, "g.py", OPTIONS)
    if finding.fix is None:
        assert "len(reqs)" in expr and not result.changed
        return
    assert result.changed and len(result.applied) == 1
    assert lint_source(result.text.encode(), "g.py", SETTINGS) == []
    assert equivalent(value_text(source), value_text(result.text)) is None


@given(used_len())
def test_used_len_variants_are_found_rewritten_and_equal(expr: str) -> None:
    assert_found_rewritten_and_equal(expr, "KVI001")


@given(buffer_width())
def test_buffer_width_variants_are_found_rewritten_and_equal(expr: str) -> None:
    assert_found_rewritten_and_equal(expr, "KVI002")


@given(near_miss())
def test_near_misses_are_never_rewritten(expr: str) -> None:
    source = statement(expr)
    assert lint_source(source.encode(), "g.py") == []
    assert rewrite_text(source, "g.py", OPTIONS).text == source
