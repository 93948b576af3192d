"""Differential execution harness: did a rewrite of a draft backend change a number?

The real SGLang multi-step draft backends are loaded class-by-class from their
source files (no sglang import, see :mod:`.loader`), built with a stand-in model
runner and driven through every entry point they have (:mod:`.run`) over a grid
reaching the kernel's and the backends' corners (:mod:`.grid`), with upstream's
Triton index kernel of the tree's own release (:mod:`.locate` finds it,
:mod:`.triton_source` cuts it out, :mod:`.guarded_launch` launches it with guard
regions) or its torch reference (:mod:`.kernel`), and a torch that records
allocations (:mod:`.torch_proxy`); what they did is captured in a
:class:`Record`. Two sources are "numerically identical" when their records are
equal for every case of a grid (:func:`compare`); :mod:`.verdict` also accepts a
rewrite equal to the original with its KVI003 sites widened (:mod:`.widen`),
refuses where a changed line never ran (:mod:`.coverage`) and names the first
differing record otherwise.

Everything here imports torch: only ``draft-kv-lint prove`` and the tests load it.
"""

from __future__ import annotations

from .errors import HarnessError
from .grid import Params, corner_grid, default_grid, proof_grid
from .guarded_launch import GuardedDraftKernel
from .kernel import ReferenceDraftKernel
from .loader import ClassSource, extract_class, load_class
from .locate import KernelNotFound, locate_kernel
from .mutate import StandInRewriteError, rewrite_in_class
from .record import (
    Allocation,
    AllocationChange,
    Assignment,
    BackendCall,
    BufferUse,
    GlobalValue,
    Launch,
    Overrun,
    Raised,
    Record,
    RecordDiff,
    Recorder,
    diff,
)
from .run import CompareCounts, compare, run
from .torch_proxy import RecordingTorch
from .triton_source import KernelSource

__all__ = [
    "Allocation",
    "AllocationChange",
    "Assignment",
    "BackendCall",
    "BufferUse",
    "ClassSource",
    "CompareCounts",
    "GlobalValue",
    "GuardedDraftKernel",
    "HarnessError",
    "KernelNotFound",
    "KernelSource",
    "Launch",
    "Overrun",
    "Params",
    "Raised",
    "Record",
    "RecordDiff",
    "Recorder",
    "RecordingTorch",
    "ReferenceDraftKernel",
    "StandInRewriteError",
    "compare",
    "corner_grid",
    "default_grid",
    "diff",
    "extract_class",
    "load_class",
    "locate_kernel",
    "proof_grid",
    "rewrite_in_class",
    "run",
]
