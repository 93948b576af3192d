"""Each pinned release's own index kernel, and the distinct kernels among them.

Where the kernel lives moves with the release (``speculative/eagle_utils.py``
before 0.5.3, ``spec_utils.py`` to 0.5.12.post1, ``triton_ops/cache_locs.py`` in
0.5.13, ``sglang/kernels/ops/speculative/cache_locs.py`` in 0.5.23). Issue 19
gives ``prove`` a locator of its own; this one, for the tests, is the one function
to swap for it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from corpus import WHEELS, tree

from lint_plugin.proof.triton_source import KERNEL, kernel_from_text

KNOWN_PLACES = (
    "sglang/kernels/ops/speculative/cache_locs.py",
    "sglang/srt/speculative/triton_ops/cache_locs.py",
    "sglang/srt/speculative/spec_utils.py",
    "sglang/srt/speculative/eagle_utils.py",
)


def locate_kernel(root: Path) -> Path | None:
    """The file under ``root`` (a folder holding ``sglang/``) defining the kernel."""
    for place in KNOWN_PLACES:
        path = root / place
        if path.is_file() and f"def {KERNEL}(" in path.read_text("utf-8"):
            return path
    return None


@dataclass(frozen=True)
class ReleaseKernel:
    versions: tuple[str, ...]  # every pinned release running this very code
    path: Path  # the first of them's file
    text: str
    digest: str

    @property
    def name(self) -> str:
        first, last = self.versions[0], self.versions[-1]
        return first if first == last else f"{first}..{last}"


def kernel_of(version: str) -> Path:
    found = locate_kernel(tree(version))
    if found is None:  # 0.5.23 keeps it outside srt/: the whole package
        found = locate_kernel(tree(version, whole=True))
    assert found is not None, f"sglang {version}: no {KERNEL}"
    return found


@functools.cache
def distinct_kernels() -> tuple[ReleaseKernel, ...]:
    """The kernels of all pinned releases, one per distinct code (by digest)."""
    groups: dict[str, list[tuple[str, Path]]] = {}
    for version in WHEELS:
        path = kernel_of(version)
        digest = kernel_from_text(path.read_text("utf-8"), str(path)).digest
        groups.setdefault(digest, []).append((version, path))
    return tuple(
        ReleaseKernel(
            tuple(v for v, _ in found), found[0][1], found[0][1].read_text(), digest
        )
        for digest, found in groups.items()
    )
