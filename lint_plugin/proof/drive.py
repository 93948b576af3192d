"""Drive a draft backend class through all its entry points, and compare two.

``run`` builds the class the way SGLang does, ``cls(model_runner, topk,
speculative_num_steps)`` with a stand-in model runner, then drives every entry
point the class has, each a *phase* of the record:

1. ``init``: ``__init__`` (a class that refuses the configuration -- FlashInfer
   MLA refuses topk > 1 -- records the exception and is driven no further);
2. ``forward``: ``init_forward_metadata(forward_batch)`` (eager draft decode);
3. ``forward (seq_lens_sum=None)``: the same without the host-side length sum,
   for a class that declares ``needs_cpu_seq_lens = False`` (SGLang's overlap
   worker then passes None);
4. ``cuda_graph_state``: ``init_cuda_graph_state(max_bs, max_num_tokens)``;
5. ``capture``: ``init_forward_metadata_capture_cuda_graph(fb)`` up to 0.5.12,
   ``init_forward_metadata_out_graph(fb, in_capture=True)`` then
   ``init_forward_metadata_in_graph(fb)`` from 0.5.13 (what its CUDA-graph
   runner calls), or ``common_template(fb, cuda_graph_kv_indices, call_fn)``
   with a recording ``call_fn`` when asked (``graph_entry="common_template"``);
6. ``replay``: ``init_forward_metadata_replay_cuda_graph(fb, bs)`` up to 0.5.12,
   ``init_forward_metadata_out_graph(fb)`` from 0.5.13.

An exception the class raises in a phase is recorded (type, message, line) and
the next phase runs; a HarnessError (a stand-in asked for what the harness does
not model) stops the run: the class cannot be driven faithfully. ``compare``
runs two sources over a grid and asserts their records are equal.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from . import names, standins
from .coverage import Coverage
from .errors import HarnessError
from .grid import Params, default_grid, long_sequence_grid  # noqa: F401 - re-exported
from .kernel import ReferenceDraftKernel
from .loader import extract_class, load_class, read_source
from .record import Record, Recorder
from .torch_proxy import RecordingTorch

Source = str | Path
# Makes the index kernel a run launches: the reference (default) or upstream's own
# (``GuardedDraftKernel.factory(jit_kernel(...))``); both record the same Launch.
KernelFactory = Callable[[Recorder], Any]
GRAPH_ENTRIES = ("auto", "method", "common_template")
NO_SUM = "forward (seq_lens_sum=None)"
CAPTURE_REPLAY = "capture/replay"  # the graph API up to 0.5.12.post1
OUT_IN_GRAPH = "out_graph/in_graph"  # from 0.5.13


def graph_api(cls: type) -> str:
    """Which CUDA-graph entry points a class has."""
    if hasattr(cls, "init_forward_metadata_capture_cuda_graph"):
        return CAPTURE_REPLAY
    if hasattr(cls, "init_forward_metadata_out_graph"):
        return OUT_IN_GRAPH
    return "common_template"


def _pool(params: Params, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """req_to_token of distinct slot ids >= 1 and the rows of this batch.

    Shuffled ids and shuffled rows make every kv_indices entry identify the
    (request, position) it came from, so a mixed-up index cannot compare equal.
    """
    gen = torch.Generator().manual_seed(params.seed)
    count = params.pool_size * params.pool_len
    ids = torch.randperm(count, generator=gen, dtype=torch.int64) + 1
    req_to_token = ids.to(torch.int32).reshape(params.pool_size, params.pool_len)
    rows = torch.randperm(params.pool_size, generator=gen)[: params.num_seqs]
    return req_to_token.to(device), rows.to(device)


@dataclass
class _Drive:
    """One run in progress: the class, its stand-ins and the recorder."""

    cls: type
    recorder: Recorder
    filename: str
    params: Params
    device: torch.device
    req_to_token_pool: Any
    rows: torch.Tensor
    coverage: Coverage | None
    instance: Any = None
    batches: list = field(default_factory=list)

    def batch(self, with_seq_lens_sum: bool = True) -> standins.ForwardBatch:
        p = self.params
        seq_lens = torch.tensor(p.seq_lens, dtype=torch.int64, device=self.device)
        fb = standins.ForwardBatch(
            seq_lens=seq_lens,
            req_pool_indices=self.rows,
            req_to_token_pool=self.req_to_token_pool,
            topk=p.topk,
            recorder=self.recorder,
            with_seq_lens_sum=with_seq_lens_sum,
        )
        rec = self.recorder
        rec.name_tensor(fb.req_pool_indices, "forward_batch.req_pool_indices")
        rec.name_tensor(fb.seq_lens, "forward_batch.seq_lens")
        rec.name_tensor(fb.positions, "forward_batch.positions")
        self.batches.append(fb)  # keep storages alive: owners are keyed by them
        return fb

    def phase(self, name: str, entry: str, call: Callable[[], Any]) -> bool:
        """Drive one entry point; False when it raised (recorded)."""
        rec = self.recorder
        rec.phase = name
        rec.record.phases[name] = entry
        try:
            if self.coverage is not None:
                with self.coverage.measuring():
                    call()
            else:
                call()
        except HarnessError:
            raise
        except Exception as exc:  # the driven code's own error: a record
            rec.raised(exc, self.filename)
            return False
        finally:
            rec.end_phase()
        return True


def run(
    source: Source,
    class_name: str | None,
    params: Params,
    device: str | torch.device = "cpu",
    *,
    graph_entry: str = "auto",
    extra_names: dict[str, Any] | None = None,
    kernel: KernelFactory = ReferenceDraftKernel,
    filename: str | None = None,
    coverage: Coverage | None = None,
) -> Record:
    """Run one class (a file path, or source text) for ``params`` on ``device``.

    ``class_name=None`` takes the file's single ``*MultiStepDraftBackend``;
    ``filename`` names a text (its code, tracebacks and coverage say so);
    ``coverage`` (of this very source) collects the lines that ran.
    ``graph_entry="common_template"`` drives the cuda-graph capture through
    common_template directly (and skips replay), so classes whose graph entry
    points the harness does not know are still comparable.
    """
    if graph_entry not in GRAPH_ENTRIES:
        raise HarnessError(f"graph_entry must be one of {GRAPH_ENTRIES}")
    device = torch.device(device)
    cls_source = extract_class(source, class_name, filename)
    if coverage is not None and coverage.source is not cls_source:
        raise HarnessError("coverage of another source than the one run")
    recorder = Recorder(label=f"{cls_source.name} {params.describe()}")
    proxy = RecordingTorch(device, recorder, cls_source.filename)
    made_kernel = kernel(recorder)
    provided = names.provided_names(proxy, made_kernel, recorder, params)
    provided.update(extra_names or {})

    def unknown(name: str) -> standins.Opaque:
        return standins.Opaque(name, recorder)

    cls, namespace = load_class(
        cls_source, provided, unknown, names.guarded_import(provided, recorder)
    )
    recorder.namespace = namespace
    recorder.watched = tuple(sorted(cls_source.declared_global))

    req_to_token, rows = _pool(params, device)
    recorder.name_tensor(req_to_token, "req_to_token")
    model_runner = standins.ModelRunner(
        device=device,
        req_to_token=req_to_token,
        max_context_len=params.max_context_len,
        page_size=params.page_size,
        window_size=params.window_size,
        sink_size=params.sink_size,
        recorder=recorder,
    )
    drive = _Drive(
        cls,
        recorder,
        cls_source.filename,
        params,
        device,
        model_runner.req_to_token_pool,
        rows,
        coverage,
    )
    topk, steps = params.topk, params.speculative_num_steps

    def build() -> None:
        drive.instance = cls(model_runner, topk, steps)

    if not drive.phase("init", "__init__", build):
        return recorder.record
    instance = drive.instance
    for name, value in vars(instance).items():
        if isinstance(value, torch.Tensor):
            recorder.name_tensor(value, f"self.{name}")

    drive.phase(
        "forward",
        "init_forward_metadata",
        lambda: instance.init_forward_metadata(drive.batch()),
    )
    if getattr(cls, "needs_cpu_seq_lens", True) is False:
        drive.phase(
            NO_SUM,
            "init_forward_metadata",
            lambda: instance.init_forward_metadata(drive.batch(False)),
        )

    def graph_state() -> None:
        method = instance.init_cuda_graph_state
        # Before 0.4.8 it took max_bs alone (and sized by it).
        if len(inspect.signature(method).parameters) >= 2:
            recorder.assume("max_num_tokens = max_bs * topk (SGLang's graph runner)")
            method(params.max_bs, params.max_num_tokens)
        else:
            method(params.max_bs)

    drive.phase("cuda_graph_state", "init_cuda_graph_state", graph_state)
    api = graph_api(cls) if graph_entry != "common_template" else "common_template"
    if api == CAPTURE_REPLAY:
        drive.phase(
            "capture",
            "init_forward_metadata_capture_cuda_graph",
            lambda: instance.init_forward_metadata_capture_cuda_graph(drive.batch()),
        )
        drive.phase(
            "replay",
            "init_forward_metadata_replay_cuda_graph",
            lambda: instance.init_forward_metadata_replay_cuda_graph(
                drive.batch(), params.num_seqs
            ),
        )
    elif api == OUT_IN_GRAPH:

        def capture() -> None:
            fb = drive.batch()
            instance.init_forward_metadata_out_graph(fb, in_capture=True)
            instance.init_forward_metadata_in_graph(fb)

        drive.phase(
            "capture",
            "init_forward_metadata_out_graph(in_capture=True) + in_graph",
            capture,
        )
        drive.phase(
            "replay",
            "init_forward_metadata_out_graph",
            lambda: instance.init_forward_metadata_out_graph(drive.batch()),
        )
    else:

        def recording_call_fn(i: int, forward_batch: standins.ForwardBatch) -> None:
            recorder.backend_call(i, "call_fn", (forward_batch,), {})

        drive.phase(
            "capture",
            "common_template",
            lambda: instance.common_template(
                drive.batch(), instance.cuda_graph_kv_indices, recording_call_fn
            ),
        )
    return recorder.record


class RunMemo:
    """Records of finished runs, by everything a run depends on.

    A run is a deterministic function of the class's text, the case, the
    device, the graph entry and the kernel's code (the name it is compiled under
    only locates its exceptions):
    the original side of a proof is the same run in the safe and the unsafe
    proof, in every wrong rewrite compared with it and in every release that
    ships the class unchanged. Each is run once per process (the lines it ran
    are kept with its record, for coverage). Bounded, oldest first out.
    """

    def __init__(self, size: int = 768) -> None:
        self._size = size
        self._items: OrderedDict[tuple, tuple[Record, frozenset[int]]] = OrderedDict()

    def key(self, text: str, *parts: Any) -> tuple:
        return (hashlib.sha256(text.encode()).hexdigest(), *parts)

    def get(self, key: tuple, filename: str) -> tuple[Record, frozenset[int]] | None:
        """The record (its exceptions located in ``filename``: the same text
        under another name ran the same lines) and the lines that ran."""
        found = self._items.get(key)
        if found is None:
            return None
        self._items.move_to_end(key)
        record, lines, name = found
        if name != filename and record.raised:
            record = dataclasses.replace(
                record,
                raised=[
                    dataclasses.replace(r, where=r.where.replace(name, filename, 1))
                    for r in record.raised
                ],
            )
        return record, lines

    def put(
        self, key: tuple, record: Record, lines: frozenset[int], filename: str
    ) -> None:
        self._items[key] = (record, lines, filename)
        while len(self._items) > self._size:
            self._items.popitem(last=False)


MEMO = RunMemo()


def remembered_run(
    source: Source,
    class_name: str | None,
    params: Params,
    device: str | torch.device = "cpu",
    *,
    kernel: KernelFactory,
    filename: str | None = None,
    coverage: Coverage | None = None,
    graph_entry: str = "auto",
) -> Record:
    """:func:`run`, or the record of the same run made before in this process
    (only for kernels that say what code they run: ``kernel.memo_key``). The
    record is shared: callers must not change it."""
    memo_key = getattr(kernel, "memo_key", None)
    text, default = read_source(source)
    name = filename or default
    key = None
    if memo_key is not None:
        key = MEMO.key(text, class_name, params, str(device), graph_entry, memo_key)
        found = MEMO.get(key, name)
        if found is not None:
            record, lines = found
            if coverage is not None:
                coverage.ran |= lines
            return record
    # Lines are measured on every run, so a remembered record can serve a later
    # caller who measures them.
    mine = Coverage(extract_class(text, class_name, name))
    record = run(
        text,
        class_name,
        params,
        device,
        graph_entry=graph_entry,
        kernel=kernel,
        filename=name,
        coverage=mine,
    )
    lines = frozenset(mine.ran)
    if coverage is not None:
        coverage.ran |= lines
    if key is not None:
        MEMO.put(key, record, lines, name)
    return record
