"""The documented exit codes, as a table: one row per situation and command.

0 clean (or nothing left to do), 1 findings or a file that could not be checked or
fixed (E999 included), 2 usage, configuration or internal error. A file that does
not parse is E999 wherever the tool had to parse it, in ``check``, ``fix`` and
flake8 alike, and never an internal error.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lint_plugin.cli import main

SITE = (
    "class XMultiStepDraftBackend:\n"
    "    def f(self, seq_lens_sum, bs, i):\n"
    "        return seq_lens_sum * self.topk + bs * (i + 1)\n"
)
# The site is fine to parse on its own; an unrelated function is not.
BROKEN_ELSEWHERE = SITE + "\n\ndef unrelated(:\n    pass\n"
FILES = {
    "clean.py": "x = 1\n",
    "site.py": SITE,
    "broken.py": BROKEN_ELSEWHERE,
    "latin1.py": "s = 'caf\xe9'\n",
}

TABLE = [
    # check
    (["check", "clean.py"], 0),
    (["check", "site.py"], 1),
    (["check", "--exit-zero", "site.py"], 0),
    (["check", "--select", "KVI002", "site.py"], 0),
    (["check", "broken.py"], 1),
    (["check", "--select", "KVI002", "broken.py"], 1),  # E999 is always reported
    (["check", "missing.py"], 1),
    (["check", "latin1.py"], 1),
    (["check", "--add-noqa", "site.py"], 0),
    (["check", "--select", "KVI9", "site.py"], 2),
    (["check", "--no-such-option"], 2),
    (["check", "--config", "missing.toml", "site.py"], 2),
    # fix
    (["fix", "clean.py"], 0),
    (["fix", "--diff", "clean.py"], 0),
    (["fix", "--diff", "site.py"], 1),
    (["fix", "--check", "site.py"], 1),
    (["fix", "site.py"], 0),
    (["fix", "broken.py"], 1),
    (["fix", "--diff", "broken.py"], 1),
    (["fix", "missing.py"], 1),
    (["fix", "--diff", "--check", "site.py"], 2),
    # clean
    (["clean"], 0),
    (["clean", "--cache-dir", "clean.py"], 0),  # not a folder: left alone
    (["clean", "--no-such-option"], 2),
    # rule
    (["rule", "KVI001"], 0),
    (["rule", "KVI999"], 2),
    (["rule"], 2),
    # no command
    ([], 2),
]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.draft-kv-lint]\n")
    for name, text in FILES.items():
        (tmp_path / name).write_bytes(text.encode("latin-1"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    ("argv", "status"), [pytest.param(a, s, id=" ".join(a) or "-") for a, s in TABLE]
)
def test_exit_code(project: Path, capsys, argv: list[str], status: int) -> None:
    assert main(argv) == status
    captured = capsys.readouterr()
    assert "internal error" not in captured.err
    assert "Traceback" not in captured.err


def test_broken_file_is_e999_not_its_findings(project: Path, capsys) -> None:
    assert main(["check", "broken.py"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("broken.py:6:") and " E999 SyntaxError: " in out
    assert "KVI001" not in out


def test_fix_names_the_syntax_error_and_leaves_the_file(project: Path, capsys) -> None:
    assert main(["fix", "broken.py"]) == 1
    err = capsys.readouterr().err
    assert "broken.py: error: cannot parse, left unchanged: 6:" in err
    assert (project / "broken.py").read_text() == BROKEN_ELSEWHERE


def test_flake8_agrees_on_the_broken_file(project: Path, capsys) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "KVI,E999",
         "--format", "%(row)d|%(code)s", "broken.py", "site.py"],
        capture_output=True, text=True, cwd=project,
    )  # fmt: skip
    flake8 = sorted(result.stdout.split())
    main(["check", "--output-format", "json", "broken.py", "site.py"])
    import json

    ours = sorted(
        f"{f['location']['row']}|{f['code']}"
        for f in json.loads(capsys.readouterr().out)
    )
    # Rows and codes agree; flake8 shifts a syntax error's column by one (it reads
    # Python's 1-based offset as 0-based), we keep Python's, as ruff does.
    assert ours == flake8 == ["3|KVI001", "6|E999"]


CONSOLE = [sys.executable, "-m", "lint_plugin.cli"]  # the console script's `run`
# Buffered streams, as a user's are (these machines set PYTHONUNBUFFERED): what
# is still in a buffer when `run` leaves must have been flushed.
BUFFERED = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


@pytest.mark.parametrize(
    "argv",
    [["check", "clean.py"], ["check", "site.py", "broken.py"], ["check", "--select", "KVI9", "site.py"],
     ["fix", "--diff", "site.py"], ["rule", "KVI001"]],
)  # fmt: skip
def test_the_console_script_says_and_exits_what_main_does(
    project: Path, capsys, argv: list[str]
) -> None:
    """``run`` leaves without the interpreter's teardown: the status and every
    byte of both streams are still ``main``'s."""
    result = subprocess.run(
        [*CONSOLE, *argv], capture_output=True, text=True, env=BUFFERED
    )
    status = main(argv)
    captured = capsys.readouterr()
    assert (result.returncode, result.stdout, result.stderr) == (
        status,
        captured.out,
        captured.err,
    )


def _many_findings(project: Path, count: int) -> None:
    methods = "".join(
        f"    def f{i}(self, seq_lens_sum, bs, i):\n"
        "        return seq_lens_sum * self.topk + bs * (i + 1)\n"
        for i in range(count)
    )
    (project / "many.py").write_text("class XMultiStepDraftBackend:\n" + methods)


def test_the_console_script_writes_more_than_a_pipe_holds(project: Path) -> None:
    _many_findings(project, 400)
    result = subprocess.run(
        [*CONSOLE, "check", "many.py"], capture_output=True, env=BUFFERED
    )
    assert len(result.stdout) > 65536  # a pipe's buffer: the rest was flushed
    lines = result.stdout.decode().splitlines()
    assert sum(" KVI001 " in line for line in lines) == 400
    assert lines[-2:] == [
        "Found 400 errors.",
        "[*] 400 fixable with `draft-kv-lint fix`.",
    ]
    assert result.returncode == 1


@pytest.mark.parametrize(
    ("argv", "first"), [(["check"], b"KVI001"), (["fix", "--diff"], b"--- a/")]
)
def test_the_console_script_stops_quietly_when_the_reader_goes(
    project: Path, argv: list[str], first: bytes
) -> None:
    _many_findings(project, 4000)  # far more than a pipe holds
    child = subprocess.Popen(
        [*CONSOLE, *argv, "many.py"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=BUFFERED,
    )
    assert child.stdout is not None and child.stderr is not None
    assert first in child.stdout.readline()
    child.stdout.close()  # as `| head -1` does
    err = child.stderr.read()
    # What was printed was a finding or a diff: "found something", quietly,
    # whether a write failed (main) or the last flush did (the console script).
    assert child.wait() == 1
    assert b"Traceback" not in err and b"Exception ignored" not in err
