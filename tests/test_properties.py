"""Property tests: generated spellings of both formulas are found, rewritten and
proven equal; generated near misses are never touched (hypothesis; the CI profile
runs 2,000 examples per property). A formula with a call among its operands
(``len(reqs)``) is rewritten only where the call can keep its place in the order
of evaluation, else it is reported with no fix."""

from __future__ import annotations

import ast

from hypothesis import given
from hypothesis import strategies as st

from lint_plugin.engine.settings import Settings
from lint_plugin.fix.gate.oracle import equivalent
from lint_plugin.fix.rewrite import Options, rewrite_text
from lint_plugin.linter import check_source

SEQ_LENS_SUM = ["seq_lens_sum", "forward_batch.seq_lens_sum", "self.seq_lens_sum"]
TOPK = ["topk", "self.topk", "eagle_topk", "self.speculative_eagle_topk"]
MAX_CONTEXT_LEN = ["max_context_len", "self.max_context_len", "self.model.context_len"]
COUNT = ["bs", "num_seqs", "max_bs", "forward_batch.batch_size", "len(reqs)"]
STEPS = ["(i + 1)", "(step + 1)", "num_steps", "self.speculative_num_steps"]
EXTRA = ["16", "pad", "self.page_size"]
OPTIONS = Options(helpers_module="helpers", wrap=False)
SETTINGS = Settings(helpers_module="helpers")  # the rewritten file imports from it


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


def statement(expr: str) -> str:
    return f"n = (\n{expr}\n)\n"


def value_text(source: str) -> str:
    assign = ast.parse(source).body[-1]
    return ast.unparse(assign.value)


def assert_found_rewritten_and_equal(expr: str, code: str) -> None:
    source = statement(expr)
    (finding,) = check_source(source.encode(), "g.py")
    assert finding.code == code
    result = rewrite_text(source, "g.py", OPTIONS)
    if finding.fix is None:
        assert "len(reqs)" in expr and not result.changed
        return
    assert result.changed and len(result.applied) == 1
    assert check_source(result.text.encode(), "g.py", SETTINGS) == []
    assert equivalent(value_text(source), value_text(result.text)) is None


@given(used_len())
def test_used_len_variants_are_found_rewritten_and_equal(expr: str) -> None:
    assert_found_rewritten_and_equal(expr, "KVI001")


@given(buffer_width())
def test_buffer_width_variants_are_found_rewritten_and_equal(expr: str) -> None:
    assert_found_rewritten_and_equal(expr, "KVI002")


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


@given(near_miss())
def test_near_misses_are_never_rewritten(expr: str) -> None:
    source = statement(expr)
    assert check_source(source.encode(), "g.py") == []
    assert rewrite_text(source, "g.py", OPTIONS).text == source
