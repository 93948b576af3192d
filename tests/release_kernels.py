"""Each pinned release's own index kernel, and the distinct kernels among them.

Found the way ``prove`` finds it (:func:`lint_plugin.proof.locate.locate_kernel`):
by following a backend's own import of ``generate_draft_decode_kv_indices`` in
the release's tree (``speculative/eagle_utils.py`` before 0.5.3, ``spec_utils.py``
to 0.5.12.post1, ``triton_ops/cache_locs.py`` in 0.5.13,
``sglang/kernels/ops/speculative/cache_locs.py`` in 0.5.23, re-exported by
``spec_utils``), so the extent the tests derive is from the very kernel the
harness runs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from corpus import WHEELS, attention_dir

from lint_plugin.proof.locate import locate_kernel
from lint_plugin.proof.triton_source import KernelSource

# Every pinned release's triton backend launches the kernel.
BACKEND = "triton_backend.py"


@dataclass(frozen=True)
class ReleaseKernel:
    versions: tuple[str, ...]  # every pinned release running this very code
    source: KernelSource  # the first of them's

    @property
    def digest(self) -> str:
        return self.source.digest

    @property
    def name(self) -> str:
        first, last = self.versions[0], self.versions[-1]
        return first if first == last else f"{first}..{last}"


@functools.cache
def kernel_of(version: str) -> KernelSource:
    """The kernel ``version``'s triton backend launches, located in its tree."""
    return locate_kernel(attention_dir(version) / BACKEND)


@functools.cache
def distinct_kernels() -> tuple[ReleaseKernel, ...]:
    """The kernels of all pinned releases, one per distinct code (by digest)."""
    groups: dict[str, list[tuple[str, KernelSource]]] = {}
    for version in WHEELS:
        source = kernel_of(version)
        groups.setdefault(source.digest, []).append((version, source))
    return tuple(
        ReleaseKernel(tuple(v for v, _ in found), found[0][1])
        for found in groups.values()
    )
