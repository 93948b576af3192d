"""File patterns as ruff and git read them: ``exclude``/``include`` lists,
``per-file-ignores`` keys and ``.gitignore`` files.

Semantics (gitignore's, which ruff's follow for these settings):

* a pattern without ``/`` matches a file or folder name at any depth (``build``,
  ``*_pb2.py``);
* a pattern with a ``/`` is anchored to the folder of the configuration that wrote
  it (``tests/data/*``, ``/top.py``), and ``**`` spans folders (``**/top.py``,
  ``pkg/**/*.py``);
* a trailing ``/`` matches folders only; a file inside a matched folder matches;
* in a list, ``!pattern`` re-includes what an earlier pattern matched; as a
  ``per-file-ignores`` key, ``!pattern`` means "every file not matching", as in ruff.

The matching itself is ``pathspec``'s (a well-kept gitignore implementation).
It costs about 20 ms to import, so a list made only of plain names (the default
skip list, ``"fixtures"``) is matched with a set and never imports it; pre-commit
names files, so most runs never do.
"""

from __future__ import annotations

import functools
import os

from lint_plugin.records import field, record

_GLOB_CHARS = frozenset("*?[]!/\\")


def _plain(pattern: str) -> bool:
    return not (_GLOB_CHARS & set(pattern.rstrip("/"))) and pattern not in ("", ".")


def relative_posix(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` with ``/``, or None when it lies outside."""
    # A prefix test on normalised absolute paths: os.path.relpath was a tenth of a
    # whole-package run (one call per walked entry).
    path, root = os.path.abspath(path), _absolute(root)
    if path == root:
        return "."
    prefix = root if root.endswith(os.sep) else root + os.sep
    if not path.startswith(prefix):
        return None
    return path[len(prefix) :].replace(os.sep, "/")


@functools.lru_cache(maxsize=64)
def _absolute(path: str) -> str:
    return os.path.abspath(path)


@record
class PatternList:
    """An ordered gitignore-style list, relative to ``root``."""

    patterns: tuple[str, ...]
    root: str = "."
    _names: frozenset[str] = frozenset()
    _dir_names: frozenset[str] = frozenset()
    _spec: object | None = None
    _compiled: bool = field(default=False, repr=False)

    def _compile(self) -> None:
        self._compiled = True
        if all(_plain(p) for p in self.patterns):
            self._names = frozenset(p for p in self.patterns if not p.endswith("/"))
            self._dir_names = frozenset(
                p.rstrip("/") for p in self.patterns if p.endswith("/")
            )
            return
        import pathspec

        try:
            self._spec = pathspec.GitIgnoreSpec.from_lines(self.patterns)
        except ValueError:
            # git skips a line it cannot read; so does a .gitignore here. In the
            # configuration, check_patterns() reports it first.
            valid = [p for p in self.patterns if _valid(p)]
            self._spec = pathspec.GitIgnoreSpec.from_lines(valid)

    def matches(self, path: str, is_dir: bool = False, own: bool = False) -> bool:
        """Does the list exclude ``path`` (a folder when ``is_dir``)? ``own``: a
        name must match the path itself, not a folder above it (a walk prunes
        matched folders itself, and a folder named explicitly is walked)."""
        if not self.patterns:
            return False
        if not self._compiled:
            self._compile()
        if self._spec is None:
            if own:
                # Only the entry's own name can match, the last part of its
                # relative path: a name in no pattern is no match, without
                # resolving the path (relative_posix was most of a
                # whole-package walk). A name in one may still be the root
                # itself (a walk of its parent), which no name excludes.
                last = path.rstrip(os.sep).rpartition(os.sep)[2]
                if last not in self._names and not (is_dir and last in self._dir_names):
                    return False
            # A name matches the file or folder itself or any folder above it
            # (below the root), as in git: "build" covers build/x/y.py.
            relative = relative_posix(path, self.root)
            parts = (relative or os.path.basename(os.path.normpath(path))).split("/")
            *folders, last = parts
            if last in self._names or (is_dir and last in self._dir_names):
                return True
            if own:
                return False
            return any(p in self._names or p in self._dir_names for p in folders)
        relative = relative_posix(path, self.root)
        if relative is None:  # outside the root: only name patterns can apply
            relative = os.path.basename(os.path.normpath(path))
        if relative in ("", "."):
            return False
        candidate = relative + ("/" if is_dir else "")
        if not own:
            return bool(self._spec.match_file(candidate))
        # gitignore's `fx` also matches everything below fx/; an entry below a
        # named folder is walked because that folder was named, so only a
        # pattern matching the entry itself counts (the match spans all of it,
        # not just `fx/`). Last matching pattern wins, `!` re-includes.
        excluded = False
        for pattern in self._spec.patterns:
            if pattern.include is None:
                continue
            found = pattern.match_file(candidate)
            if not found:
                continue
            match = getattr(found, "match", None)
            if match is None or match.end() >= len(candidate.rstrip("/")):
                excluded = bool(pattern.include)
        return excluded


def _valid(pattern: str) -> bool:
    import pathspec

    try:
        pathspec.GitIgnoreSpec.from_lines([pattern])
    except ValueError:
        return False
    return True


# Validating the configuration must not import pathspec (about 30 ms, it pulls in
# asyncio): for the repository's own ``"fixtures/expected"`` that doubled a warm
# run with a configuration. gitignore's grammar (pathspec's, 0.12 and 1.x) rejects
# only a dangling ``\`` escape and a pattern left empty once its ``!`` and
# leading ``/`` are taken off (and git drops a bad ``[`` range): a pattern free of
# ``\``, ``[``, ``]`` and white space that does not start with ``!`` is always
# accepted. tests/config/test_config_speed.py holds this to pathspec's verdicts.
_RISKY = frozenset("\\[]")


def _surely_valid(pattern: str) -> bool:
    return (
        pattern[:1] not in ("", "!")
        and not (_RISKY & set(pattern))
        and not any(char.isspace() for char in pattern)
    )


def invalid_patterns(patterns: tuple[str, ...]) -> list[str]:
    """The patterns gitignore's grammar rejects (``!`` alone, a lone ``\\``)."""
    if all(_plain(p) or _surely_valid(p.removeprefix("!") or "!") for p in patterns):
        return []
    return [p for p in patterns if not _valid(p.removeprefix("!") or "!")]


def key_matches(pattern: str, path: str, root: str) -> bool:
    """A ``per-file-ignores`` key: ``!`` negates the whole pattern (ruff)."""
    if pattern.startswith("!"):
        return not _key_list(pattern[1:], root).matches(path)
    return _key_list(pattern, root).matches(path)


@functools.lru_cache(maxsize=256)
def _key_list(pattern: str, root: str) -> PatternList:
    # One compiled list per key and root, not one per file and finding: a glob key
    # (``tests/*``) is a pathspec compilation each time it is built.
    return PatternList((pattern,), root)


# --- .gitignore -----------------------------------------------------------------------


@record
class GitIgnore:
    """The ``.gitignore`` files that apply below a git work tree's root, read once
    per folder; deeper files win, as in git."""

    root: str  # the work tree (the folder holding .git)
    _by_folder: dict[str, PatternList | None] = field(default_factory=dict)

    @classmethod
    def for_path(cls, path: str) -> GitIgnore | None:
        folder = os.path.abspath(path)
        if not os.path.isdir(folder):
            folder = os.path.dirname(folder)
        while True:
            if os.path.exists(os.path.join(folder, ".git")):
                return cls(folder)
            parent = os.path.dirname(folder)
            if parent == folder:
                return None  # not in a git work tree: like git, ignore nothing
            folder = parent

    def _patterns(self, folder: str) -> PatternList | None:
        if folder not in self._by_folder:
            lines: list[str] = []
            sources = [os.path.join(folder, ".gitignore")]
            if folder == self.root:
                sources.insert(0, os.path.join(folder, ".git", "info", "exclude"))
            for source in sources:
                try:
                    with open(source, encoding="utf-8", errors="replace") as handle:
                        lines += handle.read().splitlines()
                except OSError:
                    continue
            kept = tuple(x for x in lines if x.strip() and not x.startswith("#"))
            self._by_folder[folder] = PatternList(kept, folder) if kept else None
        return self._by_folder[folder]

    def ignores(self, path: str, is_dir: bool = False) -> bool:
        absolute = os.path.abspath(path)
        if relative_posix(absolute, self.root) is None:
            return False
        folders = []
        folder = os.path.dirname(absolute)
        while True:
            folders.append(folder)
            if folder == self.root or os.path.dirname(folder) == folder:
                break
            folder = os.path.dirname(folder)
        ignored = False
        for folder in reversed(folders):  # from the root down: deeper files win
            patterns = self._patterns(folder)
            if patterns is None:
                continue
            decision = _decision(patterns, absolute, is_dir)
            if decision is not None:
                ignored = decision
        return ignored


def _decision(patterns: PatternList, path: str, is_dir: bool) -> bool | None:
    """True ignored, False re-included by a ``!`` pattern, None: not mentioned."""
    if not patterns._compiled:
        patterns._compile()
    if patterns._spec is None:
        return True if patterns.matches(path, is_dir) else None
    relative = relative_posix(path, patterns.root)
    if relative is None:
        return None
    result = patterns._spec.check_file(relative + ("/" if is_dir else ""))
    return result.include
