"""The engine's shortcuts written for speed give what the slow forms give:
``Source.lines`` (``str.splitlines`` where it agrees with Python's line ends) and
``helper_aliases`` (a match tried only where the helpers' prefix is), held to the
regular expressions they replaced; the walk's alias test, held to the tree
``arith.build`` makes."""

from __future__ import annotations

import ast
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lint_plugin.algebra.arith import AST, Leaf, build, name_role
from lint_plugin.engine.facts import helper_aliases
from lint_plugin.engine.source import Source, split_lines
from lint_plugin.roles import Role

# What the rows were found with before: Python's line ends, and only those.
LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
ALIAS = re.compile(r"\bdraft_kv_indices_\w+\s+as\s+(\w+)")
PREFIX = "draft_kv_indices_"

# Every character str.splitlines breaks at, and a few it does not.
BREAKS = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85"]
BREAKS += ["\u2028", "\u2029"]
OTHERS = ["a", " ", "#", "\t", "\u00e9", "\u4e2d", "x = 1"]


def _aliases_by_regex(text: str) -> tuple[str, ...]:
    found = set(ALIAS.findall(text))
    return tuple(sorted(a for a in found if PREFIX not in a))


@pytest.mark.parametrize(
    "text",
    ["", "a", "a\n", "\n\n", "a\nb", "a\r\nb\rc\n", "a\x0cb\n", "a\x85b", "\r"],
)
def test_lines_are_pythons(text: str) -> None:
    assert split_lines(text) == LINE.findall(text)
    assert Source(text).lines == LINE.findall(text)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(BREAKS + OTHERS), max_size=30))
def test_generated_lines_are_pythons(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert split_lines(text) == LINE.findall(text)


# Pieces an import line of the helpers is built from, with near misses: a word
# character before the prefix, a prefix inside an alias, no `as`.
ALIAS_PIECES = [
    "from m import ",
    PREFIX,
    "used_len",
    "buffer_width",
    " as ",
    " as\t",
    "as",
    " ",
    "\n",
    "u",
    "x_",
    ", ",
    "(",
    "\u00e9",
    PREFIX + "w as " + PREFIX + "v",
]


@pytest.mark.parametrize(
    ("text", "aliases"),
    [
        ("", ()),
        ("from h import draft_kv_indices_used_len as used\n", ("used",)),
        ("import draft_kv_indices_used_len\n", ()),
        ("xdraft_kv_indices_used_len as used\n", ()),
        ("from h import (draft_kv_indices_used_len as u, draft_kv_indices_b as w)", ("u", "w")),
        ("draft_kv_indices_a as draft_kv_indices_b as c", ()),
        ("\u00e9draft_kv_indices_a as b", ()),
    ],
)  # fmt: skip
def test_aliases(text: str, aliases: tuple[str, ...]) -> None:
    assert helper_aliases(text) == aliases == _aliases_by_regex(text)


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(ALIAS_PIECES), max_size=25))
def test_generated_aliases_are_the_regexs(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert helper_aliases(text) == _aliases_by_regex(text)


# ---- the walk's alias test: a leaf's role without building the tree ----------

ALIAS_SOURCES = [
    "self.topk",
    "topk",
    "k",
    "self.speculative_num_steps + 1",
    "self.topk * 2",
    "-self.topk",
    "self.topk - 1",
    "(self.topk)",
    "f(self.topk)",
    "3",
    "x.y.num_steps",
    "a[0]",
    "self.topk // 2",
    "max_bs",
]


@pytest.mark.parametrize("source", ALIAS_SOURCES)
@pytest.mark.parametrize("aliases", [{}, {"k": Role.TOPK}, {"a": Role.NUM_STEPS}])
def test_a_leafs_role_is_the_built_trees(source: str, aliases: dict) -> None:
    node = ast.parse(source, mode="eval").body
    built = build(node, AST, aliases)
    expected = built.role if isinstance(built, Leaf) else None
    assert name_role(AST.name(node), aliases) == expected


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([*ALIAS_SOURCES, " + ", " * ", " - ", "(", ")"]), max_size=6
    )
)
def test_generated_leaf_roles_are_the_built_trees(pieces: list[str]) -> None:
    try:
        node = ast.parse("".join(pieces) or "0", mode="eval").body
    except SyntaxError:
        return
    for aliases in ({}, {"k": Role.TOPK}):
        built = build(node, AST, aliases)
        expected = built.role if isinstance(built, Leaf) else None
        assert name_role(AST.name(node), aliases) == expected
