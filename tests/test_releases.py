"""The proof on every pre-refactor release, on upstream's own kernel.

For each release from 0.4.6.post5 to 0.5.12.post1 (pinned in ``corpus.WHEELS``)
and each of the four multi-step draft backends it has, with the index kernel cut
out of that release's own wheel:

- the safe ``fix`` changes no allocation, launch, slice or backend call;
- ``--unsafe-fixes`` changes only unsized widths, each by exactly the topk
  factor (:func:`lint_plugin.proof.verdict.judge`);
- where it widened a buffer, the original overruns that buffer on the real kernel
  for every topk > 1 case at the length limit, and the fixed one never does.

Time (issue 10, item 5): the interpreted kernel runs a small grid (``REAL_GRID``),
the reference kernel the larger one (``REFERENCE_GRID``) wherever the release's
kernel has the reference's signature. Releases whose backend class, rewrites and
kernel are all identical to an earlier release's give identical records, so the
proof is run once per distinct combination and reused (the output says so), across
pytest-xdist's workers too (``shared_results``); within one, each class runs once
per case (``proof_memo``: the original is read by both proofs and the overrun count).
A backend a release lacks (aiter before 0.5.1) or cannot be driven is printed,
never skipped silently. Run with ``-s`` for the per-release table.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from corpus import PRE_REFACTOR, attention_dir, speculative_dir
from harness import HarnessError, Params, ReferenceDraftKernel, default_grid
from proof_memo import each_run_once

from lint_plugin.proof.guarded_launch import GuardedDraftKernel
from lint_plugin.proof.kernel import SIGNATURE
from lint_plugin.proof.triton_source import find_kernel, jit_kernel
from lint_plugin.proof.verdict import (
    IDENTICAL,
    WIDENED,
    ClassProof,
    long_sequence_grid,
    prove_class,
    small_grid,
)
from lint_plugin.rewrite import Options, rewrite_text

pytestmark = pytest.mark.corpus
HERE = Path(__file__).resolve().parent
BACKENDS = {
    "flashinfer_backend.py": "FlashInferMultiStepDraftBackend",
    "flashinfer_mla_backend.py": "FlashInferMLAMultiStepDraftBackend",
    "triton_backend.py": "TritonMultiStepDraftBackend",
    "aiter_backend.py": "AiterMultiStepDraftBackend",
}
LONG = long_sequence_grid(topks=(2, 3))[1::4]  # num_seqs 2 at steps 3 (as 2 & 3)
REAL_GRID = [
    Params(2, 1, 3, (4, 9), 12, cuda_graph_max_bs=3, seed=1),
    Params(2, 3, 2, (7, 3), 10, cuda_graph_max_bs=2, seed=2),
    *LONG,
]
REFERENCE_GRID = small_grid(seed=20262)


@dataclass
class BackendResult:
    safe: ClassProof
    unsafe: ClassProof
    reference: tuple[ClassProof, ClassProof] | None
    long_overran: int  # LONG cases (all topk > 1) whose original overran
    long_after: int  # overruns of the fixed class on LONG
    reused_from: str = ""


def fix_text(text: str, unsafe: bool) -> str:
    return rewrite_text(text, "backend.py", Options(unsafe_fixes=unsafe)).text


def _class_dump(text: str, name: str) -> str | None:
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return ast.dump(node)
    return None


def _prove_backend(
    text: str, name: str, kernel_source, safe: str, unsafe: str
) -> BackendResult:
    jitted = jit_kernel(kernel_source, "cpu")
    real = GuardedDraftKernel.factory(jitted)
    with each_run_once() as run:
        results = [
            prove_class(text, fixed, name, REAL_GRID, "cpu", kernel=real)
            for fixed in (safe, unsafe)
        ]
        long_overran = long_after = 0
        if results[1].widened:
            for params in LONG:
                long_overran += bool(run(text, name, params, kernel=real).overruns)
                long_after += len(run(unsafe, name, params, kernel=real).overruns)
        reference = None
        if list(inspect.signature(jitted.fn).parameters) == list(SIGNATURE.parameters):
            reference = tuple(
                prove_class(
                    text,
                    fixed,
                    name,
                    REFERENCE_GRID,
                    "cpu",
                    kernel=ReferenceDraftKernel,
                )
                for fixed in (safe, unsafe)
            )
    return BackendResult(*results, reference, long_overran, long_after)


@pytest.mark.parametrize("version", PRE_REFACTOR)
def test_release_proof(version, shared_results):
    kernel_source = find_kernel(speculative_dir(version))
    folder = attention_dir(version)
    lines, proven = [], 0
    for filename, name in BACKENDS.items():
        path = folder / filename
        text = path.read_text() if path.exists() else ""
        if _class_dump(text, name) is None:
            lines.append(f"  {name}: absent from this release")
            continue
        safe, unsafe = fix_text(text, False), fix_text(text, True)
        key = hashlib.sha256(
            "\0".join(
                [
                    _class_dump(text, name),
                    _class_dump(safe, name) or "",
                    _class_dump(unsafe, name) or "",
                    kernel_source.digest,
                ]
            ).encode()
        ).hexdigest()

        def prove(text=text, name=name, safe=safe, unsafe=unsafe) -> BackendResult:
            proven = _prove_backend(text, name, kernel_source, safe, unsafe)
            proven.reused_from = version
            return proven

        try:
            result = shared_results.get(f"release-proof {key}", prove)
        except HarnessError as exc:
            lines.append(f"  {name}: CANNOT BE DRIVEN: {exc}")
            continue
        s, u = result.safe, result.unsafe
        reused = (
            ""
            if result.reused_from == version
            else f" [same classes and kernel as {result.reused_from}: proof reused]"
        )
        ref = (
            f"; reference kernel: {result.reference[0].cases}+"
            f"{result.reference[1].cases} cases"
            if result.reference
            else "; reference kernel: signature differs (upstream kernel only)"
        )
        lines.append(
            f"  {name}: {s.cases} cases, {s.launches + u.launches} launches compared on the "
            f"real kernel, {s.slices + u.slices} rows compared; safe fix "
            f"{s.verdict}; unsafe fix {u.verdict}; overruns before/after: "
            f"{u.overruns_before}/{u.overruns_after}{ref}{reused}"
        )
        # The safe fix changes nothing at all.
        assert s.proven and set(s.kinds) == {IDENTICAL}, (name, s.failure)
        # The unsafe one only widens by topk, and the fixed class never overruns.
        assert u.proven and set(u.kinds) <= {IDENTICAL, WIDENED}, (name, u.failure)
        assert u.overruns_after == 0
        if u.widened:  # it was unsized: the original overruns at the limit
            assert result.long_overran == len(LONG), (name, result.long_overran)
            assert result.long_after == 0
        if result.reference:
            rs, ru = result.reference
            assert rs.proven and set(rs.kinds) == {IDENTICAL}, (name, rs.failure)
            assert ru.proven and ru.overruns_after == 0, (name, ru.failure)
        proven += 1
    print(f"\n[cpu, interpreted] sglang {version}:")
    print("\n".join(lines))
    assert proven >= 3  # every release has at least three of the four backends


def test_torch_is_the_pinned_cpu_build():
    # The interpreted kernel's results were checked on this pairing (issue 10).
    assert torch.__version__.split("+")[0] == "2.13.0"


def cuda_proof(versions: list[str]) -> list[str]:
    """The compiled twin (run in a child whose triton compiles): the full grid on
    CUDA for each backend of ``versions``; returns one line per backend."""
    grid = default_grid(seed=20263) + long_sequence_grid()
    lines = []
    for version in versions:
        jitted = jit_kernel(find_kernel(speculative_dir(version)), "cuda")
        real = GuardedDraftKernel.factory(jitted)
        for filename, name in BACKENDS.items():
            path = attention_dir(version) / filename
            text = path.read_text() if path.exists() else ""
            if _class_dump(text, name) is None:
                continue
            safe = prove_class(
                text, fix_text(text, False), name, grid, "cuda", kernel=real
            )
            unsafe = prove_class(
                text, fix_text(text, True), name, grid, "cuda", kernel=real
            )
            assert set(safe.kinds) == {IDENTICAL}, (version, name, safe.failure)
            assert unsafe.proven and unsafe.overruns_after == 0, (
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
from test_releases import cuda_proof
print("\\n".join(cuda_proof({versions!r})))
"""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_release_proof_cuda():
    """Oldest, newest and the first release of each backend shape, compiled."""
    versions = ["0.4.6.post5", "0.4.8", "0.5.3", "0.5.3.post2", "0.5.12.post1"]
    for version in versions:  # download in this process, where failures show
        speculative_dir(version)
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    code = CUDA_CHILD.format(tests=str(HERE), versions=versions)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    print("\n[cuda, compiled]\n" + done.stdout)
    assert done.stdout.count("MultiStepDraftBackend") >= 3 * len(versions)
