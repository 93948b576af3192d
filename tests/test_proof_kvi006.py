"""KVI006's fix in the numerical proof: the guard it inserts into 0.5.13's Triton
and Aiter draft backends changes no allocation, launch or slice, and on an
undersized buffer it stops the entry point with upstream's message (recorded
as the run's exception) before the kernel writes a single entry into that
buffer."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from harness import Recorder, ReferenceDraftKernel, compare, default_grid, run
from mutants import REGRESSIONS, mutate, sites

from lint_plugin.proof.grid import long_sequence_grid
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


# Triton's common_template replaces a missing seq_lens_sum by an upper bound
# before the launch, and KVI006's guard lands after it: with seq_lens_sum=None
# (needs_cpu_seq_lens = False, driven since issue 19) it fires on valid input.
# Issue 21 (item 4) places or refuses that guard; this turns green then.
TRITON_GUARD_AFTER_BOUND = pytest.mark.xfail(
    strict=True, reason="issue 21 item 4: the guard checks the upper bound"
)


@pytest.mark.corpus
@pytest.mark.parametrize(
    "backend", [pytest.param("triton", marks=TRITON_GUARD_AFTER_BOUND), "aiter"]
)
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
        after = run(
            fixed,
            class_name,
            params,
            "cpu",
            graph_entry="common_template",
            extra_names=names,
        )
        # (Triton's guard also fires on its seq_lens_sum=None upper bound: see
        # TRITON_GUARD_AFTER_BOUND; here the capture is what is looked at.)
        (raised,) = [r for r in after.raised if r.phase == "capture"]
        assert raised.type == "AssertionError"
        message = raised.message
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


@pytest.mark.corpus
def test_guard_after_the_upper_bound_is_seen_firing(new_attention: Path) -> None:
    """What the harness shows of the misplaced guard: the original runs the
    seq_lens_sum=None entry point cleanly, the guarded one raises there, on the
    guard's line, and nowhere else."""
    filename, class_name = BACKENDS["triton"]
    path = new_attention / filename
    fixed = guarded(path.read_text())
    fired = 0
    for params in GRID[:8]:
        before = run(path, class_name, params, "cpu")
        after = run(fixed, class_name, params, "cpu", filename="guarded.py")
        assert not before.raised, params.describe()
        phases = {r.phase for r in after.raised}
        assert phases <= {"forward (seq_lens_sum=None)"}, params.describe()
        for raised in after.raised:
            line = int(raised.where.rsplit(":", 1)[1])
            assert "assert_buffer_fits(" in "".join(
                fixed.splitlines()[line - 3 : line]
            ), raised
            fired += 1
    assert fired
