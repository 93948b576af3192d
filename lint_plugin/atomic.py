"""Writing a file so that a crash or a full disk never leaves it half written.

The new bytes go to a temporary file in the same folder (same file system, so the
final rename is atomic), which then replaces the original. The original's permission
bits are kept, and a symbolic link is written through (its target changes, the link
stays a link), as editors do.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile


def write_atomic(path: str, data: bytes) -> None:
    target = os.path.realpath(path)
    folder = os.path.dirname(target) or "."
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
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
