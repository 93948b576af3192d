"""The sizing contracts as data (``lint_plugin/contracts.py``): each is a rule's,
its least size is its owner's value, and its words are what the engine reads
whole."""

from __future__ import annotations

import itertools

import pytest
from contract_programs import tree_mask_numel

from lint_plugin.algebra import symbolic
from lint_plugin.contracts import (
    CONTRACTS,
    DRAFT_KV_INDICES,
    TARGET_VERIFY_KV_INDICES,
    VERIFY_CUSTOM_MASK,
    class_may_write,
)
from lint_plugin.engine.flow.row_sizing import least_size
from lint_plugin.rules import NEEDS, RULES
from lint_plugin.runtime import draft_kv_indices_buffer_width

BINDINGS = list(itertools.product((1, 2, 5), (1, 3, 8), (1, 7, 4096)))


def value(formula: str, **sizes: int) -> int:
    symbols = {name: symbolic.free_symbol(name) for name in sizes}
    expr = least_size(formula, symbols)
    return symbolic.evaluate(expr, {f"free:{k}": v for k, v in sizes.items()})


@pytest.mark.parametrize("contract", CONTRACTS, ids=lambda c: c.code)
def test_each_contract_is_a_rules(contract) -> None:
    rule = RULES[contract.code]
    assert rule.name.startswith("unsized-")
    if contract.class_words:
        # The rule needs what makes the engine read the class whole.
        assert contract.class_words in NEEDS[contract.code].clauses


@pytest.mark.parametrize(("seqs", "draft", "context"), BINDINGS)
def test_the_least_sizes_are_the_owners_values(seqs, draft, context) -> None:
    assert value(
        DRAFT_KV_INDICES.least, num_seqs=seqs, topk=draft, context=context
    ) == draft_kv_indices_buffer_width(seqs, draft, context)
    assert value(
        VERIFY_CUSTOM_MASK.least, num_seqs=seqs, num_draft_tokens=draft, context=context
    ) == tree_mask_numel(1, seqs, draft, context)  # FULL_MASK
    # What create_flashinfer_kv_indices_triton writes at the context wall
    # (seq_len up to context - 1, then the draft tokens), and one more a request.
    wall = seqs * ((context - 1) + draft)
    least = value(
        TARGET_VERIFY_KV_INDICES.least,
        num_seqs=seqs,
        num_draft_tokens=draft,
        context=context,
    )
    assert least - wall == seqs


@pytest.mark.parametrize(("seqs", "draft", "lengths"), BINDINGS)
def test_the_exact_writes_are_the_writers(seqs, draft, lengths) -> None:
    """A buffer made per batch from its lengths' sum: the mask writes
    ``draft * (seq_len + draft)`` cells a request, the kernel ``seq_len +
    draft`` entries."""
    seq_lens_sum = lengths * seqs
    assert value(
        VERIFY_CUSTOM_MASK.exact,
        num_seqs=seqs,
        num_draft_tokens=draft,
        seq_lens_sum=seq_lens_sum,
    ) == sum(draft * (lengths + draft) for _ in range(seqs))
    assert value(
        TARGET_VERIFY_KV_INDICES.exact,
        num_seqs=seqs,
        num_draft_tokens=draft,
        seq_lens_sum=seq_lens_sum,
    ) == sum(lengths + draft for _ in range(seqs))


@pytest.mark.parametrize(
    ("text", "read_whole"),
    [
        ("self.cuda_graph_custom_mask = ...; self.max_context_len", True),
        ("spec_info.custom_mask  # no context size", False),
        (
            "create_flashinfer_kv_indices_triton[(bs,)](...); self.num_draft_tokens",
            True,
        ),
        ("create_flashinfer_kv_indices_triton[(bs,)](...)", False),
        ("class Plain: pass", False),
    ],
)
def test_a_class_is_read_whole_by_a_contracts_words(text, read_whole) -> None:
    assert class_may_write(text) is read_whole


def test_a_formula_is_our_own_arithmetic_only() -> None:
    with pytest.raises(ValueError, match="not a contract formula"):
        least_size("num_seqs // 2", {"num_seqs": symbolic.Const(1)})
