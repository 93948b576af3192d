"""The grid's corners read from the code (``lint_plugin.proof.thresholds``).

Valid snippets hold a threshold (an integer a size is compared with, clamped,
divided or rounded by, or a block-size constant) on the axes the names beside
it reach; invalid ones hold none the proof must cross (indices, 0-2, names of
nothing). Then the cases: each crossing reaches its axis, a threshold on one
side only is crossed whatever its cost, the default stays within its budget,
``--full`` adds the pairs, and the bounds say what was reached.
"""

from __future__ import annotations

import textwrap

import pytest

from lint_plugin.proof.grid import proof_grid
from lint_plugin.proof.thresholds import (
    AXES,
    CONTEXT,
    LENGTH,
    MAX_BS,
    NUM_SEQS,
    PAGE,
    STEPS,
    TOPK,
    WINDOW,
    bounds,
    class_grid,
    corner_cases,
    estimated_cost,
    thresholds,
)

CLASS = "XMultiStepDraftBackend"


def _module(body: str, prelude: str = "", methods: str = "") -> str:
    return textwrap.dedent(prelude) + (
        f"class {CLASS}:\n{methods}    def f(self, num_seqs, bs, i):\n"
        + textwrap.indent(textwrap.dedent(body), "        ")
    )


def found(
    body: str, prelude: str = "", methods: str = ""
) -> set[tuple[int, tuple[str, ...]]]:
    text = _module(body, prelude, methods)
    return {(t.value, t.axes) for t in thresholds([(text, CLASS, "m.py")])}


VALID = [
    ("if num_seqs > 16:\n    pass\n", {(16, (NUM_SEQS, MAX_BS))}),
    ("x = min(next_power_of_2(num_seqs), 16)\n", {(16, (NUM_SEQS, MAX_BS))}),
    ("w = min(self.max_context_len, 65536)\n", {(65536, (CONTEXT, LENGTH))}),
    ("e = min(i + 1, 4)\n", {(4, (STEPS,))}),
    ("p = self.page_size if self.page_size <= 16 else 1\n", {(16, (PAGE,))}),
    ("t = self.topk >= 9\n", {(9, (TOPK,))}),
    ("n = (self.max_context_len + 31) // 32\n", {(32, (CONTEXT, LENGTH))}),
    ("n = triton.cdiv(seq_len, 128)\n", {(128, (CONTEXT, LENGTH))}),
    ("w = self.window_size % 64\n", {(64, (WINDOW,))}),
    # Nothing beside it says which size: every axis.
    ("if mystery > 12:\n    pass\n", {(12, AXES)}),
    # A module constant the class reads, by name.
    (
        "if self.max_context_len >= LONG:\n    pass\n",
        {(32768, (CONTEXT, LENGTH))},
        "LONG = 32768\n",
    ),
    # A product of constants.
    ("w = min(self.max_context_len, 64 * 1024)\n", {(65536, (CONTEXT, LENGTH))}),
    # A block-size constant, every value it may hold.
    (
        "BLOCK_SIZE = 128 if NUM_STEPS == 0 else 512\n",
        {(128, (CONTEXT, LENGTH)), (512, (CONTEXT, LENGTH))},
    ),
    # A launch's constexpr keyword.
    ("kernel[grid](a, b, BLOCK=256)\n", {(256, (CONTEXT, LENGTH))}),
    # Spellings an outside review found passing (each now crossed):
    # a shift, a dict of sizes treated apart, a mask, a cap on bit_length,
    # a table read by the step, a count cut by a slice, a self. attribute.
    ("x = min(next_power_of_2(num_seqs), 1 << 4)\n", {(16, (NUM_SEQS, MAX_BS))}),
    (
        "d = {32: 16, 64: 16}.get(next_power_of_2(num_seqs), 0)\n",
        {(32, (NUM_SEQS, MAX_BS)), (64, (NUM_SEQS, MAX_BS))},
    ),
    (
        "x = next_power_of_2(num_seqs) & 0x1F\n",
        {(31, (NUM_SEQS, MAX_BS)), (32, (NUM_SEQS, MAX_BS))},
    ),
    (
        "x = 1 << min(next_power_of_2(num_seqs).bit_length() - 1, 4)\n",
        {(v, (CONTEXT, LENGTH, NUM_SEQS, MAX_BS)) for v in (4, 16, 32)},
    ),
    ("e = (1, 2, 3, 4, 4)[i]\n", {(5, (STEPS,))}),
    ("for b in self.attn_backends[:4]:\n    pass\n", {(4, AXES)}),
    (
        "x = min(next_power_of_2(num_seqs), self.lim)\n",
        {(16, (NUM_SEQS, MAX_BS))},
        "",
        "    def __init__(self):\n        self.lim = 16\n",
    ),
]

INVALID = [
    "x = self.kv_indptr[i, : bs + 1]\n",  # an index, not a threshold
    "if num_seqs > 2:\n    pass\n",  # the grid always crosses 0-2
    "x = torch.empty((num_seqs, 1024))\n",  # a shape, compared with nothing
    "y = num_seqs * 64\n",  # scaled, not compared
    "if name == 'x' * 40:\n    pass\n",  # not an integer
]


@pytest.mark.parametrize(
    "case",
    VALID,
    ids=[str(sorted(case[1]))[:40] + str(n) for n, case in enumerate(VALID)],
)
def test_a_threshold_is_read_with_its_axes(case):
    body, expected, *prelude = case
    assert found(body, *prelude) == expected


@pytest.mark.parametrize("body", INVALID)
def test_what_is_not_a_threshold_is_not_read(body):
    assert found(body) == set()


def test_a_module_function_the_class_calls_is_read_and_others_are_not():
    text = textwrap.dedent(
        f"""
        def helper(num_seqs):
            return min(num_seqs, 24)

        def unrelated(num_seqs):
            return min(num_seqs, 40)

        class {CLASS}:
            def f(self, num_seqs):
                return helper(num_seqs)
        """
    )
    values = {t.value for t in thresholds([(text, CLASS, "m.py")])}
    assert values == {24}


def test_each_crossing_reaches_its_axis():
    base = proof_grid()
    cases = corner_cases(
        [t for v in (16, 32, 65536) for t in _one(v, (NUM_SEQS, PAGE, CONTEXT))],
        base,
        windows=False,
        full=True,
    )
    reached = {(p.num_seqs, p.page_size, p.max_context_len) for p in cases}
    assert {17, 33} <= {n for n, _, _ in reached}
    # 16 is a page size of the fixed grid already.
    assert {15, 17, 31, 32, 33} <= {p for _, p, _ in reached}
    assert {65535, 65536, 65537} <= {c for _, _, c in reached}
    # Capped: 65,536 sequences or pages are not driven, and the bounds say so.
    assert max(n for n, _, _ in reached) <= 64
    assert "num_seqs 1-" in bounds(base + cases)


def _one(value: int, axes: tuple[str, ...]):
    from lint_plugin.proof.thresholds import Threshold

    return [Threshold(value, axes, "t.py:1")]


def test_a_threshold_on_one_side_is_crossed_whatever_it_costs():
    before = _module("w = self.max_context_len\n")
    after = _module("w = min(self.max_context_len, 65536)\n")
    base = proof_grid()
    grid = class_grid(base, before, after, CLASS, windows=False)
    assert any(p.max_context_len > 65536 for p in grid)
    # Read on both sides, it is only taken within the budget (too dear here).
    same = class_grid(base, after, after, CLASS, windows=False)
    assert not any(p.max_context_len > 65536 for p in same)


def test_the_default_stays_within_its_budget_and_full_adds_pairs():
    found_ = [t for v in (12, 24, 40, 96) for t in _one(v, AXES)]
    base = proof_grid()
    default = corner_cases(found_, base, windows=True)
    full = corner_cases(found_, base, windows=True, full=True)
    spent = sum(estimated_cost(p) for p in default)
    assert 0 < spent <= 0.5 * sum(estimated_cost(p) for p in base)
    assert len(full) > len(default)
    # A pair: past two thresholds at once, and a window at the longest context.
    assert any(p.num_seqs > 8 and p.topk > 8 for p in full)
    longest = max(p.max_context_len for p in full)
    assert any(p.window_size and p.max_context_len == longest for p in full)


def test_steps_are_crossed_as_a_step_index():
    cases = corner_cases(_one(4, (STEPS,)), proof_grid(), windows=False, full=True)
    assert 6 in {p.speculative_num_steps for p in cases}  # index 4 at 6 steps


def test_the_grid_varies_the_graph_alignment():
    assert any(p.graph_alignment > 1 for p in proof_grid())
