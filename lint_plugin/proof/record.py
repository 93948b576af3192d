"""What one harness run observed, in a form that compares with ``==``.

A rewrite of a draft backend "changed no number" when, for the same inputs, the
original and the rewritten class allocate the same tensors (allocator, shape,
dtype, device kind), launch the index kernel with the same arguments, expose the
same ``spec_info.kv_indices``/``kv_indptr`` slices (length and every entry),
hand the same things to their per-step attention backends (and to the module
names they call), leave the same values in the module globals they write and
raise the same exceptions. :class:`Record` holds exactly those observations as
plain tuples, so two records are equal iff all of them are; what differs by
construction (which file, which line, which parameters) is excluded from the
comparison.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import torch

# The harness fills its req_to_token pool with slot ids >= 1, so a 0 (zeros) or a -1
# (the poison the recording torch puts into ``torch.empty``) inside a kv_indices
# slice can only be an entry the index kernel never wrote.
UNWRITTEN = (0, -1)


@dataclass(frozen=True)
class Allocation:
    """One tensor the class under test allocated through ``torch``."""

    phase: str
    fn: str  # the torch allocator, e.g. "zeros"; empty vs zeros is a difference too
    shape: tuple[int, ...]
    dtype: str
    device: str  # the device *kind* the source asked for ("cuda", "cpu", "default")
    line: int = field(default=0, compare=False)  # in the class's file (0: unknown)

    def describe(self) -> str:
        at = f" (line {self.line})" if self.line else ""
        return (
            f"{self.phase}: torch.{self.fn}{self.shape} {self.dtype} on "
            f"{self.device}{at}"
        )


@dataclass(frozen=True)
class Assignment:
    """One assignment of ``forward_batch.spec_info.kv_indices`` or ``.kv_indptr``.

    The contents are copied at assignment time: the buffer they view is overwritten
    by later steps and phases.
    """

    phase: str
    attr: str
    length: int
    contents: tuple[int, ...]


@dataclass(frozen=True)
class BufferUse:
    """How one index-kernel launch used one of its output buffers."""

    name: str  # the kernel parameter: "kv_indices" or "kv_indptr"
    owner: str  # "allocation[capture#0]" (made by the class), "req_to_token" ...
    shape: tuple[int, ...]
    dtype: str
    # Highest offset written in each grid row, relative to the row start (-1: none).
    max_offset: tuple[int, ...]

    @property
    def width(self) -> int:
        return self.shape[-1]

    def overrun_rows(self) -> tuple[int, ...]:
        """Rows whose writes reach past the row (or rows past the buffer)."""
        rows = self.shape[0]
        return tuple(
            row
            for row, top in enumerate(self.max_offset)
            if top >= self.width or (row >= rows and top >= 0)
        )


@dataclass(frozen=True)
class Launch:
    """One ``generate_draft_decode_kv_indices[grid](...)`` call."""

    phase: str
    grid: tuple[int, ...]
    scalars: tuple[tuple[str, Any], ...]
    kv_indices: BufferUse
    kv_indptr: BufferUse
    read_overruns: int  # req_to_token entries read past the request's row
    problems: tuple[str, ...]  # kernel-contract violations (see kernel.py)


@dataclass(frozen=True)
class BackendCall:
    """One call the class made on a per-step attention backend (or on call_fn,
    or on a module-level name: ``backend`` is then -1 and ``method`` its name).

    ``handoff`` is what the call hands over whatever the API spelling: 0.5.13
    renamed the per-step entry points, so a class of each release is compared
    by it (:mod:`.standins`); ``args`` is compared between classes of one API.
    ``module_globals`` holds the class's ``global`` names as the callee sees them.
    """

    phase: str
    backend: int
    method: str
    args: tuple[Any, ...]
    module_globals: tuple[tuple[str, Any], ...] = ()
    handoff: tuple[Any, ...] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Raised:
    """An exception the driven code raised out of an entry point: a record like
    any other (both versions raising the same is equal)."""

    phase: str
    type: str
    message: str
    where: str = field(default="", compare=False)  # "file:line" in the class

    def describe(self) -> str:
        at = f" at {self.where}" if self.where else ""
        return f"{self.phase}: {self.type}: {self.message}{at}"


@dataclass(frozen=True)
class GlobalValue:
    """A module global the class writes (``global name``), after an entry point."""

    phase: str
    name: str
    value: Any


@dataclass(frozen=True)
class Overrun:
    phase: str
    buffer: str
    row: int
    max_offset: int
    width: int

    def describe(self) -> str:
        return (
            f"{self.phase}: {self.buffer} row {self.row} written up to offset "
            f"{self.max_offset} but the row is {self.width} wide"
        )


@dataclass
class Record:
    """Everything one run observed; ``==`` compares all observations."""

    allocations: list[Allocation] = field(default_factory=list)
    assignments: list[Assignment] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    backend_calls: list[BackendCall] = field(default_factory=list)
    raised: list[Raised] = field(default_factory=list)
    module_globals: list[GlobalValue] = field(default_factory=list)
    label: str = field(default="", compare=False)
    # Each driven phase and the entry point(s) that drove it.
    phases: dict[str, str] = field(default_factory=dict, compare=False)
    # What the harness's stand-ins fixed that the class read (a value SGLang
    # may give otherwise), said with the verdict: "identical under: ...".
    assumed: list[str] = field(default_factory=list, compare=False)

    @property
    def slices(self) -> list[Assignment]:
        """Every ``spec_info.kv_indices`` the class exposed, in order."""
        return [a for a in self.assignments if a.attr == "kv_indices"]

    @property
    def overruns(self) -> list[Overrun]:
        found = []
        for launch in self.launches:
            for use in (launch.kv_indices, launch.kv_indptr):
                for row in use.overrun_rows():
                    found.append(
                        Overrun(
                            launch.phase, use.name, row, use.max_offset[row], use.width
                        )
                    )
        return found

    def consistency_problems(self) -> list[str]:
        """Slices that disagree with the kv_indptr handed out just before them.

        common_template assigns ``kv_indptr`` then ``kv_indices`` for each step; the
        indptr's last entry is the number of kv indices the attention kernel will
        read, so the slice must be exactly that long and hold only written entries.
        A truncated slice (an undersized buffer) or unwritten entries show up here.
        """
        problems = []
        indptr = None
        for n, a in enumerate(self.assignments):
            if a.attr == "kv_indptr":
                indptr = a
                continue
            if a.attr != "kv_indices" or indptr is None:
                continue
            expected = indptr.contents[-1] if indptr.contents else 0
            if a.length != expected:
                problems.append(
                    f"{a.phase} assignment #{n}: kv_indices has {a.length} entries but "
                    f"kv_indptr ends at {expected}"
                )
            unwritten = sum(1 for v in a.contents if v in UNWRITTEN)
            if unwritten:
                problems.append(
                    f"{a.phase} assignment #{n}: {unwritten} kv_indices entries were "
                    f"never written by the index kernel"
                )
        return problems

    def counts(self) -> dict[str, int]:
        return {
            "allocations": len(self.allocations),
            "slices": len(self.slices),
            "slice_entries": sum(s.length for s in self.slices),
            "launches": len(self.launches),
            "backend_calls": len(self.backend_calls),
            "raised": len(self.raised),
        }

    def only(self, phases: set[str]) -> Record:
        """The observations of ``phases`` alone."""
        keep = {
            kind: [x for x in getattr(self, kind) if x.phase in phases]
            for kind in KINDS
        }
        return Record(
            **keep,
            label=self.label,
            phases={p: m for p, m in self.phases.items() if p in phases},
        )


# Every kind of observation, in the order a difference is reported.
KINDS = (
    "allocations",
    "raised",
    "launches",
    "assignments",
    "backend_calls",
    "module_globals",
)


@dataclass(frozen=True)
class AllocationChange:
    """An allocation that differs between two records (``None``: absent)."""

    index: int
    before: Allocation | None
    after: Allocation | None

    @property
    def width_factor(self) -> float | None:
        """after.width / before.width for a reshaped buffer, else None."""
        if self.before is None or self.after is None:
            return None
        if not self.before.shape or not self.after.shape or not self.before.shape[-1]:
            return None
        return self.after.shape[-1] / self.before.shape[-1]

    def describe(self) -> str:
        before = self.before.describe() if self.before else "(none)"
        after = self.after.describe() if self.after else "(none)"
        factor = self.width_factor
        scale = f" [width x{factor:g}]" if factor is not None else ""
        return f"allocation #{self.index}: {before} -> {after}{scale}"


@dataclass
class RecordDiff:
    """Where two records differ; ``allocations`` lists each changed tensor."""

    allocations: list[AllocationChange]
    assignments_changed: int
    launches_changed: int
    backend_calls_changed: int
    overruns_before: list[Overrun]
    overruns_after: list[Overrun]
    raised_changed: int = 0
    globals_changed: int = 0

    @property
    def identical(self) -> bool:
        return not (
            self.allocations
            or self.assignments_changed
            or self.launches_changed
            or self.backend_calls_changed
            or self.raised_changed
            or self.globals_changed
        )

    def describe(self) -> str:
        if self.identical:
            return "records identical"
        lines = [c.describe() for c in self.allocations]
        lines.append(
            f"changed: {self.assignments_changed} spec_info assignments, "
            f"{self.launches_changed} kernel launches, "
            f"{self.backend_calls_changed} backend calls, "
            f"{self.raised_changed} exceptions, {self.globals_changed} module globals"
        )
        lines.append(
            f"overruns: {len(self.overruns_before)} before, "
            f"{len(self.overruns_after)} after"
        )
        return "\n".join(lines)


def _changed(before: list, after: list) -> int:
    pairs = sum(1 for x, y in zip(before, after, strict=False) if x != y)
    return pairs + abs(len(before) - len(after))


def diff(before: Record, after: Record) -> RecordDiff:
    """Itemise how ``after`` differs from ``before``.

    Used to report an *intended* change (the cuda-graph buffer that gains its topk
    factor) instead of just "not equal".
    """
    changes = []
    for n in range(max(len(before.allocations), len(after.allocations))):
        x = before.allocations[n] if n < len(before.allocations) else None
        y = after.allocations[n] if n < len(after.allocations) else None
        if x != y:
            changes.append(AllocationChange(n, x, y))
    return RecordDiff(
        allocations=changes,
        assignments_changed=_changed(before.assignments, after.assignments),
        launches_changed=_changed(before.launches, after.launches),
        backend_calls_changed=_changed(before.backend_calls, after.backend_calls),
        overruns_before=before.overruns,
        overruns_after=after.overruns,
        raised_changed=_changed(before.raised, after.raised),
        globals_changed=_changed(before.module_globals, after.module_globals),
    )


class Recorder:
    """Collects observations into a :class:`Record` while a run is in progress.

    ``phase`` names the entry point being driven, so the same observation in a
    different entry point is a different observation.
    """

    def __init__(self, label: str = "") -> None:
        self.phase = "setup"
        self.record = Record(label=label)
        self._owners: dict[int, str] = {}
        self._alive: list[torch.Tensor] = []
        # The class's module namespace and the names it writes through
        # ``global``: every backend call records what they hold at that moment.
        self.namespace: dict[str, Any] = {}
        self.watched: tuple[str, ...] = ()

    # Tensors are identified by their storage, so a row view of an allocation
    # (``self.cuda_graph_kv_indices[i]``) still says which allocation it views.
    @staticmethod
    def _key(tensor: torch.Tensor) -> int | None:
        if tensor.numel() == 0:
            return None
        return tensor.untyped_storage().data_ptr()

    def assume(self, text: str) -> None:
        """The class read a value the harness fixes (``text`` says which)."""
        if text not in self.record.assumed:
            self.record.assumed.append(text)

    def name_tensor(self, tensor: torch.Tensor, name: str) -> None:
        key = self._key(tensor)
        if key is not None:
            self._owners[key] = name
            # Held for the run: a freed storage's address could be reused by a
            # tensor nobody named, which would then wear this name.
            self._alive.append(tensor)

    def owner(self, tensor: torch.Tensor) -> str:
        key = self._key(tensor)
        return self._owners.get(key, "unknown") if key is not None else "empty"

    def allocation(
        self, fn: str, tensor: torch.Tensor, device: str, line: int = 0
    ) -> None:
        # Named by phase: a phase one version drives and the other does not
        # (seq_lens_sum=None) must not rename every later allocation.
        index = sum(1 for a in self.record.allocations if a.phase == self.phase)
        self.record.allocations.append(
            Allocation(
                self.phase, fn, tuple(tensor.shape), str(tensor.dtype), device, line
            )
        )
        self.name_tensor(tensor, f"allocation[{self.phase}#{index}]")

    def assignment(self, attr: str, value: Any) -> None:
        if isinstance(value, torch.Tensor):
            contents = tuple(int(v) for v in value.reshape(-1).tolist())
            self.record.assignments.append(
                Assignment(self.phase, attr, int(value.numel()), contents)
            )
        else:
            self.record.assignments.append(
                Assignment(self.phase, attr, -1, (self.summarize(value),))
            )

    def launch(self, launch: Launch) -> None:
        self.record.launches.append(launch)

    def backend_call(
        self,
        backend: int,
        method: str,
        args: tuple,
        kwargs: dict,
        handoff: tuple | None = None,
    ) -> None:
        summary = tuple(self.summarize(a) for a in args) + tuple(
            (k, self.summarize(v)) for k, v in sorted(kwargs.items())
        )
        seen = self.globals_now()
        self.record.backend_calls.append(
            BackendCall(
                self.phase,
                backend,
                method,
                summary,
                seen,
                handoff=(handoff if handoff is not None else (method, summary)) + seen,
            )
        )

    def globals_now(self) -> tuple[tuple[str, Any], ...]:
        return tuple(
            (name, self.summarize(self.namespace.get(name))) for name in self.watched
        )

    def end_phase(self) -> None:
        """What the class left in the globals it writes, after an entry point."""
        for name, value in self.globals_now():
            self.record.module_globals.append(GlobalValue(self.phase, name, value))

    def raised(self, exc: BaseException, filename: str) -> None:
        where = ""
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == filename:
                where = f"{filename}:{tb.tb_lineno}"
            tb = tb.tb_next
        self.record.raised.append(
            Raised(self.phase, type(exc).__name__, str(exc), where)
        )

    def summarize(self, value: Any) -> Any:
        """A comparable, self-contained picture of an argument.

        Tensors keep shape, dtype, owner, offset into the owner and contents, so
        "the same row of the same buffer" and "the same numbers" are both checked.
        """
        if isinstance(value, torch.Tensor):
            return (
                "tensor",
                tuple(value.shape),
                str(value.dtype),
                self.owner(value),
                int(value.storage_offset()),
                tuple(value.reshape(-1).tolist()),
            )
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, enum.Enum):
            return f"{type(value).__name__}.{value.name}"
        if isinstance(value, (list, tuple)):
            return tuple(self.summarize(v) for v in value)
        summary = getattr(value, "harness_summary", None)
        if summary is not None:
            return summary(self)
        return f"<{type(value).__name__}>"
