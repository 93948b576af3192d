"""Differential execution harness: did a rewrite of a draft backend change a number?

The real SGLang multi-step draft backends are loaded class-by-class from their
source files (no sglang import, see :mod:`.loader`), driven through their entry
points with a reference of the Triton index kernel (:mod:`.kernel`) and a torch
that records allocations (:mod:`.torch_proxy`), and what they did is captured in a
:class:`Record`. Two sources are "numerically identical" when their records are
equal for every case of a grid (:func:`compare`).
"""

from __future__ import annotations

from .errors import HarnessError
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
