"""KVI006's fix in the numerical proof: the guard it inserts into 0.5.13's Triton
and Aiter draft backends changes no allocation, launch or slice, and on an
undersized buffer it stops the entry point with upstream's message (recorded
as the run's exception) before the kernel writes a single entry into that
buffer."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from harness import Recorder, ReferenceDraftKernel, compare, default_grid, run
from mutants import REGRESSIONS, mutate, sites

from lint_plugin.fix.rewrite import Options, rewrite_text
from lint_plugin.proof.drive import NO_SUM
from lint_plugin.proof.grid import long_sequence_grid

BACKENDS = {
    "triton": ("triton_backend.py", "TritonMultiStepDraftBackend"),
    "aiter": ("aiter_backend.py", "AiterMultiStepDraftBackend"),
}
GRID = default_grid(seed=20261)[::2]


def guarded(text: str) -> str:
    """``fix --unsafe-fixes --select KVI006``'s output."""
    options = Options(unsafe_fixes=True, selected=lambda f: f.code == "KVI006")
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
        after = run(
            fixed,
            class_name,
            params,
            "cpu",
            graph_entry="common_template",
            extra_names=names,
        )
        # (With seq_lens_sum=None Triton's guard is skipped: it checks the real
        # length only, test_triton_guard_is_reached_with_the_real_length_only.)
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


def after_the_bound(text: str) -> str:
    """Upstream's guard right before Triton's launch, after the line that
    replaces a missing seq_lens_sum by its upper bound (where KVI006's fix put
    it before it knew about the bound)."""
    from lint_plugin.rules.kvi006_unguarded_launch import _UPSTREAM_GUARD

    launch = "        generate_draft_decode_kv_indices[\n"
    at = text.index(launch, text.index("def common_template"))
    return text[:at] + _UPSTREAM_GUARD + text[at:]


class GuardReached(Exception):
    """Raised by a stand-in guard: the phase it is recorded in reached it."""


def tripwire(used, capacity, what, **context):
    raise GuardReached(f"{what}: used {used}, capacity {capacity}")


@pytest.mark.corpus
def test_triton_guard_is_reached_with_the_real_length_only(
    new_attention: Path,
) -> None:
    """The guard goes on the branch where seq_lens_sum is the real sum: it is
    reached by every entry point that passes the sum (eager metadata, capture,
    replay) and skipped by the one without it. That it never fires there on
    valid input is test_guard_changes_no_number's (records equal, exceptions
    included); a guard that always raises shows where it is reached."""
    filename, class_name = BACKENDS["triton"]
    text = (new_attention / filename).read_text()
    fixed = guarded(text)
    assert re.search(
        r"\n( +)if seq_lens_sum is None:\n(?:\1 +#[^\n]*\n)*"
        r"\1 +seq_lens_sum = num_seqs \* self\.max_context_len\n"
        r"\1else:\n\1    required_kv_indices_len = draft_kv_indices_used_len\(",
        fixed,
    ), "the guard is not on the else branch"
    names = {"assert_buffer_fits": tripwire}
    for params in GRID:
        record = run(fixed, class_name, params, "cpu", extra_names=names)
        reached = {r.phase for r in record.raised if r.type == "GuardReached"}
        assert NO_SUM in record.phases, params.describe()  # driven without the sum
        assert reached == set(record.phases) - {"init", "cuda_graph_state", NO_SUM}, (
            params.describe(),
            reached,
        )
    print(f"\n[cpu] {class_name}: guard reached in {sorted(reached)}, not {NO_SUM!r}")


@pytest.mark.corpus
def test_guard_after_the_upper_bound_is_seen_firing(new_attention: Path) -> None:
    """What the harness shows of a misplaced guard (after the line replacing a
    missing seq_lens_sum by its upper bound): the original runs every valid case
    cleanly, the guarded one raises on every case with seq_lens_sum=None, on the
    guard's line, and nowhere else."""
    filename, class_name = BACKENDS["triton"]
    text = (new_attention / filename).read_text()
    naive = after_the_bound(text)
    fired = 0
    for params in GRID:
        before = run(text, class_name, params, "cpu")
        after = run(naive, class_name, params, "cpu", filename="after_the_bound.py")
        assert not before.raised, params.describe()
        (raised,) = after.raised
        assert raised.phase == NO_SUM, (params.describe(), raised)
        assert raised.type == "AssertionError", raised
        assert re.search(r"used \d+ > capacity \d+", raised.message), raised
        line = int(raised.where.rsplit(":", 1)[1])
        assert "assert_buffer_fits(" in "".join(naive.splitlines()[line - 3 : line]), (
            raised
        )
        fired += 1
    print(f"\n[cpu] {class_name}: the guard after the bound fires {fired}/{len(GRID)}")
    assert fired == len(GRID)
