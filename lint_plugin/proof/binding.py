"""One launch of the index kernel, bound by parameter name to the kernel's own
signature.

The kernel's signature moves with the release: 0.4.6.post5 takes ``num_seqs``
and ``topk`` and no ``page_size``; 0.4.7.post1 to 0.5.13 take the 13 arguments
``req_pool_indices .. page_size``; 0.5.23 calls ``pool_len`` ``row_stride`` and
adds ``window_size``, ``sink_size``, ``NUM_STEPS`` (token blocks on the step
axis), ``ENTRY_PAGE_SIZE``, ``v2p`` and ``TRANSLATE``. A backend passes them
positionally and by keyword; binding the call to the signature of the kernel it
launches is what gives each value its role, whatever the release.

A call that does not bind raises ``TypeError``, as the jitted kernel would: it
is the backend's error, recorded like any other. What the harness cannot
re-lay faithfully (translated or page-granular reads) is a HarnessError.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import torch

from .errors import HarnessError

# Tensor arguments whose owner (not contents) a launch record names.
INPUTS = ("req_pool_indices", "req_to_token", "paged_kernel_lens", "positions")
# A parameter renamed across releases, recorded under one name so launches of
# two releases' kernels compare: both are req_to_token's row stride.
ALIASES = {"row_stride": "pool_len"}


@dataclass(frozen=True)
class BoundLaunch:
    """The arguments of one launch by parameter name (defaults applied)."""

    grid: tuple[int, int, int]
    arguments: dict[str, Any]
    defaults: dict[str, Any]  # the signature's declared defaults

    def __getitem__(self, name: str) -> Any:
        return self.arguments[self.role(name)]

    def role(self, name: str) -> str:
        """The parameter that plays ``name``'s role in this kernel."""
        if name in self.arguments:
            return name
        for param, alias in ALIASES.items():
            if alias == name and param in self.arguments:
                return param
        raise HarnessError(f"the kernel has no {name} parameter")

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self.arguments[self.role(name)]
        except HarnessError:
            return default

    @property
    def rows(self) -> int:
        """Step rows written: grid axis 0, or ``NUM_STEPS`` when axis 0 also
        carries token blocks (0.5.23)."""
        steps = int(self.get("NUM_STEPS", 0) or 0)
        return steps if steps else self.grid[0]

    @property
    def window(self) -> tuple[int, int]:
        return int(self.get("window_size", 0) or 0), int(self.get("sink_size", 0) or 0)

    def ints(self) -> dict[str, int]:
        """Every integer argument, under its role's name."""
        found = {}
        for name, value in self.arguments.items():
            if isinstance(value, bool) or not isinstance(value, int):
                continue
            found[ALIASES.get(name, name)] = int(value)
        return found

    def scalars(self) -> tuple[tuple[str, Any], ...]:
        """What a launch record compares: every non-tensor argument not left at
        its declared default (so a launch of 0.5.23's kernel with no window is
        the launch 0.5.13's kernel gets), under its role's name."""
        found = []
        for name, value in self.arguments.items():
            if isinstance(value, torch.Tensor):
                continue
            if name in self.defaults and value == self.defaults[name]:
                continue
            if isinstance(value, bool):
                value = bool(value)
            elif isinstance(value, int):
                value = int(value)
            elif value is not None:
                value = repr(value)
            found.append((ALIASES.get(name, name), value))
        return tuple(found)

    def refuse_untranslatable(self) -> None:
        """Reads through a page table or page-granular rows: the guard rows re-lay
        req_to_token token by token, so these launches are not driven."""
        if self.get("TRANSLATE", False) or self.get("v2p", None) is not None:
            raise HarnessError("the launch translates ids through v2p (not modelled)")
        if int(self.get("ENTRY_PAGE_SIZE", 1) or 1) != 1:
            raise HarnessError("the launch reads page-granular rows (not modelled)")


def bind_launch(
    signature: inspect.Signature,
    grid: tuple[int, int, int],
    args: tuple,
    kwargs: dict,
) -> BoundLaunch:
    """Bind ``kernel[grid](*args, **kwargs)`` to ``signature``; TypeError (as
    the jitted kernel raises it) when the call does not fit."""
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    defaults = {
        name: p.default
        for name, p in signature.parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    return BoundLaunch(tuple(grid), dict(bound.arguments), defaults)
