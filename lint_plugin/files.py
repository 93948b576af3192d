"""Which files ``check`` (and later ``fix``) looks at, and reading them as bytes.

Rules, in ruff's spirit (without ``--force-exclude``):

* A path named on the command line is always checked when it is a file, whatever its
  suffix and whatever the configuration says: pre-commit and editors name exactly the
  files they want. ``--force-exclude`` applies the excludes to named paths too, which
  is what a pre-commit hook wants when the configuration excludes fixtures.
* A folder is walked for ``*.py`` and ``*.pyi``. Version-control metadata, virtual
  environments, caches and build output are never entered (``ALWAYS_SKIPPED``), and
  neither is anything matching the configured ``exclude`` patterns. When ``include`` is
  configured, a discovered file must also match one of its patterns.
* A pattern matches with ``fnmatch`` against the path relative to the configuration's
  folder (POSIX separators) or against the bare name, so ``"fixtures"`` skips every
  folder called fixtures and ``"tests/data/*"`` only that one.
* Problems (missing argument, broken symbolic link, unreadable folder or file) become
  ``FileError`` values; discovery never stops at the first one.

Symbolic links to folders are not followed while walking (no loops, no escaping the
tree); named on the command line they are.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from lint_plugin.findings import FileError

PYTHON_SUFFIXES = (".py", ".pyi")

# Folder names never walked into: nobody wants findings from vendored or generated
# code, and walking a virtualenv or node_modules costs seconds on every commit.
ALWAYS_SKIPPED = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        "build",
        "dist",
        ".tox",
        ".nox",
        "node_modules",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".cache",
    }
)
# Conventional virtualenv names; skipped only when they look like one (pyvenv.cfg or
# bin/activate), so a package that happens to be called ``env`` is still checked.
VENV_NAMES = frozenset({".venv", "venv", "env"})


@dataclass(frozen=True)
class PathFilter:
    """Configured include/exclude patterns and the folder they are relative to."""

    root: str = "."
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def relative(self, path: str) -> str | None:
        """``path`` relative to ``root`` in POSIX form, or None when it lies outside."""
        relative = os.path.relpath(os.path.abspath(path), os.path.abspath(self.root))
        if relative == os.pardir or relative.startswith(os.pardir + os.sep):
            return None
        return relative.replace(os.sep, "/")

    def _matches(self, path: str, patterns: Iterable[str]) -> bool:
        name = os.path.basename(os.path.normpath(path))
        relative = self.relative(path)
        for pattern in patterns:
            pattern = pattern.rstrip("/")  # "build/" means the folder build
            if fnmatchcase(name, pattern):
                return True
            if relative is not None and fnmatchcase(relative, pattern):
                return True
        return False

    def is_excluded(self, path: str) -> bool:
        return bool(self.exclude) and self._matches(path, self.exclude)

    def is_included(self, path: str) -> bool:
        return not self.include or self._matches(path, self.include)


@dataclass
class Discovery:
    """Files to check, in a stable order, and the paths that could not be used."""

    files: list[str] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)


def is_virtualenv(path: str) -> bool:
    """True for a folder that is a virtual environment (venv, virtualenv, uv, conda)."""
    if os.path.isfile(os.path.join(path, "pyvenv.cfg")):
        return True
    if os.path.basename(path) in VENV_NAMES:
        return os.path.isfile(os.path.join(path, "bin", "activate")) or os.path.isfile(
            os.path.join(path, "Scripts", "activate")
        )
    return False


def is_skipped_folder(path: str) -> bool:
    """A folder never walked into, whatever the configuration says."""
    name = os.path.basename(os.path.normpath(path))
    return name in ALWAYS_SKIPPED or name.endswith(".egg-info") or is_virtualenv(path)


def _display(path: str) -> str:
    # normpath turns "./a.py" and "src//a.py" into what a user would type; the path
    # stays relative when it was given relative, so output matches the arguments.
    return os.path.normpath(path)


def _missing_reason(path: str) -> str:
    if os.path.islink(path):
        return f"broken symbolic link (points to {os.readlink(path)!r})"
    return "No such file or directory"


def _force_excluded(path: str, path_filter: PathFilter) -> bool:
    """With --force-exclude: the path, or a folder between it and the configuration's
    folder, is excluded or never walked. Folders above the root are not considered: a
    checkout living under ``~/build/`` must still be checked."""
    target = os.path.abspath(path)
    root = os.path.abspath(path_filter.root)
    if path_filter.is_excluded(target):
        return True
    if path_filter.relative(target) is None:
        return False
    current = os.path.dirname(target)
    while current != root and os.path.dirname(current) != current:
        if path_filter.is_excluded(current) or is_skipped_folder(current):
            return True
        current = os.path.dirname(current)
    return False


def _walk(top: str, path_filter: PathFilter, found: Discovery) -> None:
    # scandir, not os.walk: its entries know file from folder without another stat,
    # which is most of the cost on a tree of thousands of files.
    pending = [top]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as error:
            where = error.filename or folder
            found.errors.append(
                FileError(_display(where), error.strerror or str(error))
            )
            continue
        subfolders = []
        for entry in entries:
            path = entry.path
            if entry.is_dir(follow_symlinks=False):
                # Symbolic links to folders are not followed (they land below).
                if not is_skipped_folder(path) and not path_filter.is_excluded(path):
                    subfolders.append(path)
                continue
            if not entry.name.endswith(PYTHON_SUFFIXES):
                continue
            if path_filter.is_excluded(path) or not path_filter.is_included(path):
                continue
            if entry.is_symlink():
                if not os.path.exists(path):  # a broken link
                    found.errors.append(
                        FileError(_display(path), _missing_reason(path))
                    )
                    continue
                if os.path.isdir(path):  # a link to a folder named like a module
                    continue
            found.files.append(_display(path))
        # Depth first in name order, as os.walk would list them.
        pending.extend(reversed(subfolders))


def discover(
    paths: Sequence[str] = (),
    path_filter: PathFilter | None = None,
    *,
    force_exclude: bool = False,
) -> Discovery:
    """Expand ``paths`` (default: the current folder) into the files to check."""
    path_filter = path_filter or PathFilter()
    found = Discovery()
    for argument in paths or ["."]:
        if force_exclude and _force_excluded(argument, path_filter):
            continue
        if os.path.isdir(argument):
            _walk(argument, path_filter, found)
        elif os.path.exists(argument):
            found.files.append(_display(argument))
        else:
            found.errors.append(
                FileError(_display(argument), _missing_reason(argument))
            )
    # The same file named twice (or named and inside a named folder) is checked once.
    seen: set[str] = set()
    unique = []
    cwd = os.getcwd()
    for path in found.files:
        key = os.path.normpath(os.path.join(cwd, path))
        if key not in seen:
            seen.add(key)
            unique.append(path)
    found.files = unique
    return found


# No Python source is this large; a path that is (a runaway generated file, a link
# to /dev/zero) must cost one line, not the machine's memory.
MAX_SOURCE_BYTES = 16 * 1024 * 1024


def read_regular_file(path: str, limit: int | None = None) -> bytes | FileError:
    """The bytes of a regular file of at most ``limit`` bytes, or why not.

    FIFOs, devices and sockets are refused without blocking (opened non-blocking,
    judged by ``fstat`` on the open descriptor, so a swap between a check and the
    open cannot slip one through).
    """
    import stat

    limit = MAX_SOURCE_BYTES if limit is None else limit
    try:
        handle = open(path, "rb", opener=_open_nonblocking)  # noqa: SIM115
    except FileNotFoundError:
        return FileError(_display(path), _missing_reason(path))
    except OSError as error:
        return FileError(_display(path), error.strerror or str(error))
    with handle:
        mode = os.fstat(handle.fileno()).st_mode
        if not stat.S_ISREG(mode):
            return FileError(_display(path), f"not a regular file ({_kind(mode)})")
        try:
            data = handle.read(limit + 1)
        except OSError as error:
            return FileError(_display(path), error.strerror or str(error))
    if len(data) > limit:
        return FileError(_display(path), f"larger than {limit:,} bytes, not read")
    return data


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
