"""Does CPython's bytecode cache prove that a source compiles?

A file with findings must parse whole before they are reported (flake8's E999),
but the engine parses only its regions. When the interpreter running ``check``
compiled this very source before, it left ``__pycache__/NAME.<tag>.pyc`` (PEP
3147), whose header names the source it was made from: its modification time and
size, or its hash for a hash-based pyc (PEP 552). CPython writes no pyc for a
source that does not compile, so a header naming the bytes read stands for the
whole-file check. Where the header could name other bytes, it proves nothing: a
source whose suffix is not one CPython compiles (``.pyi``), and a timestamp pyc
written in the second the source was last modified (an edit later that second
keeping its size would match too: git's "racily clean").
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os

from lint_plugin.source_files import read_head

_HEADER = 16  # magic, flags, then mtime and size (or the source's hash)


def compiled(path: str, data: bytes, status: os.stat_result | None) -> bool:
    """Did this interpreter compile ``data`` (the bytes of ``path``, read with
    ``status``), by its bytecode cache? False whenever it cannot tell."""
    if status is None or not path.endswith(tuple(importlib.machinery.SOURCE_SUFFIXES)):
        return False
    try:
        cached = importlib.util.cache_from_source(path)
    except (ValueError, NotImplementedError):
        return False
    read = read_head(cached, _HEADER)  # never blocking: a FIFO is no pyc
    if read is None:
        return False
    header, written = read
    if len(header) < _HEADER or header[:4] != importlib.util.MAGIC_NUMBER:
        return False
    flags = int.from_bytes(header[4:8], "little")
    if flags & 1:  # hash-based: the source's own hash
        return header[8:16] == importlib.util.source_hash(data)
    if flags:
        return False  # a flag this reader does not know
    mtime = int.from_bytes(header[8:12], "little")
    size = int.from_bytes(header[12:16], "little")
    return (
        mtime == int(status.st_mtime) & 0xFFFFFFFF
        and size == status.st_size & 0xFFFFFFFF
        and size == len(data) & 0xFFFFFFFF
        and written.st_mtime_ns >= (int(status.st_mtime) + 1) * 10**9
    )
