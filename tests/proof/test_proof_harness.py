"""The numerical-identity proof: rewriting a draft backend must change no number.

Each real SGLang multi-step draft backend class is run by the differential
harness (``tests/harness``) before and after a rewrite, and every allocation,
index-kernel launch, ``spec_info.kv_indices`` slice and backend call must match.
The harness is first shown to be exact (the reference kernel follows the design's
layout) and not vacuous (a one-character change is caught), then used for:

a) 0.5.12.post1 against itself (sanity: the harness is deterministic);
b) 0.5.12.post1 (and the bundled fixtures) against their ``draft-kv-lint fix``
   output;
c) the upstream bug (#27338, #27460) reproduced and fixed.

Run with ``-s`` to see the counts each proof was made on.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from harness import (
    HarnessError,
    Recorder,
    ReferenceDraftKernel,
    compare,
    default_grid,
    diff,
    extract_class,
    load_class,
    rewrite_in_class,
    run,
)

from lint_plugin.fix.rewrite import Options, rewrite_text
from lint_plugin.proof import names, standins
from lint_plugin.proof.grid import Params, long_sequence_grid
from lint_plugin.proof.record import Recorder as RecorderForNames
from lint_plugin.runtime import draft_kv_indices_buffer_width, draft_kv_indices_used_len

DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param(
        "cuda",
        id="cuda",
        marks=pytest.mark.skipif(
            not torch.cuda.is_available(), reason="no CUDA device here"
        ),
    ),
]
BACKENDS = {
    "flashinfer": ("flashinfer_backend.py", "FlashInferMultiStepDraftBackend"),
    "flashinfer_mla": (
        "flashinfer_mla_backend.py",
        "FlashInferMLAMultiStepDraftBackend",
    ),
    "triton": ("triton_backend.py", "TritonMultiStepDraftBackend"),
    "aiter": ("aiter_backend.py", "AiterMultiStepDraftBackend"),
}
BACKEND_IDS = list(BACKENDS)
# num_seqs 1..4 x topk 1..8 x steps 2..5, seeded lengths: 128 cases per class,
# about half a second per class and comparison on CPU.
GRID = default_grid(seed=20260)


def fix_text(text: str, unsafe_fixes: bool = False) -> str:
    """What ``draft-kv-lint fix`` writes for ``text`` (every check included)."""
    return rewrite_text(text, "backend.py", Options(unsafe_fixes=unsafe_fixes)).text


def _backend(folder, name):
    filename, class_name = BACKENDS[name]
    return folder / filename, class_name


# --- the harness itself ------------------------------------------------------


def _expected_rows(req_to_token, rows, seq_lens, topk, steps):
    """The design's layout written the obvious way: per step row, for each
    sequence and branch, the prefix slots then that branch's i + 1 draft slots,
    back to back; kv_indptr is the running total, starting at 0."""
    indices, indptr = [], []
    for i in range(steps):
        row, ptr = [], [0]
        for b, seq_len in enumerate(seq_lens):
            slots = req_to_token[rows[b]].tolist()
            for t in range(topk):
                chunk = slots[:seq_len] + slots[seq_len + t * steps :][: i + 1]
                row += chunk
                ptr.append(ptr[-1] + len(chunk))
        indices.append(row)
        indptr.append(ptr)
    return indices, indptr


@pytest.mark.parametrize("device", DEVICES)
def test_reference_kernel_writes_the_design_layout(device):
    seq_lens, topk, steps, ctx = [3, 7, 5], 3, 4, 11
    num_seqs = len(seq_lens)
    pool_len = ctx + topk * steps
    req_to_token = torch.randperm(6 * pool_len, dtype=torch.int32) + 1
    req_to_token = req_to_token.reshape(6, pool_len).to(device)
    rows = torch.tensor([4, 0, 2], device=device)
    lens = torch.tensor(seq_lens, device=device)
    positions = lens.repeat_interleave(topk)
    width = draft_kv_indices_buffer_width(num_seqs, topk, ctx)

    def launch(buffer, recorder):
        kv_indptr = torch.zeros((steps, num_seqs * topk + 1), dtype=torch.int32)
        kv_indptr = kv_indptr.to(device)
        ReferenceDraftKernel(recorder)[(steps, num_seqs, topk)](
            rows, req_to_token, lens, buffer, kv_indptr, positions, pool_len,
            buffer.shape[1], kv_indptr.shape[1], 4, 4, 16, 1,
        )  # fmt: skip
        return kv_indptr, recorder.record.launches[-1]

    buffer = torch.zeros((steps, width), dtype=torch.int64, device=device)
    kv_indptr, launch_record = launch(buffer, Recorder())
    indices, indptr = _expected_rows(
        req_to_token.cpu(), rows.tolist(), seq_lens, topk, steps
    )
    for i in range(steps):
        used = draft_kv_indices_used_len(sum(seq_lens), topk, num_seqs * topk, i + 1)
        assert len(indices[i]) == used
        assert buffer[i, :used].tolist() == indices[i]
        assert not buffer[i, used:].any()  # nothing written past the used length
        assert kv_indptr[i].tolist() == indptr[i]
        assert launch_record.kv_indices.max_offset[i] == used - 1
    assert not launch_record.problems and not launch_record.read_overruns
    assert not launch_record.kv_indices.overrun_rows()

    # The bug's shape: a row without the topk factor. Flagged, not a crash.
    narrow = torch.zeros((steps, num_seqs * ctx), dtype=torch.int64, device=device)
    _, launch_record = launch(narrow, Recorder())
    assert launch_record.kv_indices.overrun_rows() == tuple(range(steps))
    assert launch_record.kv_indices.max_offset[-1] == len(indices[-1]) - 1


TOY = """
from __future__ import annotations

class ToyMultiStepDraftBackend:
    def __init__(self, model_runner: ModelRunner):
        self.backends = [BuiltOnlyInInit(model_runner)]

    def common_template(self, forward_batch: ForwardBatch, buf, call_fn):
        return mystery_helper(forward_batch) + OTHER_CONSTANT

    def sneaky(self):
        from sglang.srt.utils import next_power_of_2

        return next_power_of_2(3)
"""


def test_loader_lists_unknown_names_and_stubs_annotation_only_ones():
    source = extract_class(TOY)
    assert source.name == "ToyMultiStepDraftBackend"
    with pytest.raises(HarnessError) as excinfo:
        load_class(source, {})
    message = str(excinfo.value)
    assert "mystery_helper (in common_template)" in message
    assert "OTHER_CONSTANT (in common_template)" in message
    # __init__ is driven now: what it builds must be provided too.
    assert "BuiltOnlyInInit (in __init__)" in message
    for name in ("ModelRunner", "ForwardBatch"):  # annotations only
        assert name not in message


def test_unknown_names_are_recording_stand_ins_refused_when_computed_with():
    recorder = RecorderForNames()
    cls, _ = load_class(
        extract_class(TOY), {}, lambda name: standins.Opaque(name, recorder)
    )
    instance = cls.__new__(cls)
    with pytest.raises(HarnessError, match="computes with mystery_helper"):
        instance.common_template("batch", None, None)
    # Calling it was recorded before the sum was refused.
    (call,) = recorder.record.backend_calls
    assert (call.backend, call.method, call.args) == (-1, "mystery_helper", ("batch",))


def test_loaded_class_never_imports_sglang():
    recorder = RecorderForNames()
    provided = {"mystery_helper": len, "OTHER_CONSTANT": 0, "BuiltOnlyInInit": list}
    provided.update(
        names.provided_names(None, None, recorder, Params(1, 1, 2, (1,), 4))
    )
    cls, _ = load_class(
        extract_class(TOY), provided, None, names.guarded_import(provided, recorder)
    )
    # ``from sglang.srt.utils import next_power_of_2`` is answered by the harness.
    assert cls.__new__(cls).sneaky() == 4
    assert "sglang" not in sys.modules


MUTATIONS = {
    # an off-by-one in the per-step slice length
    "slice": ("bs * (i + 1)", "bs * (i + 2)"),
    # the same numbers, but a different allocator for the eager buffer
    "allocator": (
        "kv_indices = torch.empty(",
        "kv_indices = torch.zeros(",
    ),
    # a kernel argument (the row stride) taken from the wrong buffer
    "stride": ("kv_indices_buffer.shape[1],", "self.kv_indptr.shape[1],"),
}


@pytest.mark.corpus
@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_harness_catches_a_one_token_change(old_attention, mutation):
    """The proof is only worth something if a real change cannot pass it."""
    path, class_name = _backend(old_attention, "triton")
    old, new = MUTATIONS[mutation]
    mutated = rewrite_in_class(path.read_text(), ((old, new),), class_name=class_name)
    with pytest.raises(AssertionError, match="records differ"):
        compare(path, mutated, GRID[:16])


# --- a) the original against itself ------------------------------------------


@pytest.mark.corpus
@pytest.mark.parametrize("backend", BACKEND_IDS)
@pytest.mark.parametrize("device", DEVICES)
def test_original_equals_itself(old_attention, backend, device):
    path, class_name = _backend(old_attention, backend)
    counts = compare(path, path.read_text(), GRID, device, class_name=class_name)
    print(f"\n[{device}] 0.5.12.post1 {class_name} == itself: {counts}")
    assert counts.cases == len(GRID) and counts.slices > 0, str(counts)
    # The harness drives the real kernel contract: powers of two, right strides,
    # no read past a request's req_to_token row.
    for params in GRID[::9]:
        record = run(path, class_name, params, device)
        for launch in record.launches:
            assert not launch.problems and not launch.read_overruns, (
                params.describe(),
                launch,
            )
        # Slices disagree with kv_indptr only where the kernel overran (the bug).
        if not record.overruns:
            assert not record.consistency_problems(), params.describe()


# --- b) the rewrite changes no number ----------------------------------------


@pytest.mark.corpus
@pytest.mark.parametrize("backend", BACKEND_IDS)
@pytest.mark.parametrize("device", DEVICES)
def test_safe_fix_changes_no_number(old_attention, backend, device):
    path, class_name = _backend(old_attention, backend)
    text = path.read_text()
    rewritten = fix_text(text)
    assert rewritten != text
    assert "draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)" in rewritten
    assert "forward_batch.batch_size, self.topk, self.max_context_len" in rewritten
    counts = compare(path, rewritten, GRID, device, class_name=class_name)
    print(f"\n[{device}] {class_name}: safe fix == original over {counts}")
    assert counts.cases == len(GRID), str(counts)
    assert counts.allocations and counts.slices and counts.slice_entries, str(counts)


@pytest.mark.corpus
@pytest.mark.parametrize("backend", BACKEND_IDS)
@pytest.mark.parametrize("device", DEVICES)
def test_unsafe_fix_changes_only_the_unsized_width(old_attention, backend, device):
    """KVI003's unsafe fix: triton/aiter allocate max_num_tokens * max_context_len,
    equal to the helper's width while max_num_tokens == max_bs * topk (kept by the
    harness), so no number changes; flashinfer gains the topk factor and nothing
    else changes except what the overrun had corrupted; flashinfer_mla refuses
    topk > 1 in __init__, so there is nothing to widen where it runs."""
    path, class_name = _backend(old_attention, backend)
    fixed = fix_text(path.read_text(), unsafe_fixes=True)
    if backend in ("triton", "aiter"):
        counts = compare(path, fixed, GRID, device, class_name=class_name)
        print(f"\n[{device}] {class_name}: unsafe fix == original over {counts}")
        return
    widened = 0
    for params in GRID:
        before = run(path, class_name, params, device)
        after = run(fixed, class_name, params, device)
        change = diff(before, after)
        assert not after.overruns and not after.consistency_problems()
        if params.topk == 1 or backend == "flashinfer_mla":
            assert change.identical, (params.describe(), change.describe())
            continue
        (widened_buffer,) = change.allocations
        assert widened_buffer.before.phase == "cuda_graph_state", change.describe()
        assert widened_buffer.width_factor == params.topk
        if not before.overruns:  # nothing corrupted: only the width differs
            assert change.assignments_changed == 0, change.describe()
        widened += 1
    print(
        f"\n[{device}] {class_name}: unsafe fix widened the graph buffer x topk "
        f"in {widened} of {len(GRID)} cases (topk > 1), identical in the rest"
    )


@pytest.mark.corpus
@pytest.mark.parametrize("backend", BACKEND_IDS)
@pytest.mark.parametrize("device", DEVICES)
def test_hand_refactor_equals_unsafe_fix(old_attention, new_attention, backend, device):
    """0.5.13 (upstream's hand refactor) against 0.5.12.post1 + the stand-in fix.

    0.5.13 renamed the cuda-graph entry points; each class is driven through its
    own (capture/replay against out_graph/in_graph) and the per-step backends'
    calls are compared by what they hand over: everything must agree.
    """
    old_path, class_name = _backend(old_attention, backend)
    new_path, _ = _backend(new_attention, backend)
    fixed = fix_text(old_path.read_text(), unsafe_fixes=True)
    counts = compare(fixed, new_path, GRID, device, class_name=class_name)
    print(
        f"\n[{device}] {class_name}: 0.5.13 == 0.5.12.post1 + unsafe fix over {counts}"
    )


# --- c) the bug, reproduced and fixed ----------------------------------------


def _long_sequences(topk):
    """Full cuda-graph batches of sequences at the design's length limit."""
    return long_sequence_grid((topk,), ctx=32, batches=(1, 2, 3), steps_list=(2, 3, 5))


@pytest.mark.corpus
@pytest.mark.parametrize("device", DEVICES)
def test_cuda_graph_overrun_reproduced_and_fixed(old_attention, device):
    path, class_name = _backend(old_attention, "flashinfer")
    original = path.read_text()
    fixed = fix_text(original, unsafe_fixes=True)
    cases = 0
    for topk in (2, 4, 8):
        for params in _long_sequences(topk):
            before = run(original, class_name, params, device)
            after = run(fixed, class_name, params, device)
            where = params.describe()
            # The bug: the capture/replay kernel writes past the unsized row and
            # the slices handed to attention are cut short.
            assert before.overruns, where
            assert {o.phase for o in before.overruns} == {"capture", "replay"}, where
            assert {o.buffer for o in before.overruns} == {"kv_indices"}, where
            assert before.consistency_problems(), where
            # The fix: no overrun, and every slice is exactly what kv_indptr says.
            assert not after.overruns, (where, [o.describe() for o in after.overruns])
            assert not after.consistency_problems(), where
            # The cuda-graph path now exposes the same numbers as the eager path.
            eager = [s.contents for s in after.slices if s.phase == "forward"][::2]
            graph = [s.contents for s in after.slices if s.phase == "capture"]
            assert graph == eager, where
            # And the only allocation that changed is the intended one.
            change = diff(before, after)
            assert len(change.allocations) == 1, change.describe()
            widened = change.allocations[0]
            assert widened.before.phase == "cuda_graph_state", change.describe()
            assert widened.width_factor == topk, change.describe()
            assert (widened.before.fn, widened.before.dtype) == (
                widened.after.fn,
                widened.after.dtype,
            )
            cases += 1
    print(f"\n[{device}] intended: {widened.describe()} (and {cases - 1} more cases)")

    for params in _long_sequences(1):
        before = run(original, class_name, params, device)
        after = run(fixed, class_name, params, device)
        assert not before.overruns and not after.overruns, params.describe()
        assert before == after, diff(before, after).describe()


# --- the bundled fixtures ----------------------------------------------------

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.mark.parametrize(
    "name",
    [
        "flashinfer_backend.py",
        "flashinfer_mla_backend.py",
        "triton_backend.py",
        "aiter_backend.py",
    ],
)
@pytest.mark.parametrize("device", DEVICES)
def test_fixture_fix_changes_no_number(name, device):
    text = (FIXTURES / name).read_text()
    rewritten = fix_text(text)
    assert rewritten != text
    same, refused = 0, 0
    for params in GRID[::2]:
        # The flashinfer fixture checks the row's capacity, and its unsized
        # cuda-graph row (a KVI003 site the safe fix leaves) fails that check
        # for topk > 1; the MLA one refuses topk > 1 in __init__: both versions
        # then record the same exception.
        before = run(text, None, params, device)
        after = run(rewritten, None, params, device)
        assert before == after, diff(before, after).describe()
        if before.raised:
            assert {r.type for r in before.raised} <= {"AssertionError", "ValueError"}
            refused += 1
            continue
        assert before.slices and before.allocations
        same += 1
    print(
        f"\n[{device}] fixtures/{name}: safe fix == original in {same} cases, "
        f"same refusal in {refused}"
    )
    assert same
