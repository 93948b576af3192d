"""The engine's findings for files already checked, as ruff keeps its own.

An entry is keyed by everything the engine's answer depends on: the file's bytes,
its path (as given, and absolute: relative imports resolve from it), the engine
settings, and the tool's own code (every module's size and modification time, so
an upgrade or an edited checkout never reads an older answer). Noqa directives
and rule selection are applied after the cache, on every run.

A run answered from the cache reads each file that could hold a finding, hashes
it, and loads its entry: it never imports the parser's side. The files that
cannot are not read at all once their status is recorded
(:mod:`lint_plugin.check.file_states`, kept in the build's folder too). The cache
is an optimisation only. A folder that cannot be written, or an entry that cannot
be read back whole, is silently the same as a miss: the file is checked again.

Entries are plain text (one escaped, tab-separated line per finding, fix and edit)
under a digest of their own bytes: a damaged entry is recognised before anything
in it is believed, and reading one never allocates more than its size (``marshal``
is not safe on damaged input: a flipped byte can crash the interpreter).

The folder is marked (a ``.gitignore`` of ``*`` and a ``CACHEDIR.TAG``) only when
this tool creates it, and the folders of old builds are removed only from a folder
so marked and only when they carry this tool's build marker: ``--cache-dir`` given
an existing folder of the user's never gains files or loses folders it did not own.
"""

from __future__ import annotations

import os
import re

from lint_plugin.engine.settings import Settings
from lint_plugin.findings import Edit, Finding, Fix
from lint_plugin.held_signals import held

FOLDER_NAME = ".draft_kv_lint_cache"
NO_CACHE_VARIABLE = "DRAFT_KV_LINT_NO_CACHE"
CACHE_DIR_VARIABLE = "DRAFT_KV_LINT_CACHE_DIR"
_MAGIC = "draft-kv-lint cache 3"
_BUILD_MARKER = ".draft-kv-lint-build"
_MAX_ENTRY_BYTES = 4 * 1024 * 1024  # a file's findings; far more than any needs
_BUILD_NAME = re.compile(r"[0-9a-f]{40}")
_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by draft-kv-lint.\n"
)


def _hasher():
    from lint_plugin.digests import blake2b

    return blake2b(digest_size=20)


def _code_fingerprint() -> str:
    """One name per build of this tool: its version, the interpreter's, and every
    module's size and modification time (the rule modules included)."""
    import sys

    import lint_plugin
    from lint_plugin.codes import rules_folder

    folders = list(lint_plugin.__path__)
    rules = rules_folder()  # an editable install maps the rules elsewhere

    hasher = _hasher()
    # The interpreter too: what parses (E999) differs between Python versions,
    # and two virtual environments may share one editable checkout.
    hasher.update(f"{lint_plugin.__version__}\0{sys.version}\0".encode())
    # Every module of every subpackage (the engine, fix, ...): an edited module
    # anywhere in the tool must not serve the old build's answers.
    pending = [*folders, rules]
    while pending:
        folder = pending.pop(0)
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
            elif entry.name != "__pycache__" and entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
    return hasher.hexdigest()


class Cache:
    """Entries under ``folder`` for one build of the tool and one set of settings."""

    def __init__(self, folder: str, settings: Settings) -> None:
        self.root = folder
        self.folder = os.path.join(folder, _code_fingerprint())
        self._settings = repr((settings.helpers_module, settings.guard_module)).encode()
        self._writable: bool | None = None

    def key(self, path: str, data: bytes) -> str:
        """The entry of ``path`` holding ``data`` (every rule's findings,
        before noqa and selection: one entry answers any selection)."""
        hasher = _hasher()
        hasher.update(f"{path}\0{os.path.abspath(path)}\0".encode())
        hasher.update(self._settings)
        hasher.update(b"\0")
        hasher.update(data)
        return hasher.hexdigest()

    def has(self, key: str) -> bool:
        """Is an entry stored under ``key``? (It may still be a miss: damaged, or
        a file it depends on changed; ``get`` decides.)"""
        return os.path.isfile(os.path.join(self.folder, key))

    def get(self, key: str, path: str) -> list[Finding] | None:
        """The findings stored under ``key`` (reported for ``path``), or None
        (also when a file the answer depends on has changed since)."""
        from lint_plugin.source_files import read_regular_file

        # As careful as reading a source: a FIFO or a link to /dev/zero put in
        # the folder must cost a miss, not a hang or the machine's memory.
        data = read_regular_file(os.path.join(self.folder, key), _MAX_ENTRY_BYTES)
        if not isinstance(data, bytes):
            return None
        try:
            decoded = _decode_entry(data, key, path)
        except Exception:  # any damage is a miss, never a crash
            return None
        if decoded is None:
            return None
        findings, depends = decoded
        if depends:
            from lint_plugin.engine.package_tree import still_valid

            if not still_valid(depends):
                return None
        return findings

    def put(
        self,
        key: str,
        findings: list[Finding],
        depends: list[tuple[str, str]] = (),
    ) -> None:
        """Store ``findings`` under ``key``; ``depends``: the other files the
        answer was read from and their states
        (:mod:`lint_plugin.engine.package_tree`)."""
        if not self.prepare():
            return
        store(os.path.join(self.folder, key), _encode(key, findings, depends))

    def prepare(self) -> bool:
        """Create the folders once; mark the cache folder only if this tool made it."""
        if self._writable is None:
            try:
                if not os.path.isdir(self.root):
                    os.makedirs(self.root, exist_ok=True)
                    _write_new(os.path.join(self.root, ".gitignore"), "*\n")
                    _write_new(os.path.join(self.root, "CACHEDIR.TAG"), _TAG)
                if not os.path.isdir(self.folder):
                    if _is_ours(self.root):
                        # A parallel worker of this run may have made this
                        # build's folder meanwhile: it stays.
                        _remove_builds(self.root, keep=os.path.basename(self.folder))
                    os.makedirs(self.folder, exist_ok=True)
                    _write_new(os.path.join(self.folder, _BUILD_MARKER), _MAGIC)
                self._writable = True
            except OSError:
                self._writable = False
        return self._writable


# A new file only: never through a link someone left at the name, never over a
# file that is there already.
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)


def store(final: str, data: bytes) -> None:
    """Write ``data`` at ``final`` whole or not at all: readers see the whole
    file or the one before (a file of the cache folder; failures are misses)."""
    partial = f"{final}.{os.getpid()}.tmp"
    with held():  # a signal now would leave the partial file behind
        try:
            descriptor = os.open(partial, _NEW_FILE, 0o644)
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(data)
            os.replace(partial, final)
        except OSError:
            try:  # noqa: SIM105 - contextlib would be one more import per run
                os.unlink(partial)
            except OSError:
                pass


def _write_new(path: str, text: str) -> None:
    try:
        descriptor = os.open(path, _NEW_FILE, 0o644)
    except FileExistsError:
        return  # there already (or a link): left as it is
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)


def _is_ours(root: str) -> bool:
    """Was this folder made by this tool (its CACHEDIR.TAG, a plain file)?"""
    tag = os.path.join(root, "CACHEDIR.TAG")
    if os.path.islink(tag):
        return False
    try:
        with open(tag, encoding="utf-8") as handle:
            return handle.read(len(_TAG) + 1) == _TAG
    except (OSError, UnicodeDecodeError):
        return False


def _remove_builds(root: str, keep: str = "") -> int:
    """Remove the build folders in ``root`` but ``keep`` (a new build of the tool
    starts its own: the others' answers can never be read again, the key names
    the build); only folders that carry this tool's build marker, and never
    through a link. How many were removed."""
    try:
        names = os.listdir(root)
    except OSError:
        return 0
    stale = []
    for name in names:
        folder = os.path.join(root, name)
        marker = os.path.join(folder, _BUILD_MARKER)
        if (
            name != keep
            and _BUILD_NAME.fullmatch(name)
            and not os.path.islink(folder)
            and os.path.isfile(marker)
            and not os.path.islink(marker)
        ):
            stale.append(folder)
    if stale:
        import shutil

        for folder in stale:
            shutil.rmtree(folder, ignore_errors=True)
    return len(stale)


def clean(folder: str) -> str:
    """``draft-kv-lint clean``: remove the cache at ``folder`` and say what was
    done. A folder this tool made (its CACHEDIR.TAG) goes whole; in any other
    (``--cache-dir .``) only the build folders carrying the tool's marker do.
    Raises OSError when a folder cannot be removed."""
    if not os.path.lexists(folder):
        return f"no cache at {folder}"
    if os.path.islink(folder) or not os.path.isdir(folder):
        return f"{folder} is not a cache folder, left alone"
    if _is_ours(folder):
        import shutil

        shutil.rmtree(folder)
        return f"removed {folder}"
    removed = _remove_builds(folder)
    return (
        f"removed {removed} cache build folder(s) from {folder} "
        "(the folder itself was not made by draft-kv-lint)"
    )


def cache_for(
    option: str | None, project_root: str, settings: Settings
) -> Cache | None:
    """The run's cache, or None when the environment turns it off."""
    if _turned_off():
        return None
    return Cache(cache_folder(option, project_root), settings)


def cache_config_folder(option: str | None, project_root: str) -> str | None:
    """Where the configuration's parsed table is kept (``config.memo``): a
    folder of the run's cache, when the cache is on and its folder is one this
    tool made; else None (nothing is written where the user did not ask)."""
    if _turned_off():
        return None
    root = cache_folder(option, project_root)
    return os.path.join(root, "config") if _is_ours(root) else None


def _turned_off() -> bool:
    """Does the environment turn the cache off (``DRAFT_KV_LINT_NO_CACHE``)?"""
    return os.environ.get(NO_CACHE_VARIABLE, "").lower() not in ("", "0", "false")


def cache_folder(option: str | None, project_root: str) -> str:
    """``--cache-dir``, else the environment's, else one in the project root."""
    return (
        option
        or os.environ.get(CACHE_DIR_VARIABLE)
        or os.path.join(project_root, FOLDER_NAME)
    )


# ---- the entry format -------------------------------------------------------
#
#   draft-kv-lint cache 2 <key> <digest of what follows>
#   F <row> <column> <end row> <end column> <code> <message>
#   X <applicability> <message>                      (the finding's fix, if any)
#   E <content> <row> <column> <end row> <end column>   (each of its edits)
#   D <path> <state>        (another file the answer depends on, KVI007's module)
#
# Fields are separated by tabs; text is escaped with ``unicode_escape`` (which
# escapes tabs, line breaks and backslashes), so every record is one line.


def _encode(
    key: str, findings: list[Finding], depends: list[tuple[str, str]] = ()
) -> bytes:
    lines = [_line("D", path, state) for path, state in dict.fromkeys(depends)]
    for f in findings:
        lines.append(
            _line("F", f.row, f.column, f.end_row, f.end_column, f.code, f.message)
        )
        if f.fix is not None:
            lines.append(_line("X", f.fix.applicability, f.fix.message))
            for e in f.fix.edits:
                lines.append(
                    _line("E", e.content, e.row, e.column, e.end_row, e.end_column)
                )
    body = "".join(line + "\n" for line in lines).encode("ascii")
    digest = _hasher()
    digest.update(body)
    return f"{_MAGIC} {key} {digest.hexdigest()}\n".encode("ascii") + body


def _line(kind: str, *fields: object) -> str:
    return "\t".join(
        [kind]
        + [
            str(v) if type(v) is int else v.encode("unicode_escape").decode("ascii")
            for v in fields
        ]
    )


def _decode(data: bytes, key: str, path: str) -> list[Finding] | None:
    """The findings of an entry (see :func:`_decode_entry`)."""
    decoded = _decode_entry(data, key, path)
    return None if decoded is None else decoded[0]


def _decode_entry(
    data: bytes, key: str, path: str
) -> tuple[list[Finding], list[tuple[str, str]]] | None:
    """The findings of an entry and the files it depends on, or None unless it is
    whole and for ``key``. Anything but the exact format raises (the caller
    counts that as a miss)."""
    header, _, body = data.partition(b"\n")
    magic_key, _, stored_digest = header.decode("ascii").rpartition(" ")
    if magic_key != f"{_MAGIC} {key}":
        return None
    digest = _hasher()
    digest.update(body)
    if digest.hexdigest() != stored_digest:
        return None  # damaged: not one field of it is believed
    findings: list[Finding] = []
    depends: list[tuple[str, str]] = []
    pending: list = []  # the finding being read: its fields, fix and edits
    for line in body.decode("ascii").split("\n")[:-1]:
        kind, *fields = line.split("\t")
        if kind == "D" and not findings and not pending:
            dependency, state = fields
            depends.append((_text(dependency), _text(state)))
        elif kind == "F":
            _finish(pending, findings, path)
            row, column, end_row, end_column, code, message = fields
            pending = [
                (int(row), int(column), int(end_row), int(end_column)),
                _text(code),
                _text(message),
                None,
                [],
            ]
        elif kind == "X" and pending and pending[3] is None:
            applicability, message = fields
            pending[3] = (_text(applicability), _text(message))
        elif kind == "E" and pending and pending[3] is not None:
            content, row, column, end_row, end_column = fields
            pending[4].append(
                Edit(
                    _text(content), int(row), int(column), int(end_row), int(end_column)
                )
            )
        else:
            raise ValueError(f"unexpected record {kind!r}")
    _finish(pending, findings, path)
    return findings, depends


def _finish(pending: list, findings: list[Finding], path: str) -> None:
    if not pending:
        return
    position, code, message, fix, edits = pending
    if fix is not None:
        fix = Fix(fix[0], fix[1], tuple(edits))
    findings.append(Finding(path, *position, code, message, fix))


def _text(field: str) -> str:
    return field.encode("ascii").decode("unicode_escape")
