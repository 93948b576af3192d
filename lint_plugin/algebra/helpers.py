"""The two helpers as algebra: their names, parameters and formulas.

``draft_kv_indices_used_len(seq_lens_sum, topk, bs, num_steps)`` is
``seq_lens_sum * topk + bs * num_steps``; ``draft_kv_indices_buffer_width(num_seqs,
topk, max_context_len)`` is their product. The engine matches inline copies
against these (:mod:`lint_plugin.engine.formulas`), the values analysis expands a
call into its formula (:mod:`.symbolic`), and the fix gate proves a rewrite with
them (:mod:`lint_plugin.fix.gate.poly`).
"""

from __future__ import annotations

from lint_plugin.roles import Role

USED_LEN = "draft_kv_indices_used_len"
BUFFER_WIDTH = "draft_kv_indices_buffer_width"
HELPERS = (USED_LEN, BUFFER_WIDTH)

# Parameter names and the role each slot must not be given another strong role in.
HELPER_SLOTS: dict[str, tuple[tuple[str, Role | None], ...]] = {
    USED_LEN: (
        ("seq_lens_sum", Role.SEQ_LENS_SUM),
        ("topk", Role.TOPK),
        ("bs", None),
        ("num_steps", Role.NUM_STEPS),
    ),
    BUFFER_WIDTH: (
        ("num_seqs", None),
        ("topk", Role.TOPK),
        ("max_context_len", Role.MAX_CONTEXT_LEN),
    ),
}

# Each helper's formula as a sum of products of its slots (indices into
# HELPER_SLOTS): `seq_lens_sum * topk + bs * num_steps`, `num_seqs * topk *
# max_context_len`. The fix's gate expands helper calls with it.
HELPER_TERMS: dict[str, tuple[tuple[int, ...], ...]] = {
    USED_LEN: ((0, 1), (2, 3)),
    BUFFER_WIDTH: ((0, 1, 2),),
}
