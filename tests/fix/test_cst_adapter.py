"""The engine matches libcst nodes exactly as it matches ``ast`` nodes."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from lint_plugin.algebra.arith import AST, build
from lint_plugin.engine.formulas import find_formula_matches, render_call
from lint_plugin.fix.gate.cst_adapter import CST, code_of


@pytest.mark.parametrize(
    ("expression", "codes"),
    [
        ("seq_lens_sum * self.topk + bs * (i + 1)", ["KVI001"]),
        ("(i + 1) * bs + (self.topk * forward_batch.seq_lens_sum)", ["KVI001"]),
        (
            "seq_lens_sum * topk + n * topk * self.speculative_num_steps + 16",
            ["KVI001"],
        ),
        ("self.max_context_len * (forward_batch.batch_size * self.topk)", ["KVI002"]),
        ("max_bs * self.topk + 1", []),
    ],
)
def test_same_matches_and_calls_from_both_parsers(expression: str, codes) -> None:
    via_ast = [
        (m.code, render_call(m, lambda e: ast.unparse(e.node)))
        for m in find_formula_matches(
            build(ast.parse(expression, mode="eval").body, AST)
        )
    ]
    via_cst = [
        (m.code, render_call(m, lambda e: code_of(e.node)))
        for m in find_formula_matches(build(cst.parse_expression(expression), CST))
    ]
    assert via_cst == via_ast
    assert [code for code, _ in via_cst] == codes
