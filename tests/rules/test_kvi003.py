"""KVI003: which allocations are draft kv_indices rows, and the forms an unsized
one takes."""

from __future__ import annotations

import pytest
from rule_snippets import codes, full_walk_codes

from lint_plugin.engine.roles import OTHER_PER_STEP_BUFFERS, other_buffer_of


def test_ordinary_decode_backend_buffer_is_not_a_finding() -> None:
    source = (
        "import torch\n\nclass FooAttnBackend:\n"
        "    def init_cuda_graph_state(self, max_bs, max_num_tokens):\n"
        "        self.cuda_graph_kv_indices = torch.zeros(\n"
        "            (max_bs * self.max_context_len,), dtype=torch.int32\n"
        "        )\n"
    )
    assert codes(source) == []


def test_a_backend_known_by_its_attributes_is_read_whole() -> None:
    """No `...MultiStepDraftBackend` name and no context length in the class: a
    row sized by the helper (under an alias) with 1 for topk is still unsized."""
    source = (
        "import torch\n"
        "from sglang.srt.speculative.spec_utils import (\n"
        "    draft_kv_indices_buffer_width as row_width,\n)\n\n\n"
        "class FooAttnBackend:\n"
        "    def __init__(self, topk, steps, ctx):\n"
        "        self.topk, self.speculative_num_steps, self.ctx = topk, steps, ctx\n\n"
        "    def init_cuda_graph_state(self, max_bs):\n"
        "        self.cuda_graph_kv_indices = torch.zeros(\n"
        "            (self.speculative_num_steps, row_width(max_bs, 1, self.ctx))\n"
        "        )\n"
    )
    assert codes(source) == ["KVI003"]
    assert full_walk_codes(source) == ["KVI003"]
    # A class that only names a topk in passing keeps no draft rows.
    passing = source.replace("self.topk, ", "self.k, ")
    assert codes(passing) == full_walk_codes(passing) == []


KVI003_CASES = [
    (
        "torch.zeros((self.speculative_num_steps, max_bs * self.max_context_len))",
        ["KVI003"],
    ),
    (
        "torch.empty(self.speculative_num_steps, max_bs * self.max_context_len)",
        ["KVI003"],
    ),
    (
        "torch.zeros(size=(self.speculative_num_steps, max_bs * self.max_context_len))",
        ["KVI003"],
    ),
    (
        "torch.full((self.speculative_num_steps, max_bs * self.max_context_len), -1)",
        ["KVI003"],
    ),
    (
        "torch.empty_strided((self.speculative_num_steps, max_bs * self.max_context_len), (1, 1))",
        ["KVI003"],
    ),
    (
        "self.kv_indptr.new_zeros((self.speculative_num_steps, max_bs * self.max_context_len))",
        ["KVI003"],
    ),
    (
        "torch.zeros((self.speculative_num_steps, max_bs * self.topk * self.max_context_len))",
        ["KVI002"],
    ),
    # A role named as the attribute of what is not a dotted name: reported,
    # spelled as the source has it (it crashed the message's rendering).
    (
        "torch.zeros((self.speculative_num_steps, max_bs * self.attn_backends[0].max_context_len))",
        ["KVI003"],
    ),
    (
        "torch.zeros((self.speculative_num_steps, max_bs * get_config().max_context_len))",
        ["KVI003"],
    ),
    ("torch.zeros((self.speculative_num_steps, width))", []),
    (
        "torch.zeros((self.speculative_num_steps, max_bs * self.topk * self.sliding_window_size))",
        [],
    ),
    ("torch.zeros((self.speculative_num_steps, max_bs + 1))", []),
]


@pytest.mark.parametrize(("call", "expected"), KVI003_CASES)
def test_unsized_allocation_forms(call: str, expected: list[str]) -> None:
    source = (
        "import torch\n\nclass XMultiStepDraftBackend:\n"
        "    def init_cuda_graph_state(self, max_bs, max_num_tokens):\n"
        "        width = draft_kv_indices_buffer_width(max_bs, self.topk, self.max_context_len)\n"
        f"        self.cuda_graph_kv_indices = {call}\n"
    )
    assert codes(source) == expected


OTHER_BUFFER_NAMES = [
    pytest.param(f"self.cuda_graph_{word}{suffix}", id=f"{buffer}-{word}")
    for buffer, words in OTHER_PER_STEP_BUFFERS.items()
    for word in words
    for suffix in ("", "_buf")
]


@pytest.mark.parametrize("target", OTHER_BUFFER_NAMES)
def test_another_per_step_buffer_is_not_a_kv_indices_row(target: str) -> None:
    """The same unsized row assigned to any name of another per-step buffer
    (engine.roles.OTHER_PER_STEP_BUFFERS) is not KVI003's; to a kv_indices name
    it is."""
    source = (
        "import torch\n\nclass XMultiStepDraftBackend:\n"
        "    def init_cuda_graph_state(self, max_bs):\n"
        "        width = draft_kv_indices_buffer_width(max_bs, self.topk, self.max_context_len)\n"
        "        {target} = torch.zeros((self.speculative_num_steps, max_bs * self.max_context_len))\n"
    )
    assert codes(source.format(target=target)) == []
    assert codes(source.format(target="self.cuda_graph_kv_indices")) == ["KVI003"]


# The names KVI003 has skipped since the rule was written (its private pattern
# `indptr|mask|last_page|seq_lens|positions|qo_` before engine.roles held them):
# written out here, so a word dropped from the table fails.
SKIPPED_SINCE_THE_START = (
    "indptr",
    "mask",
    "last_page",
    "seq_lens",
    "positions",
    "qo_",
)


@pytest.mark.parametrize("word", SKIPPED_SINCE_THE_START)
def test_the_buffers_kvi003_always_skipped_are_still_skipped(word: str) -> None:
    assert other_buffer_of(f"self.cuda_graph_{word}_buf") is not None


def test_a_query_offset_buffer_is_named_as_one() -> None:
    assert other_buffer_of("self.qo_indptr") == "qo_indptr"
    assert other_buffer_of("self.kv_indptr") == "kv_indptr"
    assert other_buffer_of("self.cuda_graph_kv_indices") is None
