"""Differential execution harness: did a rewrite of a draft backend change a number?

The real SGLang multi-step draft backends are loaded class-by-class from their
source files (no sglang import, see :mod:`.loader`), built with a stand-in model
runner and driven through every entry point they have (:mod:`.drive`) over a grid
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
The public names below are found in their modules when first asked for, so
``prove``'s command (:mod:`.prove`) and the kernel fit (:mod:`.fit`) import no
more than they use.
"""

from __future__ import annotations

import importlib

# Each public name, by the module that holds it.
_HOMES = {
    "Allocation": "record",
    "AllocationChange": "record",
    "Assignment": "record",
    "BackendCall": "record",
    "BufferUse": "record",
    "ClassSource": "loader",
    "CompareCounts": "verdict",
    "GlobalValue": "record",
    "GuardedDraftKernel": "guarded_launch",
    "HarnessError": "errors",
    "KernelNotFound": "locate",
    "KernelSource": "triton_source",
    "Launch": "record",
    "Overrun": "record",
    "Params": "grid",
    "Raised": "record",
    "Record": "record",
    "RecordDiff": "record",
    "Recorder": "record",
    "RecordingTorch": "torch_proxy",
    "ReferenceDraftKernel": "kernel",
    "StandInRewriteError": "mutate",
    "compare": "verdict",
    "corner_grid": "grid",
    "default_grid": "grid",
    "diff": "record",
    "extract_class": "loader",
    "load_class": "loader",
    "locate_kernel": "locate",
    "proof_grid": "grid",
    "rewrite_in_class": "mutate",
    "run": "drive",
}


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


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
