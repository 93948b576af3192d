"""Drive a draft backend class through its entry points and compare two versions.

``run`` builds an instance with ``cls.__new__(cls)`` (``__init__`` needs a model
runner and a GPU), sets the attributes ``__init__`` would have set, and calls

1. ``init_forward_metadata(forward_batch)`` (eager draft decode),
2. ``init_cuda_graph_state(max_bs, max_num_tokens=max_bs * topk)``,
3. the cuda-graph capture: ``init_forward_metadata_capture_cuda_graph`` when the
   class has it, else ``common_template(fb, self.cuda_graph_kv_indices, call_fn)``
   with a recording ``call_fn`` (0.5.13 renamed the graph entry points),
4. ``init_forward_metadata_replay_cuda_graph(fb, bs)`` when the class has it,

recording allocations, index-kernel launches, spec_info slices and backend calls
into a :class:`~harness.record.Record`. ``compare`` runs two sources over a grid
of parameters and asserts the records are equal.
"""

from __future__ import annotations

import inspect
import random
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from lint_plugin.runtime import draft_kv_indices_buffer_width, draft_kv_indices_used_len

from . import standins
from .errors import HarnessError
from .kernel import ReferenceDraftKernel
from .loader import ClassSource, extract_class, load_class
from .record import Record, Recorder, diff
from .torch_proxy import RecordingTorch

Source = str | Path
# Makes the index kernel a run launches: the reference (default) or upstream's own
# (``GuardedDraftKernel.factory(jit_kernel(...))``); both record the same Launch.
KernelFactory = Callable[[Recorder], Any]
GRAPH_ENTRIES = ("method", "common_template")


@dataclass(frozen=True)
class Params:
    """One configuration of a draft-decode iteration.

    ``cuda_graph_max_bs`` is the batch size the cuda graph is captured for
    (``init_cuda_graph_state(max_bs, ...)``); the capture itself runs this batch.
    """

    num_seqs: int
    topk: int
    speculative_num_steps: int
    seq_lens: tuple[int, ...]
    max_context_len: int
    page_size: int = 1
    cuda_graph_max_bs: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if len(self.seq_lens) != self.num_seqs:
            raise HarnessError(f"{self}: need one seq_len per sequence")
        if self.speculative_num_steps < 2:
            raise HarnessError("speculative_num_steps < 2 leaves no draft backend")
        if min(self.seq_lens) < 1:
            raise HarnessError(f"{self}: a draft sequence has at least one token")
        longest = max(self.seq_lens) + self.speculative_num_steps
        if longest > self.max_context_len:
            # The design's safety condition; past it even a correct buffer overflows.
            raise HarnessError(f"{self}: seq_len + num_steps > max_context_len")
        if self.max_bs < self.num_seqs:
            raise HarnessError(f"{self}: cuda_graph_max_bs < num_seqs")

    @property
    def max_bs(self) -> int:
        return self.cuda_graph_max_bs or self.num_seqs

    @property
    def max_num_tokens(self) -> int:
        return self.max_bs * self.topk

    @property
    def pool_size(self) -> int:
        """Rows of req_to_token (the request pool); a few more than ever used."""
        return self.max_bs + 2

    @property
    def pool_len(self) -> int:
        """Width of req_to_token: room for every branch's draft slots."""
        return self.max_context_len + self.topk * self.speculative_num_steps

    def describe(self) -> str:
        return (
            f"num_seqs={self.num_seqs} topk={self.topk} "
            f"steps={self.speculative_num_steps} seq_lens={list(self.seq_lens)} "
            f"max_context_len={self.max_context_len} max_bs={self.max_bs}"
        )


def default_grid(
    seed: int = 0,
    num_seqs: Iterable[int] = range(1, 5),
    topk: Iterable[int] = range(1, 9),
    steps: Iterable[int] = range(2, 6),
    max_context_len: tuple[int, int] = (8, 40),
) -> list[Params]:
    """Every (num_seqs, topk, steps) with seeded random lengths.

    One sequence per case sits exactly at the limit ``max_context_len - steps``
    (the longest the design allows), the rest are random below it; the
    cuda-graph max_bs is num_seqs or one more, so captures below max_bs occur.
    """
    rng = random.Random(seed)
    grid = []
    for n in num_seqs:
        for k in topk:
            for s in steps:
                ctx = rng.randint(max(max_context_len[0], s + 1), max_context_len[1])
                longest = ctx - s
                lens = [rng.randint(1, longest) for _ in range(n)]
                lens[rng.randrange(n)] = longest
                grid.append(
                    Params(
                        num_seqs=n,
                        topk=k,
                        speculative_num_steps=s,
                        seq_lens=tuple(lens),
                        max_context_len=ctx,
                        cuda_graph_max_bs=n + rng.randint(0, 1),
                        seed=rng.randrange(2**31),
                    )
                )
    return grid


def provided_names(proxy: RecordingTorch, kernel: Any) -> dict[str, Any]:
    """Module-level names of the backend files, as the harness provides them."""
    return {
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
    }


def _attn_backend_count(source: ClassSource, steps: int) -> int:
    """How many per-step backends ``__init__`` builds: ``range(steps - 1)`` since
    0.5.3.post2, ``range(steps)`` before. Read from the loop or the comprehension
    that makes ``self.attn_backends``."""
    import ast

    ranges = []
    for node in ast.walk(source.module):
        if isinstance(node, ast.For) and any(
            isinstance(sub, ast.Attribute)
            and sub.attr == "append"
            and ast.unparse(sub.value) == "self.attn_backends"
            for sub in ast.walk(node)
        ):
            ranges.append(node.iter)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(ast.unparse(t) == "self.attn_backends" for t in targets) and (
                isinstance(node.value, ast.ListComp)
            ):
                ranges.append(node.value.generators[0].iter)
    for it in ranges:
        if not (isinstance(it, ast.Call) and ast.unparse(it.func) == "range"):
            continue
        spelled = ast.unparse(it.args[0]) if len(it.args) == 1 else ""
        if spelled == "self.speculative_num_steps":
            return steps
        if spelled == "self.speculative_num_steps - 1":
            return steps - 1
    raise HarnessError(
        f"{source.name}: cannot tell how many attn_backends __init__ builds"
    )


def _pool(params: Params, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """req_to_token of distinct slot ids >= 1 and the rows of this batch.

    Shuffled ids and shuffled rows make every kv_indices entry identify the
    (request, position) it came from, so a mixed-up index cannot compare equal.
    """
    rng = random.Random(params.seed)
    count = params.pool_size * params.pool_len
    ids = list(range(1, count + 1))
    rng.shuffle(ids)
    req_to_token = torch.tensor(ids, dtype=torch.int32, device=device)
    req_to_token = req_to_token.reshape(params.pool_size, params.pool_len)
    rows = rng.sample(range(params.pool_size), params.num_seqs)
    return req_to_token, torch.tensor(rows, dtype=torch.int64, device=device)


def run(
    source: Source,
    class_name: str | None,
    params: Params,
    device: str | torch.device = "cpu",
    *,
    graph_entry: str = "method",
    extra_names: dict[str, Any] | None = None,
    kernel: KernelFactory = ReferenceDraftKernel,
) -> Record:
    """Run one class (a file path, or source text) for ``params`` on ``device``.

    ``class_name=None`` takes the file's single ``*MultiStepDraftBackend``.
    ``graph_entry="common_template"`` drives the cuda-graph capture through
    common_template directly (and skips replay) even where the class has the
    0.5.12 entry points, so classes from different releases are comparable.
    """
    if graph_entry not in GRAPH_ENTRIES:
        raise HarnessError(f"graph_entry must be one of {GRAPH_ENTRIES}")
    device = torch.device(device)
    cls_source = extract_class(source, class_name)
    recorder = Recorder(label=f"{cls_source.name} {params.describe()}")
    proxy = RecordingTorch(device, recorder)
    kernel = kernel(recorder)
    cls = load_class(
        cls_source, {**provided_names(proxy, kernel), **(extra_names or {})}
    )

    topk, steps = params.topk, params.speculative_num_steps
    req_to_token, rows = _pool(params, device)
    seq_lens = torch.tensor(params.seq_lens, dtype=torch.int64, device=device)
    fb = standins.ForwardBatch(
        seq_lens=seq_lens,
        req_pool_indices=rows,
        req_to_token=req_to_token,
        topk=topk,
        recorder=recorder,
    )
    for tensor, name in (
        (req_to_token, "req_to_token"),
        (rows, "forward_batch.req_pool_indices"),
        (seq_lens, "forward_batch.seq_lens"),
        (fb.positions, "forward_batch.positions"),
    ):
        recorder.name_tensor(tensor, name)

    # What __init__ sets (read from the four real classes): max_bs there is
    # req_to_token_pool.size * topk, hence kv_indptr's width.
    init_bs = params.pool_size * topk
    attrs = {
        "topk": topk,
        "speculative_num_steps": steps,
        "max_context_len": params.max_context_len,
        "device": device.type,  # model_runner.device is a string in SGLang
        "page_size": params.page_size,
        "pool_len": params.pool_len,
        "kv_indptr": torch.zeros(
            (steps, init_bs + 1), dtype=torch.int32, device=device
        ),
        "kv_last_page_len": torch.ones((init_bs,), dtype=torch.int32, device=device),
        "q_indptr_decode": torch.arange(
            0, init_bs + 1, dtype=torch.int32, device=device
        ),
        "num_head": 4,
        "req_to_token_pool": fb.req_to_token_pool,  # 0.5.13 reads it from self
        "generate_draft_decode_kv_indices": kernel,
        "attn_backends": [
            standins.AttnBackend(i, recorder, params.max_context_len, max_kv_splits=8)
            for i in range(_attn_backend_count(cls_source, steps))
        ],
    }
    instance = cls.__new__(cls)
    for name, value in attrs.items():
        setattr(instance, name, value)
        if isinstance(value, torch.Tensor):
            recorder.name_tensor(value, f"self.{name}")

    def recording_call_fn(i: int, forward_batch: standins.ForwardBatch) -> None:
        recorder.backend_call(i, "call_fn", (forward_batch,), {})

    recorder.phase = "forward"
    instance.init_forward_metadata(fb)

    recorder.phase = "cuda_graph_state"
    graph_state = instance.init_cuda_graph_state
    # Before 0.4.8 it took max_bs alone (and sized by it).
    if len(inspect.signature(graph_state).parameters) >= 2:
        graph_state(params.max_bs, params.max_num_tokens)
    else:
        graph_state(params.max_bs)

    recorder.phase = "capture"
    fb.new_spec_info()
    capture = getattr(instance, "init_forward_metadata_capture_cuda_graph", None)
    if graph_entry == "method" and capture is not None:
        capture(fb)
    else:
        instance.common_template(fb, instance.cuda_graph_kv_indices, recording_call_fn)

    replay = getattr(instance, "init_forward_metadata_replay_cuda_graph", None)
    if graph_entry == "method" and replay is not None:
        recorder.phase = "replay"
        fb.new_spec_info()
        replay(fb, params.num_seqs)
    return recorder.record


@dataclass
class CompareCounts:
    """How much two sources were compared on (for the proof's printout)."""

    cases: int = 0
    allocations: int = 0
    slices: int = 0
    slice_entries: int = 0
    launches: int = 0
    backend_calls: int = 0
    overrun_cases: int = 0  # cases where *both* overran identically
    labels: list[str] = field(default_factory=list, repr=False)

    def add(self, record: Record) -> None:
        counts = record.counts()
        self.cases += 1
        self.allocations += counts["allocations"]
        self.slices += counts["slices"]
        self.slice_entries += counts["slice_entries"]
        self.launches += counts["launches"]
        self.backend_calls += counts["backend_calls"]
        self.overrun_cases += bool(record.overruns)

    def __str__(self) -> str:
        return (
            f"{self.cases} cases: {self.allocations} allocations, {self.slices} "
            f"kv_indices slices ({self.slice_entries} entries), {self.launches} "
            f"kernel launches, {self.backend_calls} backend calls; "
            f"{self.overrun_cases} cases overran identically in both"
        )


def compare(
    original: Source,
    rewritten: Source,
    grid: Sequence[Params],
    device: str | torch.device = "cpu",
    *,
    class_name: str | None = None,
    graph_entry: str = "method",
    kernel: KernelFactory = ReferenceDraftKernel,
) -> CompareCounts:
    """Assert ``original`` and ``rewritten`` produce equal records on every case.

    Raises AssertionError naming the first differing case and how it differs.
    """
    original_class = extract_class(original, class_name).name
    rewritten_class = extract_class(rewritten, class_name).name
    if original_class != rewritten_class:
        raise HarnessError(f"comparing {original_class} with {rewritten_class}")
    counts = CompareCounts()
    for params in grid:
        options = {"graph_entry": graph_entry, "kernel": kernel}
        before = run(original, class_name, params, device, **options)
        after = run(rewritten, class_name, params, device, **options)
        if before != after:
            raise AssertionError(
                f"{original_class}: records differ for {params.describe()} on "
                f"{device}:\n{diff(before, after).describe()}\n"
                f"(equal before this case: {counts})"
            )
        counts.add(before)
    return counts
