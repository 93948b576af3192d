"""Generated spellings of the two inline formulas, and near misses of them.

Shared by the property tests (``tests/rules/test_properties.py``) and the cache's
round trip (``tests/check/test_cache.py``).
"""

from __future__ import annotations

from hypothesis import strategies as st

SEQ_LENS_SUM = ["seq_lens_sum", "forward_batch.seq_lens_sum", "self.seq_lens_sum"]
TOPK = ["topk", "self.topk", "eagle_topk", "self.speculative_eagle_topk"]
MAX_CONTEXT_LEN = ["max_context_len", "self.max_context_len", "self.model.context_len"]
COUNT = ["bs", "num_seqs", "max_bs", "forward_batch.batch_size", "len(reqs)"]
STEPS = ["(i + 1)", "(step + 1)", "num_steps", "self.speculative_num_steps"]
EXTRA = ["16", "pad", "self.page_size"]


@st.composite
def grouped(draw, parts: list[str], op: str) -> str:
    """``parts`` joined by ``op`` in a random order and grouping, maybe in
    parentheses, with line breaks and comments where Python allows them."""
    parts = draw(st.permutations(parts))
    while len(parts) > 1:
        i = draw(st.integers(0, len(parts) - 2))
        sep = draw(st.sampled_from([f" {op} ", f"\n  {op} ", f"  # note\n  {op} "]))
        joined = parts[i] + sep + parts[i + 1]
        if "\n" in sep or draw(st.booleans()):
            joined = f"({joined})"
        parts = [*parts[:i], joined, *parts[i + 2 :]]
    return parts[0]


@st.composite
def used_len(draw) -> str:
    prefix = draw(
        grouped([draw(st.sampled_from(SEQ_LENS_SUM)), draw(st.sampled_from(TOPK))], "*")
    )
    bs = [draw(st.sampled_from(COUNT))]
    if draw(st.booleans()):
        bs.append(draw(st.sampled_from(TOPK)))  # bs spelled as num_seqs * topk
    drafts = draw(grouped([*bs, draw(st.sampled_from(STEPS))], "*"))
    extra = draw(st.lists(st.sampled_from(EXTRA), max_size=2))
    return draw(grouped([f"({prefix})", f"({drafts})", *extra], "+"))


@st.composite
def buffer_width(draw) -> str:
    factors = [
        draw(st.sampled_from(COUNT)),
        draw(st.sampled_from(TOPK)),
        draw(st.sampled_from(MAX_CONTEXT_LEN)),
    ]
    return draw(grouped(factors, "*"))


@st.composite
def near_miss(draw) -> str:
    sls, topk = draw(st.sampled_from(SEQ_LENS_SUM)), draw(st.sampled_from(TOPK))
    count, steps = draw(st.sampled_from(COUNT)), draw(st.sampled_from(STEPS))
    mcl = draw(st.sampled_from(MAX_CONTEXT_LEN))
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
