"""Reference runtime of the two helpers, for projects without sglang.

Same signatures and values as ``sglang.srt.speculative.spec_utils``. Pure Python:
importing it imports no torch. Point ``fix --helpers-module`` at
``lint_plugin.runtime`` to use it.
"""

from __future__ import annotations

INT32_LIMIT = 2**31


class KvIndicesWidthOverflow(ValueError):
    """The row width would overflow the int32 flat offsets the index kernel uses."""


def draft_kv_indices_buffer_width(
    num_seqs: int, topk: int, max_context_len: int
) -> int:
    """Per-step row width of the EAGLE draft-decode kv_indices buffer.

    ``num_seqs * topk`` branches each attend up to ``max_context_len`` KV slots; the
    topk factor is mandatory (upstream #27338, #27460).
    """
    width = num_seqs * topk * max_context_len
    # Upstream asserts; an explicit raise keeps the refusal under ``python -O``.
    if width >= INT32_LIMIT:
        raise KvIndicesWidthOverflow(
            f"kv_indices flat offset would overflow int32: {num_seqs} * {topk} * "
            f"{max_context_len} = {width} >= 2**31; reduce batch/topk/context"
        )
    return width


def draft_kv_indices_used_len(
    seq_lens_sum: int, topk: int, bs: int, num_steps: int
) -> int:
    """kv_indices length used through ``num_steps`` draft-decode steps.

    ``bs = topk * num_seqs`` branches, one index appended per branch per step.
    """
    return seq_lens_sum * topk + bs * num_steps
