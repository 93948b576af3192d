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


# The site is a small part of the file: its region alone is parsed, and the
# whole file's syntax checked (``linter.WHOLE_SHARE``).
SOURCE = USED_LEN_SITE + "".join(f"x{i} = {i}\n" for i in range(40))


def _source(tmp_path: Path, text: str = SOURCE, name: str = "backend.py") -> Path:
    """A source last modified two seconds ago: a pyc written now is not racy."""
    path = tmp_path / name
    path.write_text(text)
    _age(path, 2)
    return path


def _age(path: Path, seconds: int) -> None:
    mtime = path.stat().st_mtime_ns - seconds * 10**9
    os.utime(path, ns=(mtime, mtime))


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
    # The same size, another text; for a timestamp pyc, another second.
    path.write_text(SOURCE.replace("bs", "xx"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert not _compiled(path)


def test_a_pyc_written_in_the_source_s_second_proves_nothing(tmp_path) -> None:
    """An edit later that second, keeping the size, would match its header:
    CPython would run the old bytecode; here it proves nothing."""
    path = tmp_path / "backend.py"
    path.write_text(SOURCE)
    py_compile.compile(str(path), doraise=True)
    import importlib.util

    cached = Path(importlib.util.cache_from_source(str(path)))
    source = path.stat().st_mtime_ns
    os.utime(cached, ns=(source, source))  # written in the same second
    assert not _compiled(path)
    later = (source // 10**9 + 1) * 10**9
    os.utime(cached, ns=(later, later))  # a second later: no edit can hide
    assert _compiled(path)


def test_a_pyc_of_another_size_proves_nothing(tmp_path) -> None:
    path = _source(tmp_path)
    py_compile.compile(str(path), doraise=True)
    stat = path.stat()
    path.write_text(SOURCE + "x = 1\n")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert not _compiled(path)


def test_a_stub_never_reads_its_module_s_pyc(tmp_path) -> None:
    """``backend.pyi`` beside ``backend.py`` maps to the same pyc name."""
    module = _source(tmp_path)
    stub = tmp_path / "backend.pyi"
    stub.write_text(SOURCE)
    os.utime(stub, ns=(module.stat().st_mtime_ns,) * 2)
    py_compile.compile(str(module), doraise=True)
    assert _compiled(module) and not _compiled(stub)


def test_a_fifo_in_the_pyc_s_place_is_no_pyc(tmp_path) -> None:
    import importlib.util

    path = _source(tmp_path)
    cached = Path(importlib.util.cache_from_source(str(path)))
    cached.parent.mkdir()
    os.mkfifo(cached)
    assert not _compiled(path)  # returns: the FIFO is never waited on


def test_bytes_without_a_status_are_never_proven(tmp_path) -> None:
    path = _source(tmp_path)
    py_compile.compile(str(path), doraise=True)
    assert not compiled(str(path), path.read_bytes(), None)  # standard input


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
    _age(cached, -2)
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
    path.write_text(SOURCE + "def broken(:\n    pass\n")
    _age(path, 1)
    assert _findings(path, monkeypatch) == (["E999"], 1)
