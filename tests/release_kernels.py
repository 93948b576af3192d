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
from pathlib import Path

from corpus import WHEELS, attention_dir

from lint_plugin.proof.locate import locate_kernel
from lint_plugin.proof.triton_source import KernelSource

# Every pinned release's triton backend launches the kernel.
BACKEND = "triton_backend.py"


@dataclass(frozen=True)
class ReleaseKernel:
    versions: tuple[str, ...]  # every pinned release running this very code
    source: KernelSource  # the first of them's
    digest: str  # the source's (a property that parses its file on each read)

    @property
    def name(self) -> str:
        first, last = self.versions[0], self.versions[-1]
        return first if first == last else f"{first}..{last}"


@functools.lru_cache(maxsize=256)
def located(backend: Path) -> tuple[KernelSource, str]:
    """The kernel the backend file ``backend`` launches, located in its tree,
    and its digest: once per process (test_releases locates every backend of
    every release, the triton ones among them)."""
    source = locate_kernel(backend)
    return source, source.digest


def kernel_of(version: str) -> KernelSource:
    """The kernel ``version``'s triton backend launches, located in its tree."""
    return located(attention_dir(version) / BACKEND)[0]


@functools.cache
def distinct_kernels() -> tuple[ReleaseKernel, ...]:
    """The kernels of all pinned releases, one per distinct code (by digest)."""
    groups: dict[str, list[tuple[str, KernelSource]]] = {}
    for version in WHEELS:
        source, digest = located(attention_dir(version) / BACKEND)
        groups.setdefault(digest, []).append((version, source))
    return tuple(
        ReleaseKernel(tuple(v for v, _ in found), found[0][1], digest)
        for digest, found in groups.items()
    )
