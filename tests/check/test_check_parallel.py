"""Large runs fork workers; what they report must not depend on that."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lint_plugin.check import pipeline as check
from lint_plugin.config.selection import Layer, build_selection

SITE = "n = seq_lens_sum * self.topk + bs * (i + 1)\n"


@pytest.mark.skipif(sys.platform != "linux", reason="workers are forked on Linux only")
def test_forked_workers_report_what_one_process_reports(tmp_path: Path, monkeypatch):
    paths = []
    for index in range(12):
        path = tmp_path / f"m{index:02}.py"
        path.write_text(SITE * (index % 3) + ("x = (\n" if index == 7 else ""))
        paths.append(str(path))
    paths.append(str(tmp_path / "missing.py"))
    selection = build_selection([Layer(None, (), ())], [], str(tmp_path))

    serial = check._check_serially(paths, selection)
    monkeypatch.setattr(check, "_workers", lambda files: 3)
    forked = check.check_files(paths, selection)

    assert [r.path for r in forked.reports] == [r.path for r in serial.reports]
    assert forked.findings == serial.findings
    # 4 files with one site, 4 with two, one of those is broken: 11 + one E999
    assert len(forked.findings) == 12
    assert forked.files_checked == serial.files_checked == 12
    assert [e.path for e in forked.errors] == [e.path for e in serial.errors]


@pytest.mark.skipif(sys.platform != "linux", reason="workers are forked on Linux only")
def test_forked_workers_list_crashes_in_the_files_order(tmp_path: Path, monkeypatch):
    """A warm run may check in one process what a cold one forks for: the
    files the engine failed on are listed the same either way."""
    from lint_plugin import linter

    paths = []
    for index in range(9):
        path = tmp_path / f"m{index:02}.py"
        path.write_text(SITE + ("# CRASH\n" if index % 2 else ""))
        paths.append(str(path))
    selection = build_selection([Layer(None, (), ())], [], str(tmp_path))
    real = linter.lint_text

    def failing(text, path, *args, **kwargs):
        if "CRASH" in text:
            raise RuntimeError("boom")
        return real(text, path, *args, **kwargs)

    monkeypatch.setattr(linter, "lint_text", failing)
    serial = check._check_serially(paths, selection)
    monkeypatch.setattr(check, "_workers", lambda files: 3)
    forked = check.check_files(paths, selection)

    assert [c.path for c in serial.crashes] == paths[1::2]
    assert [c.path for c in forked.crashes] == paths[1::2]


def test_the_collector_is_off_while_files_are_checked_and_restored_after(
    tmp_path: Path, monkeypatch
):
    import gc

    paths = []
    for index in range(5):
        path = tmp_path / f"m{index}.py"
        path.write_text(SITE)
        paths.append(str(path))
    selection = build_selection([Layer(None, (), ())], [], str(tmp_path))
    seen: list[bool] = []
    collected: list[int] = []
    from lint_plugin import linter

    lint_text = linter.lint_text

    def recording(*args, **kwargs):
        seen.append(gc.isenabled())
        return lint_text(*args, **kwargs)

    monkeypatch.setattr(linter, "lint_text", recording)
    monkeypatch.setattr(check, "_COLLECT_EVERY", 2)
    monkeypatch.setattr(check, "_collect_garbage", lambda: collected.append(1))
    assert gc.isenabled()

    result = check.check_files(paths, selection)

    assert len(result.findings) == 5
    assert seen == [False] * 5
    assert len(collected) == 2  # after the 2nd and the 4th file
    assert gc.isenabled()
