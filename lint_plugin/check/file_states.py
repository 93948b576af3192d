"""Files known to hold nothing for us, answered by their status alone.

Most files of a package cannot match (the byte test finds no word a rule
needs) and hold no directive of ours, so ``check`` reports nothing for them
whatever the settings, the selection or the other files say. Reading and
searching each of them again on every warm run was most of that run (0.5.23's
whole package: 4,589 of its 4,719 files). Their statuses are kept instead, as
ruff keeps its cache: a file whose size, modification and change times, inode
and device all equal those recorded is not read again.

Only such files are recorded; a file that could match is answered by the cache
(:mod:`lint_plugin.check.cache`), whose entries are keyed by the file's bytes
and check the files the answer depends on.

A status is recorded only when the file's change time is older than the run by
more than :data:`SETTLED_NS`. The change time is set by the system on every
write (no tool can set it back), so a file written after the run that recorded
it has another one, unless it was written within the file system's timestamp
granularity of the status recorded: git's "racily clean" case, which this
margin rules out.

The states are one file per build of the tool and per reader (user, group and
groups: a file another user could read may be unreadable to this one, with the
same status), written whole and atomically; a damaged one (the digest of its
body does not match) is ignored, and every file is then read as before.
"""

from __future__ import annotations

import os

from lint_plugin.check.cache import _hasher, store

_MAGIC = b"draft-kv-lint states 1"
NAME = "file-states"
# Two seconds: the coarsest timestamp granularity in common use (FAT's).
SETTLED_NS = 2_000_000_000
# Paths are never forgotten when their files go: past this many, only the
# run's own are kept (about 10 MB; a file larger than a source is not read).
MAX_STATES = 100_000

Status = tuple[int, int, int, int, int]


def status_of(stat: os.stat_result) -> Status:
    return (
        stat.st_size,
        stat.st_mtime_ns,
        stat.st_ctime_ns,
        stat.st_ino,
        stat.st_dev,
    )


class FileStates:
    """The recorded statuses of the files that held nothing, under ``folder``."""

    @classmethod
    def for_run(cls, folder: str) -> FileStates:
        """The statuses kept in the cache ``folder``, for a run starting now
        (the margin counts from here, not from when a file is recorded)."""
        import time

        return cls(folder, time.time_ns())

    def __init__(self, folder: str, now_ns: int) -> None:
        self.path = os.path.join(folder, f"{NAME}-{_reader()}")
        self._cwd = os.getcwd()
        self._settled_before = now_ns - SETTLED_NS
        self._known: dict[bytes, bytes] | None = None
        self._recorded: dict[bytes, bytes] = {}
        self._forgotten: set[bytes] = set()
        self._confirmed: set[bytes] = set()  # this run's unchanged files

    def _load(self) -> dict[bytes, bytes]:
        if self._known is None:
            self._known = _read(self.path)
        return self._known

    def changed(self, paths: list[str]) -> list[str]:
        """``paths`` but those whose status is the one recorded for them when
        they held nothing (one ``stat`` each; a path that cannot be stat-ed is
        kept, and its read says why)."""
        known = self._load()
        if not known:
            return list(paths)
        stat, cwd, sep = os.stat, self._cwd, os.sep
        kept, confirmed = [], self._confirmed
        for path in paths:
            try:
                found = stat(path)
            except (OSError, ValueError):
                kept.append(path)
                continue
            key = _key(path, cwd, sep)
            recorded = known.get(key)
            # ``_encode(status_of(found))``, spelled out: once per file.
            if recorded is None or recorded != b"%d %d %d %d %d" % (
                found.st_size,
                found.st_mtime_ns,
                found.st_ctime_ns,
                found.st_ino,
                found.st_dev,
            ):
                kept.append(path)
            else:
                confirmed.add(key)
        return kept

    def record(self, path: str, stat: os.stat_result) -> None:
        """``path``, read with the status ``stat``, holds nothing (it cannot
        match and has no directive of ours)."""
        if stat.st_ctime_ns < self._settled_before:
            key = _key(path, self._cwd)
            self._recorded[key] = _encode(status_of(stat))
            self._forgotten.discard(key)

    def forget(self, path: str) -> None:
        """``path`` was read and holds something (or could not be read)."""
        key = _key(path, self._cwd)
        self._recorded.pop(key, None)
        self._forgotten.add(key)

    def merge(self, other: FileStates) -> None:
        """What a worker of this run recorded and forgot."""
        for key in other._forgotten:
            self._recorded.pop(key, None)
        self._forgotten |= other._forgotten
        self._recorded.update(other._recorded)

    def worker_part(self) -> FileStates:
        """A state of the same folder and time for a worker to fill."""
        part = FileStates.__new__(FileStates)
        part.__dict__.update(
            self.__dict__, _known={}, _recorded={}, _forgotten=set(), _confirmed=set()
        )
        return part

    def save(self, prepare) -> None:
        """Write the states back if this run changed them (``prepare``: makes
        the folder, False when it cannot be written)."""
        known = self._load()
        changed = any(known.get(k) != v for k, v in self._recorded.items()) or any(
            k in known for k in self._forgotten
        )
        if not changed or not prepare():
            return
        merged = {k: v for k, v in known.items() if k not in self._forgotten}
        merged.update(self._recorded)
        if len(merged) > MAX_STATES:
            merged = {k: known[k] for k in self._confirmed}
            merged.update(self._recorded)
        _write(self.path, merged)


def _reader() -> str:
    """Who reads the files: a file's status says nothing of whether another
    reader may open it."""
    try:
        who = (os.geteuid(), os.getegid(), *sorted(os.getgroups()))
    except (AttributeError, OSError):  # no such notion here (Windows)
        return "any"
    hasher = _hasher()
    hasher.update(repr(who).encode())
    return hasher.hexdigest()[:16]


def _key(path: str, cwd: str, sep: str = os.sep) -> bytes:
    """``os.path.abspath(path)``, with the current folder asked once per run:
    ``abspath`` asks the system at every call (a fifth of a warm
    whole-package run). ``cwd`` is normal already; ``path``, as discovery
    gives it, is too, unless it holds a ``.`` part or a doubled separator."""
    if not path.startswith(sep):
        if path.startswith(".") or sep + "." in path or sep + sep in path:
            path = os.path.normpath(cwd + sep + path)
        else:
            path = cwd + sep + path
    elif sep + "." in path or sep + sep in path:
        path = os.path.normpath(path)
    return path.encode("utf-8", "surrogatepass")


def _encode(status: Status) -> bytes:
    return b"%d %d %d %d %d" % status


# The format: a header line ``<magic> <digest of the body>``, then the body,
# path and status alternating, each ended by a NUL byte (no path holds one).


def _read(path: str) -> dict[bytes, bytes]:
    from lint_plugin.source_files import read_regular_file

    data = read_regular_file(path)
    if not isinstance(data, bytes):
        return {}
    header, _, body = data.partition(b"\n")
    magic, _, digest = header.rpartition(b" ")
    if magic != _MAGIC:
        return {}
    hasher = _hasher()
    hasher.update(body)
    if hasher.hexdigest().encode() != digest:
        return {}  # damaged: nothing in it is believed
    fields = body.split(b"\0")
    if len(fields) % 2 != 1 or fields[-1]:
        return {}
    return dict(zip(fields[0:-1:2], fields[1:-1:2], strict=True))


def _write(path: str, states: dict[bytes, bytes]) -> None:
    body = b"".join(k + b"\0" + v + b"\0" for k, v in states.items())
    hasher = _hasher()
    hasher.update(body)
    store(path, _MAGIC + b" " + hasher.hexdigest().encode() + b"\n" + body)
