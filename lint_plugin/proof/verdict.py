"""The proof's judgement of one class before and after a rewrite.

A case is *identical* when the two records are equal. It is *widened* when the
only differences are buffers whose width grew by exactly ``topk`` (the unsafe
KVI003 fix): same allocator, dtype, device, phase and rows; the same kernel
launches apart from those widths; the same slices and backend calls unless the
original overran its buffer (then its slices were cut short, which is the bug);
and the rewrite overruns nothing. Anything else is a difference, reported by its
first differing record.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import HarnessError
from .record import BackendCall, Launch, Record, diff
from .run import KernelFactory, Params, Source, run

IDENTICAL, WIDENED = "identical", "widened"


@dataclass
class ClassProof:
    """What proving one class took, and what it found."""

    name: str
    cases: int = 0
    allocations: int = 0
    launches: int = 0
    slices: int = 0
    overruns_before: int = 0
    overruns_after: int = 0
    widened: int = 0  # cases whose only change is a topk-wider buffer
    unsized_overran: int = 0  # widened cases with topk > 1 whose original overran
    failure: str | None = None
    kinds: list[str] = field(default_factory=list, repr=False)

    @property
    def proven(self) -> bool:
        return self.failure is None and self.cases > 0

    @property
    def verdict(self) -> str:
        if self.failure is not None:
            return "DIFFERS"
        if not self.cases:
            return "no cases"
        return f"proven ({'widened x topk' if self.widened else 'identical'})"


def _without_widths(launch: Launch) -> Launch:
    """The launch with the kv_indices width (shape and the row stride, which the
    backends pass as ``shape[1]``) blanked out: what a widened buffer may change."""
    width = launch.kv_indices.width
    scalars = tuple(
        (name, "<width>" if name == "kv_indices_stride" and value == width else value)
        for name, value in launch.scalars
    )
    return dataclasses.replace(
        launch,
        scalars=scalars,
        kv_indices=dataclasses.replace(launch.kv_indices, shape=()),
    )


def _blank_owned(call: BackendCall, owners: set[str]) -> BackendCall:
    """The call with views of the widened buffers reduced to what may not change:
    their rows (a whole row of a wider buffer is wider and holds more entries;
    the entries the attention reads are compared as spec_info slices)."""

    def blank(value: Any) -> Any:
        if isinstance(value, tuple):
            if len(value) == 6 and value[0] == "tensor" and value[3] in owners:
                return ("tensor", value[1][:-1], value[2], value[3], "<widened>")
            return tuple(blank(v) for v in value)
        return value

    return dataclasses.replace(call, args=blank(call.args))


def first_difference(before: Record, after: Record) -> str:
    """The first differing record of two runs, named and shown."""
    for kind in ("allocations", "launches", "assignments", "backend_calls"):
        xs, ys = getattr(before, kind), getattr(after, kind)
        for n in range(max(len(xs), len(ys))):
            x = xs[n] if n < len(xs) else None
            y = ys[n] if n < len(ys) else None
            if x != y:
                return f"{kind}[{n}]: before {_short(x)}; after {_short(y)}"
    return "records equal"


def _short(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def judge(before: Record, after: Record, topk: int) -> tuple[str, str | None]:
    """``(IDENTICAL | WIDENED, None)``, or ``("", why)`` for any other change."""
    if before == after:
        return IDENTICAL, None
    change = diff(before, after)
    problems = []
    for c in change.allocations:
        b, a = c.before, c.after
        same_kind = (
            b is not None
            and a is not None
            and (b.phase, b.fn, b.dtype, b.device) == (a.phase, a.fn, a.dtype, a.device)
            and b.shape[:-1] == a.shape[:-1]
        )
        if not same_kind or topk == 1 or c.width_factor != topk:
            problems.append(c.describe())
    if problems:
        return "", f"allocation changed beyond a x{topk} width: {problems[0]}"
    launches_b = [_without_widths(x) for x in before.launches]
    launches_a = [_without_widths(x) for x in after.launches]
    if launches_b != launches_a:
        n = next(
            (
                i
                for i, (x, y) in enumerate(zip(launches_b, launches_a, strict=False))
                if x != y
            ),
            min(len(launches_b), len(launches_a)),
        )
        x = before.launches[n] if n < len(before.launches) else None
        y = after.launches[n] if n < len(after.launches) else None
        return "", f"launches[{n}]: before {_short(x)}; after {_short(y)}"
    widened = {f"allocation[{c.index}]" for c in change.allocations}
    calls_b = [_blank_owned(c, widened) for c in before.backend_calls]
    calls_a = [_blank_owned(c, widened) for c in after.backend_calls]
    if not before.overruns and (
        before.assignments != after.assignments or calls_b != calls_a
    ):
        return "", first_difference(
            Record(assignments=before.assignments, backend_calls=calls_b),
            Record(assignments=after.assignments, backend_calls=calls_a),
        )
    if after.overruns:
        return "", f"the rewrite overruns: {after.overruns[0].describe()}"
    if after.consistency_problems():
        return "", after.consistency_problems()[0]
    return WIDENED, None


def prove_class(
    original: Source,
    rewritten: Source,
    class_name: str,
    grid: Sequence[Params],
    device: Any = "cpu",
    *,
    kernel: KernelFactory,
    graph_entry: str = "method",
) -> ClassProof:
    """Run both versions of ``class_name`` on every case; stop at the first
    difference (``failure`` names the case and the first differing record)."""
    proof = ClassProof(class_name)
    for params in grid:
        try:
            before = run(
                original, class_name, params, device, graph_entry=graph_entry,
                kernel=kernel,
            )  # fmt: skip
            after = run(
                rewritten, class_name, params, device, graph_entry=graph_entry,
                kernel=kernel,
            )  # fmt: skip
        except HarnessError as exc:
            proof.failure = f"cannot drive it: {exc}"
            return proof
        kind, why = judge(before, after, params.topk)
        if why is not None:
            proof.failure = f"{params.describe()}: {why}"
            return proof
        counts = before.counts()
        proof.cases += 1
        proof.allocations += counts["allocations"]
        proof.launches += counts["launches"]
        proof.slices += counts["slices"]
        proof.overruns_before += len(before.overruns)
        proof.overruns_after += len(after.overruns)
        proof.kinds.append(kind)
        if kind == WIDENED:
            proof.widened += 1
            proof.unsized_overran += bool(before.overruns)
    return proof


def long_sequence_grid(
    topks: Sequence[int] = (2, 4),
    ctx: int = 24,
    batches: Sequence[int] = (1, 2),
    steps_list: Sequence[int] = (2, 3),
) -> list[Params]:
    """Full cuda-graph batches at the design's length limit: an unsized buffer is
    overrun here for every topk > 1 (the shorter random grid may not reach it)."""
    return [
        Params(
            num_seqs=n,
            topk=topk,
            speculative_num_steps=steps,
            seq_lens=tuple([ctx - steps] * n),
            max_context_len=ctx,
            cuda_graph_max_bs=n,
        )
        for topk in topks
        for n in batches
        for steps in steps_list
    ]


def small_grid(seed: int = 0) -> list[Params]:
    """Few enough cases for the interpreted kernel on a CPU (seconds per class)."""
    from .run import default_grid

    return (
        default_grid(seed=seed, num_seqs=(1, 2), topk=(1, 2, 4), steps=(2, 3))
        + long_sequence_grid()
    )
