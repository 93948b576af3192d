"""A torch/Python reference of SGLang's Triton ``generate_draft_decode_kv_indices``.

The real kernel (``sglang/srt/speculative/spec_utils.py``) is launched as
``kernel[(num_steps, num_seqs, topk)](...)`` and needs a GPU and Triton. This
reference is called the same way, with the same 13 arguments in the same order,
and writes the same entries, so the backends' ``common_template`` runs unchanged
on any device. Program ``(i, b, t)`` (step row ``i``, sequence ``b``, branch
``t``) writes, into row ``i`` of ``kv_indices``, the sequence's ``seq_len``
prefix slots from ``req_to_token`` followed by ``i + 1`` draft slots, at offset
``cum_seq_len_before_b * topk + b * (i + 1) * topk + t * (seq_len + i + 1)``, and
sets ``kv_indptr[i, zid]`` (``zid = b * topk + t``, or ``num_seqs * topk`` for
``zid == 0``) to ``sum(positions[:zid]) + zid * (i + 1)``.

Unlike the GPU, it never corrupts memory: a write at or past the row width (the
buffer's ``shape[1]``) is *recorded* (the highest offset per row goes into the
:class:`~harness.record.Launch`) and skipped. On a GPU such a write lands in the
next row or past the allocation, in an order nobody controls; skipping it keeps
both runs of a comparison deterministic while the overrun itself stays visible.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch

from .binding import INPUTS, BoundLaunch, bind_launch
from .errors import HarnessError
from .record import BufferUse, Launch, Recorder
from .torch_proxy import POISON


def _kernel_signature(
    req_pool_indices,
    req_to_token,
    paged_kernel_lens,
    kv_indices,
    kv_indptr,
    positions,
    pool_len,
    kv_indices_stride,
    kv_indptr_stride,
    bs_upper,
    iter_upper,
    num_tokens_upper,
    page_size,
    window_size=0,
    sink_size=0,
    NUM_STEPS=0,  # upstream's names, capitals included
    ENTRY_PAGE_SIZE=1,
    v2p=None,
    TRANSLATE=False,
):  # pragma: no cover - only its signature is used
    """The real kernel's parameter list, in order: 0.4.7.post1 to 0.5.13 take the
    first 13; 0.5.23 calls ``pool_len`` ``row_stride`` and adds the rest, which
    the reference accepts at their defaults only (it knows no window)."""


SIGNATURE = inspect.signature(_kernel_signature)
# The parameters a release's kernel must have, in order, for the reference to
# stand in for it (0.4.6.post5's kernel takes num_seqs and topk instead).
CLASSIC = tuple(SIGNATURE.parameters)[:13]
SCALARS = (
    "pool_len",
    "kv_indices_stride",
    "kv_indptr_stride",
    "bs_upper",
    "iter_upper",
    "num_tokens_upper",
    "page_size",
)


class LaunchByGrid:
    """``kernel[grid](*args)`` as a ``triton.jit`` function is called: the grid is
    checked, then ``self.launch(grid, *args)`` runs."""

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        if callable(grid):
            raise HarnessError("grid given as a callable; the backends pass a tuple")
        grid = tuple(int(g) for g in grid)
        if len(grid) != 3:
            raise HarnessError(f"grid {grid}: expected (num_steps, num_seqs, topk)")

        def launch(*args: Any, **kwargs: Any) -> None:
            self.launch(grid, *args, **kwargs)

        return launch

    def launch(self, grid: tuple[int, int, int], *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError

    @staticmethod
    def record(
        rec: Recorder,
        grid: tuple[int, int, int],
        scalars: tuple,
        buffers: tuple[torch.Tensor, list[int], torch.Tensor, list[int]],
        read_overruns: int,
        problems: list[str],
    ) -> None:
        """One launch, as both kernels record it (so their records compare)."""
        kv_indices, kv_top, kv_indptr, ptr_top = buffers
        rec.launch(
            Launch(
                phase=rec.phase,
                grid=grid,
                scalars=scalars,
                kv_indices=_use(rec, "kv_indices", kv_indices, kv_top),
                kv_indptr=_use(rec, "kv_indptr", kv_indptr, ptr_top),
                read_overruns=read_overruns,
                problems=tuple(problems),
            )
        )

    @staticmethod
    def bind(
        signature: inspect.Signature, grid: tuple[int, int, int], args, kwargs
    ) -> BoundLaunch:
        """By parameter name; a call that does not bind raises TypeError, as
        the jitted kernel does (the backend's error, recorded as such)."""
        return bind_launch(signature, grid, args, kwargs)


class ReferenceDraftKernel(LaunchByGrid):
    """The reference kernel, launched like ``triton.jit``'s; records each launch."""

    memo_key = "reference"  # one code: equal runs share their record

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder

    def __repr__(self) -> str:
        return "<reference generate_draft_decode_kv_indices>"

    def launch(self, grid: tuple[int, int, int], *args: Any, **kwargs: Any) -> None:
        bound = self.bind(SIGNATURE, grid, args, kwargs)
        bound.refuse_untranslatable()
        if bound.window != (0, 0):
            raise HarnessError(
                "the reference kernel knows no draft window (window_size/sink_size)"
            )
        a = bound.arguments
        _, num_seqs, topk = grid
        num_steps = bound.rows
        kv_indices, kv_indptr, req_to_token = (
            a["kv_indices"],
            a["kv_indptr"],
            a["req_to_token"],
        )
        s = bound.ints()
        problems = launch_problems(bound, s)

        seq_lens = [int(v) for v in a["paged_kernel_lens"].reshape(-1).tolist()]
        pool_rows = [int(v) for v in a["req_pool_indices"].reshape(-1).tolist()]
        positions = [int(v) for v in a["positions"].reshape(-1).tolist()]
        if len(seq_lens) < num_seqs or len(pool_rows) < num_seqs:
            raise HarnessError(f"grid has {num_seqs} sequences but fewer seq_lens/rows")
        slots = req_to_token.reshape(-1).tolist()
        pos_cum = [0]
        for p in positions:
            pos_cum.append(pos_cum[-1] + p)

        pool_len, page_size = s["pool_len"], s["page_size"]
        kv_stride, ptr_stride = s["kv_indices_stride"], s["kv_indptr_stride"]
        kv_rows, kv_width = kv_indices.shape[0], kv_indices.shape[-1]
        ptr_rows, ptr_width = kv_indptr.shape[0], kv_indptr.shape[-1]
        kv_top, ptr_top = [-1] * num_steps, [-1] * num_steps
        kv_idx: list[int] = []
        kv_val: list[int] = []
        ptr_idx: list[int] = []
        ptr_val: list[int] = []
        read_overruns = 0

        for row in range(num_steps):
            iters = row + 1
            n_ext = max(0, min(s["iter_upper"], iters))  # arange(iter_upper) < iters
            for bid in range(num_seqs):
                # arange(bs_upper) masked to < bid: the lengths of earlier sequences
                cum = sum(seq_lens[: min(bid, s["bs_upper"])])
                seq_len = seq_lens[bid]
                base = pool_rows[bid] * pool_len
                for t in range(topk):
                    kv_offset = cum * topk + bid * iters * topk + t * (seq_len + iters)
                    if page_size == 1 or topk == 1:
                        ext = seq_len + t * num_steps
                    else:
                        last = seq_len % page_size
                        new_pages = (last + num_steps + page_size - 1) // page_size
                        ext = seq_len // page_size * page_size
                        ext += t * new_pages * page_size + last
                    # Program (row, bid, t) copies seq_len prefix slots, then n_ext
                    # draft slots, into one contiguous run starting at kv_offset.
                    values = _read(slots, base, 0, seq_len) + _read(
                        slots, base, ext, n_ext
                    )
                    read_overruns += _past(0, seq_len, pool_len)
                    read_overruns += _past(ext, n_ext, pool_len)
                    if values:
                        top = kv_offset + len(values) - 1
                        kv_top[row] = max(kv_top[row], top)
                        fits = max(0, min(len(values), kv_width - kv_offset))
                        if row < kv_rows and fits:
                            start = row * kv_stride + kv_offset
                            kv_idx.extend(range(start, start + fits))
                            kv_val.extend(values[:fits])
                    zid = bid * topk + t or num_seqs * topk
                    n_pos = min(s["num_tokens_upper"], zid)
                    if n_pos > len(positions):
                        read_overruns += n_pos - len(positions)
                        n_pos = len(positions)
                    ptr_top[row] = max(ptr_top[row], zid)
                    if zid < ptr_width and row < ptr_rows:
                        ptr_idx.append(row * ptr_stride + zid)
                        ptr_val.append(pos_cum[n_pos] + zid * iters)

        _scatter(kv_indices, kv_idx, kv_val)
        _scatter(kv_indptr, ptr_idx, ptr_val)
        rec = self._recorder
        scalars = bound.scalars() + tuple((name, rec.owner(a[name])) for name in INPUTS)
        self.record(
            rec,
            grid,
            scalars,
            (kv_indices, kv_top, kv_indptr, ptr_top),
            read_overruns,
            problems,
        )


def launch_problems(a: BoundLaunch, s: dict[str, int]) -> list[str]:
    """Kernel-contract violations of one launch (``a``: the bound launch, ``s``:
    its integer arguments by role); a non-contiguous output is a harness error,
    not a finding."""
    for name in ("kv_indices", "kv_indptr", "req_to_token"):
        if not a[name].is_contiguous():
            raise HarnessError(
                f"{name} is not contiguous; the kernel addresses it by pointer "
                "arithmetic, so this would already be wrong on a GPU"
            )
    problems = []
    for name in ("bs_upper", "iter_upper", "num_tokens_upper"):
        if name in s and (s[name] <= 0 or s[name] & (s[name] - 1)):
            problems.append(f"{name}={s[name]} is not a power of two (tl.arange)")
    for name, tensor in (
        ("kv_indices_stride", "kv_indices"),
        ("kv_indptr_stride", "kv_indptr"),
        ("pool_len", "req_to_token"),
    ):
        if s[name] != a[tensor].shape[-1]:
            problems.append(
                f"{name}={s[name]} but the tensor is {a[tensor].shape[-1]} wide"
            )
    return problems


def _read(slots: list[int], base: int, start: int, count: int) -> list[int]:
    """req_to_token[base + start : base + start + count], poison past the pool."""
    lo, hi = base + start, base + start + count
    values = slots[max(lo, 0) : max(min(hi, len(slots)), 0)]
    return values + [POISON] * (count - len(values))


def _past(start: int, count: int, pool_len: int) -> int:
    """How many of the offsets start .. start + count - 1 lie past a pool row."""
    return max(0, start + count - max(start, pool_len))


def _scatter(buffer: torch.Tensor, index: list[int], values: list[int]) -> None:
    if not index:
        return
    flat = buffer.view(-1)
    where = torch.tensor(index, dtype=torch.int64, device=buffer.device)
    flat[where] = torch.tensor(values, dtype=buffer.dtype, device=buffer.device)


def _use(rec: Recorder, name: str, tensor: torch.Tensor, top: list[int]) -> BufferUse:
    return BufferUse(
        name=name,
        owner=rec.owner(tensor),
        shape=tuple(tensor.shape),
        dtype=str(tensor.dtype),
        max_offset=tuple(top),
    )
