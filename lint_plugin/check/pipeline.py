"""The ``check`` pipeline for a list of files: read, scan, select, honour noqa.

Kept apart from the command line so ``fix`` and tests can run it directly. Every
file is independent: a file that cannot be read or decoded becomes a ``FileError``
and the others are still checked; an unexpected exception from the engine on one
file is recorded as a crash (the CLI then exits 2) instead of hiding the findings of
every other file.
"""

from __future__ import annotations

from collections.abc import Sequence

from lint_plugin.config.selection import Selection
from lint_plugin.engine.settings import DEFAULT_SETTINGS, Settings
from lint_plugin.findings import SYNTAX_ERROR_CODE, FileError, Finding
from lint_plugin.noqa.directives import may_hold_own_directive, review
from lint_plugin.prefilter import could_match
from lint_plugin.records import field, record
from lint_plugin.source_files import SourceError, decode, read_with_status

TYPE_CHECKING = False  # not `typing`: its import costs milliseconds every run
if TYPE_CHECKING:
    import os

    from lint_plugin.check.cache import Cache
    from lint_plugin.check.file_states import FileStates


class SourceFile:
    """One file on its way to findings: what each stage found, handed to the
    next (read, the byte test and the cache key, decoded once), so that no
    stage asks again."""

    __slots__ = ("_text", "candidate", "data", "key", "path", "status")

    def __init__(
        self, path: str, data: bytes, status: os.stat_result | None = None
    ) -> None:
        self.path = path
        self.data = data
        self.status = status  # as read (what the file states record)
        self.candidate: bool | None = None  # the byte test's answer, once asked
        self.key: str | None = None  # its key in the cache (only a candidate's)
        self._text: str | None = None

    def text(self) -> str:
        """The text Python reads from the bytes, decoded once; raises
        SourceError where Python would refuse the file."""
        if self._text is None:
            self._text = decode(self.data)
        return self._text

    def compiled(self) -> bool:
        """Does CPython's bytecode cache prove these bytes compile?"""
        from lint_plugin.check.compiled import compiled

        return compiled(self.path, self.data, self.status)


@record
class FileReport:
    """One file's reportable findings and the bytes they were found in."""

    path: str
    data: bytes
    findings: list[Finding]


@record
class CheckResult:
    reports: list[FileReport] = field(default_factory=list)  # files with findings
    errors: list[FileError] = field(default_factory=list)  # could not be checked
    crashes: list[FileError] = field(default_factory=list)  # the engine failed
    files_checked: int = 0
    # What a selected rule could not judge (KVI003's opaque widths), when asked.
    notes: list[Finding] = field(default_factory=list)
    # The files found to hold nothing, by status (a worker's, for its parent).
    states: FileStates | None = None

    @property
    def findings(self) -> list[Finding]:
        found = [f for report in self.reports for f in report.findings]
        return sorted(found, key=lambda f: f.sort_key)


def check_file(
    file: SourceFile,
    selection: Selection,
    settings: Settings = DEFAULT_SETTINGS,
    cache: Cache | None = None,
    notes: list[Finding] | None = None,
    reviewed: list[Finding] | None = None,
) -> list[Finding]:
    """Reportable findings in one file (bytes Python would not read as source
    are an E999, as a syntax error is). ``notes`` receives what a selected rule
    could not judge (the cache keeps findings only: asking for notes checks the
    file afresh); ``reviewed`` receives the findings before selection (what the
    file holds whatever is selected)."""
    try:
        if file.candidate is None:
            file.candidate = could_match(file.data)
        if not file.candidate:
            # A file no rule can match is dismissed here, cached or not, so a run
            # over such files never imports the engine.
            file.text()  # what the engine does first: not UTF-8 is an error
            findings = []  # and then, for such a file, nothing else
        elif notes is not None:
            findings = _engine_notes(file, selection, settings, notes)
        else:
            findings = _engine_findings(file, settings, cache)
    except SourceError as error:
        findings = [encoding_error(error, file.path)]
        if reviewed is not None:
            reviewed += findings
        return findings
    if not findings and not may_hold_own_directive(file.data):
        return []  # nothing found and no KVI directive to judge (KVI100)
    # Directives first, on every finding: whether a directive is used does not
    # depend on --select (a directive for a switched-off rule is not churned).
    findings = review(findings, file.text(), file.path)
    if reviewed is not None:
        reviewed += findings
    if not findings:
        return []
    codes = selection.codes_for(file.path)  # once per file: per-file-ignores use globs
    return [f for f in findings if f.code == SYNTAX_ERROR_CODE or f.code in codes]


def _engine_notes(
    file: SourceFile, selection: Selection, settings: Settings, notes: list[Finding]
) -> list[Finding]:
    """The engine's findings, its notes of the selected rules added to
    ``notes`` (never cached)."""
    from lint_plugin import linter

    found: list[Finding] = []
    findings = linter.lint_text(
        file.text(), file.path, settings, syntax_checked=file.compiled, notes=found
    )
    codes = selection.codes_for(file.path)
    notes += [n for n in found if n.code in codes]
    return findings


def encoding_error(error: SourceError, path: str) -> Finding:
    """A file Python refuses for its encoding, reported as its syntax error."""
    return Finding(
        path,
        error.row,
        error.column,
        error.row,
        error.column,
        SYNTAX_ERROR_CODE,
        str(error),
    )


def _engine_findings(
    file: SourceFile, settings: Settings, cache: Cache | None
) -> list[Finding]:
    """The engine's findings for a file the byte test let through, from the
    cache when it has this file's answer (only such files are cached), so a
    run answered from the cache never imports the engine."""
    key = None
    if cache is not None:
        key = file.key or cache.key(file.path, file.data)
        stored = cache.get(key, file.path)
        if stored is not None:
            return stored
    # Looked up on the module at call time: the engine is imported only when a file
    # is actually checked, and tests can substitute ``linter.lint_text``.
    from lint_plugin import linter
    from lint_plugin.engine.package_tree import recording

    # KVI007 reads the modules a file imports from: the entry depends on them.
    with recording() as depends:
        findings = linter.lint_text(
            file.text(), file.path, settings, syntax_checked=file.compiled
        )
    if key is not None:
        cache.put(key, findings, depends)
    return findings


# Below this many files a second process costs more than it saves (a fork and the
# results' round trip are a few milliseconds; a pre-commit run names a handful).
PARALLEL_MIN_FILES = 256


def check_files(
    paths: Sequence[str],
    selection: Selection,
    settings: Settings = DEFAULT_SETTINGS,
    cache: Cache | None = None,
    notes: bool = False,
) -> CheckResult:
    """``notes``: also collect what the rules could not judge (``--statistics``)."""
    import gc

    # The engine's trees are freed by reference counting (``analysis`` cuts
    # its cycles once a file is decided), so the cycle collector only walks the
    # heap in vain: a tenth of a whole-package run. It runs every so many files
    # instead (``_check_serially``), and as before once the run is over.
    collecting = gc.isenabled()
    gc.disable()
    # What is alive now (the modules imported, the settings) lives to the end:
    # frozen, the collections every so many files do not walk it again (20 ms
    # each, a twentieth of a warm whole-package run).
    gc.freeze()
    try:
        return _check_files(paths, selection, settings, cache, notes)
    finally:
        gc.unfreeze()
        if collecting:
            gc.enable()


def _check_files(paths, selection, settings, cache, notes) -> CheckResult:
    if notes:
        cache = None
    if cache is None:
        return _check_fresh(paths, selection, settings, cache, notes, None)
    from lint_plugin.check.file_states import FileStates

    # The statuses of the files found to hold nothing, for this build.
    states = FileStates.for_run(cache.folder)
    # Files unchanged since they held nothing are not read again.
    fresh = states.changed(paths)
    result = _check_fresh(fresh, selection, settings, cache, notes, states)
    result.files_checked += len(paths) - len(fresh)
    result.states = None  # the workers' parts are merged into ``states`` now
    states.save(cache.prepare)
    return result


def _check_fresh(paths, selection, settings, cache, notes, states) -> CheckResult:
    workers = _workers(len(paths))
    if workers < 2:
        return _check_serially(paths, selection, settings, cache, notes, states=states)
    chunks = [list(paths[i::workers]) for i in range(workers)]
    # Plain fork and a pipe per child: importing multiprocessing alone would cost
    # a tenth of a whole-package run. The parent checks the first chunk itself.
    children = [
        _fork_checker(chunk, selection, settings, cache, notes, states)
        for chunk in chunks[1:]
    ]
    parts = [
        _check_serially(chunks[0], selection, settings, cache, notes, states=states)
    ]
    for (pid, pipe), chunk in zip(children, chunks[1:], strict=True):
        parts.append(
            _collect(pid, pipe, chunk, selection, settings, cache, notes, states)
        )
    result = CheckResult()
    for part in parts:
        result.reports += part.reports
        result.errors += part.errors
        result.crashes += part.crashes
        result.files_checked += part.files_checked
        result.notes += part.notes
        if part.states is not None and part.states is not states:
            states.merge(part.states)
    order = {path: index for index, path in enumerate(paths)}
    result.reports.sort(key=lambda report: order[report.path])
    result.errors.sort(key=lambda error: order.get(error.path, 0))
    # In the files' order, as one process lists them (a warm run may be one).
    result.crashes.sort(key=lambda error: order.get(error.path, 0))
    return result


def _fork_checker(
    chunk: list[str],
    selection: Selection,
    settings: Settings,
    cache: Cache | None,
    notes: bool = False,
    states: FileStates | None = None,
) -> tuple[int, int]:
    import os
    import pickle

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: check, send the result, leave without cleanup
        status = 1
        try:
            os.close(read_end)
            part = states.worker_part() if states is not None else None
            data = pickle.dumps(
                _check_serially(chunk, selection, settings, cache, notes, states=part)
            )
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(data)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    return pid, read_end


def _collect(
    pid: int,
    pipe: int,
    chunk: list[str],
    selection,
    settings,
    cache,
    notes=False,
    states=None,
):
    import os
    import pickle

    with os.fdopen(pipe, "rb") as stream:
        data = stream.read()
    _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        # The child failed: check its files here.
        return _check_serially(chunk, selection, settings, cache, notes, states=states)
    return pickle.loads(data)


def _workers(files: int) -> int:
    import os
    import sys

    if files < PARALLEL_MIN_FILES or sys.platform != "linux":
        return 1  # fork is only cheap and safe enough where it is the default
    cpus = len(os.sched_getaffinity(0))
    return max(1, min(cpus, files // (PARALLEL_MIN_FILES // 2)))


def _check_serially(
    paths: Sequence[str],
    selection: Selection,
    settings: Settings = DEFAULT_SETTINGS,
    cache: Cache | None = None,
    notes: bool = False,
    states: FileStates | None = None,
) -> CheckResult:
    """``states``: where the files found to hold nothing are recorded (and
    the others forgotten); the result carries it back."""
    result = CheckResult(states=states)
    for index, path in enumerate(paths):
        data, status = read_with_status(path)
        if isinstance(data, FileError):
            result.errors.append(data)
            if states is not None:
                states.forget(path)
            continue
        file = SourceFile(path, data, status)
        reviewed = None
        if states is not None:  # a cache's run: the byte test decides
            file.key, file.candidate = _candidate(cache, path, data)
            reviewed = []
        try:
            findings = check_file(
                file,
                selection,
                settings,
                cache,
                result.notes if notes else None,
                reviewed,
            )
        except Exception as error:  # one file must not stop the run
            result.crashes.append(
                FileError(path, f"internal error: {type(error).__name__}: {error}")
            )
            if states is not None:
                states.forget(path)
            continue
        result.files_checked += 1
        if findings:
            result.reports.append(FileReport(path, data, findings))
        if states is not None:
            if reviewed or file.candidate:
                states.forget(path)
            else:  # cannot match, no directive: nothing, whatever is selected
                states.record(path, status)
        if index % _COLLECT_EVERY == _COLLECT_EVERY - 1:
            _collect_garbage()
    return result


# With the collector off (``check_files``), what cycles the engine leaves are
# collected every so many files, so that memory stays bounded on any tree.
_COLLECT_EVERY = 1000


def _collect_garbage() -> None:
    import gc

    gc.collect()


def _candidate(cache: Cache, path: str, data: bytes) -> tuple[str | None, bool]:
    """``(key, candidate)``: may a rule match ``data``, with its cache key
    (None for a file that cannot match: only candidates have entries)? Only a
    file the byte test let through is ever stored, under this build's folder,
    so a stored entry answers for it: a warm run over files it knows asks no
    byte test, nor reads the rules' declarations the test is built from."""
    key = cache.key(path, data)
    if cache.has(key) or could_match(data):
        return key, True
    return None, False
