"""Upstream's own index kernel in the harness, and the reference proven against it.

``generate_draft_decode_kv_indices`` is cut out of the pinned 0.5.12.post1 wheel's
``spec_utils.py`` and handed to ``triton.jit`` (never importing sglang): on the CPU
it runs in triton's interpreter, on CUDA compiled (in a child process, since the
mode is chosen when triton is imported; see lint_plugin/proof/triton_source.py).
The reference kernel (``lint_plugin/proof/kernel.py``) must write exactly what
upstream's writes: same rows, same kv_indptr, same launch record, over random
launches with topk 1..8, num_steps 1..8, several seq_lens and page sizes 1 and > 1.

Run with ``-s`` to see how many launches were compared.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from corpus import LATEST, NEW, OLD, attention_dir, speculative_dir
from harness import (
    HarnessError,
    KernelNotFound,
    Recorder,
    ReferenceDraftKernel,
    locate_kernel,
)

from lint_plugin.proof.guarded_launch import GuardedDraftKernel
from lint_plugin.proof.standins import next_power_of_2
from lint_plugin.proof.triton_source import find_kernel, jit_kernel, kernel_from_text
from lint_plugin.runtime import draft_kv_indices_used_len

pytestmark = pytest.mark.corpus
HERE = Path(__file__).resolve().parents[1]  # tests/, where the helpers are
FOLDER = Path(__file__).resolve().parent  # this module, for a child to import
CPU_LAUNCHES = 48  # the interpreter takes ~0.1 s per launch of this size


def upstream_kernel(device: str):
    return jit_kernel(find_kernel(speculative_dir(OLD)), device)


def random_launch(rng: random.Random, n: int) -> dict:
    """One launch as a backend makes it; every 3rd one on a row narrower than
    what it writes (the bug's shape), every 2nd with page_size > 1."""
    topk, steps = rng.randint(1, 8), rng.randint(1, 8)
    num_seqs = rng.randint(1, 4)
    seq_lens = [rng.choice((1, 2, 7, 16, 33, 64, 130)) for _ in range(num_seqs)]
    page_size = rng.choice((4, 16, 64)) if n % 2 else 1
    new_pages = (page_size - 1 + steps + page_size - 1) // page_size + 1
    pool_len = max(seq_lens) + topk * new_pages * page_size + topk * steps + 8
    used = draft_kv_indices_used_len(sum(seq_lens), topk, num_seqs * topk, steps)
    width = used if n % 3 else max(1, used - rng.randint(1, used))
    return {
        "grid": (steps, num_seqs, topk),
        "seq_lens": seq_lens,
        "page_size": page_size,
        "pool_len": pool_len,
        "width": width,
        "seed": rng.randrange(2**31),
    }


def launch(kernel, case: dict, device: str):
    """Run ``kernel`` on fresh buffers for ``case``; (kv_indices, kv_indptr, Launch)."""
    steps, num_seqs, topk = case["grid"]
    gen = torch.Generator().manual_seed(case["seed"])
    pool_rows = num_seqs + 2
    req_to_token = torch.randperm(pool_rows * case["pool_len"], generator=gen) + 1
    req_to_token = req_to_token.to(torch.int32).reshape(pool_rows, -1).to(device)
    rows = torch.randperm(pool_rows, generator=gen)[:num_seqs].to(device)
    lens = torch.tensor(case["seq_lens"], device=device)
    positions = lens.repeat_interleave(topk)
    kv_indices = torch.zeros((steps, case["width"]), dtype=torch.int32, device=device)
    kv_indptr = torch.zeros((steps, num_seqs * topk + 1), dtype=torch.int32).to(device)
    recorder = Recorder()
    for tensor, name in ((kv_indices, "kv_indices"), (kv_indptr, "kv_indptr")):
        recorder.name_tensor(tensor, name)
    kernel(recorder)[case["grid"]](
        rows, req_to_token, lens, kv_indices, kv_indptr, positions,
        case["pool_len"], kv_indices.shape[1], kv_indptr.shape[1],
        next_power_of_2(num_seqs), next_power_of_2(steps),
        next_power_of_2(num_seqs * topk), case["page_size"],
    )  # fmt: skip
    return kv_indices.cpu(), kv_indptr.cpu(), recorder.record.launches[-1]


def differential(device: str, count: int, seed: int = 20261) -> tuple[int, int, int]:
    """Compare reference and upstream on ``count`` random launches; returns
    (launches, launches with page_size > 1, launches that overran)."""
    real = GuardedDraftKernel.factory(upstream_kernel(device))
    rng = random.Random(seed)
    paged = overran = 0
    for n in range(count):
        case = random_launch(rng, n)
        ref = launch(ReferenceDraftKernel, case, device)
        got = launch(real, case, device)
        assert torch.equal(got[0], ref[0]), (case, "kv_indices rows differ")
        assert torch.equal(got[1], ref[1]), (case, "kv_indptr differs")
        assert got[2] == ref[2], (case, got[2], ref[2])
        paged += case["page_size"] > 1 and case["grid"][2] > 1
        overran += bool(got[2].kv_indices.overrun_rows())
    return count, paged, overran


LAYOUTS = {
    "0.4.6.post5": "sglang/srt/speculative/eagle_utils.py",
    OLD: "sglang/srt/speculative/spec_utils.py",
    NEW: "sglang/srt/speculative/triton_ops/cache_locs.py",
    LATEST: "sglang/kernels/ops/speculative/cache_locs.py",
}


@pytest.mark.parametrize("version", list(LAYOUTS))
def test_each_release_kernel_is_located_through_the_backends_import(version):
    """The one API the harness and the symbolic extent share: path, digest,
    source, name and the ``def`` node of the kernel the backend launches."""
    for backend in ("flashinfer_backend.py", "triton_backend.py"):
        source = locate_kernel(attention_dir(version) / backend)
        assert source.path.endswith(LAYOUTS[version]), source.path
        assert source.located_by.startswith("imported by sglang/srt/layers/attention/")
        assert source.name == "generate_draft_decode_kv_indices"
        assert source.node.name == source.name and source.node.lineno > 1
        assert f"def {source.name}(" in source.source
        assert len(source.digest) == 12
    if version == LATEST:  # 0.5.23: re-exported by spec_utils, windowed signature
        assert "spec_utils.py" in source.located_by
        assert source.parameters[6] == "row_stride"
        assert {"window_size", "sink_size", "NUM_STEPS", "TRANSLATE"} <= set(
            source.parameters
        )
        assert [n.name for n in source.helper_nodes] == [
            "_translate_token_ids",
            "_load_token_ids",
        ]


def test_a_tree_without_the_kernel_is_named(tmp_path):
    backend = tmp_path / "sglang/srt/layers/attention/flashinfer_backend.py"
    backend.parent.mkdir(parents=True)
    backend.write_text(
        "from sglang.srt.speculative.spec_utils import "
        "generate_draft_decode_kv_indices\n"
    )
    with pytest.raises(KernelNotFound, match=r"sglang\.srt\.speculative\.spec_utils"):
        locate_kernel(backend)
    with pytest.raises(KernelNotFound, match="not inside an sglang/ package"):
        locate_kernel(tmp_path / "elsewhere.py")


def test_latest_kernel_without_a_window_writes_what_the_reference_writes():
    """0.5.23's kernel, bound by name (``row_stride``, defaults for the window,
    NUM_STEPS, paging and translation), against the reference: same rows."""
    source = locate_kernel(attention_dir(LATEST) / "triton_backend.py")
    real = GuardedDraftKernel.factory(jit_kernel(source, "cpu"))
    rng = random.Random(20264)
    for n in range(4):  # page size 1 and > 1, a row wide enough and a narrow one
        case = random_launch(rng, n)
        ref = launch(ReferenceDraftKernel, case, "cpu")
        got = launch(real, case, "cpu")
        assert torch.equal(got[0], ref[0]) and torch.equal(got[1], ref[1]), case
        assert got[2] == ref[2], (case, got[2], ref[2])


def windowed_rows(req_to_token, rows, seq_lens, topk, steps, window, sink):
    """The draft window's layout written the obvious way: per branch, the first
    min(sink, seq_len) slots, then the most recent up to window + sink in all,
    then that branch's i + 1 draft slots."""
    indices = []
    cap = window + sink
    for i in range(steps):
        row = []
        for b, seq_len in enumerate(seq_lens):
            slots = req_to_token[rows[b]].tolist()
            kept = min(seq_len, cap)
            head = min(sink, seq_len)
            prefix = slots[:head] + slots[seq_len - (kept - head) : seq_len]
            for t in range(topk):
                row += prefix + slots[seq_len + t * steps :][: i + 1]
        indices.append(row)
    return indices


def test_latest_kernel_writes_the_draft_window():
    source = locate_kernel(attention_dir(LATEST) / "triton_backend.py")
    jitted = jit_kernel(source, "cpu")
    seq_lens, topk, steps, window, sink = [3, 19, 11], 2, 3, 6, 2
    pool_len = max(seq_lens) + topk * steps + 4
    req_to_token = (torch.randperm(5 * pool_len) + 1).to(torch.int32).reshape(5, -1)
    rows = torch.tensor([4, 0, 2])
    lens = torch.tensor(seq_lens)
    positions = lens.repeat_interleave(topk)
    expected = windowed_rows(
        req_to_token, rows.tolist(), seq_lens, topk, steps, window, sink
    )
    width = max(len(r) for r in expected)
    kv_indices = torch.zeros((steps, width), dtype=torch.int32)
    kv_indptr = torch.zeros((steps, len(seq_lens) * topk + 1), dtype=torch.int32)
    recorder = Recorder()
    GuardedDraftKernel(recorder, jitted)[(steps, len(seq_lens), topk)](
        rows, req_to_token, lens, kv_indices, kv_indptr, positions, pool_len,
        width, kv_indptr.shape[1], 4, 4, 8, 1, window, sink,
    )  # fmt: skip
    for i in range(steps):
        used = topk * sum(min(s, window + sink) for s in seq_lens) + len(
            seq_lens
        ) * topk * (i + 1)
        assert len(expected[i]) == used
        assert kv_indices[i, :used].tolist() == expected[i]
        assert int(kv_indptr[i, -1]) == used
    # The reference knows no window: it refuses, never guesses.
    with pytest.raises(HarnessError, match="no draft window"):
        ReferenceDraftKernel(Recorder())[(steps, len(seq_lens), topk)](
            rows, req_to_token, lens, kv_indices, kv_indptr, positions, pool_len,
            width, kv_indptr.shape[1], 4, 4, 8, 1, window, sink,
        )  # fmt: skip


def test_kernel_is_cut_from_the_wheel_and_interpreted():
    source = find_kernel(speculative_dir(OLD))
    assert source.filename.endswith("sglang/srt/speculative/spec_utils.py")
    assert source.functions == ("generate_draft_decode_kv_indices",)
    assert dict(source.aliases) == {"tl": "triton.language", "triton": "triton"}
    from triton.runtime.interpreter import InterpretedFunction

    assert isinstance(upstream_kernel("cpu"), InterpretedFunction)
    assert "sglang" not in sys.modules


KERNEL_TEXTS = {
    "helper": (
        "import triton\nimport triton.language as tl\n\n"
        "@triton.jit\ndef _twice(x):\n    return x * 2\n\n"
        "@triton.jit\ndef generate_draft_decode_kv_indices(a, n: tl.constexpr):\n"
        "    tl.store(a, _twice(tl.load(a)))\n",
        ("_twice", "generate_draft_decode_kv_indices"),
    ),
    "unknown global": (
        "import triton\nimport triton.language as tl\nBLOCK = 4\n\n"
        "@triton.jit\ndef generate_draft_decode_kv_indices(a):\n"
        "    tl.store(a, tl.arange(0, BLOCK))\n",
        "BLOCK",
    ),
    "absent": ("import triton\n", "no top-level def"),
}


@pytest.mark.parametrize("name", list(KERNEL_TEXTS))
def test_kernel_loader_takes_helpers_and_refuses_unknown_names(name):
    text, expected = KERNEL_TEXTS[name]
    if isinstance(expected, tuple):
        assert kernel_from_text(text, "k.py").functions == expected
    else:
        with pytest.raises(HarnessError, match=expected):
            kernel_from_text(text, "k.py")


def test_reference_equals_upstream_kernel_cpu():
    launches, paged, overran = differential("cpu", CPU_LAUNCHES)
    print(
        f"\n[cpu, interpreted] reference == upstream {OLD} kernel on {launches} "
        f"random launches ({paged} with page_size > 1 and topk > 1, {overran} "
        "overrunning a narrow row)"
    )
    assert paged and overran


def test_guard_counts_an_overrun_and_spares_the_next_row():
    """A row too narrow for what the kernel writes: on a GPU row 0's tail would
    land in row 1. The guarded launch leaves row 1 exactly as the kernel wrote
    it for step 1 and records how far row 0 was written."""
    case = {
        "grid": (2, 2, 4),
        "seq_lens": [9, 5],
        "page_size": 1,
        "pool_len": 40,
        "width": 40,
        "seed": 3,
    }
    used = [draft_kv_indices_used_len(14, 4, 8, i + 1) for i in range(2)]
    assert used[0] > case["width"]  # the row is too narrow already at step 0
    real = GuardedDraftKernel.factory(upstream_kernel("cpu"))
    narrow, _, record = launch(real, case, "cpu")
    wide, _, _ = launch(real, {**case, "width": used[1]}, "cpu")
    assert record.kv_indices.max_offset == (used[0] - 1, used[1] - 1)
    assert record.kv_indices.overrun_rows() == (0, 1)
    assert torch.equal(narrow, wide[:, : case["width"]])  # row 1 not corrupted


CHILD = """
import sys
sys.path.insert(0, {tests!r})
sys.path.insert(0, {folder!r})
from test_real_kernel import differential
print(*differential("cuda", {count}))
"""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_reference_equals_upstream_kernel_cuda():
    """The compiled twin: triton must be imported without the interpreter."""
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    code = CHILD.format(tests=str(HERE), folder=str(FOLDER), count=4 * CPU_LAUNCHES)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    launches, paged, overran = map(int, done.stdout.split()[-3:])
    print(
        f"\n[cuda, compiled] reference == upstream {OLD} kernel on {launches} "
        f"random launches ({paged} with page_size > 1 and topk > 1, {overran} overran)"
    )
    assert launches == 4 * CPU_LAUNCHES and paged and overran
