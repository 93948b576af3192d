"""A file whose regions are most of it is parsed whole: one parse is both the
walk's and the syntax check, with the findings the regions give."""

from __future__ import annotations

import ast

import pytest
from cli_helpers import USED_LEN_SITE

from lint_plugin import linter
from lint_plugin.engine import lazy_methods, syntax
from lint_plugin.engine.source import Source

# The class is the one region: a module of little else is most of it.
SITE = USED_LEN_SITE + "".join(
    f"\n    def m{i}(self):\n        return {i}\n" for i in range(6)
)
SHORT_TAIL = "x = 1\n"
LONG_TAIL = "".join(f"x{i} = {i}\n" for i in range(40))


# As shipped (the suite's conftest reads every file by its regions).
SHIPPED_SHARE = linter.WHOLE_SHARE


@pytest.fixture(autouse=True)
def _shipped_share(monkeypatch) -> None:
    monkeypatch.setattr(linter, "WHOLE_SHARE", SHIPPED_SHARE)


def _codes(found) -> list[tuple]:
    return sorted((f.row, f.column, f.code, f.message) for f in found)


@pytest.mark.parametrize(("tail", "whole"), [(SHORT_TAIL, True), (LONG_TAIL, False)])
def test_the_regions_share_picks_the_parse(tail, whole, monkeypatch) -> None:
    text = SITE + tail
    parsed, checked = [], []
    real_region, real_check = lazy_methods.parse_region, syntax.error_of
    monkeypatch.setattr(
        lazy_methods,
        "parse_region",
        lambda *a, **k: parsed.append(1) or real_region(*a, **k),
    )
    monkeypatch.setattr(
        syntax, "error_of", lambda t, p: checked.append(1) or real_check(t, p)
    )
    found = linter.lint_text(text, "x.py")
    # Either way a file with findings is compiled once (what CPython refuses
    # to compile is an E999, a parse alone does not say).
    assert (not parsed, len(checked)) == (whole, 1)
    expected = linter.lint_tree(ast.parse(text), Source(text), "x.py")
    assert _codes(found) == _codes(expected) != []


def test_a_syntax_error_outside_the_regions_is_reported_by_the_whole_parse() -> None:
    text = SITE + "def broken(:\n"
    (finding,) = linter.lint_text(text, "x.py")
    assert finding.code == "E999"
