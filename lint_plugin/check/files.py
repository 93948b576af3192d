"""Which files ``check`` and ``fix`` look at (reading them is ``read_source``).

Rules, in ruff's spirit:

* A path named on the command line is always checked when it is a file, whatever its
  suffix and whatever the configuration says: pre-commit and editors name exactly the
  files they want. ``--force-exclude`` (or ``force-exclude = true``) applies the
  exclusions to named paths too, which is what a pre-commit hook wants.
* A folder is walked for ``*.py`` and ``*.pyi``. Skipped while walking: version-control
  metadata and virtual environments (always), the ``exclude`` list (default:
  ``DEFAULT_EXCLUDE``; ``exclude`` replaces it, ``extend-exclude`` adds to it, on the
  command line or in the configuration of the folder being walked), and what git
  ignores (``.gitignore`` files and ``.git/info/exclude`` of the enclosing work tree;
  ``--no-respect-gitignore`` or ``respect-gitignore = false`` turns that off; a
  folder named on the command line is walked even if git ignores it). When
  ``include`` is configured, a discovered file must also match one of its patterns.
* Patterns follow gitignore/ruff semantics (``globs``): a bare name matches at any
  depth, a pattern with ``/`` is anchored to its configuration's folder, ``**``
  spans folders, ``!`` re-includes.
* Problems (missing argument, broken symbolic link, unreadable folder) become
  ``FileError`` values; discovery never stops at the first one.

Symbolic links to folders are not followed while walking (no loops, no escaping the
tree); named on the command line they are.
"""

from __future__ import annotations

import functools
import operator
import os
from collections.abc import Callable, Sequence

from lint_plugin.config.globs import GitIgnore, PatternList
from lint_plugin.config.table import DEFAULT_EXCLUDE
from lint_plugin.findings import FileError
from lint_plugin.records import field, record
from lint_plugin.source_files import display_path, missing_reason

PYTHON_SUFFIXES = (".py", ".pyi")

# Never walked into, whatever the configuration says: version-control metadata.
ALWAYS_SKIPPED = frozenset({".git", ".hg", ".svn"})
# Conventional virtualenv names; skipped only when they look like one (pyvenv.cfg or
# bin/activate), so a package that happens to be called ``env`` is still checked.
VENV_NAMES = frozenset({".venv", "venv", "env"})


@record(frozen=True)
class PathFilter:
    """What one configuration skips, relative to its folder."""

    root: str = "."
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    respect_gitignore: bool = True
    force_exclude: bool = False

    @functools.cached_property
    def _exclude(self) -> PatternList:
        return PatternList(tuple(self.exclude), self.root)

    @functools.cached_property
    def _include(self) -> PatternList:
        return PatternList(tuple(self.include), self.root)

    def relative(self, path: str) -> str | None:
        from lint_plugin.config.globs import relative_posix

        return relative_posix(path, self.root)

    def is_excluded(self, path: str, is_dir: bool = False, own: bool = False) -> bool:
        return self._exclude.matches(path, is_dir, own)

    def is_included(self, path: str) -> bool:
        return not self.include or self._include.matches(path)


FilterFor = Callable[[str], PathFilter]


@record
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


def _force_excluded(path: str, path_filter: PathFilter) -> bool:
    """With force-exclude: the path, or a folder between it and the configuration's
    folder, is excluded or never walked. Folders above the root are not considered: a
    checkout living under ``~/build/`` must still be checked."""
    target = os.path.abspath(path)
    root = os.path.abspath(path_filter.root)
    if path_filter.is_excluded(target, os.path.isdir(target)):
        return True
    if path_filter.relative(target) is None:
        return False
    current = os.path.dirname(target)
    while current != root and os.path.dirname(current) != current:
        if path_filter.is_excluded(current, True) or is_skipped_folder(current):
            return True
        current = os.path.dirname(current)
    return False


_entry_name = operator.attrgetter("name")


class _FolderWalk:
    def __init__(self, filter_for: FilterFor, found: Discovery) -> None:
        self.filter_for = filter_for
        self.found = found
        self._gitignores: dict[str, GitIgnore | None] = {}

    def _gitignore(self, folder: str) -> GitIgnore | None:
        if folder not in self._gitignores:
            self._gitignores[folder] = GitIgnore.for_path(folder)
        return self._gitignores[folder]

    def walk(self, top: str) -> None:
        # scandir, not os.walk: its entries know file from folder without another
        # stat, which is most of the cost on a tree of thousands of files.
        gitignore = self._gitignore(os.path.abspath(top))
        if gitignore is not None and gitignore.ignores(top, True):
            gitignore = None  # an ignored folder named explicitly: walk all of it
        # Below a normal folder every entry's path is normal too: as given
        # (``display_path``'s normpath per file was a tenth of a warm walk).
        display = display_path if top == "." or display_path(top) != top else str
        pending = [top]
        while pending:
            folder = pending.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = sorted(listing, key=_entry_name)
            except OSError as error:
                where = error.filename or folder
                self.found.errors.append(
                    FileError(display_path(where), error.strerror or str(error))
                )
                continue
            path_filter = self.filter_for(os.path.join(folder, "_"))
            ignored = gitignore if path_filter.respect_gitignore else None
            subfolders = []
            for entry in entries:
                path = entry.path
                if entry.is_dir(follow_symlinks=False):
                    # Symbolic links to folders are not followed (they land below).
                    if (
                        not is_skipped_folder(path)
                        and not path_filter.is_excluded(path, True, own=True)
                        and not (ignored and ignored.ignores(path, True))
                    ):
                        subfolders.append(path)
                    continue
                if not entry.name.endswith(PYTHON_SUFFIXES):
                    continue
                if path_filter.is_excluded(path, own=True):
                    continue
                if not path_filter.is_included(path):
                    continue
                if ignored and ignored.ignores(path):
                    continue
                if entry.is_symlink():
                    if not os.path.exists(path):  # a broken link
                        self.found.errors.append(
                            FileError(display_path(path), missing_reason(path))
                        )
                        continue
                    if os.path.isdir(path):  # a link to a folder named like a module
                        continue
                self.found.files.append(display(path))
            # Depth first in name order, as os.walk would list them.
            pending.extend(reversed(subfolders))


def discover(
    paths: Sequence[str] = (),
    path_filter: PathFilter | FilterFor | None = None,
    *,
    force_exclude: bool | None = None,
) -> Discovery:
    """Expand ``paths`` (default: the current folder) into the files to check.

    ``path_filter`` is one filter for everything, or a function giving the filter
    of the configuration that applies to a path (per-folder configuration).
    ``force_exclude`` None: each filter's own setting."""
    if path_filter is None:
        path_filter = PathFilter()
    filter_for: FilterFor = (
        (lambda _path, constant=path_filter: constant)
        if isinstance(path_filter, PathFilter)
        else path_filter
    )
    found = Discovery()
    walker = _FolderWalk(filter_for, found)
    for argument in paths or ["."]:
        applying = filter_for(argument)
        forced = applying.force_exclude if force_exclude is None else force_exclude
        if forced and _force_excluded(argument, applying):
            continue
        if os.path.isdir(argument):
            walker.walk(argument)
        elif os.path.exists(argument):
            found.files.append(display_path(argument))
        else:
            found.errors.append(
                FileError(display_path(argument), missing_reason(argument))
            )
    if len(paths) < 2:
        return found  # one walk lists each file once: links are not followed
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
