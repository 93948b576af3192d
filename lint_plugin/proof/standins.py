"""Stand-ins for the SGLang objects a multi-step draft backend touches.

Each one carries only what the four real classes read (0.5.12.post1 and 0.5.13),
records what it is given, and raises on anything else, so a rewrite that starts
using some other attribute fails loudly instead of being compared on a guess.
"""

from __future__ import annotations

import enum
from types import SimpleNamespace
from typing import Any

import torch

from .errors import HarnessError
from .record import Recorder


def next_power_of_2(n: int) -> int:
    """Same value as ``triton.next_power_of_2`` / ``sglang.srt.utils``'s copy."""
    n = int(n)
    return 1 if n <= 0 else 1 << (n - 1).bit_length()


# aiter_backend calls ``triton.next_power_of_2(...)``; nothing else from triton.
triton = SimpleNamespace(next_power_of_2=next_power_of_2)


class ForwardMode(enum.IntEnum):
    """The members the draft backends name (values are irrelevant here)."""

    EXTEND = enum.auto()
    DECODE = enum.auto()
    MIXED = enum.auto()
    IDLE = enum.auto()
    TARGET_VERIFY = enum.auto()
    DRAFT_EXTEND = enum.auto()


def assert_buffer_fits(used: int, capacity: int, what: str, **context: Any) -> None:
    """0.5.13's guard (``sglang.srt.layers.attention.utils``), same semantics."""
    assert used <= capacity, f"{what}: used {used} > capacity {capacity} {context}"


class SpecInfo:
    """``forward_batch.spec_info`` of an EAGLE draft step.

    Every assignment of ``kv_indices``/``kv_indptr`` is recorded with its contents
    at that moment: these slices are what the per-step attention kernels read.
    """

    RECORDED = ("kv_indices", "kv_indptr")

    def __init__(self, recorder: Recorder) -> None:
        object.__setattr__(self, "_recorder", recorder)
        object.__setattr__(self, "kv_indptr", None)
        object.__setattr__(self, "kv_indices", None)

    def is_draft_input(self) -> bool:
        return True

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self.RECORDED:
            raise HarnessError(
                f"the class set spec_info.{name}; the harness has no model"
            )
        self._recorder.assignment(name, value)
        object.__setattr__(self, name, value)

    def harness_summary(self, rec: Recorder) -> tuple:
        return (
            "spec_info",
            rec.summarize(self.kv_indptr),
            rec.summarize(self.kv_indices),
        )


class ForwardBatch:
    """The fields of ``ForwardBatch`` that common_template and its call_fns read."""

    def __init__(
        self,
        *,
        seq_lens: torch.Tensor,
        req_pool_indices: torch.Tensor,
        req_to_token: torch.Tensor,
        topk: int,
        recorder: Recorder,
    ) -> None:
        self.batch_size = int(seq_lens.numel())
        self.seq_lens = seq_lens
        self.seq_lens_cpu = seq_lens.cpu()
        self.seq_lens_sum = int(seq_lens.sum())
        self.req_pool_indices = req_pool_indices
        self.req_to_token_pool = SimpleNamespace(
            req_to_token=req_to_token, size=int(req_to_token.shape[0])
        )
        # EAGLE draft decode: each of the topk branches of a sequence sits at that
        # sequence's length, so positions is seq_lens repeated topk times.
        self.positions = seq_lens.repeat_interleave(topk)
        self.forward_mode = ForwardMode.DECODE
        self._recorder = recorder
        self.spec_info = SpecInfo(recorder)

    def new_spec_info(self) -> None:
        """A fresh spec_info per entry point, as a new draft step would have."""
        self.spec_info = SpecInfo(self._recorder)

    def harness_summary(self, rec: Recorder) -> tuple:
        return ("forward_batch", self.batch_size, rec.summarize(self.spec_info))


class AttnBackend:
    """One per-step attention backend (``attn_backends[i]``); records its calls."""

    def __init__(
        self, index: int, recorder: Recorder, max_context_len: int, max_kv_splits: int
    ) -> None:
        self.index = index
        self.max_context_len = max_context_len
        self.max_kv_splits = max_kv_splits  # triton reads attn_backends[0]'s
        self.cuda_graph_num_kv_splits: torch.Tensor | None = None
        self._recorder = recorder

    def __repr__(self) -> str:
        return f"<attn_backends[{self.index}] stand-in>"

    def _call(self, method: str, *args: Any, **kwargs: Any) -> None:
        self._recorder.backend_call(self.index, method, args, kwargs)

    def init_forward_metadata(self, *args: Any, **kwargs: Any) -> None:
        self._call("init_forward_metadata", *args, **kwargs)

    def init_cuda_graph_state(self, *args: Any, **kwargs: Any) -> None:
        # The real TritonAttnBackend keeps the shared num_kv_splits buffer; the
        # draft backend's replay reads it back from attn_backends[-1].
        buf = kwargs.get("cuda_graph_num_kv_splits_buf")
        if buf is not None:
            self.cuda_graph_num_kv_splits = buf
        self._call("init_cuda_graph_state", *args, **kwargs)

    def init_forward_metadata_capture_cuda_graph(
        self, *args: Any, **kwargs: Any
    ) -> None:
        self._call("init_forward_metadata_capture_cuda_graph", *args, **kwargs)

    def init_forward_metadata_replay_cuda_graph(
        self, *args: Any, **kwargs: Any
    ) -> None:
        self._call("init_forward_metadata_replay_cuda_graph", *args, **kwargs)

    def init_forward_metadata_out_graph(self, *args: Any, **kwargs: Any) -> None:
        self._call("init_forward_metadata_out_graph", *args, **kwargs)

    def init_forward_metadata_in_graph(self, *args: Any, **kwargs: Any) -> None:
        self._call("init_forward_metadata_in_graph", *args, **kwargs)

    def get_num_kv_splits(self, *args: Any, **kwargs: Any) -> None:
        self._call("get_num_kv_splits", *args, **kwargs)
