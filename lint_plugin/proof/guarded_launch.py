"""Launch upstream's jitted index kernel so that an overrun is seen, never suffered.

The backend hands the kernel its own buffers and strides. On a GPU a write past a
row lands in the next row (or past the allocation) and nobody notices; here every
buffer the kernel writes or reads is re-laid before the launch:

- ``kv_indices`` and ``kv_indptr`` become ``(num_steps, wide)`` buffers filled with
  an "unwritten" sentinel, ``wide`` larger than anything the launch can write, and
  the kernel is given ``wide`` as its row stride. Row ``i`` of the kernel is still
  row ``i`` of the backend's buffer, so entries below the backend's width are
  copied back to exactly where the GPU would have put them; entries at or past it
  are the overrun: counted (highest offset per row, as the reference kernel
  records it) and never copied, so a neighbour row stays intact.
- ``req_to_token`` rows get a tail of :data:`POISON` (``pool_len`` widened the same
  way), so a read past a request's row yields -1 instead of another request's slot,
  exactly as the reference kernel models it.

The :class:`~.record.Launch` recorded is the same as the reference kernel's for the
same launch, so records from both kernels compare with ``==``.
"""

from __future__ import annotations

import hashlib
import inspect
import sys
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import torch

from .binding import INPUTS
from .errors import HarnessError
from .kernel import LaunchByGrid, launch_problems
from .record import Recorder
from .torch_proxy import POISON

UNWRITTEN = -123456789  # fits int32; never a slot id, an indptr or POISON
# Roles every release's kernel has (``pool_len`` is ``row_stride`` in 0.5.23).
NEEDED = (
    "kv_indices",
    "kv_indptr",
    "req_to_token",
    "positions",
    "req_pool_indices",
    "paged_kernel_lens",
    "pool_len",
    "kv_indices_stride",
    "kv_indptr_stride",
    "num_tokens_upper",
)


def _pow2_above(n: int) -> int:
    """A power of two > n: few distinct constexprs, so few compilations on CUDA."""
    return 1 << int(n).bit_length()


class GuardedDraftKernel(LaunchByGrid):
    """``kernel[grid](*args)`` running upstream's kernel; records each launch."""

    def __init__(
        self, recorder: Recorder, jitted: Any, digest: str | None = None
    ) -> None:
        self._recorder = recorder
        self._jitted = jitted
        self._digest = digest  # of the kernel and its helpers: the memo's key
        self.signature = inspect.signature(jitted.fn)
        params = set(self.signature.parameters)
        missing = [
            n
            for n in NEEDED
            if n not in params and not (n == "pool_len" and "row_stride" in params)
        ]
        if missing:
            raise HarnessError(
                f"the kernel's parameters lack {missing}; the launch wrapper "
                "cannot guard it"
            )
        self.launches = 0

    @classmethod
    def factory(
        cls, jitted: Any, digest: str | None = None
    ) -> Callable[[Recorder], GuardedDraftKernel]:
        """``digest`` (:attr:`KernelSource.digest`) lets equal launches of the
        interpreted kernel share one execution (:class:`LaunchMemo`), and equal
        runs share their record (:func:`.drive.remembered_run`)."""

        def make(recorder: Recorder) -> GuardedDraftKernel:
            return cls(recorder, jitted, digest)

        make.memo_key = f"upstream {digest}" if digest else None
        return make

    def __repr__(self) -> str:
        return "<upstream generate_draft_decode_kv_indices, guarded>"

    def launch(self, grid: tuple[int, int, int], *args: Any, **kwargs: Any) -> None:
        bound = self.bind(self.signature, grid, args, kwargs)
        bound.refuse_untranslatable()
        a = bound.arguments
        s = bound.ints()
        problems = launch_problems(bound, s)
        _, num_seqs, topk = grid
        num_steps = bound.rows
        kv, ptr = a["kv_indices"], a["kv_indptr"]
        lens = a["paged_kernel_lens"].reshape(-1)
        seq_total = int(lens.sum()) if lens.numel() else 0
        longest = int(lens.max()) if lens.numel() else 0
        iter_upper = s.get("iter_upper", num_steps)
        page = max(1, s.get("page_size", 1))

        # Wider than any offset the launch can write or read, whatever its widths.
        kv_stride = _pow2_above(
            max(kv.shape[-1], s["kv_indices_stride"])
            + (seq_total + num_seqs * max(num_steps, iter_upper)) * topk
        )
        ptr_stride = _pow2_above(
            max(ptr.shape[-1], s["kv_indptr_stride"]) + num_seqs * topk
        )
        reach = longest + topk * (num_steps + 2 * page + iter_upper + 1) + iter_upper
        pool_stride = _pow2_above(max(s["pool_len"], reach))

        device = kv.device
        wide_kv = torch.full((num_steps, kv_stride), UNWRITTEN, dtype=kv.dtype)
        wide_ptr = torch.full((num_steps, ptr_stride), UNWRITTEN, dtype=ptr.dtype)
        pool = _widen_pool(
            a["req_to_token"], s["pool_len"], pool_stride, a["req_pool_indices"]
        )
        positions = a["positions"].reshape(-1)
        n_positions = positions.numel()
        wide_positions = torch.zeros(
            max(n_positions, s["num_tokens_upper"]), dtype=positions.dtype
        )
        wide_positions[:n_positions] = positions.cpu()

        call = {
            **a,
            "kv_indices": wide_kv.to(device),
            "kv_indptr": wide_ptr.to(device),
            "req_to_token": pool.to(device),
            "positions": wide_positions.to(device),
            "kv_indices_stride": kv_stride,
            "kv_indptr_stride": ptr_stride,
            bound.role("pool_len"): pool_stride,
        }
        key = MEMO.key(self._digest, grid, call) if device.type == "cpu" else None
        outputs = MEMO.get(key)
        if outputs is None:
            # The interpreter is the slow part of a run; a tracer measuring which
            # lines of the class ran has nothing to see in it.
            tracer = sys.gettrace()
            sys.settrace(None)
            try:
                self._jitted[grid](**call)
            finally:
                sys.settrace(tracer)
            outputs = call["kv_indices"].cpu(), call["kv_indptr"].cpu()
            MEMO.put(key, outputs)
        self.launches += 1
        wide_kv, wide_ptr = (x.clone() for x in outputs)

        kv_top = _copy_back(wide_kv, kv, s["kv_indices_stride"])
        ptr_top = _copy_back(wide_ptr, ptr, s["kv_indptr_stride"])
        written = wide_kv[wide_kv != UNWRITTEN]
        read_overruns = int((written == POISON).sum())
        # Every program reads positions[: min(num_tokens_upper, zid)].
        for bid in range(num_seqs):
            for t in range(topk):
                zid = bid * topk + t or num_seqs * topk
                past = min(s["num_tokens_upper"], zid) - n_positions
                read_overruns += num_steps * max(0, past)

        rec = self._recorder
        scalars = bound.scalars() + tuple(
            (n, rec.owner(a[n])) for n in INPUTS if n in a
        )
        self.record(
            rec, grid, scalars, (kv, kv_top, ptr, ptr_top), read_overruns, problems
        )


class LaunchMemo:
    """Outputs of interpreted launches, by everything the kernel reads.

    The kernel is a deterministic function of its re-laid inputs (the guard rows
    give every launch fresh "unwritten" outputs), and the two versions of a
    class, the widened original and releases sharing a kernel mostly make the
    same launches: each is interpreted once. Bounded by bytes, oldest first out.
    """

    def __init__(self, budget: int = 128 << 20) -> None:
        self._budget = budget
        self._used = 0
        self._items: OrderedDict[bytes, tuple[torch.Tensor, torch.Tensor]] = (
            OrderedDict()
        )

    @staticmethod
    def key(digest: str | None, grid: tuple, call: dict[str, Any]) -> bytes | None:
        if digest is None:
            return None
        h = hashlib.blake2b(f"{digest}{grid}".encode(), digest_size=20)
        for name in sorted(call):
            value = call[name]
            h.update(name.encode())
            if isinstance(value, torch.Tensor):
                h.update(f"{value.dtype}{tuple(value.shape)}".encode())
                h.update(value.detach().cpu().contiguous().numpy().tobytes())
            else:
                h.update(repr(value).encode())
        return h.digest()

    def get(self, key: bytes | None):
        if key is None or key not in self._items:
            return None
        self._items.move_to_end(key)
        return self._items[key]

    def put(self, key: bytes | None, outputs: tuple[torch.Tensor, torch.Tensor]):
        if key is None:
            return
        size = sum(x.numel() * x.element_size() for x in outputs)
        if size > self._budget:
            return
        self._items[key] = outputs
        self._used += size
        while self._used > self._budget:
            _, old = self._items.popitem(last=False)
            self._used -= sum(x.numel() * x.element_size() for x in old)


MEMO = LaunchMemo()


def _widen_pool(
    req_to_token: torch.Tensor, pool_len: int, stride: int, rows: torch.Tensor
) -> torch.Tensor:
    """req_to_token as the kernel addresses it (``pool_len`` per row), each row
    followed by POISON up to ``stride``; rows past the tensor are all POISON."""
    flat = req_to_token.reshape(-1).cpu()
    n_rows = -(-flat.numel() // pool_len) if pool_len > 0 else 0
    n_rows = max(n_rows, int(rows.max()) + 1 if rows.numel() else 0)
    padded = torch.full((n_rows * pool_len,), POISON, dtype=flat.dtype)
    padded[: flat.numel()] = flat
    wide = torch.full((n_rows, stride), POISON, dtype=flat.dtype)
    if pool_len > 0:
        wide[:, :pool_len] = padded.view(n_rows, pool_len)
    return wide


def _copy_back(wide: torch.Tensor, target: torch.Tensor, stride: int) -> list[int]:
    """Copy what the kernel wrote into row i below the target's width to where the
    GPU would have put it (row i * stride); return each row's highest offset."""
    written = wide != UNWRITTEN
    cols = torch.arange(wide.shape[1]).expand_as(wide)
    top = torch.where(written, cols, torch.full_like(cols, -1)).max(dim=1).values
    rows, width = target.shape[0], target.shape[-1]
    keep = written.clone()
    keep[min(rows, keep.shape[0]) :] = False
    keep[:, width:] = False
    r, c = keep.nonzero(as_tuple=True)
    flat = r * stride + c
    inside = flat < target.numel()
    if bool(inside.any()):
        values = wide[r[inside], c[inside]].to(target.device)
        target.view(-1)[flat[inside].to(target.device)] = values
    return [int(v) for v in top.tolist()]
