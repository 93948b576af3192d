"""Hostile inputs to ``fix`` (and ``check``): one line for the bad path, the other
files still processed, nothing written where it must not be (issue 9, item 3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import user_docs

from lint_plugin import source_files as files
from lint_plugin.cli import main

SITE = (
    "def f(self, seq_lens_sum, bs, i):\n"
    "    return seq_lens_sum * self.topk + bs * (i + 1)\n"
)
CALL = "draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)"


def run_fix(capsys, *paths: str, config: bool = False) -> tuple[int, list[str]]:
    args = ["fix", *([] if config else ["--no-config"]), *paths]
    status = main(args)
    err = capsys.readouterr().err.splitlines()
    return status, [line for line in err if "error" in line or "warning" in line]


@pytest.fixture
def good(tmp_path: Path) -> Path:
    path = tmp_path / "good.py"
    path.write_text(SITE)
    return path


def assert_fixed(path: Path) -> None:
    assert CALL in path.read_text()


def test_fifo_is_reported_not_read(tmp_path, good, capsys) -> None:
    os.mkfifo(tmp_path / "x.py")  # reading it would block forever
    status, lines = run_fix(capsys, str(tmp_path))
    assert status == 1
    assert lines == [f"{tmp_path / 'x.py'}: error: not a regular file (a FIFO)"]
    assert_fixed(good)


def test_link_to_a_device_is_reported_not_read(tmp_path, good, capsys) -> None:
    (tmp_path / "zero.py").symlink_to("/dev/zero")  # endless bytes
    status, lines = run_fix(capsys, str(tmp_path))
    assert status == 1
    assert lines == [
        f"{tmp_path / 'zero.py'}: error: not a regular file (a character device)"
    ]
    assert_fixed(good)


def test_check_reports_a_fifo_and_checks_the_rest(tmp_path, good, capsys) -> None:
    os.mkfifo(tmp_path / "x.py")
    assert main(["check", "--no-config", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"{tmp_path / 'x.py'}: error: not a regular file (a FIFO)"
    ]
    assert "KVI001" in captured.out


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_pyproject_that_is_no_file_is_skipped(tmp_path, good, capsys, kind) -> None:
    pyproject = tmp_path / "pyproject.toml"
    if kind == "fifo":
        os.mkfifo(pyproject)
    else:
        pyproject.symlink_to("/dev/zero")
    status, lines = run_fix(capsys, str(good), config=True)
    assert status == 0
    assert len(lines) == 1
    assert lines[0].startswith(f"warning: {pyproject}: error: not a regular file")
    assert_fixed(good)


def test_a_file_over_the_size_cap_is_reported(tmp_path, good, capsys, monkeypatch):
    monkeypatch.setattr(files, "MAX_SOURCE_BYTES", 1000)
    big = tmp_path / "big.py"
    big.write_text(SITE + "#" * 1000 + "\n")
    status, lines = run_fix(capsys, str(tmp_path))
    assert status == 1
    assert lines == [f"{big}: error: larger than 1,000 bytes, not read"]
    assert_fixed(good)


@pytest.mark.parametrize(
    "body",
    [
        "X = " + "-" * 100_000 + "1\n",  # past the parser's own limits
        "X = " + "[" * 1000 + "]" * 1000 + "\n",  # too many nested brackets
    ],
    ids=["deep-unary", "deep-brackets"],
)
def test_code_too_deep_to_parse_is_one_line(tmp_path, good, capsys, body) -> None:
    deep = tmp_path / "deep.py"
    deep.write_text(body + SITE)
    before = deep.read_bytes()
    status, lines = run_fix(capsys, str(tmp_path))
    assert status == 1
    assert len(lines) == 1 and lines[0].startswith(f"{deep}: error: cannot parse")
    assert deep.read_bytes() == before
    assert_fixed(good)


def test_deep_but_valid_header_is_fixed(tmp_path, capsys) -> None:
    # libcst parses the module header to add the import; it is only ever given
    # text the ast parser accepted (deeper input once crashed the process).
    path = tmp_path / "header.py"
    path.write_text("X = " + "[" * 150 + "]" * 150 + "\n\n\n" + SITE)
    status, lines = run_fix(capsys, str(path))
    assert (status, lines) == (0, [])
    assert_fixed(path)


def test_link_out_of_the_named_folder_is_not_written(tmp_path, capsys) -> None:
    outside = tmp_path / "outside"
    inside = tmp_path / "inside"
    outside.mkdir()
    inside.mkdir()
    target = outside / "target.py"
    target.write_text(SITE)
    (inside / "link.py").symlink_to(target)
    good = inside / "good.py"
    good.write_text(SITE)
    status, lines = run_fix(capsys, str(inside))
    assert status == 1
    assert lines == [
        f"{inside / 'link.py'}: error: symbolic link to {target}, outside the "
        "paths given, not written (name the target to fix it)"
    ]
    assert target.read_text() == SITE
    assert_fixed(good)


def test_read_only_file_is_not_replaced(tmp_path, good, capsys) -> None:
    locked = tmp_path / "locked.py"
    locked.write_text(SITE)
    locked.chmod(0o444)
    status, lines = run_fix(capsys, str(tmp_path))
    assert status == 1
    assert lines == [f"{locked}: error: cannot write: read-only, not replaced"]
    assert locked.read_text() == SITE
    assert_fixed(good)


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown"
)
def test_someone_elses_file_is_not_replaced(tmp_path, good, capsys) -> None:
    theirs = tmp_path / "theirs.py"
    theirs.write_text(SITE)
    os.chown(theirs, 65534, 65534)
    status, lines = run_fix(capsys, str(tmp_path))
    assert status == 1
    assert lines == [
        f"{theirs}: error: cannot write: owned by another user, not replaced"
    ]
    assert theirs.read_text() == SITE
    assert theirs.stat().st_uid == 65534
    assert_fixed(good)


def test_a_path_like_an_option_stays_a_path(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    # A long statement, so the formatter (a subprocess) is given the path.
    name = "--select=KVI004.py"
    body = "    return (\n        seq_lens_sum * self.topk\n        + bs * (i + 1)\n    )\n"
    Path(name).write_text(SITE.splitlines(keepends=True)[0] + body)
    status, lines = run_fix(capsys, f"./{name}")
    assert (status, lines) == (0, [])
    assert CALL in Path(name).read_text()


# The child writes a file atomically again and again (or a findings cache entry,
# check's one temporary file); in each trial a real signal (SIGINT or SIGTERM,
# sent to itself) arrives at another point of the write: at the n-th line Python
# runs there (atomic.py, cache.py, tempfile's mkstemp, os). After each, no
# temporary file may be left and the target must be the old bytes or the new
# ones, never anything else. (Unheld, a signal inside tempfile's lock hangs the
# next write, and the test fails.)
SIGNAL_TRIALS = textwrap.dedent(
    """
    import faulthandler, json, os, signal, sys
    from lint_plugin.fix import atomic
    from lint_plugin.check.cache import Cache
    from lint_plugin.engine.settings import Settings

    # A signal in the middle of tempfile's own lock would hang the next write:
    # that is a failure too, not a test that never ends.
    faulthandler.dump_traceback_later(120, exit=True)

    folder, mode = sys.argv[1:]
    target = os.path.join(folder, "m.py")
    cache = Cache(os.path.join(folder, "cache"), Settings())
    watched = ("atomic.py", "cache.py", "tempfile.py", os.sep + "os.py")
    results = {"trials": 0, "interrupted": 0, "left": 0, "torn": 0, "points": 0}

    # Both signals become exceptions for the whole run, as in check (and in fix
    # before the write's own handler is in place, where the default action would
    # end the trials): whatever the parent left (an ignored SIGINT is inherited,
    # and then Python installs no handler), every trial must be interrupted.
    signal.signal(signal.SIGINT, signal.default_int_handler)

    def terminate(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminate)

    def leftovers():
        return [
            name
            for _, _, names in os.walk(folder)
            for name in names
            if name.endswith(".tmp")
        ]

    for signum in (signal.SIGINT, signal.SIGTERM):
        point = 0
        while True:
            old, new = b"old\\n" * 50_000, b"new\\n" * 50_000
            with open(target, "wb") as handle:
                handle.write(old)
            seen = 0

            def tracer(frame, event, arg):
                global seen
                if frame.f_code.co_filename.endswith(watched):
                    if event == "line":
                        seen += 1
                        if seen == point + 1:
                            os.kill(os.getpid(), signum)
                    return tracer
                return None

            sys.settrace(tracer)
            try:
                if mode == "cache":
                    cache.put(f"{signum}-{point}", [])
                else:
                    atomic.write_atomic(target, new)
                fired = seen > point
            except (KeyboardInterrupt, SystemExit):
                fired = True
                results["interrupted"] += 1
            finally:
                sys.settrace(None)
            if not fired:
                break  # past the last line of the write: every point was tried
            results["trials"] += 1
            if leftovers():
                results["left"] += 1
            with open(target, "rb") as handle:
                if handle.read() not in (old, new):
                    results["torn"] += 1
            point += 1
        results["points"] = max(results["points"], point)
    print(json.dumps(results))
    """
)


@pytest.mark.parametrize("mode", ["fix", "cache"])
def test_a_signal_at_any_point_of_a_write_leaves_no_temporary(tmp_path, mode) -> None:
    result = subprocess.run(
        [sys.executable, "-c", SIGNAL_TRIALS, str(tmp_path), mode],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    results = json.loads(result.stdout)
    assert results["trials"] > (40 if mode == "fix" else 10)  # every line, both
    assert results["interrupted"] == results["trials"]
    assert (results["left"], results["torn"]) == (0, 0)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="python -P is 3.11+")
def test_the_readme_libcst_line_imports_nothing_from_the_working_folder(tmp_path):
    # A repository with a folder named like a package the transform imports.
    planted = tmp_path / "ruff"
    planted.mkdir()
    marker = tmp_path / "planted-code-ran"
    (planted / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (planted / "__main__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    body = "    return (\n        seq_lens_sum * self.topk\n        + bs * (i + 1)\n    )\n"
    target = tmp_path / "backend.py"
    target.write_text(SITE.splitlines(keepends=True)[0] + body)
    # Written once, in the README or a docs page (docs/sglang.md today).
    (line,) = (line for _, line in user_docs.lines_starting("python -P -m libcst"))
    command = [sys.executable, *line.split()[1:-1], str(target)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert CALL in target.read_text()
    assert not marker.exists()


def test_check_reports_a_formula_in_a_1000_term_sum(tmp_path, capsys) -> None:
    path = tmp_path / "long.py"
    terms = " + ".join(["bs"] * 1000)
    path.write_text(SITE.replace("return ", f"return {terms} + "))
    assert main(["check", "--no-config", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.err == ""
    assert "KVI001" in captured.out and "All checks passed" not in captured.out
