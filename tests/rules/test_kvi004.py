"""KVI004: every call of a helper, positional or by keyword, judged against the
helpers' documented signatures, written out here (not read from the engine)."""

from __future__ import annotations

import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rule_snippets import codes, full_walk_codes

from lint_plugin.engine.settings import DEFAULT_SETTINGS
from lint_plugin.linter import lint_source

sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))  # as the engine sets it

# The helpers' parameters, in order, each with what it must be given.
SIGNATURES = {
    "draft_kv_indices_used_len": ("seq_lens_sum", "topk", "bs", "num_steps"),
    "draft_kv_indices_buffer_width": ("num_seqs", "topk", "max_context_len"),
}
# What a parameter requires; a name of one of these kinds anywhere else is wrong.
REQUIRES = {
    "seq_lens_sum": "seq_lens_sum",
    "topk": "topk",
    "num_steps": "num_steps",
    "max_context_len": "context",
}
# Arguments by what they say they are (None: nothing a parameter requires).
ARGUMENTS = {
    "self.topk": "topk",
    "forward_batch.seq_lens_sum": "seq_lens_sum",
    "self.max_context_len": "context",
    "self.speculative_num_steps": "num_steps",
    "max_num_tokens": "tokens",
    "bs": None,
    "forward_batch.batch_size": None,
    "i + 1": None,
    "1": None,
}


def misplaced(parameter: str, argument: str) -> bool:
    kind = ARGUMENTS[argument]
    if kind == "tokens":  # sequences times topk: `bs` is one, `num_seqs` is not
        return parameter == "num_seqs"
    return kind is not None and REQUIRES.get(parameter) != kind


@st.composite
def calls(draw) -> tuple[str, list[str]]:
    """A helper call and the parameters it gives a wrong argument."""
    helper = draw(st.sampled_from(sorted(SIGNATURES)))
    parameters = SIGNATURES[helper]
    given_ = [draw(st.sampled_from(sorted(ARGUMENTS))) for _ in parameters]
    keywords = draw(st.integers(0, len(parameters)))  # the last ones by keyword
    order = draw(st.permutations(range(keywords)))
    texts = [given_[i] for i in range(len(parameters) - keywords)]
    tail = list(range(len(parameters) - keywords, len(parameters)))
    texts += [f"{parameters[tail[i]]}={given_[tail[i]]}" for i in order]
    wrong = [p for p, a in zip(parameters, given_, strict=True) if misplaced(p, a)]
    return f"n = {helper}({', '.join(texts)})\n", wrong


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=calls())
def test_one_finding_per_call_naming_every_wrong_argument(case) -> None:
    source, wrong = case
    found = [
        f
        for f in lint_source(source.encode(), "snippet.py", DEFAULT_SETTINGS)
        if f.code == "KVI004"
    ]
    assert len(found) == (1 if wrong else 0), source
    if wrong:
        named = [part.rsplit("`", 2)[-2] for part in found[0].message.split(", ")]
        assert named == wrong, (source, found[0].message)


VALID = [
    # A local named like a role but holding a constant is that constant.
    "def f(seq_lens_sum, bs):\n    topk = 1\n    return draft_kv_indices_used_len(seq_lens_sum, bs, topk, 1)\n",
    # A name the helper's module does not define is no helper call.
    "n = draft_kv_indices_used_length(bs, self.topk, forward_batch.seq_lens_sum, 1)\n",
    # Unpacked arguments say nothing about their slots.
    "n = draft_kv_indices_used_len(*args)\n",
    "w = draft_kv_indices_buffer_width(**sizes)\n",
]
INVALID = [
    # Read through the value a local holds on every path.
    "def f(self, seq_lens_sum, bs):\n    k = self.topk\n    return draft_kv_indices_used_len(seq_lens_sum, bs, k, 1)\n",
    "def f(self, bs):\n    if bs:\n        c = self.max_context_len\n    else:\n        c = self.max_context_len\n    return draft_kv_indices_buffer_width(c, self.topk, bs)\n",
    # However the helper is reached.
    "import spec_utils as su\nw = su.draft_kv_indices_buffer_width(max_num_tokens, self.topk, self.max_context_len)\n",
]


@pytest.mark.parametrize("source", VALID)
def test_valid(source: str) -> None:
    assert "KVI004" not in codes(source)
    assert "KVI004" not in full_walk_codes(source)


@pytest.mark.parametrize("source", INVALID)
def test_invalid(source: str) -> None:
    assert codes(source).count("KVI004") == 1
    assert full_walk_codes(source).count("KVI004") == 1
