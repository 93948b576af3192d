"""A ``torch`` that records every allocation and allocates on the harness device.

The class under test sees this object under the name ``torch``. Everything except
the allocators is the real torch (dtypes, ``torch.Tensor``, ``cumsum`` ...), so
the class computes exactly what it would compute on the real module.

Why allocations are intercepted rather than inspected afterwards: the proof is
about *what the source asks for* (allocator, shape, dtype, device), including
temporaries that are dropped right away. Why ``device`` is rewritten: the real
backends hard-code ``device="cuda"``; mapping it to the harness device lets the
same comparison run on a CPU-only machine and, unchanged, on a GPU.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch

from lint_plugin import allocators

from .record import Recorder

# Allocators whose results are recorded. ``*_like`` keep their input's device
# unless told otherwise, which is already the harness device.
ALLOCATORS = (
    *(a for a in allocators.TORCH_ALLOCATORS if a not in allocators.RANDOM),
    *allocators.MADE_FROM_VALUES,
    *allocators.SHAPED_LIKE,
)
UNINITIALISED = ("empty", "empty_strided", "empty_like")
POISON = -1  # what torch.empty "contains" here: deterministic and never a slot id


def device_kind(requested: Any) -> str:
    """The device type the source asked for ("cuda" for "cuda:1" too)."""
    if requested is None:
        return "default"
    try:
        return torch.device(requested).type
    except (RuntimeError, TypeError):
        return str(requested)


class RecordingTorch:
    """Stands in for the ``torch`` module inside the compiled class."""

    def __init__(
        self, device: torch.device, recorder: Recorder, filename: str = ""
    ) -> None:
        self._device = device
        self._recorder = recorder
        self._filename = filename  # the class's: allocations name their line
        for name in ALLOCATORS:
            setattr(self, name, self._wrap(name, getattr(torch, name)))

    def __getattr__(self, name: str) -> Any:
        # Only reached for names not set in __init__: everything but allocators.
        return getattr(torch, name)

    def __repr__(self) -> str:
        return f"<recording torch on {self._device}>"

    def _wrap(self, name: str, real: Callable[..., torch.Tensor]) -> Callable:
        like = name.endswith("_like")

        def allocate(*args: Any, **kwargs: Any) -> torch.Tensor:
            requested = kwargs.pop("device", None)
            if requested is not None or not like:
                kwargs["device"] = self._device
            tensor = real(*args, **kwargs)
            if name in UNINITIALISED:
                # Real torch.empty returns garbage; two runs would never compare
                # equal on what they read from it. Poison it instead, so a read of
                # an unwritten entry is visible and identical in both runs.
                tensor.fill_(False if tensor.dtype == torch.bool else POISON)
            kind = device_kind(requested)
            if requested is None and like and args:
                kind = f"like:{args[0].device.type}"
            caller = sys._getframe(1)
            line = caller.f_lineno if caller.f_code.co_filename == self._filename else 0
            self._recorder.allocation(name, tensor, kind, line)
            return tensor

        allocate.__name__ = name
        allocate.__qualname__ = f"RecordingTorch.{name}"
        return allocate
