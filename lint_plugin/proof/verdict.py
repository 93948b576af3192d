"""The proof's judgement of one class before and after a rewrite.

For every case of the grid both versions run (:func:`.drive.run`) and their
records must be equal: allocations, exceptions, launches, slices, backend calls
and module globals. Where they are not, the original runs once more with its
KVI003 sites widened as the unsafe fix states (:mod:`.widen`) -- every
allocation it then changes must be a KVI003 site's, wider by exactly topk --
and the rewrite must equal *that* run in every record. Anything else differs,
reported by its first differing record.

At the context wall (a grid case with a request at ``max_context_len - 1``,
:mod:`lint_plugin.envelope`) the kernel writes past a helper-sized row. Both
sides overrunning alike is identical, and counted. A rewrite that adds a
capacity guard (KVI006's fix, upstream's refactor) raises there instead: that
case is *guarded* when, in every phase where the original (or its widened run)
wrote past its row, the rewrite raised an AssertionError after observing only a
prefix of what the original did, and every other phase is equal.

Then, what ran: a line that differs between the two versions and holds code
but never ran on the grid refuses "proven" (:mod:`.coverage`); a stand-in that
was asked for what the harness does not model makes the class "cannot drive".

Two classes of different releases are compared phase by phase: 0.5.13 renamed
the CUDA-graph entry points (capture/replay -> out_graph/in_graph), so the
records name phases, not methods, and per-step backend calls are compared by
what they hand over (:class:`~.record.BackendCall` ``handoff``), 0.5.13's extra
``in_graph`` forwarding aside.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import TYPE_CHECKING, Any

from .coverage import Coverage, UnranLine, never_ran
from .drive import NO_SUM, KernelFactory, Source, remembered_run, run
from .errors import HarnessError
from .grid import Params
from .grid import long_sequence_grid as long_sequence_grid  # re-exported
from .grid import small_grid as small_grid  # re-exported
from .kernel import ReferenceDraftKernel
from .loader import extract_class, read_source
from .record import KINDS, Assignment, BufferUse, Launch, Record, diff
from .thresholds import bounds
from .widen import Widened, widen_kvi003

if TYPE_CHECKING:
    import torch

IDENTICAL, WIDENED, GUARDED = "identical", "widened", "guarded"
# A run of cases shows no difference on them; "proven" is kept for what holds
# for all sizes (the kernel's fit, the fix gate's polynomials).
NO_DIFFERENCE, DIFFERS, CANNOT_DRIVE, NOT_COVERED = (
    "no difference",
    "differs",
    "cannot drive",
    "not covered",
)


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
    # Of them, in cases within upstream's contract (not at the context wall).
    overruns_after_in_contract: int = 0
    widened: int = 0  # cases equal only to the original widened at KVI003 sites
    wall_overran: int = 0  # wall cases in which both sides overran alike
    guarded: int = 0  # wall cases the rewrite's guard stopped (GUARDED)
    refused: int = 0  # cases whose __init__ refused the configuration (both)
    raised: int = 0  # cases in which both raised the same exception
    first_raise: str = ""  # "Type at file:line" of the first shared exception
    failure: str | None = None
    cannot_drive: str | None = None
    unran: list[UnranLine] = field(default_factory=list)
    widened_lines: tuple[int, ...] = ()
    notes: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list, repr=False)
    driven: list[Params] = field(default_factory=list, repr=False)
    # What the harness's stand-ins fixed and either side read (record.assumed).
    assumed: list[str] = field(default_factory=list)
    wall: float = 0.0

    @property
    def status(self) -> str:
        if self.failure is not None:
            return DIFFERS
        if self.cannot_drive is not None or not self.cases:
            return CANNOT_DRIVE
        if self.unran:
            return NOT_COVERED
        return NO_DIFFERENCE

    @property
    def no_difference(self) -> bool:
        return self.status == NO_DIFFERENCE

    @property
    def bounds(self) -> str:
        """What the cases driven reached, axis by axis."""
        return bounds(self.driven)

    @property
    def verdict(self) -> str:
        """The headline, then what it was measured on and what it assumed."""
        if self.status != NO_DIFFERENCE:
            return self.headline
        under = "; identical under: " + "; ".join(self.assumed) if self.assumed else ""
        return f"{self.headline} within {self.bounds}{under}"

    @property
    def headline(self) -> str:
        status = self.status
        if status == DIFFERS:
            return "DIFFERS"
        if status == CANNOT_DRIVE:
            return f"cannot drive: {self.cannot_drive or 'no case was driven'}"
        if status == NOT_COVERED:
            return f"not proven: {len(self.unran)} changed lines never ran"
        wall = []
        if self.wall_overran:
            wall.append(f"{self.wall_overran} overran alike at the context wall")
        if self.guarded:
            wall.append(f"{self.guarded} stopped by its guard at the context wall")
        if self.refused:
            # Few cases past __init__ (FlashInfer MLA refuses topk > 1): say how few.
            wall.append(
                f"driven past __init__ in {self.cases - self.refused} of "
                f"{self.cases} cases"
            )
        at_wall = f"; {', '.join(wall)}" if wall else ""
        cases = f"no difference in {self.cases} cases"
        if self.widened or self.widened_lines:  # a guarded case may be widened too
            where = ", ".join(str(n) for n in self.widened_lines)
            return f"{cases} (widened x topk at line {where}{at_wall})"
        return f"{cases} (identical{at_wall})"


def _phases(record: Record) -> set[str]:
    return set(record.phases)


def _short(value: Any, limit: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(value: Any, limit: int = 300) -> str:
    if value is None:
        return "(none)"
    describe = getattr(value, "describe", None)
    text = describe() if callable(describe) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _pairs_change(x: tuple, y: tuple) -> str | None:
    """``(name, value)`` tuples (a launch's scalars) as what changed by name."""
    if not all(isinstance(p, tuple) and len(p) == 2 for p in (*x, *y)):
        return None
    absent = "(absent)"
    dx, dy = dict(x), dict(y)
    parts = []
    for k in dict.fromkeys([*dx, *dy]):
        a, b = dx.get(k, absent), dy.get(k, absent)
        if a != b:
            parts.append(f"{k}={_short(a, 60)} -> {_short(b, 60)}")
    return ", ".join(parts)


def difference(x: Any, y: Any) -> str:
    """Two differing records, as the fields that differ."""
    if x is None or y is None or type(x) is not type(y) or not is_dataclass(x):
        return f"before {_describe(x)}; after {_describe(y)}"
    parts = []
    for f in fields(x):
        if not f.compare:
            continue
        a, b = getattr(x, f.name), getattr(y, f.name)
        if a == b:
            continue
        named = _pairs_change(a, b) if isinstance(a, tuple) else None
        if named is None and is_dataclass(a) and type(a) is type(b):
            named = difference(a, b)
        parts.append(f"{f.name}: {named or f'{_short(a)} -> {_short(b)}'}")
    phase = getattr(x, "phase", None)
    return (f"({phase}) " if phase else "") + "; ".join(parts)


def _calls(record: Record, mapped: bool) -> list:
    if not mapped:
        return list(record.backend_calls)
    # Compared by what each call hands over; 0.5.13's in_graph only forwards the
    # batch to every per-step backend and has no counterpart before it.
    return [
        (c.phase, c.backend, c.handoff)
        for c in record.backend_calls
        if not (c.handoff and c.handoff[0] == "in_graph")
    ]


def compare_records(before: Record, after: Record) -> tuple[str | None, list[str]]:
    """The first difference between two runs of one case (None: equal), and
    notes on what was compared how."""
    notes = []
    phases = _phases(before) | _phases(after)
    one_sided = _phases(before) ^ _phases(after)
    if NO_SUM in one_sided:
        # Only a class declaring needs_cpu_seq_lens = False is given None: its
        # run without the sum is held to the other side's run with it.
        side = "after" if NO_SUM in after.phases else "before"
        notes.append(
            f"{NO_SUM}: driven {side} only (needs_cpu_seq_lens), compared with "
            "the other side's forward given the sum (its slices may run longer "
            "over what the kernel wrote, never shorter)"
        )
        without, other = (before, after) if side == "before" else (after, before)
        why = _without_sum_problem(without, other)
        if why is not None:
            return f"({NO_SUM}, {side} only) {why}", notes
        phases.discard(NO_SUM)
    missing = sorted(one_sided - {NO_SUM})
    before, after = before.only(phases), after.only(phases)
    mapped = before.phases.get("capture") != after.phases.get("capture")
    if mapped and "capture" in before.phases and "capture" in after.phases:
        notes.append(
            f"graph entry points mapped: {before.phases.get('capture')} -> "
            f"{after.phases.get('capture')}; "
            f"{before.phases.get('replay')} -> {after.phases.get('replay')}"
        )
        for side, record in (("before", before), ("after", after)):
            why = _in_graph_problem(record)
            if why is not None:
                return f"(capture, {side}) {why}", notes
    differing = []
    first = None
    for kind in KINDS:
        if kind == "backend_calls":
            xs, ys = _calls(before, mapped), _calls(after, mapped)
        else:
            xs, ys = getattr(before, kind), getattr(after, kind)
        if xs == ys:
            continue
        differing.append(kind)
        unlike = _first_unlike(xs, ys) if first is None else None
        if unlike is not None:
            n, x, y = unlike
            first = f"{kind}[{n}] {difference(x, y)}"
    if first is not None:
        equal = [k for k in KINDS if k not in differing]
        return (
            f"{first} [this case differs in {', '.join(differing)}; equal: "
            f"{', '.join(equal) or 'nothing'}]",
            notes,
        )
    if missing:
        return f"phases driven on one side only: {missing}", notes
    return None, notes


def _relabel(record: Record, phase: str, to: str) -> Record:
    """``phase``'s observations under the name ``to``."""
    kept = record.only({phase})

    def moved(x: Any) -> Any:
        if isinstance(x, Launch):  # its buffers' owners name the phase too
            x = replace(
                x,
                kv_indices=_owned(x.kv_indices, phase, to),
                kv_indptr=_owned(x.kv_indptr, phase, to),
            )
        return replace(x, phase=to)

    return Record(
        **{kind: [moved(x) for x in getattr(kept, kind)] for kind in KINDS},
        phases={to: kept.phases.get(phase, "")},
    )


def _owned(use: BufferUse, phase: str, to: str) -> BufferUse:
    return replace(use, owner=use.owner.replace(f"[{phase}#", f"[{to}#"))


def _without_sum_problem(without: Record, other: Record) -> str | None:
    """Why a run of ``init_forward_metadata`` without ``seq_lens_sum`` is not
    the other side's run given it (None: it is). Everything is equal but the
    ``kv_indices`` slices handed out, which may be longer (an over-estimated sum
    only clamps a slice) if each starts with the whole of the other's."""
    if "forward" not in other.phases:
        return "the other side has no forward phase to hold it to"
    mine = _relabel(without, NO_SUM, "forward")
    theirs = other.only({"forward"})
    for kind in KINDS:
        unlike = _first_unlike(getattr(theirs, kind), getattr(mine, kind), _covers)
        if unlike is not None:
            n, x, y = unlike
            return f"{kind}[{n}] {difference(x, y)}"
    return None


def _first_unlike(
    xs: Sequence, ys: Sequence, alike: Callable[[Any, Any], bool] = operator.eq
) -> tuple[int, Any, Any] | None:
    """The first position where two lists of records are not ``alike`` (a
    missing record is None), with both records there; None where none is."""
    for n in range(max(len(xs), len(ys))):
        x = xs[n] if n < len(xs) else None
        y = ys[n] if n < len(ys) else None
        if not alike(x, y):
            return n, x, y
    return None


def _covers(x: Any, y: Any) -> bool:
    """``y`` is ``x``, but for ``kv_indices`` slices that may run longer over
    the same entries (in an assignment, or a ``spec_info`` handed over)."""
    if x == y:
        return True
    if isinstance(x, Assignment) and isinstance(y, Assignment):
        return (
            x.phase == y.phase
            and x.attr == y.attr == "kv_indices"
            and y.length >= x.length
            and y.contents[: len(x.contents)] == x.contents
        )
    if isinstance(x, tuple) and isinstance(y, tuple) and len(x) == len(y):
        if x and x[0] == "spec_info" == y[0]:
            return x[1] == y[1] and _longer_slice(x[2], y[2])
        return all(_covers(a, b) for a, b in zip(x, y, strict=True))
    if is_dataclass(x) and type(x) is type(y):
        return all(
            _covers(getattr(x, f.name), getattr(y, f.name))
            for f in fields(x)
            if f.compare
        )
    return False


def _longer_slice(x: Any, y: Any) -> bool:
    """Two tensor summaries (:meth:`.record.Recorder.summarize`): ``y`` one
    row of the same buffer from the same offset, holding ``x`` and more."""
    if x == y:
        return True
    if not (
        isinstance(x, tuple) and isinstance(y, tuple) and x[:1] == y[:1] == ("tensor",)
    ):
        return False
    _, xshape, xdtype, xowner, xoffset, xdata = x
    _, yshape, ydtype, yowner, yoffset, ydata = y
    return (
        (xdtype, xowner, xoffset) == (ydtype, yowner, yoffset)
        and len(xshape) == len(yshape) == 1
        and yshape[0] >= xshape[0]
        and ydata[: len(xdata)] == xdata
    )


def _in_graph_problem(record: Record) -> str | None:
    """From 0.5.13 the graph's capture is ``out_graph(in_capture=True)`` then
    ``in_graph``, which must reach every per-step backend the first reached,
    in order (the other side has no such entry point to compare it with)."""
    entry = record.phases.get("capture", "")
    if "in_graph" not in entry:
        return None
    calls = [c for c in record.backend_calls if c.phase == "capture" and c.backend >= 0]
    forwarded = [c.backend for c in calls if c.handoff and c.handoff[0] == "in_graph"]
    captured = [c.backend for c in calls if c.handoff and c.handoff[0] == "capture"]
    if forwarded != captured:
        return (
            f"in_graph reached backends {forwarded}, out_graph(in_capture=True) "
            f"reached {captured}"
        )
    return None


def guarded_problem(before: Record, after: Record) -> str | None:
    """Why ``after`` is not ``before`` with each overrunning phase stopped by a
    capacity guard (None: it is). Only phases both sides drove are judged, as
    :func:`compare_records` judges them."""
    shared = set(before.phases) & set(after.phases)
    overran = {o.phase for o in before.overruns}
    already = {r.phase for r in before.raised}
    stopped = {
        r.phase for r in after.raised if r.type == "AssertionError"
    } & shared - already
    if not stopped:
        return "no phase of the rewrite stops at a guard"
    if not stopped <= overran:
        return (
            "the rewrite raises where the original wrote nothing past its row: "
            f"{sorted(stopped - overran)}"
        )
    why, _ = compare_records(
        before.only(shared - stopped), after.only(shared - stopped)
    )
    if why is not None:
        return why
    mapped = before.phases.get("capture") != after.phases.get("capture")
    for phase in sorted(stopped):
        b, a = before.only({phase}), after.only({phase})
        if len(a.raised) != 1:
            return f"({phase}) the rewrite raised {len(a.raised)} times"
        for kind in KINDS:
            if kind == "raised":
                continue
            if kind == "backend_calls":
                xs, ys = _calls(b, mapped), _calls(a, mapped)
            else:
                xs, ys = getattr(b, kind), getattr(a, kind)
            if ys != xs[: len(ys)]:
                return f"({phase}) {kind} before the guard are not the original's"
    return None


def widening_problem(before: Record, wide: Record, widened: Widened, topk: int):
    """Why the widened run is not the original with its KVI003 sites x topk."""
    if len(before.allocations) != len(wide.allocations):
        return "the widened original allocates a different number of tensors"
    for n, (b, w) in enumerate(zip(before.allocations, wide.allocations, strict=True)):
        if b == w:
            continue
        same_kind = (b.phase, b.fn, b.dtype, b.device, b.shape[:-1]) == (
            w.phase,
            w.fn,
            w.dtype,
            w.device,
            w.shape[:-1],
        )
        wider = bool(b.shape and w.shape) and b.shape[-1] * topk == w.shape[-1]
        if not (widened.holds(w.line) and same_kind and wider):
            return (
                f"allocation #{n} changed beyond a x{topk} width at a KVI003 "
                f"site: {b.describe()} -> {w.describe()}"
            )
    return None


def prove_class(
    original: Source,
    rewritten: Source,
    class_name: str,
    grid: Sequence[Params],
    device: Any = "cpu",
    *,
    kernel: KernelFactory,
    kernel_after: KernelFactory | None = None,
    graph_entry: str = "auto",
    names: tuple[str | None, str | None] = (None, None),
    coverage: bool = True,
) -> ClassProof:
    """Run both versions of ``class_name`` on every case; stop at the first
    difference (``failure`` names the case and the first differing record).

    ``kernel`` runs the original (and the widened original), ``kernel_after``
    (default: the same) the rewrite; ``names`` are the file names the two texts
    are compiled under.
    """
    started = time.perf_counter()
    proof = ClassProof(class_name)
    kernel_after = kernel_after or kernel
    before_text, before_default = read_source(original)
    after_text, after_default = read_source(rewritten)
    before_name = names[0] or before_default
    after_name = names[1] or after_default
    if before_name == after_name:  # two texts of one file: tell their code apart
        after_name = f"{after_name} (rewritten)"
    try:
        cov_b = Coverage(extract_class(before_text, class_name, before_name))
        cov_a = Coverage(extract_class(after_text, class_name, after_name))
    except (HarnessError, SyntaxError) as exc:
        proof.cannot_drive = str(exc)
        return proof
    widened: Widened | bool | None = False  # not computed yet
    try:
        for params in grid:
            options = {"graph_entry": graph_entry}
            before = remembered_run(
                before_text, class_name, params, device, kernel=kernel,
                filename=before_name, coverage=cov_b if coverage else None,
                **options,
            )  # fmt: skip
            after = remembered_run(
                after_text, class_name, params, device, kernel=kernel_after,
                filename=after_name, coverage=cov_a if coverage else None,
                **options,
            )  # fmt: skip
            why, notes = compare_records(before, after)
            kind = IDENTICAL
            if why is not None:
                if widened is False:
                    widened = widen_kvi003(before_text, class_name)
                base, problem = before, None
                if widened is not None:
                    wide = remembered_run(
                        widened.text, class_name, params, device, kernel=kernel,
                        filename=f"{before_name} (KVI003 sites widened)", **options,
                    )  # fmt: skip
                    problem = widening_problem(before, wide, widened, params.topk)
                    if problem is None:
                        base = wide
                        wide_why, notes = compare_records(wide, after)
                        problem = wide_why
                        kind = WIDENED
                if problem is None and widened is not None:
                    proof.widened_lines = widened.lines
                elif params.at_wall and guarded_problem(base, after) is None:
                    kind = GUARDED
                    if base is not before:
                        proof.widened_lines = widened.lines
                else:
                    against = (
                        f"; and against the original with its KVI003 sites "
                        f"widened: {problem}"
                        if widened is not None
                        else ""
                    )
                    proof.failure = f"{params.describe()}: {why}{against}"
                    if params.at_wall:
                        proof.failure += (
                            f"; and as guarded at the context wall: "
                            f"{guarded_problem(base, after)}"
                        )
                    break
            for note in notes:
                if note not in proof.notes:
                    proof.notes.append(note)
            _count(proof, params, before, after, kind)
    except HarnessError as exc:
        proof.cannot_drive = str(exc)
    if proof.failure is None and proof.cannot_drive is None and coverage:
        proof.unran = never_ran(cov_b, before_text, cov_a, after_text)
    proof.wall = time.perf_counter() - started
    return proof


def _count(
    proof: ClassProof, params: Params, before: Record, after: Record, kind: str
) -> None:
    counts = before.counts()
    proof.cases += 1
    proof.allocations += counts["allocations"]
    proof.launches += counts["launches"]
    proof.slices += counts["slices"]
    proof.overruns_before += len(before.overruns)
    proof.overruns_after += len(after.overruns)
    if not params.at_wall:
        proof.overruns_after_in_contract += len(after.overruns)
    proof.kinds.append(kind)
    proof.driven.append(params)
    for text in (*before.assumed, *after.assumed):
        if text not in proof.assumed:
            proof.assumed.append(text)
    if kind == WIDENED:
        proof.widened += 1
    if kind == GUARDED:
        proof.guarded += 1
    elif params.at_wall and before.overruns and after.overruns:
        proof.wall_overran += 1
    if after.raised and kind != GUARDED:  # equal to the (widened) original's
        first = after.raised[0]
        proof.raised += 1
        proof.refused += first.phase == "init"
        if not proof.first_raise:
            proof.first_raise = f"{first.type} at {first.where or '?'}"


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
    graph_entry: str = "auto",
    kernel: KernelFactory = ReferenceDraftKernel,
) -> CompareCounts:
    """Assert ``original`` and ``rewritten`` produce equal records on every case
    (as the proof compares them: phase by phase, :func:`compare_records`).

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
        why, _ = compare_records(before, after)
        if why is not None:
            raise AssertionError(
                f"{original_class}: records differ for {params.describe()} on "
                f"{device}: {why}\n{diff(before, after).describe()}\n"
                f"(equal before this case: {counts})"
            )
        counts.add(before)
    return counts
