"""Stand-ins for the SGLang objects a multi-step draft backend touches.

Each one carries only what the real classes read (0.4.6.post5 to 0.5.23),
records what it is given, and refuses anything else with a HarnessError (the
proof's "cannot drive"), so a rewrite that starts using some other attribute
fails loudly instead of being compared on a guess.
"""

from __future__ import annotations

import enum
import inspect
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


class Strict:
    """Attribute reads of anything not set are refused, naming the object."""

    _what = "object"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise HarnessError(
            f"the class read {self._what}.{name}, which the harness does not model"
        )


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

    def __getattr__(self, name: str) -> Any:
        raise HarnessError(f"the class read spec_info.{name}; the harness has none")

    def harness_summary(self, rec: Recorder) -> tuple:
        return (
            "spec_info",
            rec.summarize(self.kv_indptr),
            rec.summarize(self.kv_indices),
        )


class KVLocPlan:
    """``forward_batch.kv_loc_plan`` (0.5.23): only handed to the translator."""

    def harness_summary(self, rec: Recorder) -> str:
        return "kv_loc_plan"


class ForwardBatch(Strict):
    """The fields of ``ForwardBatch`` that common_template and its call_fns read.

    ``seq_lens_sum=None`` is what SGLang's overlap worker hands a backend whose
    ``needs_cpu_seq_lens`` is False (0.5.13's Triton draft backend).
    """

    _what = "forward_batch"

    def __init__(
        self,
        *,
        seq_lens: torch.Tensor,
        req_pool_indices: torch.Tensor,
        req_to_token_pool: Any,
        topk: int,
        recorder: Recorder,
        with_seq_lens_sum: bool = True,
    ) -> None:
        self.batch_size = int(seq_lens.numel())
        self.seq_lens = seq_lens
        self.seq_lens_cpu = seq_lens.cpu()
        self.seq_lens_sum = int(seq_lens.sum()) if with_seq_lens_sum else None
        self.req_pool_indices = req_pool_indices
        self.req_to_token_pool = req_to_token_pool
        # EAGLE draft decode: each of the topk branches of a sequence sits at that
        # sequence's length, so positions is seq_lens repeated topk times.
        self.positions = seq_lens.repeat_interleave(topk)
        self.forward_mode = ForwardMode.DECODE
        self.kv_loc_plan = KVLocPlan()
        self.out_cache_loc = None  # the draft's write ids: not driven (0.5.23)
        self.kv_loc_cols = None
        self.encoder_lens = None
        self.input_ids = None
        self._recorder = recorder
        self.spec_info = SpecInfo(recorder)

    def harness_summary(self, rec: Recorder) -> tuple:
        return handoff_of_batch(self, rec)


def handoff_of_batch(fb: Any, rec: Recorder) -> tuple:
    """What a forward batch (or 0.5.13's view of one) hands a per-step backend."""
    return (
        "forward_batch",
        fb.batch_size,
        rec.summarize(fb.forward_mode),
        rec.summarize(fb.req_pool_indices),
        rec.summarize(fb.seq_lens),
        rec.summarize(fb.spec_info),
    )


class InnerBatchView(Strict):
    """What ``build_inner_fb_view`` returns: a namespace of the batch's fields."""

    _what = "build_inner_fb_view(...)"

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)

    def harness_summary(self, rec: Recorder) -> tuple:
        return handoff_of_batch(self, rec)


def build_inner_fb_view(
    forward_batch: Any,
    *,
    bs: int,
    forward_mode: Any,
    encoder_lens: Any = None,
) -> InnerBatchView:
    """``sglang.srt.model_executor.forward_batch_info.build_inner_fb_view`` (0.5.13
    to 0.5.23; 0.5.23's fields, the later ones None here): ``spec_info`` is the
    batch's own, so each step's slices are the ones a call sees."""
    return InnerBatchView(
        batch_size=bs,
        forward_mode=forward_mode,
        actual_forward_mode=forward_batch.forward_mode,
        input_ids=forward_batch.input_ids,
        positions=forward_batch.positions,
        req_pool_indices=forward_batch.req_pool_indices,
        seq_lens=forward_batch.seq_lens,
        seq_lens_sum=forward_batch.seq_lens_sum,
        seq_lens_cpu=forward_batch.seq_lens_cpu,
        encoder_lens=encoder_lens,
        out_cache_loc=forward_batch.out_cache_loc,
        out_cache_loc_virtual=None,
        kv_loc_plan=forward_batch.kv_loc_plan,
        kv_loc_cols=forward_batch.kv_loc_cols,
        origin_out_cache_loc=None,
        out_cache_loc_dsv4=None,
        max_seq_len_host=None,
        spec_info=forward_batch.spec_info,
    )


# The per-step entry points before 0.5.13, by the arguments' roles.
def _capture_args(
    bs, num_tokens, req_pool_indices, seq_lens, encoder_lens=None,
    forward_mode=None, spec_info=None,
):  # fmt: skip  # pragma: no cover - only its signature is used
    """AttnBackend.init_forward_metadata_capture_cuda_graph"""


def _replay_args(
    bs, req_pool_indices, seq_lens, seq_lens_sum=None, encoder_lens=None,
    forward_mode=None, spec_info=None, seq_lens_cpu=None,
):  # fmt: skip  # pragma: no cover - only its signature is used
    """AttnBackend.init_forward_metadata_replay_cuda_graph"""


CAPTURE, REPLAY = inspect.signature(_capture_args), inspect.signature(_replay_args)


class AttnBackend(Strict):
    """One per-step attention backend (``attn_backends[i]``); records its calls.

    Each call also records its *handoff*: what it hands over in terms of the
    graph phase (capture or replay), batch size, forward mode, request rows,
    lengths and spec_info, the same for 0.5.12's ``init_forward_metadata_capture_
    cuda_graph(bs, ...)`` and 0.5.13's ``init_forward_metadata_out_graph(fb,
    in_capture=True)``.
    """

    _what = "attn_backends[i]"

    def __init__(
        self, index: int, recorder: Recorder, max_context_len: int, max_kv_splits: int
    ) -> None:
        self.index = index
        self.max_context_len = max_context_len
        self.max_kv_splits = max_kv_splits  # triton reads attn_backends[0]'s
        self.cuda_graph_num_kv_splits: torch.Tensor | None = None
        self.use_sliding_window_kv_pool = False  # 0.5.23: no window pool here
        self._recorder = recorder

    def __repr__(self) -> str:
        return f"<attn_backends[{self.index}] stand-in>"

    def _call(self, method: str, args: tuple, kwargs: dict, handoff=None) -> None:
        self._recorder.backend_call(self.index, method, args, kwargs, handoff)

    def _bound(self, signature: inspect.Signature, args: tuple, kwargs: dict):
        try:
            return signature.bind(*args, **kwargs).arguments
        except TypeError:
            return None

    def _graph_handoff(self, kind: str, a: dict | None) -> tuple | None:
        if a is None:
            return None
        rec = self._recorder
        return (
            kind,
            (
                "forward_batch",
                a["bs"],
                rec.summarize(a.get("forward_mode")),
                rec.summarize(a["req_pool_indices"]),
                rec.summarize(a["seq_lens"]),
                rec.summarize(a.get("spec_info")),
            ),
        )

    def init_forward_metadata(self, *args: Any, **kwargs: Any) -> None:
        self._call("init_forward_metadata", args, kwargs)

    def init_cuda_graph_state(self, *args: Any, **kwargs: Any) -> None:
        # The real TritonAttnBackend keeps the shared num_kv_splits buffer; the
        # draft backend's replay reads it back from attn_backends[-1].
        buf = kwargs.get("cuda_graph_num_kv_splits_buf")
        if buf is not None:
            self.cuda_graph_num_kv_splits = buf
        self._call("init_cuda_graph_state", args, kwargs)

    def init_forward_metadata_capture_cuda_graph(
        self, *args: Any, **kwargs: Any
    ) -> None:
        handoff = self._graph_handoff("capture", self._bound(CAPTURE, args, kwargs))
        self._call("init_forward_metadata_capture_cuda_graph", args, kwargs, handoff)

    def init_forward_metadata_replay_cuda_graph(
        self, *args: Any, **kwargs: Any
    ) -> None:
        handoff = self._graph_handoff("replay", self._bound(REPLAY, args, kwargs))
        self._call("init_forward_metadata_replay_cuda_graph", args, kwargs, handoff)

    def init_forward_metadata_out_graph(
        self, forward_batch: Any, in_capture: bool = False
    ) -> None:
        kind = "capture" if in_capture else "replay"
        handoff = (kind, self._recorder.summarize(forward_batch))
        self._call(
            "init_forward_metadata_out_graph",
            (forward_batch,),
            {"in_capture": in_capture},
            handoff,
        )

    def init_forward_metadata_in_graph(self, *args: Any, **kwargs: Any) -> None:
        self._call("init_forward_metadata_in_graph", args, kwargs, ("in_graph",))

    def get_num_kv_splits(self, *args: Any, **kwargs: Any) -> None:
        self._call("get_num_kv_splits", args, kwargs)


class AttnBackendClass:
    """``FlashInferAttnBackend`` & co. as the draft class's ``__init__`` sees them:
    each construction is recorded (its buffers are views of the class's own) and
    gives the next per-step stand-in."""

    def __init__(self, name: str, recorder: Recorder, made: list) -> None:
        self._name = name
        self._recorder = recorder
        self._made = made  # shared by every backend class of one run

    def __repr__(self) -> str:
        return f"<{self._name} stand-in>"

    def __call__(self, model_runner: Any, *args: Any, **kwargs: Any) -> AttnBackend:
        index = len(self._made)
        self._recorder.backend_call(index, f"{self._name}()", args, kwargs)
        backend = AttnBackend(
            index,
            self._recorder,
            model_runner.model_config.context_len,
            max_kv_splits=model_runner.server_args.triton_attention_num_kv_splits,
        )
        self._made.append(backend)
        return backend


class KVIndexTranslator(Strict):
    """0.5.23's ``model_runner.kv_index_translator`` for a static pool: reads stay
    on ``req_to_token`` (its passthrough table), nothing is translated."""

    _what = "model_runner.kv_index_translator"

    def __init__(self, req_to_token: torch.Tensor, recorder: Recorder | None) -> None:
        self._req_to_token = req_to_token
        self._recorder = recorder

    def read_source(
        self, plan: Any, *, req_pool_indices: torch.Tensor, bs: int, kind: Any = None
    ) -> SimpleNamespace:
        if self._recorder is not None:
            # SGLang also runs translated (paged, hybrid) pools: not modelled.
            self._recorder.assume(
                "kv_index_translator reads req_to_token untranslated (a static "
                "pool: row_stride its width, no v2p, entry page size 1)"
            )
        return SimpleNamespace(
            ids=self._req_to_token,
            row_ids=req_pool_indices,
            row_stride=self._req_to_token.stride(0),
            entry_page_size=1,
            is_translated=False,
            v2p=None,
        )

    @property
    def window_kv_kind(self) -> Any:
        return Opaque("kv_index_translator.window_kv_kind")


class ServerArgs(Strict):
    _what = "model_runner.server_args"

    def __init__(self, page_size: int, window_size: int, sink_size: int) -> None:
        self.page_size = page_size
        self.speculative_draft_window_size = window_size or None
        self.speculative_draft_sink_size = sink_size or None
        self.triton_attention_num_kv_splits = 8


class ModelConfig(Strict):
    _what = "model_runner.model_config"

    def __init__(self, context_len: int, num_heads: int = 4) -> None:
        self.context_len = context_len
        self.num_attention_heads = num_heads

    def get_max_num_attention_heads(self) -> int:
        return self.num_attention_heads


class ModelRunner(Strict):
    """What a draft backend's ``__init__`` reads from its model runner."""

    _what = "model_runner"

    def __init__(
        self,
        *,
        device: torch.device,
        req_to_token: torch.Tensor,
        max_context_len: int,
        page_size: int,
        window_size: int = 0,
        sink_size: int = 0,
        recorder: Recorder | None = None,
    ) -> None:
        self.device = device.type  # model_runner.device is a string in SGLang
        self.page_size = page_size
        self.req_to_token_pool = SimpleNamespace(
            req_to_token=req_to_token, size=int(req_to_token.shape[0])
        )
        self.server_args = ServerArgs(page_size, window_size, sink_size)
        self.model_config = ModelConfig(max_context_len)
        self.kv_index_translator = KVIndexTranslator(req_to_token, recorder)
        # No native sliding window: 0.5.23's Triton window rail is not driven.
        self.sliding_window_size = None
        self.token_to_kv_pool = Opaque("model_runner.token_to_kv_pool")

    def harness_summary(self, rec: Recorder) -> str:
        return "model_runner"


class Opaque:
    """A name the harness does not model (a module-level function or constant,
    an attribute no driven code should need), as a recording stand-in.

    Holding it, passing it on and reading attributes of it are fine; calling it
    is recorded (a rewrite that calls it differently differs); computing with it
    (arithmetic, truth, comparison, indexing, iteration) is refused with a
    HarnessError naming it: the harness would be guessing its value.
    """

    def __init__(self, name: str, recorder: Recorder | None = None) -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_recorder", recorder)

    def __repr__(self) -> str:
        return f"<unmodelled {self._name}>"

    def __getattr__(self, attr: str) -> Opaque:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Opaque(f"{self._name}.{attr}", self._recorder)

    def __call__(self, *args: Any, **kwargs: Any) -> Opaque:
        if self._recorder is not None:
            self._recorder.backend_call(-1, self._name, args, kwargs)
        return Opaque(f"{self._name}(...)", self._recorder)

    def harness_summary(self, rec: Recorder) -> str:
        return f"<{self._name}>"

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise HarnessError(
            f"the class computes with {self._name}, which the harness does not "
            "model (give it a faithful stand-in)"
        )

    __setattr__ = __bool__ = __int__ = __index__ = __float__ = __len__ = _refuse
    __iter__ = __getitem__ = __setitem__ = __contains__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __floordiv__ = __rfloordiv__ = __truediv__ = __rtruediv__ = _refuse
    __mod__ = __rmod__ = __pow__ = __neg__ = __enter__ = __exit__ = _refuse

    def __eq__(self, other: object) -> bool:
        return self._refuse()

    def __ne__(self, other: object) -> bool:
        return self._refuse()

    __hash__ = object.__hash__
