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

No lost update: the caller passes the bytes it read (and proved its rewrite
against); right before the rename the file is read again, and a file another
writer changed meanwhile (an editor's save, a formatter in the same pre-commit
run) is left as that writer left it (:class:`ChangedMeanwhile`). A file to be
created must still not exist: it is linked into place, which fails if one
appeared. The window left is the few microseconds between that last read and
the rename.

A run killed by SIGKILL (nothing can be held against it) leaves its temporary
file: each is named ``.NAME.draft-kv-lint-HOST-PID.XXXXXXXX.tmp``, and a later
write into the same folder removes those of this host whose process is gone.
"""

from __future__ import annotations

import contextlib
import os
import re
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


class ChangedMeanwhile(OSError):
    """The file no longer holds the bytes the rewrite was made from."""


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


def write_atomic(
    path: str, data: bytes, *, expected: bytes | None = None, create: bool = False
) -> None:
    """Replace ``path`` with ``data``. ``expected``: the bytes ``path`` must
    still hold (None: not compared); ``create``: ``path`` must not exist, and
    is created with the permissions a new file gets (the umask's)."""
    target = os.path.realpath(path)
    problem = writable_problem(target)
    if problem is not None:
        raise NotWritable(problem)
    folder = os.path.dirname(target) or "."
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
    _remove_leftovers(folder)
    with _terminate_as_exception(), held():
        handle, temporary = tempfile.mkstemp(
            dir=folder, prefix=f".{os.path.basename(target)}.{_OWN}.", suffix=".tmp"
        )
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
                stream.flush()
                os.fsync(stream.fileno())
            if create:
                os.chmod(temporary, 0o666 & ~_umask())
                _create(temporary, target)
                return
            if mode is not None:
                os.chmod(temporary, mode)
            if expected is not None and _current(target) != expected:
                raise ChangedMeanwhile(
                    "changed on disk while being fixed, left as it is now "
                    "(run fix again)"
                )
            os.replace(temporary, target)
        except BaseException:
            # Leave no stray temporary file behind, whatever went wrong.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise


def _current(target: str) -> bytes | None:
    """What ``target`` holds now (None: not a readable regular file), read
    without blocking on a FIFO put in its place."""
    from lint_plugin.source_files import read_regular_file

    data = read_regular_file(target)
    return data if isinstance(data, bytes) else None


def _create(temporary: str, target: str) -> None:
    """``temporary`` in place as ``target``, which must not exist (a link is
    made, never replaced)."""
    try:
        os.link(temporary, target)
    except FileExistsError:
        raise _appeared() from None
    except OSError:
        # A file system without hard links: the check and the rename are two
        # steps there.
        if os.path.lexists(target):
            raise _appeared() from None
        os.replace(temporary, target)
        return
    os.unlink(temporary)


def _appeared() -> ChangedMeanwhile:
    return ChangedMeanwhile(
        "created by another writer while being fixed, left as it is"
    )


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _host() -> str:
    import socket

    from lint_plugin.digests import blake2b

    return blake2b(socket.gethostname().encode(), digest_size=3).hexdigest()


# This process's mark in its temporary files' names.
_OWN = f"draft-kv-lint-{_host()}-{os.getpid()}"
_LEFTOVER = re.compile(
    r"\..+\.draft-kv-lint-(?P<host>[0-9a-f]{6})-(?P<pid>[0-9]+)\.[^.]+\.tmp"
)


def _remove_leftovers(folder: str) -> None:
    """Remove the temporary files a killed run on this host left in ``folder``."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    host = _OWN.split("-")[-2]
    for name in names:
        match = _LEFTOVER.fullmatch(name)
        if match is None or match["host"] != host or _alive(int(match["pid"])):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(folder, name))


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's, or not ours to ask: kept
    return True


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
