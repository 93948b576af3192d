"""The kernel's fit judged where SGLang really runs it: the context wall.

Upstream's width helper sizes a row for ``seq_len + num_steps <= max_context_len``;
SGLang admits a drafting request up to ``max_context_len - 1``. ``prove --kernel``
judges that envelope by default: on 0.5.13's and 0.5.23's kernels it prints the
fit condition and counterexamples, and upstream's own kernel, interpreted at each
*printed* counterexample (read back from the text, not from our objects), writes
past the helper's width exactly as printed. ``--envelope contract`` narrows to
upstream's premise, where the same kernels fit.
"""

from __future__ import annotations

import random
import re

import pytest
import sympy as sp
from corpus import attention_dir, available, tree
from kernel_launch import Launch, written_extents
from our_kernel import ours
from release_kernels import kernel_of

from lint_plugin import envelope
from lint_plugin.cli import main
from lint_plugin.proof.fit.concrete import launch_values
from lint_plugin.proof.fit.judge import (
    CONTRACT,
    WALL,
    describe,
    fit_condition,
    prove_fit,
)
from lint_plugin.proof.fit.positivity import symbol
from lint_plugin.proof.grid import Params, wall_grid
from lint_plugin.proof.kernel import ReferenceDraftKernel
from lint_plugin.proof.verdict import DIFFERS, GUARDED, IDENTICAL, prove_class
from lint_plugin.runtime import draft_kv_indices_buffer_width

RELEASES = ("0.5.13", "0.5.23")
CONDITION = "seq_len + num_steps <= max_context_len"
WINDOWED = "min(seq_len, sink_size + window_size) + num_steps <= max_context_len"
PRINTED = re.compile(
    r"counterexample \(at the context wall, (?P<branch>.*?)\): "
    r"num_seqs=(?P<n>\d+) topk=(?P<topk>\d+) num_steps=(?P<steps>\d+) "
    r"seq_lens=\[(?P<lens>[\d, ]+)\] max_context_len=(?P<ctx>\d+)"
    r"(?P<params>(?: \w+=\d+)*): row (?P<row>\d+) writes (?P<writes>\d+) entries, "
    r"> draft_kv_indices_buffer_width\(num_seqs, topk, max_context_len\) = "
    r"(?P<width>\d+)$"
)


def _printed(out: str) -> list[dict]:
    found = []
    for line in out.splitlines():
        match = PRINTED.fullmatch(line.strip())
        if match:
            found.append(match.groupdict())
    return found


def _launch(example: dict) -> Launch:
    """The launch a printed counterexample names, as the oracle runs it."""
    params = dict(
        (key, int(value))
        for key, value in (p.split("=") for p in example["params"].split())
    )
    return Launch(
        tuple(int(v) for v in example["lens"].split(",")),
        int(example["topk"]),
        int(example["steps"]),
        page_size=params.get("page_size", 1),
        window_size=params.get("window_size", 0),
        sink_size=params.get("sink_size", 0),
        num_blocks=params.get("num_blk", 1) if params.get("NUM_STEPS") else 0,
    )


@pytest.mark.corpus
@pytest.mark.parametrize("version", RELEASES)
def test_upstreams_kernel_overruns_at_each_printed_counterexample(version, capsys):
    source = available(kernel_of, version)
    assert main(["prove", "--kernel", source.path]) == 1
    out = capsys.readouterr().out
    print(out)
    head, premise = out.splitlines()[:2]
    assert "): DOES NOT FIT at the context wall (sympy, " in head
    assert premise.startswith("  envelope: the context wall, a drafting request's")
    assert f"every request has {CONDITION} (the last row" in out
    assert (f"every request has {WINDOWED}" in out) == (version == "0.5.23")
    contract = envelope.CONTRACT_PREMISE
    assert f"under upstream's contract ({contract}): fits for all sizes" in out
    assert "(assert_buffer_fits, KVI006)" in out
    examples = _printed(out)
    # One per branch the kernel has: 2 in 0.5.13, 8 in 0.5.23 (windows, blocks).
    assert len(examples) == (2 if version == "0.5.13" else 8), out
    windows = set()
    for example in examples:
        launch = _launch(example)
        ctx, steps = int(example["ctx"]), launch.num_steps
        # Inside SGLang's envelope, outside upstream's premise.
        assert max(launch.seq_lens) <= ctx - 1
        assert max(launch.seq_lens) + steps > ctx
        width = draft_kv_indices_buffer_width(launch.num_seqs, launch.topk, ctx)
        assert int(example["width"]) == width
        written = written_extents(source.text, source.path, launch)
        row = int(example["row"])
        assert written[row] == int(example["writes"]) > width, (example, written)
        windows.add(launch.window_size > 0)
    assert windows == ({True, False} if version == "0.5.23" else {False})


@pytest.mark.corpus
@pytest.mark.parametrize("version", RELEASES)
def test_the_contract_envelope_fits(version, capsys):
    source = available(kernel_of, version)
    assert main(["prove", "--kernel", source.path, "--envelope", "contract"]) == 0
    out = capsys.readouterr().out
    assert "): fits for all sizes (sympy, " in out.splitlines()[0]
    assert "  envelope: upstream's contract, " in out
    assert "at the context wall (" in out and "): DOES NOT FIT at the context" in out
    assert not _printed(out)  # the wall is summarised, not argued, here


# DESIGN.md's figures: one request of seq_len 63 at context 64, topk 2. With 4
# steps the kernel writes 2*63 + 2*4 = 134 (issue 41 said 136: 2*(64 + 4), a
# seq_len SGLang never admits).
UPSTREAM_EXAMPLE = [
    pytest.param((63,), 3, 132, id="3-steps"),
    pytest.param((63,), 4, 134, id="4-steps"),
    pytest.param((63, 63), 3, 256 + 8, id="two-requests"),
]


@pytest.mark.corpus
@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize(("seq_lens", "steps", "last_row"), UPSTREAM_EXAMPLE)
def test_upstreams_example_at_the_wall(version, seq_lens, steps, last_row):
    source = available(kernel_of, version)
    launch = Launch(seq_lens, topk=2, num_steps=steps)
    written = written_extents(source.text, source.path, launch)
    width = draft_kv_indices_buffer_width(len(seq_lens), 2, 64)
    assert written[-1] == last_row > width
    # Every row but the first overruns: row i holds 2*sum + 2*n*(i + 1).
    assert [w > width for w in written] == [i > 0 for i in range(steps)]
    fit = prove_fit(source.text, filename=source.path)
    assert fit.verdict == "DOES NOT FIT at the context wall"
    assert fit.verdict_under(CONTRACT) == "fits for all sizes"


@pytest.mark.corpus
@pytest.mark.parametrize("version", ["0.5.12.post1", "0.5.13", "0.5.23"])
def test_the_envelopes_lines_are_read_from_the_release(version):
    root = available(tree, version, True) / "sglang"
    found = envelope.sources(root / "srt/layers/attention/triton_backend.py")
    assert found == tuple(f"sglang/{w}" for w in envelope.KNOWN_SOURCES[version])
    (admission, at), (headroom, note) = (where.rsplit(":", 1) for where in found)
    text = (root.parent / admission).read_text().splitlines()
    assert "context_len - 1" in text[int(at) - 1]
    text = (root.parent / headroom).read_text().splitlines()
    assert "temporary fix for the context length issue" in text[int(note) - 1]


def test_the_envelopes_lines_in_a_tree_of_our_own(tmp_path):
    root = tmp_path / "sglang"
    (root / "srt/managers").mkdir(parents=True)
    (root / "srt/mem_cache").mkdir(parents=True)
    (root / "srt/managers/tp_worker.py").write_text(
        "def check(self):\n"
        "    # not this: context_len - 1 in a comment\n"
        "    limit = min(self.context_len - 1, pool - 1)\n"
        "\n"
        "def info(self):\n"
        "    max_req_len = min(\n"
        "        self.model_config.context_len - 1,\n"
        "        pool - 1,\n"
        "    )\n"
    )
    (root / "srt/mem_cache/common.py").write_text(
        "x = 1\n# FIXME: the temporary fix for the context length issue\nextra = 4\n"
    )
    kernel = root / "srt/speculative/k.py"
    found = envelope.sources(kernel)
    assert found == (
        "sglang/srt/managers/tp_worker.py:7",
        "sglang/srt/mem_cache/common.py:2",
    )
    assert envelope.sources(tmp_path / "elsewhere.py") == ()


SEQ_LEN, MAX_CONTEXT = symbol("seq_len"), symbol("max_context_len")
NUM_STEPS, TOPK = symbol("num_steps"), symbol("topk")
WINDOW, SINK = symbol("window_size"), symbol("sink_size")


@pytest.mark.parametrize(
    ("slack", "shown"),
    [
        pytest.param(
            TOPK * MAX_CONTEXT - TOPK * SEQ_LEN - TOPK * NUM_STEPS,
            CONDITION,
            id="topk-divided-out",
        ),
        pytest.param(
            TOPK * (MAX_CONTEXT - (SEQ_LEN + NUM_STEPS)),
            CONDITION,
            id="a-product-unexpanded",
        ),
        pytest.param(
            MAX_CONTEXT - NUM_STEPS - sp.Min(SEQ_LEN, WINDOW + SINK),
            WINDOWED,
            id="the-window-rail",
        ),
        pytest.param(
            2 * MAX_CONTEXT - 2 * SEQ_LEN - 2 * NUM_STEPS - 2,
            "seq_len + num_steps + 1 <= max_context_len",
            id="a-constant",
        ),
    ],
)
def test_the_fit_condition_reads_as_a_relation(slack, shown):
    assert fit_condition(slack) == shown


def test_judging_the_wall_or_the_contract_changes_only_the_verdict():
    kernel = ours()
    wall = prove_fit(kernel, judged=WALL)
    contract = prove_fit(kernel, judged=CONTRACT)
    assert wall.verdict == "DOES NOT FIT at the context wall"
    assert contract.verdict == "fits for all sizes"
    assert wall.refuted and not wall.contract_refuted and contract.fits
    (branch,) = wall.branches
    assert branch.condition == (CONDITION, "the last row, i = num_steps - 1")
    (example,) = [c.counterexample for c in branch.claims if c.counterexample]
    sizes = example.sizes
    # The smallest launch at the wall: one request one short of the context,
    # two steps (one step still fits: topk*(ctx - 1) + topk*1 == topk*ctx).
    assert (sizes.seq_lens, sizes.num_steps, sizes.max_context_len) == ((2,), 2, 3)
    assert example.writes == example.limit + sizes.topk


def _holds(launch: Launch, ctx: int) -> bool:
    """The printed condition, for every request of the launch."""
    rail = launch.window_size + launch.sink_size if launch.window_size > 0 else None
    return all(
        (n if rail is None else min(n, rail)) + launch.num_steps <= ctx
        for n in launch.seq_lens
    )


@pytest.mark.corpus
@pytest.mark.parametrize("version", RELEASES)
def test_the_printed_condition_is_the_kernels_own(version):
    """On random launches inside the wall envelope, upstream's kernel keeps to
    the helper's width whenever every request meets the printed condition, and
    a request alone overruns exactly when it does not (a row is a sum: beside a
    short request a long one may still fit)."""
    source = available(kernel_of, version)
    rng = random.Random(f"wall {version}")
    windows = "window_size" in source.parameters
    outcomes = set()
    for index in range(12):
        ctx = rng.choice((4, 9, 33))
        steps = rng.randint(1, 5)
        count = 1 + index % 3 // 2  # one request, or two
        lens = tuple(
            rng.randint(max(1, ctx - steps - 2), ctx - 1) for _ in range(count)
        )
        window = sink = 0
        if windows and index % 2:
            window, sink = rng.choice((1, 3, 8, 40)), rng.choice((0, 1))
        launch = Launch(
            lens,
            topk=rng.randint(1, 3),
            num_steps=steps,
            page_size=rng.choice((1, 2)),
            window_size=window,
            sink_size=sink,
            seed=index,
        )
        written = written_extents(source.text, source.path, launch)
        width = draft_kv_indices_buffer_width(launch.num_seqs, launch.topk, ctx)
        fits = max(written) <= width
        if _holds(launch, ctx):
            assert fits, (launch, ctx, written, width)
        if launch.num_seqs == 1:
            assert fits == _holds(launch, ctx), (launch, ctx, written, width)
            outcomes.add(fits)
    assert outcomes == {True, False}


# -- prove OLD NEW at the wall ----------------------------------------------------

UNDER_THE_WALL = Params(2, 2, 2, (15, 1), 16, at_wall=True)  # fits: 40 of 64


def _prove(before: str, after: str, name: str, grid: list[Params]):
    return prove_class(
        before, after, name, grid, "cpu", kernel=ReferenceDraftKernel, coverage=False
    )


@pytest.mark.corpus
def test_the_wall_cases_overrun_alike_or_stop_at_the_guard():
    old, new = (available(attention_dir, v) for v in ("0.5.12.post1", "0.5.13"))
    grid = wall_grid()
    assert all(p.at_wall and max(p.seq_lens) == p.max_context_len - 1 for p in grid)
    name = "flashinfer_backend.py"
    # 0.5.13 added the guard: where 0.5.12.post1 wrote past its (widened) rows,
    # the refactor raises instead.
    proof = _prove(
        (old / name).read_text(),
        (new / name).read_text(),
        "FlashInferMultiStepDraftBackend",
        grid,
    )
    assert proof.kinds == [GUARDED, GUARDED], proof.failure
    assert proof.overruns_before > 0 and proof.overruns_after == 0
    assert "2 stopped by its guard at the context wall" in proof.verdict
    assert proof.raised == 0  # a guard's raise is not "raised the same"
    # Neither Triton launch is guarded: both overrun, alike, and it is counted.
    name = "triton_backend.py"
    proof = _prove(
        (old / name).read_text(),
        (new / name).read_text(),
        "TritonMultiStepDraftBackend",
        grid,
    )
    assert proof.kinds == [IDENTICAL, IDENTICAL], proof.failure
    assert proof.headline == (
        "no difference in 2 cases (identical; 2 overran alike at the context wall)"
    )
    # What it was measured on, and what the stand-ins fixed that it read.
    assert proof.verdict.startswith(proof.headline + " within num_seqs 1-2, topk 2,")
    assert "; identical under: " in proof.verdict
    assert "max_num_tokens = max_bs * topk" in proof.verdict


GUARD_CALL = re.compile(
    r"        assert_buffer_fits\(\n(?:            .*\n)*        \)\n"
)


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("edit", "why"),
    [
        pytest.param(None, None, id="the-guard-itself"),
        pytest.param(
            ("required_kv_indices_len,\n", "2 * required_kv_indices_len,\n"),
            "the rewrite raises where the original wrote nothing past its row",
            id="a-guard-that-fires-below-the-row",
        ),
        pytest.param(
            (
                "        assert_buffer_fits(\n",
                "        torch.zeros(1)\n        assert_buffer_fits(\n",
            ),
            "before the guard are not the original's",
            id="more-before-the-guard",
        ),
    ],
)
def test_a_guard_is_accepted_only_where_it_stops_an_overrun(edit, why):
    """0.5.13's FlashInfer with its guard cut out, against itself: the guard is
    accepted at the wall; a guard that fires on a row the kernel would not
    overrun, or a rewrite that does more before its guard, differs."""
    text = (available(attention_dir, "0.5.13") / "flashinfer_backend.py").read_text()
    unguarded, cut = GUARD_CALL.subn("", text, count=1)
    assert cut == 1
    changed = text
    if edit is not None:
        old, new = edit
        assert old in text
        changed = text.replace(old, new, 1)
    # Below the row first, where only a wrong guard fires; then the overruns.
    grid = [UNDER_THE_WALL, *wall_grid()]
    if why and "before the guard" in why:
        grid = wall_grid()  # below the row the extra tensor alone would differ
    proof = _prove(unguarded, changed, "FlashInferMultiStepDraftBackend", grid)
    if why is None:
        assert proof.kinds == [IDENTICAL, GUARDED, GUARDED], proof.failure
        return
    assert proof.status == DIFFERS, proof.verdict
    assert "at the context wall" in proof.failure and why in proof.failure


def test_the_condition_is_the_widest_rows():
    """Rows that shrink with the step: the first row is the widest, and its
    condition is printed (the last row's would promise room the kernel lacks)."""
    fit = prove_fit(ours(**{"drafts = step + 1": "drafts = tl.num_programs(0) - step"}))
    (branch,) = fit.branches
    assert branch.condition == (CONDITION, "the first row, i = 0")
    (wall,) = [c for c in branch.claims if c.name == "wall"]
    assert wall.counterexample.row == 0


def test_a_context_argument_is_the_launchs_context():
    """A kernel taking ``max_context_len`` is launched with the context judged,
    never a free value (a counterexample once read "max_context_len=3 ...
    max_context_len=5"). Its draft mask stops at the context but its layout does
    not: beside a long request the next one still starts past the row."""
    clamped = ours(
        **{
            "iter_upper: tl.constexpr, num_tokens_upper: tl.constexpr,": (
                "iter_upper: tl.constexpr, num_tokens_upper: tl.constexpr, "
                "max_context_len,"
            ),
            "mask=draft < drafts)": (
                "mask=(draft < drafts) & (length + draft < max_context_len))"
            ),
        }
    )
    fit = prove_fit(clamped)
    bound = fit.derivation.params["max_context_len"]
    examples = [
        c.counterexample
        for b in fit.branches
        for c in b.claims
        if c.name == "wall" and c.counterexample is not None
    ]
    assert examples, "\n".join(describe(fit))
    for example in examples:
        assert example.sizes.describe().count("max_context_len=") == 1
        launch = launch_values(fit.derivation, example.sizes).values
        assert launch[bound] == example.sizes.max_context_len
        # Two requests at the wall: the second starts at its unclamped offset.
        assert example.sizes.num_seqs >= 2
