"""Reading a source file: its bytes, safely, and its text as Python decodes it.

The ground floor every layer reads files through (``check``, ``fix``, the
configuration, the engine reading another module of the tree): a file is read as
a value (bytes or a ``FileError``: one bad file is no reason to stop), never more
than a limit, never blocking on a FIFO; its text is what CPython reads (PEP 263),
or a ``SourceError`` saying where CPython would refuse it.
"""

from __future__ import annotations

import os

from lint_plugin.findings import FileError


class SourceError(ValueError):
    """The file's bytes are not text Python reads (the reason says why, and
    ``row``/``column`` where, as for a syntax error: CPython refuses such a
    file with one)."""

    def __init__(self, reason: str, row: int = 1, column: int = 1) -> None:
        super().__init__(reason)
        self.row = row
        self.column = column


def display_path(path: str) -> str:
    # normpath turns "./a.py" and "src//a.py" into what a user would type; the path
    # stays relative when it was given relative, so output matches the arguments.
    return os.path.normpath(path)


def missing_reason(path: str) -> str:
    if os.path.islink(path):
        if _loops(path):
            return f"symbolic link loop (points to {os.readlink(path)!r})"
        return f"broken symbolic link (points to {os.readlink(path)!r})"
    return "No such file or directory"


def _loops(path: str) -> bool:
    import errno

    try:
        os.stat(path)
    except OSError as error:
        return error.errno == errno.ELOOP
    return False


# No Python source is this large; a path that is (a runaway generated file, a link
# to /dev/zero) must cost one line, not the machine's memory.
MAX_SOURCE_BYTES = 16 * 1024 * 1024


def read_regular_file(path: str, limit: int | None = None) -> bytes | FileError:
    """The bytes of a regular file of at most ``limit`` bytes, or why not.

    FIFOs, devices and sockets are refused without blocking (opened non-blocking,
    judged by ``fstat`` on the open descriptor, so a swap between a check and the
    open cannot slip one through).
    """
    return read_with_status(path, limit)[0]


def read_with_status(
    path: str, limit: int | None = None
) -> tuple[bytes | FileError, os.stat_result | None]:
    """``read_regular_file``, and the status of the file read (None when it
    was not): what :mod:`lint_plugin.check.file_states` records."""
    import stat

    limit = MAX_SOURCE_BYTES if limit is None else limit
    try:
        handle = open(path, "rb", opener=_open_nonblocking)  # noqa: SIM115
    except FileNotFoundError:
        return FileError(display_path(path), missing_reason(path)), None
    except OSError as error:
        if os.path.islink(path) and _loops(path):
            return FileError(display_path(path), missing_reason(path)), None
        return FileError(display_path(path), error.strerror or str(error)), None
    with handle:
        status = os.fstat(handle.fileno())
        mode = status.st_mode
        if not stat.S_ISREG(mode):
            reason = f"not a regular file ({_kind(mode)})"
            return FileError(display_path(path), reason), None
        try:
            # Ask for the size fstat gives, not the limit: a read of the limit
            # allocates it for every file, and those short-lived 16 MB blocks
            # fragment the heap (a whole-package run peaked at 72 MB for it).
            data = handle.read(min(status.st_size, limit) + 1)
            if len(data) > status.st_size:  # it grew, or says 0 (/proc)
                data += handle.read(limit + 1 - len(data))
        except OSError as error:
            return FileError(display_path(path), error.strerror or str(error)), None
    if len(data) > limit:
        return FileError(
            display_path(path), f"larger than {limit:,} bytes, not read"
        ), None
    return data, status


def read_head(path: str, size: int) -> tuple[bytes, os.stat_result] | None:
    """The first ``size`` bytes of a regular file and its status, or None (no
    such file, not a regular one, unreadable): opened as ``read_with_status``
    opens, so a FIFO in its place is never waited on."""
    import stat

    try:
        with open(path, "rb", opener=_open_nonblocking) as handle:
            status = os.fstat(handle.fileno())
            if not stat.S_ISREG(status.st_mode):
                return None
            return handle.read(size), status
    except OSError:
        return None


def _open_nonblocking(path: str, flags: int) -> int:
    return os.open(path, flags | getattr(os, "O_NONBLOCK", 0))


def _kind(mode: int) -> str:
    import stat

    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return name
    return "not a plain file"


def read_source(path: str) -> bytes | FileError:
    """The file's bytes, or why it cannot be read (as a value: one bad file is no reason
    to stop checking the others)."""
    return read_regular_file(path)


_BOM = b"\xef\xbb\xbf"


def decode(data: bytes) -> str:
    """The text Python reads from ``data`` (PEP 263: a BOM, a coding cookie in
    the first two lines), without a BOM; raises SourceError where Python would
    refuse the file."""
    return decoded(data)[0]


def decoded(data: bytes) -> tuple[str, str, bool]:
    """``(text, encoding, bom)`` as Python reads ``data``: the text without a
    BOM, the codec that encodes it back, whether a BOM led it."""
    # The first two lines are where a cookie may be: most files have none.
    head = data[: data.find(b"\n", data.find(b"\n") + 1) + 1 or len(data)]
    if b"coding" not in head and not data.startswith(_BOM):
        if data.isascii():
            return data.decode("ascii"), "utf-8", False
        try:
            return data.decode("utf-8"), "utf-8", False
        except UnicodeDecodeError as exc:
            raise _undecodable(data, exc, "UTF-8", "and no encoding declared") from None
    return _declared(data)


def _declared(data: bytes) -> tuple[str, str, bool]:
    import io
    import tokenize

    bom = data.startswith(_BOM)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        message = str(exc)
        if bom and message.startswith("encoding problem"):
            message = "encoding problem: the file has a UTF-8 BOM but declares another"
        raise SourceError(f"SyntaxError: {message}", _cookie_row(data)) from None
    body = data[len(_BOM) :] if bom else data
    codec = "utf-8" if encoding == "utf-8-sig" else encoding
    try:
        return body.decode(codec), codec, bom
    except UnicodeDecodeError as exc:
        raise _undecodable(body, exc, codec, "as declared") from None
    except LookupError as exc:  # `rot13`: a codec, but not for text
        raise SourceError(f"SyntaxError: {exc}", _cookie_row(data)) from None


def _undecodable(data: bytes, exc: UnicodeDecodeError, codec: str, how: str):
    row = data.count(b"\n", 0, exc.start) + 1
    column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
    byte = data[exc.start]
    return SourceError(
        f"SyntaxError: not valid {codec} {how} (byte 0x{byte:02x} at offset "
        f"{exc.start})",
        row,
        column,
    )


def _cookie_row(data: bytes) -> int:
    first = data.split(b"\n", 1)[0]
    return 1 if b"coding" in first or b"\n" not in data else 2
