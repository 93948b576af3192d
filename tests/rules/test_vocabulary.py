"""One vocabulary: the words each rule declares are the words every pre-filter
lets through (lint_plugin.engine.vocabulary), so a role's name is never filtered away.

Names are drawn from each role's own pattern (roles.ROLES), not from a list kept
here: a role added or widened there is tested as it is."""

from __future__ import annotations

import re
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lint_plugin import codes
from lint_plugin.engine import vocabulary
from lint_plugin.engine.draft_backend import role_attributes
from lint_plugin.engine.scan import interesting_rows
from lint_plugin.linter import lint_source
from lint_plugin.prefilter import could_match
from lint_plugin.roles import CONTEXT_ROLES, ROLES, Role, role_of_name
from lint_plugin.rules import NEEDS

sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))  # as the engine sets it
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
KEYWORDS = frozenset({"self", "def", "class", "if", "for", "in", "is", "or", "and"})


def names_of(role: Role):
    """Identifiers the role's pattern gives that role (first match wins)."""
    return st.from_regex(ROLES[role].pattern, fullmatch=True).filter(
        lambda n: (
            IDENTIFIER.fullmatch(n)
            and n not in KEYWORDS
            and not n[0].isdigit()
            and role_of_name(n) is role
            and len(n) < 40
        )
    )


def test_the_rules_declare_what_the_prefilters_are_built_from() -> None:
    assert vocabulary.declared() == NEEDS
    assert tuple(NEEDS) == codes.CODES  # every rule declares, in code order


def test_kvi003_sizes_rows_by_every_context_sized_role() -> None:
    (topk_clause, named_clause, _) = NEEDS["KVI003"].clauses
    assert set(topk_clause[-1]) == set(named_clause[-1]) == CONTEXT_ROLES
    assert {Role.MAX_CONTEXT_LEN, Role.WINDOW} <= CONTEXT_ROLES


@pytest.mark.parametrize("role", list(ROLES), ids=lambda r: r.name)
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_name_of_a_role_holds_one_of_its_anchors(role: Role, data) -> None:
    name = data.draw(names_of(role))
    assert any(anchor in name for anchor in ROLES[role].anchors), name


CLAUSES = [
    pytest.param(clause, id=f"{code}-{index}")
    for code, needs in NEEDS.items()
    for index, clause in enumerate(needs.clauses)
]


def word_of(group) -> st.SearchStrategy[str]:
    """Any word of a group: any name of one of its roles, or one of its words."""
    return st.sampled_from(list(group)).flatmap(
        lambda w: names_of(w) if isinstance(w, Role) else st.just(w)
    )


@pytest.mark.parametrize("clause", CLAUSES)
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_clause_passes_the_byte_test(clause, data) -> None:
    """A file naming any word of each group of one clause of a rule is read."""
    words = [data.draw(word_of(group)) for group in clause]
    assert could_match(f"x = {' * '.join(words)}\n".encode()), words


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    context=st.sampled_from(sorted(CONTEXT_ROLES, key=str)).flatmap(names_of),
    count=names_of(Role.NUM_SEQS),
    sized=st.booleans(),
)
def test_a_row_sized_by_any_context_role_is_judged(context, count, sized) -> None:
    """Through check's byte test, regions and row filters: a draft backend whose
    only context size is any name of any context-sized role."""
    width = f"{count} * {'self.topk * ' if sized else ''}self.{context}"
    source = (
        "import torch\n\n\nclass FooBackend:\n"
        "    def __init__(self, topk, speculative_num_steps):\n"
        "        self.topk = topk\n"
        "        self.speculative_num_steps = speculative_num_steps\n\n"
        f"    def init_cuda_graph_state(self, {count}):\n"
        f"        w = {width}\n"
        "        self.kv = torch.zeros((self.speculative_num_steps, w))\n"
    )
    codes = [f.code for f in lint_source(source.encode(), "b.py")]
    assert ("KVI003" in codes) == (not sized), (source, codes)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    topk=names_of(Role.TOPK),
    seq_lens_sum=names_of(Role.SEQ_LENS_SUM),
    context=names_of(Role.MAX_CONTEXT_LEN),
)
def test_formula_roles_reach_the_rows_walked(topk, seq_lens_sum, context) -> None:
    """KVI001 and KVI002 in a plain function, in any names of their roles."""
    source = (
        "def f(bs, num_steps, max_bs):\n"
        f"    used = {seq_lens_sum} * {topk} + bs * num_steps\n"
        f"    width = max_bs * {topk} * {context}\n"
        "    return used, width\n"
    )
    assert interesting_rows(source) == [2, 3]
    codes = sorted(f.code for f in lint_source(source.encode(), "f.py"))
    assert codes == ["KVI001", "KVI002"], source


@pytest.mark.parametrize("role", [Role.TOPK, Role.NUM_STEPS], ids=lambda r: r.name)
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_draft_class_is_seen_by_any_name_of_its_roles(role: Role, data) -> None:
    """The class text test reads ``self.<name>`` for every name of the role
    (``self._topk`` too), never a longer name that has another role."""
    name = data.draw(names_of(role))
    found = role_attributes(f"        self.{name} = x\n        y = self.{name}x\n")
    assert found == {name}, name


def test_the_one_word_clauses_are_ruled_out_by_few_searches() -> None:
    """The helpers and the kernel share ``_kv_indices``: one search rules the
    three out; the guard is its own family."""
    single_families, _ = vocabulary._plan()
    singles = {
        w
        for groups in vocabulary._byte_clauses()
        if len(groups) == 1
        for w in groups[0]
    }
    assert {w for _, members in single_families for w in members} == singles
    assert all(piece in w for piece, members in single_families for w in members)
    assert len(single_families) == 2
    assert not could_match(b"import torch\nx = torch.zeros(3)\n")
    assert could_match(b"y = generate_draft_decode_kv_indices[grid](a, b)\n")


def test_a_group_must_be_a_tuple_of_words() -> None:
    with pytest.raises(TypeError):
        vocabulary.Needs(((("topk"),),))  # a str, not a tuple of words
