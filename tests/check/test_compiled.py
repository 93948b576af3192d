"""CPython's bytecode cache stands for the whole-file syntax check, only when it
names the very bytes read."""

from __future__ import annotations

import os
import py_compile
from pathlib import Path

import pytest
from cli_helpers import USED_LEN_SITE

from lint_plugin.check import pipeline
from lint_plugin.check.compiled import compiled
from lint_plugin.config.selection import Layer, build_selection
from lint_plugin.engine import syntax
from lint_plugin.source_files import read_with_status

TIMESTAMP = py_compile.PycInvalidationMode.TIMESTAMP
CHECKED_HASH = py_compile.PycInvalidationMode.CHECKED_HASH


def _source(tmp_path: Path, text: str = USED_LEN_SITE) -> Path:
    path = tmp_path / "backend.py"
    path.write_text(text)
    return path


def _compiled(path: Path) -> bool:
    data, status = read_with_status(str(path))
    return compiled(str(path), data, status)


@pytest.mark.parametrize("mode", [TIMESTAMP, CHECKED_HASH])
def test_a_pyc_of_these_bytes_proves_them(tmp_path, mode) -> None:
    path = _source(tmp_path)
    assert not _compiled(path)  # no cache yet
    py_compile.compile(str(path), doraise=True, invalidation_mode=mode)
    assert _compiled(path)


@pytest.mark.parametrize("mode", [TIMESTAMP, CHECKED_HASH])
def test_a_pyc_of_other_bytes_proves_nothing(tmp_path, mode) -> None:
    path = _source(tmp_path)
    py_compile.compile(str(path), doraise=True, invalidation_mode=mode)
    stat = path.stat()
    # The same size, another text, the old modification time kept.
    path.write_text(USED_LEN_SITE.replace("bs", "xx"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    if mode == TIMESTAMP:
        assert _compiled(path)  # what CPython trusts too: its header matches
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2 * 10**9))
    assert not _compiled(path)


def test_a_pyc_of_another_size_proves_nothing(tmp_path) -> None:
    path = _source(tmp_path)
    py_compile.compile(str(path), doraise=True)
    stat = path.stat()
    path.write_text(USED_LEN_SITE + "x = 1\n")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert not _compiled(path)


@pytest.mark.parametrize(
    "header",
    [b"", b"garbage", b"\0" * 16, None],  # None: another interpreter's magic
)
def test_a_pyc_this_reader_cannot_read_proves_nothing(tmp_path, header) -> None:
    import importlib.util

    path = _source(tmp_path)
    py_compile.compile(str(path), doraise=True)
    cached = Path(importlib.util.cache_from_source(str(path)))
    if header is None:
        header = b"\0\0\r\n" + cached.read_bytes()[4:]
    cached.write_bytes(header)
    assert not _compiled(path)


def _findings(path: Path, monkeypatch) -> tuple[list[str], int]:
    """The codes check reports for ``path``, and how often the whole-file
    syntax check ran."""
    calls = []
    real = syntax.error_of

    def counted(text, name):
        calls.append(name)
        return real(text, name)

    monkeypatch.setattr(syntax, "error_of", counted)
    data, status = read_with_status(str(path))
    found = pipeline.check_file(
        pipeline.SourceFile(str(path), data, status),
        build_selection([Layer(None, (), ())]),
    )
    return [f.code for f in found], len(calls)


def test_check_skips_the_syntax_check_a_pyc_proves(tmp_path, monkeypatch) -> None:
    path = _source(tmp_path)
    assert _findings(path, monkeypatch) == (["KVI001"], 1)
    py_compile.compile(str(path), doraise=True)
    assert _findings(path, monkeypatch) == (["KVI001"], 0)


def test_a_stale_pyc_leaves_a_syntax_error_reported(tmp_path, monkeypatch) -> None:
    path = _source(tmp_path)
    py_compile.compile(str(path), doraise=True)
    path.write_text(USED_LEN_SITE + "def broken(:\n    pass\n")
    assert _findings(path, monkeypatch) == (["E999"], 1)
