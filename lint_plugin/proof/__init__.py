"""Differential execution harness: did a rewrite of a draft backend change a number?

The real SGLang multi-step draft backends are loaded class-by-class from their
source files (no sglang import, see :mod:`.loader`), driven through their entry
points with upstream's Triton index kernel cut out of the release's own file
(:mod:`.triton_source`, launched with guard regions by :mod:`.guarded_launch`) or
its torch reference (:mod:`.kernel`), and a torch that records allocations
(:mod:`.torch_proxy`); what they did is captured in a :class:`Record`. Two sources
are "numerically identical" when their records are equal for every case of a grid
(:func:`compare`); :mod:`.verdict` also accepts a buffer widened by exactly topk
(the unsafe fix) and names the first differing record otherwise.

Everything here imports torch: only ``draft-kv-lint prove`` and the tests load it.
"""

from __future__ import annotations

from .errors import HarnessError
from .guarded_launch import GuardedDraftKernel
from .kernel import ReferenceDraftKernel
from .loader import ClassSource, extract_class, load_class
from .mutate import StandInRewriteError, rewrite_in_class
from .record import (
    Allocation,
    AllocationChange,
    Assignment,
    BackendCall,
    BufferUse,
    Launch,
    Overrun,
    Record,
    RecordDiff,
    Recorder,
    diff,
)
from .run import CompareCounts, Params, compare, default_grid, run
from .torch_proxy import RecordingTorch

__all__ = [
    "Allocation",
    "AllocationChange",
    "Assignment",
    "BackendCall",
    "BufferUse",
    "ClassSource",
    "CompareCounts",
    "GuardedDraftKernel",
    "HarnessError",
    "Launch",
    "Overrun",
    "Params",
    "Record",
    "RecordDiff",
    "Recorder",
    "RecordingTorch",
    "ReferenceDraftKernel",
    "StandInRewriteError",
    "compare",
    "default_grid",
    "diff",
    "extract_class",
    "load_class",
    "rewrite_in_class",
    "run",
]
