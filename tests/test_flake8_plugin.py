"""The flake8 front end, run through real flake8: same findings, flake8's noqa."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lint_plugin import runtime
from lint_plugin.scan import check_source

SOURCE = """\
class XMultiStepDraftBackend:
    def f(self, forward_batch, seq_lens_sum, bs, i):
        a = seq_lens_sum * self.topk + bs * (i + 1)
        b = seq_lens_sum * self.topk + bs * (i + 1)  # noqa: KVI001
        c = forward_batch.batch_size * self.topk * self.max_context_len  # noqa
        d = (
            forward_batch.batch_size * self.topk * self.max_context_len  # noqa: KVI004
        )
        return a, b, c, d
"""


def flake8(path: Path) -> list[tuple[int, int, str]]:
    result = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "KVI",
         "--format", "%(row)d|%(col)d|%(code)s", str(path)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    return [
        (int(row), int(col), code)
        for row, col, code in (line.split("|") for line in result.stdout.splitlines())
    ]


@pytest.fixture
def snippet(tmp_path: Path) -> Path:
    path = tmp_path / "backend.py"
    path.write_text(SOURCE)
    return path


def test_flake8_honours_noqa_on_the_reported_row(snippet: Path) -> None:
    assert flake8(snippet) == [(3, 13, "KVI001"), (7, 13, "KVI002")]


def test_check_reports_what_flake8_reports(snippet: Path, capsys) -> None:
    import json

    from lint_plugin.cli import main

    assert main(["check", "--no-config", "--output-format", "json", str(snippet)]) == 1
    reported = json.loads(capsys.readouterr().out)
    found = [
        (f["location"]["row"], f["location"]["column"], f["code"]) for f in reported
    ]
    assert found == flake8(snippet)


def test_check_and_flake8_positions_agree(snippet: Path) -> None:
    unfiltered = {(f.row, f.column, f.code) for f in check_source(SOURCE.encode(), "x")}
    assert set(flake8(snippet)) <= unfiltered


def test_the_bundled_runtime_is_not_a_finding() -> None:
    path = Path(runtime.__file__)
    assert check_source(path.read_bytes(), str(path)) == []
    assert flake8(path) == []


SHADOWING = "from mypkg.sizes import draft_kv_indices_buffer_width\n"


def test_helpers_module_option_decides_which_import_is_trusted(tmp_path: Path) -> None:
    path = tmp_path / "backend.py"
    path.write_text(SHADOWING)
    assert [code for _, _, code in flake8(path)] == ["KVI005"]
    result = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "KVI",
         "--kvi-helpers-module", "mypkg.sizes", str(path)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert (result.returncode, result.stdout) == (0, "")


def test_opt_in_rule_needs_its_own_code_in_flake8_too(tmp_path: Path) -> None:
    from lint_plugin.rules import RULES

    path = tmp_path / "backend.py"
    path.write_text(RULES["KVI006"].invalid[0].code)
    assert flake8(path) == []  # --select KVI alone leaves KVI006 off
    result = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "KVI",
         "--extend-select", "KVI006", "--format", "%(code)s", str(path)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.stdout.split() == ["KVI006"]
