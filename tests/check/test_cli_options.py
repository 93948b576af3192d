"""The command line people type: --quiet, --output-file, --show-fixes, --color,
check --fix/--diff, --stdin-filename with `-`, the full/concise formats, and usage
errors that show the subcommand's usage."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

pytest_plugins = ("cli_helpers",)

REAL = (
    "class XMultiStepDraftBackend:\n"
    "    def f(self, seq_lens_sum, bs, i):\n"
    "        return seq_lens_sum * self.topk + bs * (i + 1)\n"
)


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.draft-kv-lint]\n")
    (tmp_path / "a.py").write_text("x = kvi001_here\ny = kvi004_here\n")
    return tmp_path


def test_quiet_prints_the_findings_and_nothing_else(tree, run, fake_engine):
    result = run("check", "--quiet")
    assert result.status == 1
    assert result.out.splitlines() == [
        "a.py:1:5: KVI001 [*] marker kvi001_here",
        "a.py:2:5: KVI004 marker kvi004_here",
    ]
    (tree / "a.py").write_text("x = 1\n")
    assert run("check", "-q").out == ""


def test_output_file_takes_the_report(tree, run, fake_engine):
    result = run("check", "--output-format", "json", "--output-file", "report.json")
    assert (result.status, result.out) == (1, "")
    codes = [item["code"] for item in json.loads((tree / "report.json").read_text())]
    assert codes == ["KVI001", "KVI004"]


def test_show_fixes_says_what_each_fix_does(tree, run, fake_engine):
    lines = run("check", "--show-fixes").out.splitlines()
    assert lines[:3] == [
        "a.py:1:5: KVI001 [*] marker kvi001_here",
        "  help: Replace it",
        "a.py:2:5: KVI004 marker kvi004_here",
    ]


def test_full_format_shows_the_code(tree, run, fake_engine):
    lines = run("check", "--output-format", "full").out.splitlines()
    assert lines[:6] == [
        "a.py:1:5: KVI001 [*] marker kvi001_here",
        "  |",
        "1 | x = kvi001_here",
        "  |     ^^^^^^^^^^^",
        "  |",
        "  help: Replace it",
    ]


def test_concise_is_the_text_format(tree, run, fake_engine):
    assert run("check", "--output-format", "concise").out == run("check").out


@pytest.mark.parametrize(("choice", "colored"), [("always", True), ("never", False)])
def test_color(tree, run, fake_engine, choice, colored):
    assert ("\x1b[" in run("check", "--color", choice).out) is colored


def test_color_auto_is_off_when_not_a_terminal(tree, run, fake_engine):
    assert "\x1b[" not in run("check").out


def test_check_fix_and_diff_are_fix(tree, run):
    (tree / "b.py").write_text(REAL)
    diff = run("check", "--diff", "b.py")
    assert diff.status == 1 and "+        return draft_kv_indices_used_len(" in diff.out
    assert (tree / "b.py").read_text() == REAL  # --diff writes nothing
    fixed = run("check", "--fix", "b.py")
    assert fixed.status == 0
    assert "draft_kv_indices_used_len(" in (tree / "b.py").read_text()
    assert run("check", "b.py").status == 0


def test_stdin_filename_reports_under_that_name(tree, run, monkeypatch):
    (tree / "sub").mkdir()
    (tree / "sub" / ".draft-kv-lint.toml").write_text('ignore = ["KVI001"]\n')
    stdin = io.TextIOWrapper(io.BytesIO(REAL.encode()))
    monkeypatch.setattr(sys, "stdin", stdin)
    result = run("check", "--stdin-filename", "pkg/backend.py", "-")
    assert result.status == 1
    assert result.out.startswith("pkg/backend.py:3:16: KVI001 [*] ")
    # The configuration is the one of the name given (here: KVI001 ignored).
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(REAL.encode())))
    assert run("check", "--stdin-filename", "sub/backend.py", "-").status == 0


def test_stdin_without_a_name_is_dash(tree, run, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(REAL.encode())))
    assert run("check", "-").out.startswith("-:3:16: KVI001 ")


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (["check", "--bogus"], "usage: draft-kv-lint check "),
        (["fix", "--bogus"], "usage: draft-kv-lint fix "),
        (["check", "--output-format", "xml"], "usage: draft-kv-lint check "),
        (["rule", "KVI001", "extra"], "usage: draft-kv-lint rule "),
    ],
)
def test_a_usage_error_prints_the_subcommands_usage(tree, run, argv, usage):
    result = run(*argv)
    assert result.status == 2
    assert result.err.startswith(usage)
    assert "error:" in result.err.splitlines()[-1]


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "a.py", "-"],
        ["check", "--stdin-filename", "x.py", "a.py"],
        ["check", "--add-noqa", "--fix"],
        ["fix", "a.py", "-"],
        ["fix", "--stdin-filename", "x.py", "a.py"],
    ],
)
def test_contradictory_options_are_usage_errors(tree, run, argv):
    result = run(*argv)
    assert result.status == 2
    lines = result.err.splitlines()
    assert lines[0].startswith(f"usage: draft-kv-lint {argv[0]} ")
    assert lines[-1].startswith(f"draft-kv-lint {argv[0]}: error: ")


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version(capsys, flag):
    from lint_plugin import __version__
    from lint_plugin.cli import main

    assert main([flag]) == 0
    assert capsys.readouterr().out == f"draft-kv-lint {__version__}\n"


FIXING = pytest.mark.parametrize(
    "command", [("check", "--fix"), ("fix",)], ids=["check --fix", "fix"]
)


@FIXING
def test_stdin_fix_prints_the_fixed_source(tree, run, monkeypatch, command):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(REAL.encode())))
    result = run(*command, "--stdin-filename", "pkg/backend.py", "-")
    assert result.status == 0
    assert "return draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)" in (
        result.out
    )
    assert "from sglang.srt.speculative.spec_utils import" in result.out
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(REAL.encode())))
    diff = run(command[0], "--diff", "-")
    assert diff.status == 1 and diff.out.startswith("--- a/-\n+++ b/-\n")


def test_fix_check_of_stdin_prints_nothing_and_says_by_its_status(
    tree, run, monkeypatch
):
    for source, status in ((REAL, 1), ("x = 1\n", 0), (REAL + "def f(:\n", 1)):
        stdin = io.TextIOWrapper(io.BytesIO(source.encode()))
        monkeypatch.setattr(sys, "stdin", stdin)
        result = run("fix", "--check", "--stdin-filename", "pkg/backend.py", "-")
        assert (result.status, result.out) == (status, "")


@FIXING
def test_stdin_fix_of_a_broken_source_echoes_it_and_exits_1(
    tree, run, monkeypatch, command
):
    broken = REAL + "def f(:\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(broken.encode())))
    result = run(*command, "-")
    assert (result.status, result.out) == (1, broken)
    assert result.err.startswith("-: error: left unchanged: ")


def test_prove_help_says_it_runs_the_code_it_proves(capsys):
    """``Fix safety`` says nothing analysed is executed by check, fix or flake8;
    prove does execute it, and its help says so before anything else."""
    from lint_plugin.cli import main

    assert main(["prove", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    description = help_text.split("[PATH ...] ", 1)[1]
    assert description.startswith("prove RUNS the code it proves")
    assert "never in a CI job on a pull request from a fork" in description
    assert main(["--help"]) == 0
    assert "runs the classes' code" in " ".join(capsys.readouterr().out.split())
