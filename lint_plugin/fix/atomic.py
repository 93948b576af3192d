"""Writing a file so that a crash, a signal or a full disk never leaves it half
written, and never replacing a file the user could not have written.

The new bytes go to a temporary file in the same folder (same file system, so the
final rename is atomic), which then replaces the original. The original's permission
bits are kept, and a symbolic link is written through (its target changes, the link
stays a link), as editors do. Ctrl-C and SIGTERM are held while the temporary file
exists (it is written in milliseconds) and acted on right after, SIGTERM as an
exception (exit status 143): at no moment does a signal leave a temporary file.

Replacing by rename would silently "write" a read-only file, or one owned by
someone else in a folder we may write to (the new file would be ours): both are
refused, as an editor refuses to save them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator

# Ctrl-C and SIGTERM wait while the temporary file exists: from before it is
# created until it is renamed or removed, so no moment of the write leaves one
# behind (between ``mkstemp`` returning and the cleanup being in place, or
# during the cleanup itself; a signal inside tempfile's lock would also hang the
# next write). They are delivered, and acted on, right after.
from lint_plugin.held_signals import held


class NotWritable(OSError):
    """The file exists but the user could not write it in place."""


def writable_problem(path: str) -> str | None:
    """Why ``path`` must not be replaced, or None."""
    try:
        info = os.stat(os.path.realpath(path))
    except FileNotFoundError:
        return None
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        return "owned by another user, not replaced"
    if not info.st_mode & stat.S_IWUSR:
        return "read-only, not replaced"
    return None


def write_atomic(path: str, data: bytes) -> None:
    target = os.path.realpath(path)
    problem = writable_problem(target)
    if problem is not None:
        raise NotWritable(problem)
    folder = os.path.dirname(target) or "."
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
    with _terminate_as_exception(), held():
        handle, temporary = tempfile.mkstemp(
            dir=folder, prefix=f".{os.path.basename(target)}.", suffix=".tmp"
        )
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
                stream.flush()
                os.fsync(stream.fileno())
            if mode is not None:
                os.chmod(temporary, mode)
            os.replace(temporary, target)
        except BaseException:
            # Leave no stray temporary file behind, whatever went wrong.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise


class Terminated(SystemExit):
    """SIGTERM arrived: leave as the signal would have (status 143)."""


@contextlib.contextmanager
def _terminate_as_exception() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum, frame):
        raise Terminated(128 + signum)

    # Installed inside the ``try``: a Ctrl-C between the two would otherwise leave
    # this handler in place for the rest of the process.
    previous = signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGTERM, terminate)
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
