"""The helpers proven against every release's own index kernel.

For each distinct ``generate_draft_decode_kv_indices`` among the pinned releases
(found by digest; 0.5.12.post1 and 0.5.13 share one in two files):

- the write extent derived from its source fits for all sizes: equal to
  ``draft_kv_indices_used_len(seq_lens_sum, topk, num_seqs*topk, i + 1)`` without a
  window, at most that with one, at most ``draft_kv_indices_buffer_width`` always;
- the kernel itself, run by triton's interpreter on random launches (page size 1
  and > 1, windows and token blocks where the release has them), writes exactly the
  derived extent into every row (a recording buffer, :mod:`kernel_launch`);
- a change planted in a copy of its source (:mod:`kernel_plants`) is refuted with
  a counterexample, and running the planted kernel on it overruns the width.

Kernels of our own writing cover what the derivation must refuse to prove.
"""

from __future__ import annotations

import random

import pytest
from corpus import available
from import_probe import imported_by
from kernel_launch import Launch, random_launches, written_extents
from kernel_plants import PLANTS, plant
from our_kernel import DRAFTS, ours
from release_kernels import distinct_kernels, kernel_of

from lint_plugin.cli import main
from lint_plugin.proof.fit.concrete import Sizes, row_extents
from lint_plugin.proof.fit.judge import (
    CONTRACT,
    PROVEN,
    REFUTED,
    KernelFit,
    prove_fit,
    prove_kernel,
    render_extent,
)
from lint_plugin.proof.fit.judge import describe as _describe
from lint_plugin.proof.triton_source import KernelSource

# One release per distinct kernel, and the two files of the shared one.
RELEASES = ("0.4.6.post5", "0.4.7", "0.5.12.post1", "0.5.13", "0.5.23")
USED_LEN = "topk*seq_lens_sum + num_seqs*topk*(i + 1)"
WINDOWED = "topk*sum(min(seq_len, sink_size + window_size)) + num_seqs*topk*(i + 1)"


def _source(version: str) -> KernelSource:
    """The kernel ``prove`` runs for ``version`` (its backend's import, followed)."""
    return available(kernel_of, version)


def _kernel(version: str) -> tuple[str, str]:
    source = _source(version)
    return source.text, source.path


_fits: dict[str, KernelFit] = {}


def fit_of(version: str) -> KernelFit:
    if version not in _fits:
        _fits[version] = prove_kernel(_source(version))
    return _fits[version]


def sizes_for(fit: KernelFit, launch: Launch) -> Sizes:
    """The derivation's launch for what the oracle ran (its scalars by name)."""
    given = {
        "page_size": launch.page_size,
        "window_size": launch.window_size,
        "sink_size": launch.sink_size,
        "NUM_STEPS": launch.num_steps if launch.num_blocks else 0,
    }
    params = tuple((k, v) for k, v in given.items() if k in fit.derivation.params)
    context = max(launch.seq_lens) + launch.num_steps
    return Sizes(
        launch.seq_lens,
        launch.topk,
        launch.num_steps,
        context,
        params,
        launch.num_blocks or 1,
    )


def launch_for(sizes: Sizes) -> Launch:
    params = dict(sizes.params)
    return Launch(
        sizes.seq_lens,
        sizes.topk,
        sizes.num_steps,
        page_size=params.get("page_size", 1),
        window_size=params.get("window_size", 0),
        sink_size=params.get("sink_size", 0),
        num_blocks=sizes.num_blk if params.get("NUM_STEPS") else 0,
    )


@pytest.mark.corpus
def test_the_releases_hold_four_distinct_kernels():
    kernels = available(distinct_kernels)
    by_version = {v: k for k in kernels for v in k.versions}
    # Every distinct kernel is one of RELEASES' (so the tests below see them all).
    assert {by_version[v].digest for v in RELEASES} == {k.digest for k in kernels}
    assert by_version["0.5.12.post1"] is by_version["0.5.13"]
    for version, place in (
        ("0.5.12.post1", "sglang/srt/speculative/spec_utils.py"),
        ("0.5.13", "sglang/srt/speculative/triton_ops/cache_locs.py"),
        ("0.5.23", "sglang/kernels/ops/speculative/cache_locs.py"),
    ):
        assert kernel_of(version).path.endswith(place), kernel_of(version).path
    assert len(kernels) == 4, [k.name for k in kernels]


@pytest.mark.corpus
@pytest.mark.parametrize("version", RELEASES)
def test_the_helpers_fit_the_kernel_for_all_sizes(version):
    fit = fit_of(version)
    # Under upstream's contract; at the context wall it does not (test_envelope).
    assert fit.verdict_under(CONTRACT) == "fits for all sizes", "\n".join(
        _describe(fit)
    )
    assert fit.verdict == "DOES NOT FIT at the context wall"
    assert not fit.derivation.not_followed()
    for branch in fit.branches:
        relation = "<=" if branch.windowed else "="
        assert [c.name for c in branch.claims] == [relation, "fits", "wall"]
        assert [c.status for c in branch.claims] == [PROVEN, PROVEN, REFUTED]
        assert branch.exact  # the last program really writes the extent
        assert render_extent(branch) == (WINDOWED if branch.windowed else USED_LEN)
    windows = {b.windowed for b in fit.branches}
    assert windows == ({True, False} if version == "0.5.23" else {False})
    paged = any("page_size == 1" in b.label for b in fit.branches)
    assert paged == (version not in ("0.4.6.post5", "0.4.7"))  # paged draft slots


@pytest.mark.corpus
@pytest.mark.parametrize("version", RELEASES)
def test_the_kernel_writes_exactly_the_derived_extent(version):
    text, path = _kernel(version)
    fit = fit_of(version)
    params = fit.derivation.params
    rng = random.Random(f"extent {version}")
    launches = random_launches(
        rng, 6, windows="window_size" in params, blocks="NUM_STEPS" in params
    )
    launches.append(Launch((1, 300), topk=3, num_steps=2, page_size=4, seed=7))
    seen = set()
    for launch in launches:
        sizes = sizes_for(fit, launch)
        written = written_extents(text, path, launch)
        branch = fit.branch_for(sizes)
        seen.add(branch.label)
        assert written == row_extents(fit.derivation, sizes), launch
        assert written == fit.extent_at(sizes), (launch, branch.label)
        if not branch.windowed:
            assert written == [sizes.used_len(i) for i in range(sizes.num_steps)]
    print(f"{version}: {len(launches)} launches over branches {sorted(seen)}")
    assert len(seen) > 1 or len(fit.branches) == 1


@pytest.mark.corpus
@pytest.mark.parametrize("plant_name", PLANTS)
@pytest.mark.parametrize("version", RELEASES)
def test_a_planted_change_is_refuted_by_a_launch_that_overruns(version, plant_name):
    text, path = _kernel(version)
    planted = plant(text, plant_name)
    fit = prove_fit(planted, filename=path)
    assert fit.verdict == "DOES NOT FIT", "\n".join(_describe(fit))
    overruns = [c for _, c in fit.counterexamples() if c.name == "fits"]
    assert overruns, "\n".join(_describe(fit))
    for claim in overruns:
        example = claim.counterexample
        written = written_extents(planted, path + ".planted", launch_for(example.sizes))
        # The run writes what the derivation said, past the helper's width.
        assert written[example.row] == example.writes, example
        assert written[example.row] > example.sizes.width, example
    print(f"{version} {plant_name}: {len(overruns)} overrunning counterexamples")


@pytest.mark.corpus
def test_a_token_block_overrun_is_shown_by_a_launch_in_blocks():
    """0.5.23's token-block path (``NUM_STEPS != 0``, ``num_blk`` blocks): the
    counterexample search binds ``num_blk`` on every launch, so an overrun
    planted there is refuted by a launch in blocks, and the planted kernel run
    on that launch writes what the derivation said, past the width."""
    text, path = _kernel("0.5.23")
    loop = text.index("for i in range(blk, num_loop, num_blk):")
    old = "mask = copy_offset < seq_len_w"
    at = text.index(old, loop)
    planted = text[:at] + "mask = copy_offset < seq_len_w + 8" + text[at + len(old) :]
    fit = prove_fit(planted, filename=path, judged="contract")
    assert fit.verdict == "DOES NOT FIT", "\n".join(_describe(fit))
    overruns = [c for _, c in fit.counterexamples() if c.name == "fits"]
    in_blocks = [
        c for c in overruns if dict(c.counterexample.sizes.params)["NUM_STEPS"]
    ]
    assert in_blocks, "\n".join(_describe(fit))
    assert not any("cannot evaluate" in n for b in fit.branches for n in b.notes)
    for claim in in_blocks:
        example = claim.counterexample
        written = written_extents(planted, path + ".planted", launch_for(example.sizes))
        assert written[example.row] == example.writes, example
        assert written[example.row] > example.sizes.width, example


# -- kernels of our own writing -------------------------------------------------


def test_our_kernel_fits_and_writes_its_extent():
    fit = prove_fit(ours(), judged=CONTRACT)
    assert fit.verdict == "fits for all sizes", "\n".join(_describe(fit))
    (branch,) = fit.branches
    assert render_extent(branch) == USED_LEN
    for launch in random_launches(random.Random(3), 4, windows=False, blocks=False):
        written = written_extents(ours(), "ours.py", launch)
        assert written == fit.extent_at(sizes_for(fit, launch)), launch


NOT_DERIVED = [
    pytest.param(
        {
            "drafts": "while drafts > 0:\n        tl.store(kv_indices + start + length, 0)\n        drafts -= 1"
        },
        "while statement not followed",
        id="while",
    ),
    pytest.param(
        {
            "drafts": "tl.atomic_add(kv_indices + start + length + draft, 1, mask=draft < drafts)"
        },
        "triton.language.atomic_add on the row",
        id="atomic",
    ),
    pytest.param(
        {
            "drafts": "tl.store(kv_indices + tl.load(positions + seq) + draft, 0, mask=draft < drafts)"
        },
        "an offset depending on data",
        id="data-offset",
    ),
    pytest.param(
        {
            "length = tl.load(paged_kernel_lens + seq)": "length = tl.load(paged_kernel_lens + seq + 1)"
        },
        "sequence lengths at offset",
        id="another-sequence-length",
    ),
]


@pytest.mark.parametrize(("edit", "reason"), NOT_DERIVED)
def test_what_the_derivation_cannot_follow_is_named_never_proven(edit, reason):
    fit = prove_fit(ours(**edit))
    assert fit.verdict == "not derived", "\n".join(_describe(fit))
    lines = "\n".join(_describe(fit))
    assert reason in lines
    assert "the grid's overrun check stands" in lines


SPELLINGS = [
    pytest.param(
        {"range(tl.cdiv(length, 64))": "range(0, tl.cdiv(length, 64), 1)"},
        "fits for all sizes",
        id="range-with-start-and-step",
    ),
    pytest.param(
        {"drafts": "if topk:\n        " + DRAFTS},
        "fits for all sizes",
        id="if-on-an-int",
    ),
    pytest.param(
        {"kv_indices_stride * step": "kv_indices_stride * (step + 1)"},
        "DOES NOT FIT",  # the last step's row is past the buffer
        id="writes-the-next-row",
    ),
    pytest.param(
        {
            "drafts": "if topk == 1:\n        "
            + DRAFTS
            + "\n    else:\n        "
            + DRAFTS.replace("mask=draft < drafts", "mask=draft < drafts + 1")
        },
        "DOES NOT FIT",  # refuted in its topk > 1 branch only
        id="a-layout-per-branch",
    ),
    pytest.param(
        {
            "kv_indices + start + length + draft": (
                "kv_indices + tl.where(draft < drafts, start + length + draft, start)"
            )
        },
        "not proven",  # a Piecewise offset: outside what the bound handles
        id="an-offset-chosen-per-lane",
    ),
]


@pytest.mark.parametrize(("edit", "verdict"), SPELLINGS)
def test_our_kernels_in_other_spellings(edit, verdict):
    fit = prove_fit(ours(**edit), judged=CONTRACT)
    assert fit.verdict == verdict, "\n".join(_describe(fit))
    if verdict == "DOES NOT FIT":
        assert any(c.name == "fits" for _, c in fit.counterexamples())
    per_branch = {b.label: b for b in fit.branches}
    if "topk == 1" in edit.get("drafts", ""):
        # The other branch's change is not in this one: it is proven.
        branch = per_branch["topk == 1"]
        assert [c.status for c in branch.claims] == [PROVEN, PROVEN, REFUTED]
        assert render_extent(branch) == "seq_lens_sum + num_seqs*(i + 1)"
        assert per_branch["topk != 1"].failed


def test_a_mask_on_data_is_bounded_by_the_lanes_and_not_claimed():
    data_mask = "mask=tl.load(positions + draft) > 0)"
    fit = prove_fit(
        ours(DRAFTS.replace("mask=draft < drafts)", data_mask)), judged=CONTRACT
    )
    # Every lane may be written: the bound is the block's, past used_len, and
    # nothing can be run to refute it either.
    assert fit.verdict == "not proven", "\n".join(_describe(fit))
    (branch,) = fit.branches
    assert not branch.exact
    assert "iter_upper" in str(branch.extent)


def test_a_sum_over_too_few_lanes_is_not_a_prefix_sum():
    fit = prove_fit(ours(**{"tl.arange(0, bs_upper)": "tl.arange(0, 4)"}))
    assert fit.verdict == "not derived"
    assert any("fewer lanes" in why for _, why in fit.derivation.unsupported)


# -- prove ------------------------------------------------------------------------


@pytest.mark.corpus
@pytest.mark.parametrize("version", ["0.5.12.post1", "0.5.23"])
def test_prove_kernel_alone_prints_the_extent(version, capsys):
    _, path = _kernel(version)
    assert main(["prove", "--kernel", path, "--envelope", "contract"]) == 0
    out = capsys.readouterr().out
    print(out)
    head = out.splitlines()[0]
    assert head.startswith("kernel extent: generate_draft_decode_kv_indices (")
    assert head.split("): ")[1].startswith("fits for all sizes (sympy, ")
    assert out.splitlines()[1].startswith("  envelope: upstream's contract, ")
    assert f"row i holds {USED_LEN} = draft_kv_indices_used_len(" in out
    # DESIGN.md's offset, cum_seq_len*topk + b*(i+1)*topk + t*(seq_len+i+1), and
    # the branch's seq_len + i + 1 entries: derived from the source.
    layout = "topk*seq_lens_before_b + b*topk*(i + 1) + t*(i + seq_len + 1)"
    assert f"program (b, t) writes below {layout} + i + seq_len + 1;" in out
    assert (f"row i holds {WINDOWED} <= " in out) == (version == "0.5.23")


def test_prove_kernel_alone_shows_the_counterexample(tmp_path, capsys):
    kernel = tmp_path / "cache_locs.py"
    kernel.write_text(plant(ours(), "step_written_twice"))
    assert main(["prove", "--kernel", str(kernel)]) == 1
    out = capsys.readouterr().out
    # Refuted under upstream's own contract: more than the wall's overrun.
    assert "DOES NOT FIT (sympy" in out.splitlines()[0]
    assert "> draft_kv_indices_buffer_width(num_seqs, topk, max_context_len) =" in out
    not_derived = tmp_path / "while.py"
    not_derived.write_text(ours(**NOT_DERIVED[0].values[0]))
    # Nothing refuted, nothing proven: exit 3, as a class that cannot be driven.
    assert main(["prove", "--kernel", str(not_derived)]) == 3
    assert "not derived" in capsys.readouterr().out


def test_prove_kernel_alone_usage_errors(tmp_path, capsys):
    assert main(["prove", "--kernel", str(tmp_path / "missing.py")]) == 2
    assert "missing.py" in capsys.readouterr().err
    other = tmp_path / "other.py"
    other.write_text("def f():\n    pass\n")
    assert main(["prove", "--kernel", str(other)]) == 2
    assert (
        "no top-level def generate_draft_decode_kv_indices" in capsys.readouterr().err
    )


def test_only_prove_imports_sympy(tmp_path):
    (tmp_path / "a.py").write_text("n = seq_lens_sum * self.topk + bs * (i + 1)\n")
    watch = ("sympy", "numpy")
    for command in (["check", "--no-config", "a.py"], ["fix", "--diff", "a.py"]):
        body = f"from lint_plugin.cli import main\n_result = main({command!r})"
        assert imported_by(body, watch, cwd=tmp_path)[0] == [], command
    body = "import lint_plugin.flake8_plugin, lint_plugin.proof.prove\n_result = 0"
    assert imported_by(body, watch, cwd=tmp_path) == ([], "0")
    kernel = tmp_path / "k.py"
    kernel.write_text(ours())
    body = f"from lint_plugin.cli import main\n_result = main(['prove', '--kernel', {str(kernel)!r}])"
    # Exit 1: at the context wall every kernel of this shape overruns.
    assert imported_by(body, watch, cwd=tmp_path) == (["numpy", "sympy"], "1")
