"""The module-level names a draft backend class reads, as the harness gives them.

A class is compiled alone (:mod:`.loader`), so every global it reads comes from
here: torch (recording), the index kernel (upstream's, guarded), the helpers,
the per-step backend classes (recording stand-ins), and the small functions of
SGLang each release's ``__init__`` and ``common_template`` call -- each with the
value SGLang computes for the configuration the harness models (stated in
:data:`ASSUMPTIONS`). An ``import`` inside a method (``from sglang... import
X``) is answered from the same table, never from sglang. A name that is not
here gets a recording :class:`~.standins.Opaque` (calls recorded, computing
with it refused).
"""

from __future__ import annotations

import builtins
import sys
import typing
from types import ModuleType, SimpleNamespace
from typing import Any

from lint_plugin.runtime import draft_kv_indices_buffer_width, draft_kv_indices_used_len

from . import standins
from .errors import HarnessError
from .grid import Params
from .record import Recorder

# What the stand-ins below take for granted, printed with prove's table.
ASSUMPTIONS = (
    "max_num_tokens = max_bs * topk",
    "req_to_token_pool.size = max_bs + 2",
    "kv_index_translator: static pool (reads stay on req_to_token)",
    "no native sliding window (0.5.23's Triton window rail is not driven)",
    "envs at their defaults; attention TP 1",
    "seq_lens_sum=None only for classes with needs_cpu_seq_lens = False",
    # What the grid's cases keep, and where they leave it on purpose.
    "every seq_len + num_steps <= max_context_len (upstream's contract) but in "
    "the wall cases, a request at max_context_len - 1 (SGLang's envelope): there "
    "overrunning alike is identical, and a guard's raise where the original "
    "overran is 'stopped by its guard'",
)
TP = "attention tensor and context parallel size 1"
NO_NATIVE_WINDOW = "no native sliding window (the draft window alone)"
# The per-step attention backends' classes, across releases.
BACKEND_CLASSES = (
    "FlashInferAttnBackend",
    "FlashInferMLAAttnBackend",
    "TritonAttnBackend",
    "AiterAttnBackend",
)


def get_cuda_graph_max_batch_size(max_batch_size: int, alignment: int = 1) -> int:
    """0.5.23's ``sglang.srt.utils``: ceil-aligned to the graph batch alignment
    (1 without two-batch overlap or a gathered buffer; the grid varies it)."""
    return -(-int(max_batch_size) // alignment) * alignment


def resolve_draft_decode_window(model_runner: Any) -> tuple[int, int]:
    """0.5.23's ``spec_utils.resolve_draft_decode_window``, same decisions."""
    cfg = model_runner.server_args
    window_size = int(cfg.speculative_draft_window_size or 0)
    if window_size <= 0:
        return 0, 0
    native = getattr(model_runner, "sliding_window_size", None)
    if native is not None and native > 0:
        return 0, 0
    return window_size, int(cfg.speculative_draft_sink_size or 0)


SPEC_KV_INDEX_BLOCKS_MIN_CONTEXT = 32768
_MIN_TOKENS_PER_BLOCK = 8192
_TARGET_PROGRAMS = 512


def kv_indices_num_token_blocks(table_width: int, base_programs: int) -> int:
    cap = (table_width + _MIN_TOKENS_PER_BLOCK - 1) // _MIN_TOKENS_PER_BLOCK
    want = _TARGET_PROGRAMS // max(1, base_programs)
    return max(1, min(cap, want))


def spec_kv_index_token_blocks(
    table_width: int,
    kv_lens_sum: int | None,
    batch_size: int,
    base_programs: int | None = None,
    length_cap: int | None = None,
    context_len: int | None = None,
) -> int:
    """0.5.23's ``sglang.kernels.ops.attention.kv_indices``, same value: 1 below
    a 32768-token context, else token blocks sized from the longest row's bound."""
    gate = table_width if context_len is None else context_len
    if gate < SPEC_KV_INDEX_BLOCKS_MIN_CONTEXT or batch_size <= 0:
        return 1
    if kv_lens_sum is None:
        width = table_width
    else:
        width = min(kv_lens_sum, table_width)
        if length_cap is not None:
            width = min(width, length_cap)
    programs = batch_size if base_programs is None else base_programs
    return kv_indices_num_token_blocks(width, programs)


class EnvFlag:
    def __init__(self, name: str, default: Any, recorder: Recorder) -> None:
        self._name, self._default, self._recorder = name, default, recorder

    def get(self) -> Any:
        self._recorder.assume(f"envs.{self._name} at its default ({self._default!r})")
        return self._default


class Envs(standins.Strict):
    """``sglang.srt.environ.envs``: the flags a draft backend reads, unset."""

    _what = "envs"
    DEFAULTS: typing.ClassVar[dict[str, Any]] = {
        "SGLANG_OPT_FLASHINFER_DRAFT_HOST_INDPTR": False
    }

    def __init__(self, recorder: Recorder) -> None:
        for name, default in self.DEFAULTS.items():
            setattr(self, name, EnvFlag(name, default, recorder))


def provided_names(
    proxy: Any, kernel: Any, recorder: Recorder, params: Params
) -> dict[str, Any]:
    """Module-level names of the backend files, as the harness provides them."""
    made: list = []

    def assumed(text: str, value: Any) -> Any:
        recorder.assume(text)
        return value

    names: dict[str, Any] = {
        "torch": proxy,
        "next_power_of_2": standins.next_power_of_2,
        "triton": standins.triton,
        "ForwardMode": standins.ForwardMode,
        "ForwardBatch": standins.ForwardBatch,
        "List": typing.List,  # noqa: UP006 - the name the backends use
        "Optional": typing.Optional,
        "Callable": typing.Callable,
        "Union": typing.Union,
        # spec_utils' helpers; rewritten files call them (the import statement is
        # outside the class, so the names are injected here).
        "draft_kv_indices_buffer_width": draft_kv_indices_buffer_width,
        "draft_kv_indices_used_len": draft_kv_indices_used_len,
        # triton_backend calls the module-level kernel; others use self.<kernel>.
        "generate_draft_decode_kv_indices": kernel,
        "assert_buffer_fits": standins.assert_buffer_fits,
        # Before 0.5.3 common_template asserts isinstance(spec_info, EagleDraftInput).
        "EagleDraftInput": standins.SpecInfo,
        # flashinfer_backend's module global, rebound via ``global`` in the class.
        "global_override_indptr_cpu": None,
        "get_attention_tp_size": lambda: assumed(TP, 1),
        "get_parallel": lambda: assumed(
            TP, SimpleNamespace(attn_tp_size=1, attn_cp_size=1)
        ),
        "get_schedule": lambda: SimpleNamespace(page_size=params.page_size),
        "get_cuda_graph_max_batch_size": lambda n: get_cuda_graph_max_batch_size(
            n, params.graph_alignment
        ),
        "resolve_draft_decode_window": lambda runner: assumed(
            NO_NATIVE_WINDOW, resolve_draft_decode_window(runner)
        ),
        "spec_kv_index_token_blocks": spec_kv_index_token_blocks,
        "envs": Envs(recorder),
        "build_inner_fb_view": standins.build_inner_fb_view,
    }
    for name in BACKEND_CLASSES:
        names[name] = standins.AttnBackendClass(name, recorder, made)
    return names


class FakeModule(ModuleType):
    """What ``import sglang.x`` yields inside the class: the harness's names."""

    def __init__(self, name: str, names: dict[str, Any], recorder: Recorder) -> None:
        super().__init__(name)
        self._names = names
        self._recorder = recorder

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        if attr in self._names:
            return self._names[attr]
        return standins.Opaque(f"{self.__name__}.{attr}", self._recorder)


def guarded_import(names: dict[str, Any], recorder: Recorder):
    """``__import__`` for the compiled class: sglang modules are answered from
    ``names`` (never imported); the standard library is the real one."""

    def _import(name, globals=None, locals=None, fromlist=(), level=0):
        if level:
            raise HarnessError(f"relative import of {name!r} from the class under test")
        top = name.split(".")[0]
        if top == "sglang":
            module = FakeModule(name, names, recorder)
            return module if fromlist else FakeModule("sglang", names, recorder)
        if top in ("torch", "triton"):
            return names[top]  # the recording torch, the harness's triton
        if top in sys.stdlib_module_names:
            return builtins.__import__(name, globals, locals, fromlist, level)
        raise HarnessError(
            f"the class under test imports {name}; the harness provides only "
            "sglang's names and the standard library"
        )

    return _import
