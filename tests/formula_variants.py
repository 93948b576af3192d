"""Generated spellings of the two inline formulas, and near misses of them.

Shared by the property tests (``tests/rules/test_properties.py``) and the cache's
round trip (``tests/check/test_cache.py``).
"""

from __future__ import annotations

import functools

from hypothesis import strategies as st

SEQ_LENS_SUM = ["seq_lens_sum", "forward_batch.seq_lens_sum", "self.seq_lens_sum"]
TOPK = ["topk", "self.topk", "eagle_topk", "self.speculative_eagle_topk"]
MAX_CONTEXT_LEN = ["max_context_len", "self.max_context_len", "self.model.context_len"]
COUNT = ["bs", "num_seqs", "max_bs", "forward_batch.batch_size", "len(reqs)"]
STEPS = ["(i + 1)", "(step + 1)", "num_steps", "self.speculative_num_steps"]
EXTRA = ["16", "pad", "self.page_size"]

# Every strategy below is built once and drawn from many times: one made anew at
# each draw is validated anew, a third of the time these took to draw. The
# strategies are the same either way, and so are the draws (for one seed, the same
# examples: checked over 2,000 of each).
_SEQ_LENS_SUM = st.sampled_from(SEQ_LENS_SUM)
_TOPK = st.sampled_from(TOPK)
_MAX_CONTEXT_LEN = st.sampled_from(MAX_CONTEXT_LEN)
_COUNT = st.sampled_from(COUNT)
_STEPS = st.sampled_from(STEPS)
_EXTRAS = st.lists(st.sampled_from(EXTRA), max_size=2)
_BOOLEANS = st.booleans()


@functools.cache
def _separators(op: str) -> st.SearchStrategy[str]:
    return st.sampled_from([f" {op} ", f"\n  {op} ", f"  # note\n  {op} "])


@functools.cache
def _ints(low: int, high: int) -> st.SearchStrategy[int]:
    return st.integers(low, high)


@st.composite
def _grouped(draw, parts: tuple[str, ...], op: str) -> str:
    parts = draw(st.permutations(parts))
    while len(parts) > 1:
        i = draw(_ints(0, len(parts) - 2))
        sep = draw(_separators(op))
        joined = parts[i] + sep + parts[i + 1]
        if "\n" in sep or draw(_BOOLEANS):
            joined = f"({joined})"
        parts = [*parts[:i], joined, *parts[i + 2 :]]
    return parts[0]


@functools.lru_cache(maxsize=4096)
def _grouped_of(parts: tuple[str, ...], op: str) -> st.SearchStrategy[str]:
    return _grouped(parts, op)


def grouped(parts: list[str], op: str) -> st.SearchStrategy[str]:
    """``parts`` joined by ``op`` in a random order and grouping, maybe in
    parentheses, with line breaks and comments where Python allows them (one
    strategy per parts and operator: the inner sums repeat)."""
    return _grouped_of(tuple(parts), op)


@st.composite
def used_len(draw) -> str:
    prefix = draw(grouped([draw(_SEQ_LENS_SUM), draw(_TOPK)], "*"))
    bs = [draw(_COUNT)]
    if draw(_BOOLEANS):
        bs.append(draw(_TOPK))  # bs spelled as num_seqs * topk
    drafts = draw(grouped([*bs, draw(_STEPS)], "*"))
    extra = draw(_EXTRAS)
    return draw(grouped([f"({prefix})", f"({drafts})", *extra], "+"))


@st.composite
def buffer_width(draw) -> str:
    factors = [
        draw(_COUNT),
        draw(_TOPK),
        draw(_MAX_CONTEXT_LEN),
    ]
    return draw(grouped(factors, "*"))


@st.composite
def near_miss(draw) -> str:
    sls, topk = draw(_SEQ_LENS_SUM), draw(_TOPK)
    count, steps = draw(_COUNT), draw(_STEPS)
    mcl = draw(_MAX_CONTEXT_LEN)
    return draw(
        st.sampled_from(
            [
                f"{sls} + {count} * {steps}",  # topk factor missing
                f"{sls} * {topk} * 2 + {count} * {steps}",  # extra factor
                f"{sls} * {topk} + {count} * (i + 2)",  # another constant
                f"{sls} * {topk} + {count}",  # steps missing
                f"{sls} * {topk} - {count} * {steps}",  # subtracted
                f"{count} * {mcl}",  # width without topk
                f"{count} * {topk} * {mcl} * 2",  # extra factor
                f"2 * {topk} * {mcl}",  # a constant for the count
                f"{count} * {topk} + 1",  # the anchor-less near miss
            ]
        )
    )
