"""The proof on every pinned release, each on its own kernel.

For each release from 0.4.6.post5 to 0.5.23 (pinned in ``corpus.WHEELS``) and
each of the four multi-step draft backends it has, with the index kernel its
backend file imports, found in that release's own tree:

- the kernel is the release's (``eagle_utils.py`` up to 0.5.2, ``spec_utils.py``
  up to 0.5.12.post1, ``triton_ops/cache_locs.py`` in 0.5.13,
  ``kernels/ops/speculative/cache_locs.py`` in 0.5.23);
- the whole class is driven (``__init__`` and every entry point) and the safe
  ``fix`` changes no record;
- ``--unsafe-fixes`` is proven against the original with its KVI003 sites
  widened by topk, and the fixed class never overruns;
- where it widened a buffer, the original overruns that buffer on the real kernel
  for every topk > 1 case at the length limit.

Then upstream's own refactor, 0.5.12.post1 -> 0.5.13, is proven with only the
FlashInfer graph row widened (FlashInfer MLA refuses topk > 1, so its widening
changes nothing where it runs), and 0.5.13 -> 0.5.23 is driven and its
differences are printed.

Time: releases whose class, rewrites and kernel are identical to an earlier
release's give identical records, so each distinct combination is proven once
per session, across pytest-xdist's workers too (``shared_results``), and
reused (the output says so; a backend file shipped again byte for byte is
found by its text, without rewriting it again); equal runs share their record
(``run.remembered_run``: the two refactor proofs run ``prove``'s own grid, so
the wrong rewrites of test_proof_mutants and ``prove`` in test_prove reuse
their original sides) and equal launches of the interpreted kernel share one
execution (``guarded_launch.LaunchMemo``). Run with ``-s`` for the table.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from corpus import LATEST, NEW, OLD, RELEASES, attention_dir
from release_kernels import located

from lint_plugin.fix.rewrite import Options, rewrite_text
from lint_plugin.proof.grid import Params, long_sequence_grid, proof_grid
from lint_plugin.proof.guarded_launch import GuardedDraftKernel
from lint_plugin.proof.thresholds import class_grid
from lint_plugin.proof.triton_source import jit_kernel
from lint_plugin.proof.verdict import (
    GUARDED,
    IDENTICAL,
    WIDENED,
    ClassProof,
    prove_class,
)

pytestmark = pytest.mark.corpus
# prove's grid on the real classes of 0.5.12.post1, 0.5.13 and 0.5.23, with their
# own kernels, is what test_proof_mutants, test_prove and the refactor proofs of
# test_releases all run: one pytest-xdist worker takes the three (--dist
# loadgroup), so each original side runs once (run.remembered_run) and each
# interpreted launch once (guarded_launch.LaunchMemo) instead of once per worker.
# (pytest 9 keeps a node's id in ``_id``: xdist 3.8's loadgroup, which sets
# ``_nodeid``, needs tests/conftest.py to set the id before the mark counts.)
PROVE_GRID = pytest.mark.xdist_group("prove-grid")
HERE = Path(__file__).resolve().parents[1]  # tests/, where the helpers are
FOLDER = Path(__file__).resolve().parent  # this module, for a child to import
BACKENDS = {
    "flashinfer_backend.py": "FlashInferMultiStepDraftBackend",
    "flashinfer_mla_backend.py": "FlashInferMLAMultiStepDraftBackend",
    "triton_backend.py": "TritonMultiStepDraftBackend",
    "aiter_backend.py": "AiterMultiStepDraftBackend",
}
LONG = long_sequence_grid(topks=(2, 3))[1::4]  # num_seqs 2 at steps 3 (as 2 & 3)
REAL_GRID = [
    Params(2, 1, 3, (4, 9), 12, cuda_graph_max_bs=3, seed=1),
    Params(2, 3, 2, (7, 3), 10, page_size=4, cuda_graph_max_bs=5, seed=2),
    *LONG,
]


def kernel_layout(version: str) -> str:
    """Where each release keeps the index kernel."""
    parts = tuple(int(x) for x in version.split(".")[:3] if x.isdigit())
    if parts >= (0, 5, 23):
        return "sglang/kernels/ops/speculative/cache_locs.py"
    if parts >= (0, 5, 13):
        return "sglang/srt/speculative/triton_ops/cache_locs.py"
    if parts >= (0, 5, 3):
        return "sglang/srt/speculative/spec_utils.py"
    return "sglang/srt/speculative/eagle_utils.py"


@dataclass
class BackendResult:
    safe: ClassProof
    unsafe: ClassProof
    long_overran: int  # LONG cases (all topk > 1) whose original overran
    long_after: int  # overruns of the fixed class on LONG
    reused_from: str = ""


_KERNELS: dict[str, tuple] = {}  # by kernel file, then by digest: one jit each


@functools.lru_cache(maxsize=64)  # many releases ship a backend file unchanged
def fix_text(text: str, unsafe: bool) -> str:
    return rewrite_text(text, "backend.py", Options(unsafe_fixes=unsafe)).text


@functools.lru_cache(maxsize=256)  # asked twice per text; texts recur across releases
def _class_dump(text: str, name: str) -> str | None:
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return ast.dump(node)
    return None


def real_kernel(path: Path, device: str = "cpu"):
    """The kernel ``path`` imports, located in its own tree, jitted once per
    distinct code; and its digest."""
    source, digest = located(path)
    key = f"{digest} {device}"
    if key not in _KERNELS:
        jitted = jit_kernel(source, device)
        _KERNELS[key] = GuardedDraftKernel.factory(jitted, digest)
    return source, digest, _KERNELS[key]


def _prove_backend(text: str, name: str, kernel, safe: str, unsafe: str):
    results = [
        prove_class(text, fixed, name, REAL_GRID, "cpu", kernel=kernel)
        for fixed in (safe, unsafe)
    ]
    long_overran = long_after = 0
    if results[1].widened:
        from lint_plugin.proof.drive import run

        for params in LONG:
            long_overran += bool(run(text, name, params, kernel=kernel).overruns)
            long_after += len(run(unsafe, name, params, kernel=kernel).overruns)
    return BackendResult(*results, long_overran, long_after)


@pytest.mark.parametrize("version", RELEASES)
def test_release_proof(version, shared_results):
    folder = attention_dir(version)
    lines, proven = [], 0
    for filename, name in BACKENDS.items():
        path = folder / filename
        text = path.read_text() if path.exists() else ""
        if _class_dump(text, name) is None:
            lines.append(f"  {name}: absent from this release")
            continue
        kernel_source, digest, kernel = real_kernel(path)
        # The release's own kernel, found through the backend's import.
        assert kernel_source.path.endswith(kernel_layout(version)), kernel_source.path

        def by_classes(text=text, name=name, kernel=kernel, digest=digest):
            safe, unsafe = fix_text(text, False), fix_text(text, True)
            key = hashlib.sha256(
                "\0".join(
                    [
                        _class_dump(text, name),
                        _class_dump(safe, name) or "",
                        _class_dump(unsafe, name) or "",
                        digest,
                    ]
                ).encode()
            ).hexdigest()

            def prove():
                proven = _prove_backend(text, name, kernel, safe, unsafe)
                proven.reused_from = version
                return proven

            return shared_results.get(f"release-proof {key}", prove)

        # A file another release ships byte for byte has the same fixes, so the
        # same classes: its proof is found without rewriting the file again.
        same_file = hashlib.sha256("\0".join([text, name, digest]).encode())
        result = shared_results.get(
            f"release-proof-file {same_file.hexdigest()}", by_classes
        )
        s, u = result.safe, result.unsafe
        reused = (
            ""
            if result.reused_from == version
            else f" [same classes and kernel as {result.reused_from}: proof reused]"
        )
        lines.append(
            f"  {name} on {kernel_layout(version)} ({digest}): "
            f"{s.cases} cases, {s.launches + u.launches} launches, "
            f"{s.slices + u.slices} rows compared; safe fix {s.verdict}; unsafe "
            f"fix {u.verdict}; overruns before/after {u.overruns_before}/"
            f"{u.overruns_after}; refused by __init__ {u.refused}{reused}"
        )
        # Driven, whole: never "cannot drive", every changed line ran.
        assert s.no_difference and set(s.kinds) == {IDENTICAL}, (
            name,
            s.verdict,
            s.failure,
        )
        assert u.no_difference and set(u.kinds) <= {IDENTICAL, WIDENED}, (
            name,
            u.verdict,
            u.failure,
            [x.describe() for x in u.unran],
        )
        assert u.overruns_after == 0
        if u.widened:  # it was unsized: the original overruns at the limit
            assert result.long_overran == len(LONG), (name, result.long_overran)
            assert result.long_after == 0
        proven += 1
    print(f"\n[cpu, interpreted] sglang {version}:")
    print("\n".join(lines))
    assert proven >= 3  # every release has at least three of the four backends


@PROVE_GRID
@pytest.mark.parametrize("filename", list(BACKENDS))
def test_upstream_refactor_is_proven(filename):
    """0.5.12.post1 -> 0.5.13, each on its own kernel, graph entry points mapped:
    only FlashInfer's graph row is widened where the classes run."""
    name = BACKENDS[filename]
    old, new = attention_dir(OLD) / filename, attention_dir(NEW) / filename
    _, _, old_kernel = real_kernel(old)
    _, _, new_kernel = real_kernel(new)
    proof = prove_class(
        old, new, name, proof_grid(), kernel=old_kernel, kernel_after=new_kernel
    )
    print(f"\n{OLD} -> {NEW} {name}: {proof.verdict}; {proof.notes}")
    assert proof.no_difference, (proof.verdict, proof.failure, proof.unran)
    assert any("graph entry points mapped" in note for note in proof.notes)
    if filename == "flashinfer_backend.py":
        assert proof.widened and proof.overruns_before and not proof.overruns_after
        text = old.read_text().splitlines()
        (site,) = proof.widened_lines
        assert "self.cuda_graph_kv_indices = torch.zeros(" in text[site - 1]
    else:
        # MLA: __init__ refuses topk > 1, so nothing is wider where it runs.
        assert set(proof.kinds) == {IDENTICAL}, proof.verdict
    if filename == "flashinfer_mla_backend.py":
        assert proof.refused == sum(p.topk > 1 for p in proof_grid())
        # How few cases got past __init__ is in the verdict, not only a count.
        driven = proof.cases - proof.refused
        assert f"driven past __init__ in {driven} of {proof.cases} cases" in (
            proof.verdict
        )


@PROVE_GRID
@pytest.mark.parametrize("filename", list(BACKENDS))
def test_latest_release_is_driven_and_its_differences_shown(filename):
    """0.5.13 -> 0.5.23: both on their own kernels, every class driven; the
    verdict (and its first difference) is printed, never "cannot drive"."""
    name = BACKENDS[filename]
    old, new = attention_dir(NEW) / filename, attention_dir(LATEST) / filename
    _, _, old_kernel = real_kernel(old)
    new_source, _, new_kernel = real_kernel(new)
    assert "window_size" in new_source.parameters
    grid = proof_grid(windows=True)
    proof = prove_class(
        old, new, name, grid, kernel=old_kernel, kernel_after=new_kernel
    )
    print(f"\n{NEW} -> {LATEST} {name}: {proof.verdict}")
    print(f"  {proof.failure or ''}")
    for line in proof.unran:
        print(f"  never ran: {line.describe()}")
    assert proof.cannot_drive is None, proof.cannot_drive
    assert proof.cases or proof.failure


def test_torch_is_the_pinned_cpu_build():
    # The interpreted kernel's results were checked on this pairing (issue 10).
    assert torch.__version__.split("+")[0] == "2.13.0"


def cuda_proof(versions: list[str]) -> list[str]:
    """The compiled twin (run in a child whose triton compiles): on CUDA, each
    backend of ``versions`` on upstream's compiled kernel over ``prove``'s own
    full grid (page size > 1, the wall, draft windows where the kernel has
    them, token blocks) and the corners its code holds, as ``prove`` runs on
    CUDA; returns one line per backend."""
    lines = []
    for version in versions:
        for filename, name in BACKENDS.items():
            path = attention_dir(version) / filename
            text = path.read_text() if path.exists() else ""
            if _class_dump(text, name) is None:
                continue
            source, _, real = real_kernel(path, "cuda")
            windows = "window_size" in source.parameters
            base = proof_grid(full=True, windows=windows)
            fixed = {unsafe: fix_text(text, unsafe) for unsafe in (False, True)}
            grids = {
                unsafe: class_grid(
                    base, text, after, name, [source], windows=windows, full=True
                )
                for unsafe, after in fixed.items()
            }
            safe = prove_class(
                text, fixed[False], name, grids[False], "cuda", kernel=real
            )
            unsafe = prove_class(
                text, fixed[True], name, grids[True], "cuda", kernel=real
            )
            assert safe.no_difference, (version, name, safe.failure)
            assert set(safe.kinds) - {IDENTICAL} <= {GUARDED}, (version, name)
            # At the context wall a helper-sized row is overrun (the envelope);
            # within upstream's contract the fixed class never is.
            assert unsafe.no_difference and unsafe.overruns_after_in_contract == 0, (
                version,
                name,
                unsafe.failure,
            )
            lines.append(
                f"{version} {name}: {safe.cases} cases, "
                f"{safe.launches + unsafe.launches} launches compared; safe "
                f"{safe.verdict}; unsafe {unsafe.verdict}; overruns before/after "
                f"{unsafe.overruns_before}/{unsafe.overruns_after}"
            )
    return lines


CUDA_CHILD = """
import sys
sys.path.insert(0, {tests!r})
sys.path.insert(0, {folder!r})
from test_releases import cuda_proof
print("\\n".join(cuda_proof({versions!r})))
"""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_release_proof_cuda():
    """Oldest, newest and the first release of each backend shape, compiled."""
    versions = ["0.4.6.post5", "0.4.8", "0.5.3", "0.5.3.post2", OLD, NEW, LATEST]
    for version in versions:  # download in this process, where failures show
        attention_dir(version)
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    code = CUDA_CHILD.format(tests=str(HERE), folder=str(FOLDER), versions=versions)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    print("\n[cuda, compiled]\n" + done.stdout)
    assert done.stdout.count("MultiStepDraftBackend") >= 3 * len(versions)
