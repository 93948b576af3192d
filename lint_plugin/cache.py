"""The engine's findings for files already checked, as ruff keeps its own.

An entry is keyed by everything the engine's answer depends on: the file's bytes,
its path (as given, and absolute: relative imports resolve from it), the engine
settings, and the tool's own code (every module's size and modification time, so
an upgrade or an edited checkout never reads an older answer). Noqa directives
and rule selection are applied after the cache, on every run.

A run answered from the cache reads each file, hashes the ones that could hold a
finding, and loads their entries: it never imports the parser's side. The cache
is an optimisation only. A folder that cannot be written, or an entry that cannot
be read back whole, is silently the same as a miss: the file is checked again.
"""

from __future__ import annotations

import marshal
import os
import re

from lint_plugin.findings import Edit, Finding, Fix
from lint_plugin.settings import Settings

FOLDER_NAME = ".draft_kv_lint_cache"
NO_CACHE_VARIABLE = "DRAFT_KV_LINT_NO_CACHE"
CACHE_DIR_VARIABLE = "DRAFT_KV_LINT_CACHE_DIR"
_MAGIC = "draft-kv-lint cache 1"
_MAX_ENTRY_BYTES = 4 * 1024 * 1024  # a file's findings; far more than any needs
_BUILD_NAME = re.compile(r"[0-9a-f]{40}")
_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by draft-kv-lint.\n"
)


def _hasher():
    try:  # the module alone: hashlib would load OpenSSL (3 ms a run)
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - an interpreter built without it
        from hashlib import blake2b
    return blake2b(digest_size=20)


def _code_fingerprint() -> str:
    """One name per build of this tool: its version, the interpreter's, and every
    module's size and modification time (the rule modules included)."""
    import lint_plugin

    folders = list(lint_plugin.__path__)
    rules = os.path.join(folders[0], "rules")
    if not os.path.isdir(rules):  # an editable install maps the rules elsewhere
        from importlib.util import find_spec

        spec = find_spec("lint_plugin.rules")
        rules = spec.submodule_search_locations[0] if spec else rules
    import sys

    hasher = _hasher()
    # The interpreter too: what parses (E999) differs between Python versions,
    # and two virtual environments may share one editable checkout.
    hasher.update(f"{lint_plugin.__version__}\0{sys.version}\0".encode())
    for folder in (*folders, rules):
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(".py"):
                status = entry.stat()
                hasher.update(
                    f"{entry.path}\0{status.st_size}\0{status.st_mtime_ns}\n".encode()
                )
    return hasher.hexdigest()


class Cache:
    """Entries under ``folder`` for one build of the tool and one set of settings."""

    def __init__(self, folder: str, settings: Settings) -> None:
        self.root = folder
        self.folder = os.path.join(folder, _code_fingerprint())
        self._settings = repr(
            (settings.helpers_module, settings.guard_module, sorted(settings.opt_in))
        ).encode()
        self._writable: bool | None = None

    def key(self, path: str, data: bytes) -> str:
        hasher = _hasher()
        hasher.update(f"{path}\0{os.path.abspath(path)}\0".encode())
        hasher.update(self._settings)
        hasher.update(b"\0")
        hasher.update(data)
        return hasher.hexdigest()

    def get(self, key: str, path: str) -> list[Finding] | None:
        """The findings stored under ``key`` (reported for ``path``), or None."""
        from lint_plugin.files import read_regular_file

        # As careful as reading a source: a FIFO or a link to /dev/zero put in
        # the folder must cost a miss, not a hang or the machine's memory.
        data = read_regular_file(os.path.join(self.folder, key), _MAX_ENTRY_BYTES)
        if not isinstance(data, bytes):
            return None
        try:
            magic, stored_key, rows = marshal.loads(data)
            if magic != _MAGIC or stored_key != key:
                return None
            return [_finding(path, row) for row in rows]
        except Exception:  # any damage is a miss, never a crash
            return None  # truncated or not ours: check the file again

    def put(self, key: str, findings: list[Finding]) -> None:
        if not self._prepare():
            return
        data = marshal.dumps((_MAGIC, key, [_row(f) for f in findings]))
        final = os.path.join(self.folder, key)
        partial = f"{final}.{os.getpid()}.tmp"
        try:
            # Never through a link someone left at this name (O_EXCL, O_NOFOLLOW).
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
            descriptor = os.open(partial, flags, 0o644)
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(data)
            os.replace(partial, final)  # readers see the whole entry or none
        except OSError:
            try:  # noqa: SIM105 - contextlib would be one more import per run
                os.unlink(partial)
            except OSError:
                pass

    def _prepare(self) -> bool:
        """Create the folder once, marked as a cache git and backup tools skip."""
        if self._writable is None:
            try:
                if not os.path.isdir(self.folder):
                    _remove_other_builds(self.root)
                os.makedirs(self.folder, exist_ok=True)
                for name, text in ((".gitignore", "*\n"), ("CACHEDIR.TAG", _TAG)):
                    marker = os.path.join(self.root, name)
                    if not os.path.exists(marker):
                        with open(marker, "w", encoding="utf-8") as handle:
                            handle.write(text)
                self._writable = True
            except OSError:
                self._writable = False
        return self._writable


def _remove_other_builds(root: str) -> None:
    """A new build of the tool starts its own folder: the others' answers can
    never be read again (the key names the build), so they go."""
    try:
        names = os.listdir(root)
    except OSError:
        return
    stale = [n for n in names if _BUILD_NAME.fullmatch(n)]
    if stale:
        import shutil

        for name in stale:
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)


def cache_for(
    option: str | None, project_root: str, settings: Settings
) -> Cache | None:
    """The run's cache, or None when the environment turns it off. The folder:
    ``--cache-dir``, else the environment's, else one in the project root."""
    if os.environ.get(NO_CACHE_VARIABLE, "").lower() not in ("", "0", "false"):
        return None
    folder = (
        option
        or os.environ.get(CACHE_DIR_VARIABLE)
        or os.path.join(project_root, FOLDER_NAME)
    )
    return Cache(folder, settings)


def _row(finding: Finding) -> tuple:
    fix = finding.fix
    stored_fix = None
    if fix is not None:
        edits = tuple(
            (e.content, e.row, e.column, e.end_row, e.end_column) for e in fix.edits
        )
        stored_fix = (fix.applicability, fix.message, edits)
    return (
        finding.row,
        finding.column,
        finding.end_row,
        finding.end_column,
        finding.code,
        finding.message,
        stored_fix,
    )


def _finding(path: str, row: tuple) -> Finding:
    """A stored row back as a finding; anything but the exact shape is refused."""
    start, column, end_row, end_column, code, message, stored_fix = row
    fix = None
    if stored_fix is not None:
        applicability, fix_message, edits = stored_fix
        fix = Fix(
            _text(applicability),
            _text(fix_message),
            tuple(Edit(_text(c), *map(_number, rest)) for c, *rest in edits),
        )
    return Finding(
        path,
        _number(start),
        _number(column),
        _number(end_row),
        _number(end_column),
        _text(code),
        _text(message),
        fix,
    )


def _text(value: object) -> str:
    if type(value) is not str:
        raise TypeError("not a string")
    return value


def _number(value: object) -> int:
    if type(value) is not int:
        raise TypeError("not an integer")
    return value
