"""KVI006's fix in the numerical proof: the guard it inserts into 0.5.13's Triton
and Aiter draft backends changes no allocation, launch or slice, and on an
undersized buffer it stops the run with upstream's message before the kernel
writes a single entry into that buffer."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from harness import Recorder, ReferenceDraftKernel, compare, default_grid, run
from mutants import REGRESSIONS, mutate, sites

from lint_plugin.proof import standins
from lint_plugin.proof.verdict import long_sequence_grid
from lint_plugin.rewrite import Options, rewrite_text
from lint_plugin.rules import OPT_IN

BACKENDS = {
    "triton": ("triton_backend.py", "TritonMultiStepDraftBackend"),
    "aiter": ("aiter_backend.py", "AiterMultiStepDraftBackend"),
}
GRID = default_grid(seed=20261)[::2]


def guarded(text: str) -> str:
    """``fix --unsafe-fixes --select KVI006``'s output."""
    options = Options(
        unsafe_fixes=True, opt_in=OPT_IN, selected=lambda f: f.code == "KVI006"
    )
    fixed = rewrite_text(text, "backend.py", options)
    assert [f.code for f in fixed.applied] == ["KVI006"]
    return fixed.text


def upstream_guard(attention: Path):
    """``assert_buffer_fits`` from the release's own utils.py, compiled alone."""
    source = (attention / "utils.py").read_text()
    (node,) = [
        n
        for n in ast.parse(source).body
        if isinstance(n, ast.FunctionDef) and n.name == "assert_buffer_fits"
    ]
    namespace: dict = {}
    exec(compile(ast.Module([node], []), "utils.py", "exec"), namespace)
    return namespace["assert_buffer_fits"]


@pytest.mark.corpus
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_guard_changes_no_number(new_attention: Path, backend: str) -> None:
    filename, class_name = BACKENDS[backend]
    path = new_attention / filename
    fixed = guarded(path.read_text())
    counts = compare(
        path, fixed, GRID, "cpu", class_name=class_name, graph_entry="common_template"
    )
    print(f"\n[cpu] {class_name}: KVI006 fix == 0.5.13 over {counts}")
    assert counts.cases == len(GRID)
    assert counts.allocations and counts.slices and counts.launches, str(counts)


@pytest.mark.corpus
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_guard_stops_an_undersized_buffer_before_the_kernel(
    new_attention: Path, backend: str
) -> None:
    filename, class_name = BACKENDS[backend]
    text = (new_attention / filename).read_text()
    # The #27338 regression in the cuda-graph buffer, then KVI006's fix of it.
    graph_site = sites(text)[1]
    unsized = mutate(text, graph_site, REGRESSIONS["local"])
    fixed = guarded(unsized)
    guard = upstream_guard(new_attention)
    events: list[tuple] = []

    def recording_guard(used, capacity, what, **context):
        events.append(("guard", used, capacity))
        guard(used, capacity, what, **context)

    kernel = ReferenceDraftKernel(Recorder())

    class CountingKernel:
        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                events.append(("launch", args[3].shape[1]))
                kernel[grid](*args, **kwargs)

            return launch

    names = {"assert_buffer_fits": recording_guard}
    if backend == "triton":  # Triton launches the module-level kernel
        names["generate_draft_decode_kv_indices"] = CountingKernel()
    stopped = 0
    for params in long_sequence_grid((2, 4)):
        before = run(unsized, class_name, params, "cpu", graph_entry="common_template")
        assert before.overruns, params.describe()  # the bug writes past the row
        events.clear()
        with pytest.raises(AssertionError) as raised:
            run(
                fixed,
                class_name,
                params,
                "cpu",
                graph_entry="common_template",
                extra_names=names,
            )
        message = str(raised.value)
        assert message.startswith(
            "EAGLE draft kv_indices row (size max_bs * topk * max_context_len): used "
        ), message
        kind, used, capacity = events[-1]
        assert (kind, used > capacity) == ("guard", True)
        assert f"used {used} > capacity {capacity}" in message
        if backend == "triton":
            assert ("launch", capacity) not in events  # never launched on it
        stopped += 1
    print(f"\n[cpu] {class_name}: undersized buffer stopped at the guard {stopped}x")
    assert stopped == 8


class UnknownLengthSum(standins.ForwardBatch):
    """``forward_batch.seq_lens_sum`` left unset (None), as SGLang leaves it
    where computing it would cost a device sync: Triton's common_template then
    clamps its slices with an upper bound instead."""

    def __init__(self, **fields) -> None:
        super().__init__(**fields)
        self.seq_lens_sum = None


def after_the_bound(text: str) -> str:
    """Upstream's guard right before Triton's launch, after the line that
    replaces a missing seq_lens_sum by its upper bound (where KVI006's fix put
    it before it knew about the bound)."""
    from lint_plugin.rules.kvi006_unguarded_launch import _UPSTREAM_GUARD

    launch = "        generate_draft_decode_kv_indices[\n"
    at = text.index(launch, text.index("def common_template"))
    return text[:at] + _UPSTREAM_GUARD + text[at:]


@pytest.mark.corpus
def test_triton_guard_checks_the_real_length_only(
    new_attention: Path, monkeypatch
) -> None:
    """The guard goes on the branch where seq_lens_sum is the real sum: over the
    grid's valid inputs it runs (sum known) and never fires, it is skipped when
    the sum is unknown, and the records equal the original's both ways; the same
    guard after the bound fires on every valid case with an unknown sum."""
    filename, class_name = BACKENDS["triton"]
    text = (new_attention / filename).read_text()
    fixed = guarded(text)
    assert re.search(
        r"\n( +)if seq_lens_sum is None:\n(?:\1 +#[^\n]*\n)*"
        r"\1 +seq_lens_sum = num_seqs \* self\.max_context_len\n"
        r"\1else:\n\1    required_kv_indices_len = draft_kv_indices_used_len\(",
        fixed,
    ), "the guard is not on the else branch"
    guard = upstream_guard(new_attention)
    calls: list[tuple[int, int]] = []

    def recording_guard(used, capacity, what, **context):
        calls.append((used, capacity))
        guard(used, capacity, what, **context)

    names = {"assert_buffer_fits": recording_guard}
    options = {"graph_entry": "common_template"}
    checked = {}
    for known in (True, False):
        with monkeypatch.context() as patch:
            if not known:
                patch.setattr(standins, "ForwardBatch", UnknownLengthSum)
            calls.clear()
            for params in GRID:
                before = run(text, class_name, params, "cpu", **options)
                after = run(
                    fixed, class_name, params, "cpu", extra_names=names, **options
                )
                assert before == after, params.describe()
            checked[known] = len(calls)
            assert all(used <= capacity for used, capacity in calls)
    # Eager and capture both pass through common_template once per case.
    assert checked == {True: 2 * len(GRID), False: 0}, checked

    naive = after_the_bound(text)
    fired = 0
    with monkeypatch.context() as patch:
        patch.setattr(standins, "ForwardBatch", UnknownLengthSum)
        for params in GRID:
            with pytest.raises(AssertionError, match=r"used .* > capacity"):
                run(naive, class_name, params, "cpu", extra_names=names, **options)
            fired += 1
    print(
        f"\n[cpu] {class_name}: guard checked {checked[True]}x on known sums, "
        f"skipped on unknown ones; after the bound it fires on {fired}/{len(GRID)}"
    )
    assert fired == len(GRID)
