"""``check --explain FILE:ROW`` and the not-judged count of ``--statistics``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mutants import REGRESSIONS, mutate, sites

from lint_plugin.cli import main
from lint_plugin.rules import RULES

KVI003 = RULES["KVI003"]
BRANCHED = next(e.code for e in KVI003.invalid if "if flag:" in e.code)
NOT_JUDGED = next(e.code for e in KVI003.valid if "compute_width" in e.code)
THROUGH_A_METHOD = next(e.code for e in KVI003.invalid if "_alloc_rows" in e.code)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def row_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_each_path_of_an_allocation_is_explained(tmp_path: Path, capsys) -> None:
    path = tmp_path / "b.py"
    path.write_text(BRANCHED)
    row = row_of(BRANCHED, "self.cuda_graph_kv_indices = ")
    status, out, err = run(capsys, "check", "--no-config", "--explain", f"{path}:{row}")
    assert (status, err) == (1, "")
    default, branch = out.split("  path ")[1:]
    # Paths in the order of their defining rows: the default, then the branch.
    assert default.startswith("1 of 2: width draft_kv_indices_buffer_width(")
    assert "    when not flag\n" in default
    # A sized path names its premise: upstream's contract, not the wall.
    assert (
        "    sized: at least that for all positive sizes (proven; premise: every "
        "request's seq_len + num_steps <= max_context_len)\n"
    ) in default
    assert branch.startswith("2 of 2: width max_bs * self.max_context_len (through row")
    assert "    when flag\n" in branch
    assert (
        "unsized: max_bs=1, self.topk=2, self.max_context_len=1 gives 1 < 2" in branch
    )
    assert out.rstrip().endswith("verdict: unsized (KVI003)")


def test_a_call_of_a_method_that_allocates_is_explained(tmp_path: Path, capsys) -> None:
    """At the call: the row the method makes with the call's width; where the
    method allocates, with its own parameter, no row (a width of no role)."""
    path = tmp_path / "b.py"
    path.write_text(THROUGH_A_METHOD)
    row = row_of(THROUGH_A_METHOD, "= self._alloc_rows(")
    status, out, err = run(capsys, "check", "--no-config", "--explain", f"{path}:{row}")
    assert (status, err) == (1, "")
    # Headed where check reports it: the argument that is the row's width.
    column = THROUGH_A_METHOD.splitlines()[row - 1].index("max_bs * ") + 1
    head = f"{path}:{row}:{column}: self._alloc_rows(max_bs * self.max_context_len)\n"
    assert out.startswith(head)
    assert "  path 1 of 1: width max_bs * self.max_context_len\n" in out
    assert out.rstrip().endswith("verdict: unsized (KVI003)")
    row = row_of(THROUGH_A_METHOD, "return torch.zeros(")
    status, out, _ = run(capsys, "check", "--no-config", "--explain", f"{path}:{row}")
    assert status == 0
    assert "not a kv_indices row" in out


@pytest.mark.parametrize(
    ("source", "status", "verdict"),
    [
        (KVI003.valid[0].code, 0, "verdict: sized"),
        (NOT_JUDGED, 0, "verdict: not judged (no finding)"),
        (KVI003.invalid[0].code, 1, "verdict: unsized (KVI003)"),
    ],
)
def test_the_exit_status_says_whether_it_is_unsized(
    tmp_path: Path, capsys, source: str, status: int, verdict: str
) -> None:
    path = tmp_path / "b.py"
    path.write_text(source)
    row = row_of(source, "torch.zeros(")
    got, out, _ = run(capsys, "check", "--no-config", "--explain", f"{path}:{row}")
    assert got == status
    assert verdict in out


@pytest.mark.parametrize(
    ("argument", "message", "usage"),
    [
        ("b.py", "--explain takes FILE:ROW", True),
        ("b.py:0", "--explain takes FILE:ROW", True),
        ("b.py:1", "no torch allocation in a class spans this row", False),
        ("missing.py:3", "--explain: missing.py: No such file", False),
    ],
)
def test_a_bad_explain_is_one_line_exit_2(
    tmp_path: Path, capsys, monkeypatch, argument: str, message: str, usage: bool
) -> None:
    """No FILE:ROW is a usage error (the usage, then the line, as argparse
    prints); a file with nothing to explain is one line."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "b.py").write_text(KVI003.valid[0].code)
    status, out, err = run(capsys, "check", "--no-config", "--explain", argument)
    assert status == 2 and out == ""
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert message in last
    assert err.startswith("usage: draft-kv-lint check ") == usage
    if not usage:
        assert err.strip() == last and last.startswith("draft-kv-lint: error: ")


def test_statistics_count_allocations_not_judged(tmp_path: Path, capsys) -> None:
    (tmp_path / "a.py").write_text(KVI003.invalid[0].code)
    (tmp_path / "b.py").write_text(NOT_JUDGED)
    status, out, _ = run(capsys, "check", "--no-config", "--statistics", str(tmp_path))
    assert status == 1
    assert out.splitlines()[:2] == [
        "1\tKVI003\tunsized-draft-kv-indices-buffer",
        "1\tKVI003\tunsized-draft-kv-indices-buffer "
        "(not judged: see check --explain FILE:ROW)",
    ]
    status, out, _ = run(
        capsys, "check", "--no-config", "--statistics", "--output-format", "json",
        str(tmp_path),
    )  # fmt: skip
    rows = json.loads(out)
    assert [r.get("judged", True) for r in rows] == [True, False]
    status, out, _ = run(
        capsys, "check", "--no-config", "--statistics", "--ignore", "KVI003",
        str(tmp_path / "b.py"),
    )  # fmt: skip
    assert "not judged" not in out  # a rule not selected counts nothing


def test_explain_on_the_refactored_backends(new_attention: Path, tmp_path, capsys):
    """A sized allocation of 0.5.13, and the same after a regression."""
    name = "triton_backend.py"
    text = (new_attention / name).read_text()
    site = sites(text)[1]  # init_cuda_graph_state's buffer
    row = site.alloc_rows[0] + 1
    status, out, _ = run(
        capsys, "check", "--no-config", "--explain", f"{new_attention / name}:{row}"
    )
    assert status == 0, out
    assert (
        "  verdict: sized against upstream's helper, num_seqs * topk * "
        "max_context_len, whose premise is every request's seq_len + num_steps "
        "<= max_context_len\n"
    ) in out
    wall = out.split("  at the context wall: ")[1]
    assert wall.startswith("SGLang admits a running request up to max_req_len")
    assert (
        "only a capacity guard before the launch (assert_buffer_fits, KVI006)" in wall
    )
    # 0.5.13's Triton draft launch has no guard: the row is sized, and overrun.
    assert re.search(
        r"the launch at \S+triton_backend.py:\d+ has no capacity guard before it "
        r"\(KVI006\)",
        wall,
    )
    regressed = tmp_path / name
    regressed.write_text(mutate(text, site, REGRESSIONS["local"]))
    status, out, _ = run(
        capsys, "check", "--no-config", "--explain", f"{regressed}:{row}"
    )
    assert status == 1, out
    assert "width max_bs * self.max_context_len" in out
    assert "verdict: unsized (KVI003)" in out


# KVI006's own examples, a launch guarded and one bare, with a sized row added.
KVI006 = RULES["KVI006"]
SIZED_ROW = """\
    def init_cuda_graph_state(self, max_bs):
        self.rows = torch.zeros(
            (
                self.speculative_num_steps,
                draft_kv_indices_buffer_width(max_bs, self.topk, self.max_context_len),
            ),
            dtype=torch.int32,
        )

    def common_template("""


@pytest.mark.parametrize(
    ("example", "said"),
    [
        pytest.param(
            KVI006.valid[0],
            "has a capacity guard before it (no KVI006): where the guard runs",
            id="guarded",
        ),
        pytest.param(
            KVI006.invalid[0],
            "has no capacity guard before it (KVI006): at the context wall it writes",
            id="bare",
        ),
    ],
)
def test_a_sized_row_says_whether_its_launch_is_guarded(
    tmp_path, capsys, example, said
):
    assert ("assert_buffer_fits(" in example.code) == ("no KVI006" in said)
    text = example.code.replace("    def common_template(", SIZED_ROW, 1)
    path = tmp_path / "ours.py"
    path.write_text(text)
    row = row_of(text, "self.rows = torch.zeros(")
    status, out, err = run(capsys, "check", "--no-config", "--explain", f"{path}:{row}")
    assert (status, err) == (0, "")
    assert "  verdict: sized against upstream's helper" in out
    launch = row_of(text, "generate_draft_decode_kv_indices[")
    assert f"  the launch at {path}:{launch} {said}" in out
