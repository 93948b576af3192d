"""An index kernel of our own writing, in the shape of upstream's, for the
derivation's tests: :func:`ours` with edits is each construct it must follow,
refuse or refute (never upstream's text, which is only read from the wheels)."""

from __future__ import annotations

OURS = """\
import triton
import triton.language as tl


@triton.jit
def generate_draft_decode_kv_indices(
    req_pool_indices, req_to_token, paged_kernel_lens, kv_indices, kv_indptr,
    positions, pool_len: tl.constexpr, kv_indices_stride: tl.constexpr,
    kv_indptr_stride: tl.constexpr, bs_upper: tl.constexpr,
    iter_upper: tl.constexpr, num_tokens_upper: tl.constexpr,
):
    step = tl.program_id(0)
    seq = tl.program_id(axis=1)
    branch = tl.program_id(2)
    topk = tl.num_programs(2)
    drafts = step + 1
    kv_indices += kv_indices_stride * step
    lanes = tl.arange(0, bs_upper)
    before = tl.sum(tl.load(paged_kernel_lens + lanes, mask=lanes < seq, other=0))
    length = tl.load(paged_kernel_lens + seq)
    start = (before + seq * drafts) * topk + branch * (length + drafts)
    row = req_to_token + tl.load(req_pool_indices + seq) * pool_len
    for block in range(tl.cdiv(length, 64)):
        cols = block * 64 + tl.arange(0, 64)
        tl.store(kv_indices + start + cols, tl.load(row + cols, mask=cols < length),
                 mask=cols < length)
    draft = tl.arange(0, iter_upper)
    WRITE_DRAFTS
"""
DRAFTS = "tl.store(kv_indices + start + length + draft, tl.load(row + length + draft), mask=draft < drafts)"


def ours(drafts: str = DRAFTS, **edits: str) -> str:
    text = OURS.replace("WRITE_DRAFTS", drafts)
    for old, new in edits.items():
        text = text.replace(old, new)
    return text
