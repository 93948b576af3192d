"""Reading a source file: all of its bytes, up to the cap, whatever fstat says."""

from __future__ import annotations

import os

import pytest

from lint_plugin import source_files as files
from lint_plugin.findings import FileError


@pytest.mark.parametrize("size", [0, 1, 999, 1000])
def test_a_file_up_to_the_cap_is_read_whole(tmp_path, monkeypatch, size) -> None:
    monkeypatch.setattr(files, "MAX_SOURCE_BYTES", 1000)
    path = tmp_path / "a.py"
    path.write_bytes(b"x" * size)
    assert files.read_source(str(path)) == b"x" * size


def test_a_file_over_the_cap_is_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(files, "MAX_SOURCE_BYTES", 1000)
    path = tmp_path / "a.py"
    path.write_bytes(b"x" * 1001)
    error = files.read_source(str(path))
    assert isinstance(error, FileError)
    assert error.reason == "larger than 1,000 bytes, not read"


class _Status:
    """What fstat says of a file that lies about its size (procfs says 0)."""

    def __init__(self, real: os.stat_result, size: int) -> None:
        self.st_mode = real.st_mode
        self.st_size = size


@pytest.mark.parametrize("claimed", [0, 10])
@pytest.mark.parametrize(("size", "read"), [(500, True), (1001, False)])
def test_a_file_larger_than_fstat_says_is_read_to_the_cap(
    tmp_path, monkeypatch, claimed, size, read
) -> None:
    monkeypatch.setattr(files, "MAX_SOURCE_BYTES", 1000)
    path = tmp_path / "a.py"
    path.write_bytes(b"y" * size)
    real_fstat = os.fstat
    monkeypatch.setattr(files.os, "fstat", lambda fd: _Status(real_fstat(fd), claimed))
    result = files.read_source(str(path))
    if read:
        assert result == b"y" * size
    else:
        assert isinstance(result, FileError)
