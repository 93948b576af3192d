"""Wrong rewrites where the fixed grid and the one-sided phases never looked.

Each wrong rewrite below is identical to its original on every case of the
fixed grid (the corner cases, the wall, the seeded ones), or in a phase only
one side drives: a cap at a size the grid never reaches, a slice end that stops
growing after step 4, a sum without the host-side lengths, a forwarding that
skips a backend. ``prove`` must find each (DIFFERS, exit 1) or refuse it (exit
3), from the thresholds the code itself holds (:mod:`lint_plugin.proof.thresholds`)
and from holding a phase one side drives to the other side's counterpart; each
right rewrite beside it must not differ. The real classes of 0.5.13 and 0.5.23,
on their own kernels (``--kernel``), interpreted on the CPU.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus import LATEST, NEW, OLD, attention_dir
from release_kernels import located

from lint_plugin.cli import main
from lint_plugin.proof.grid import proof_grid
from lint_plugin.proof.thresholds import class_grid

# One xdist worker runs prove's grid on real classes (see test_releases.PROVE_GRID).
pytestmark = [pytest.mark.corpus, pytest.mark.xdist_group("prove-grid")]
TRITON = ("triton_backend.py", "class TritonMultiStepDraftBackend")
FLASHINFER = ("flashinfer_backend.py", "class FlashInferMultiStepDraftBackend")


def _class_edit(text: str, start: str, old: str, new: str) -> str:
    """``text`` with the first ``old`` after ``start`` (the class) made ``new``."""
    at = text.index(start)
    found = text.index(old, at)
    return text[:found] + new + text[found + len(old) :]


# (id, release, backend, old, new): wrong, each identical on the fixed grid.
WRONG = [
    # The grid's sequences stop at 8: a bs_upper capped at 16 is only seen at 17.
    (
        "bs_upper capped at 16",
        NEW,
        TRITON,
        "next_power_of_2(num_seqs),",
        "min(next_power_of_2(num_seqs), 16),",
    ),
    # ... and on 0.5.23's windowed launch.
    (
        "bs_upper capped at 16 (0.5.23)",
        LATEST,
        TRITON,
        "next_power_of_2(num_seqs),",
        "min(next_power_of_2(num_seqs), 16),",
    ),
    # ... spelt as a shift (an outside review's find).
    (
        "bs_upper capped at 1 << 4",
        NEW,
        TRITON,
        "next_power_of_2(num_seqs),",
        "min(next_power_of_2(num_seqs), 1 << 4),",
    ),
    # Steps stop at 5: the slice of step index 4 is the last the grid reads.
    (
        "slice end stops growing after step 4",
        NEW,
        TRITON,
        "draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)",
        "draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, min(i + 1, 4))",
    ),
    # Contexts stop at 32,832: a width capped at 65,536 overruns past it.
    (
        "width capped at 65536 tokens of context",
        NEW,
        TRITON,
        "forward_batch.batch_size, self.topk, self.max_context_len",
        "forward_batch.batch_size, self.topk, min(self.max_context_len, 65536)",
    ),
    # Page sizes stop at 16: 32 told 1.
    (
        "page size above 16 told 1",
        NEW,
        TRITON,
        "            self.page_size,\n",
        "            self.page_size if self.page_size <= 16 else 1,\n",
    ),
    # A phase only 0.5.13 drives (0.5.12.post1 -> 0.5.13): without the
    # host-side sum, an under-estimate.
    (
        "seq_lens_sum None read as num_seqs",
        (OLD, NEW),
        TRITON,
        "seq_lens_sum = num_seqs * self.max_context_len",
        "seq_lens_sum = num_seqs",
    ),
    # An entry point only 0.5.13 has (0.5.12.post1 -> 0.5.13): in_graph
    # skipping the first backend.
    (
        "in_graph skips the first backend",
        (OLD, NEW),
        FLASHINFER,
        "for attn_backend in self.attn_backends:\n            "
        "attn_backend.init_forward_metadata_in_graph",
        "for attn_backend in self.attn_backends[1:]:\n            "
        "attn_backend.init_forward_metadata_in_graph",
    ),
    # ... or cut to the first four backends: seen only past 5 steps.
    (
        "in_graph cut to four backends",
        (OLD, NEW),
        TRITON,
        "for attn_backend in self.attn_backends:\n            "
        "attn_backend.init_forward_metadata_in_graph",
        "for attn_backend in self.attn_backends[:4]:\n            "
        "attn_backend.init_forward_metadata_in_graph",
    ),
    # A modelled value the grid now varies: the graph batch's alignment.
    (
        "graph batch alignment dropped",
        LATEST,
        FLASHINFER,
        "max_bs = get_cuda_graph_max_batch_size(\n"
        "            model_runner.req_to_token_pool.size * self.topk\n        )",
        "max_bs = model_runner.req_to_token_pool.size * self.topk",
    ),
]

# Right rewrites beside them: each changes the code near the same threshold.
RIGHT = [
    (
        "in_graph forwarding to every backend by index",
        (OLD, NEW),
        FLASHINFER,
        "for attn_backend in self.attn_backends:\n            "
        "attn_backend.init_forward_metadata_in_graph",
        "for i in range(len(self.attn_backends)):\n            "
        "self.attn_backends[i].init_forward_metadata_in_graph",
    ),
    (
        "bs_upper capped far past any batch",
        NEW,
        TRITON,
        "next_power_of_2(num_seqs),",
        "min(next_power_of_2(num_seqs), 1048576),",
    ),
    (
        "seq_lens_sum None over-estimated further",
        (OLD, NEW),
        TRITON,
        "seq_lens_sum = num_seqs * self.max_context_len",
        "seq_lens_sum = 2 * num_seqs * self.max_context_len",
    ),
    (
        "slice end clamped where it cannot bind",
        NEW,
        TRITON,
        "draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)",
        "draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, min(i + 1, 64))",
    ),
]


def _prove(tmp_path: Path, release, backend: tuple, old: str, new: str, capsys):
    """``prove`` of the class of ``release`` against it rewritten; a pair of
    releases ``(before, release)``: of the earlier one's class against the
    later one's, rewritten (a phase only the later one drives)."""
    earlier, release = release if isinstance(release, tuple) else (release, release)
    name, start = backend
    path = attention_dir(release) / name
    text = attention_dir(earlier).joinpath(name).read_text("utf-8")
    mine = path.read_text("utf-8")
    rewritten = _class_edit(mine, start, old, new)
    assert rewritten != mine
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    before, after = tmp_path / "a" / name, tmp_path / "b" / name
    before.write_text(text, "utf-8")
    after.write_text(rewritten, "utf-8")
    kernel = located(path)[0].filename
    status = main(["prove", "--kernel", kernel, str(before), str(after)])
    return status, capsys.readouterr().out


@pytest.mark.parametrize(
    ("release", "backend", "old", "new"),
    [case[1:] for case in WRONG],
    ids=[case[0] for case in WRONG],
)
def test_wrong_rewrite_in_a_gap_is_found(tmp_path, capsys, release, backend, old, new):
    status, out = _prove(tmp_path, release, backend, old, new, capsys)
    assert status in (1, 3), out
    assert "no difference in" not in out, out
    if status == 1:
        assert "NOT PROVEN" in out and "DIFFERS" in out


@pytest.mark.parametrize(
    ("release", "backend", "old", "new"),
    [case[1:] for case in RIGHT],
    ids=[case[0] for case in RIGHT],
)
def test_right_rewrite_beside_a_gap_shows_no_difference(
    tmp_path, capsys, release, backend, old, new
):
    status, out = _prove(tmp_path, release, backend, old, new, capsys)
    assert status == 0, out
    assert "no difference in" in out and " within num_seqs " in out


GRID_GAPS = [case for case in WRONG if not isinstance(case[1], tuple)][:6]


@pytest.mark.parametrize("case", GRID_GAPS, ids=[case[0] for case in GRID_GAPS])
def test_the_fixed_grid_alone_misses_each_grid_gap(case):
    """What the thresholds add: the corners each wrong rewrite needs are not in
    the fixed grid (so the test above is about them, not about the grid)."""
    _, release, (name, start), old, new = case
    text = (attention_dir(release) / name).read_text("utf-8")
    rewritten = _class_edit(text, start, old, new)
    cls = start.split()[1]
    base = proof_grid(windows=release == LATEST)
    grid = class_grid(base, text, rewritten, cls, windows=release == LATEST)
    assert len(grid) > len(base)
    added = grid[len(base) :]
    reach = {
        "bs_upper capped at 16": lambda p: p.num_seqs > 16,
        "bs_upper capped at 16 (0.5.23)": lambda p: p.num_seqs > 16,
        "bs_upper capped at 1 << 4": lambda p: p.num_seqs > 16,
        "slice end stops growing after step 4": lambda p: p.speculative_num_steps > 5,
        "width capped at 65536 tokens of context": lambda p: p.max_context_len > 65536,
        "page size above 16 told 1": lambda p: p.page_size > 16,
    }[case[0]]
    assert not any(reach(p) for p in base)
    assert any(reach(p) for p in added)


# Rewrites that differ only where the harness fixes a value SGLang may give
# otherwise: not varied (the harness does not model a translated pool), so the
# verdict must name what it was identical under, never pass bare.
MODELLED = [
    (
        "row_stride read from the table's width",
        LATEST,
        TRITON,
        "            src.row_stride,\n",
        "            src.ids.shape[1],\n",
        "kv_index_translator reads req_to_token untranslated",
    ),
    (
        "TRANSLATE hard-wired off",
        LATEST,
        TRITON,
        "TRANSLATE=src.v2p is not None,",
        "TRANSLATE=False,",
        "no v2p",
    ),
]


@pytest.mark.parametrize(
    ("release", "backend", "old", "new", "named"),
    [case[1:] for case in MODELLED],
    ids=[case[0] for case in MODELLED],
)
def test_a_modelled_value_is_named_in_the_verdict(
    tmp_path, capsys, release, backend, old, new, named
):
    status, out = _prove(tmp_path, release, backend, old, new, capsys)
    verdicts = [line for line in out.splitlines() if " within num_seqs " in line]
    assert verdicts, out
    assert status == 0 and "; identical under: " in verdicts[0], out
    assert named in verdicts[0].split("; identical under: ", 1)[1]
