"""KVI001 and KVI002: the spellings of the two formulas the matcher sees through.

One module for the pair: one matcher and one report (``rules/_inline_formulas``)
serve both, and a variant is often the one formula or the other."""

from __future__ import annotations

import pytest
from rule_snippets import codes, snippet

from lint_plugin.linter import lint_source


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            "n = seq_lens_sum * self.topk + bs * (i + 1)\n", ["KVI001"], id="plain"
        ),
        pytest.param(
            "n = (i + 1) * bs + self.topk * seq_lens_sum\n", ["KVI001"], id="commuted"
        ),
        pytest.param(
            "n = seq_lens_sum * self.topk + bs * (1 + i)\n", ["KVI001"], id="one-plus-i"
        ),
        pytest.param(
            "n = seq_lens_sum * self.topk + bs * (1 - i)\n", [], id="one-minus-i"
        ),
        pytest.param(
            "n = ((seq_lens_sum * (self.topk))) + ((bs) * (i + 1))\n",
            ["KVI001"],
            id="parens",
        ),
        pytest.param(
            "n = (\n    seq_lens_sum  # prefix slots\n    * self.topk\n"
            "    + bs * (i + 1)  # drafts\n)\n",
            ["KVI001"],
            id="split-with-comments",
        ),
        pytest.param(
            "topk = self.topk\nn = seq_lens_sum * topk + bs * (i + 1)\n",
            ["KVI001"],
            id="local-topk",
        ),
        pytest.param(
            "k = self.topk\nn = seq_lens_sum * k + bs * (i + 1)\n",
            ["KVI001"],
            id="alias-of-topk",
        ),
        pytest.param(
            "n = seq_lens_sum * self.topk + bs * (i + 1) + 16\n",
            ["KVI001"],
            id="in-longer-sum",
        ),
        pytest.param(
            "n = extra + seq_lens_sum * self.topk + extra2 + bs * self.speculative_num_steps\n",
            ["KVI001"],
            id="in-longer-sum-apart",
        ),
        pytest.param(
            "n = seq_lens_sum * self.topk + num_seqs * self.topk * (i + 1)\n",
            ["KVI001"],
            id="bs-spelled-out",
        ),
        pytest.param(
            "a, b = seq_lens_sum * self.topk + bs * (i + 1), x * self.topk * self.max_context_len\n",
            ["KVI001", "KVI002"],
            id="two-sites-one-line",
        ),
        pytest.param(
            "w = self.max_context_len * forward_batch.batch_size * self.topk\n",
            ["KVI002"],
            id="width-commuted",
        ),
        pytest.param(
            "w = (forward_batch.batch_size\n     * self.topk)  * self.max_context_len\n",
            ["KVI002"],
            id="width-regrouped",
        ),
        pytest.param("n = batch_size * self.topk + 1\n", [], id="near-miss-batch"),
        pytest.param("n = max_bs * self.topk + 1\n", [], id="near-miss-max-bs"),
        pytest.param("w = max_bs * self.max_context_len\n", [], id="near-miss-no-topk"),
        pytest.param(
            "n = seq_lens_sum * self.topk + bs * i\n", [], id="near-miss-steps"
        ),
        pytest.param(
            "n = seq_lens_sum + bs * (i + 1)\n", [], id="near-miss-no-topk-in-prefix"
        ),
        pytest.param(
            "n = seq_lens_sum * self.topk - bs * (i + 1)\n",
            [],
            id="near-miss-mixed-signs",
        ),
        pytest.param(
            "n = -(seq_lens_sum * self.topk + bs * (i + 1))\n", ["KVI001"], id="negated"
        ),
    ],
)
def test_variants(body: str, expected: list[str]) -> None:
    assert sorted(codes(snippet(body))) == expected


def test_findings_point_at_the_expression_start() -> None:
    (finding,) = lint_source(
        snippet(
            "n = (\n    seq_lens_sum * self.topk\n    + bs * (i + 1)\n)\n"
        ).encode(),
        "x.py",
    )
    assert (finding.row, finding.column) == (4, 13)
