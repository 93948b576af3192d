"""``draft-kv-lint fix``: rewrite files in place, or show (``--diff``) or test
(``--check``) what would change.

Exit codes: 0 nothing left to do (files may have been rewritten); 1 something would
change (``--diff``/``--check``) or a file could not be fixed (unreadable, not a
regular file, too large, not readable as Python source, does not parse or compile,
rewrite refused by the gate, a helper's name rebound at run time, not writable,
changed on disk by another writer while being fixed, a link leading outside the
named paths, a module of the tree that could not be given, or created with, the
definitions its importers need); 2 usage or internal error
(an internal error on one file is reported for it and the others are still fixed).

The gate: the bytes about to be written are decoded, parsed and proved equal to the
original (:mod:`lint_plugin.fix.gate.verify`); otherwise the file is left
byte-identical.
Definitions added to a module of the tree have a gate of their own
(:mod:`lint_plugin.fix.helper_homes`).

A file's bytes are kept as they were outside the rewritten statements: its
encoding (read as Python reads it, PEP 263: a coding cookie, a BOM, and written
back in it), each line's ending (LF, CRLF, lone CR, or a mix) and its mode. A
file Python would refuse for its encoding is refused. Writes go to a
temporary file in the same folder that is renamed over the original, so a file is
never half written, and only while the file still holds the bytes that were read
and proved (:mod:`lint_plugin.fix.atomic`).
"""

from __future__ import annotations

import codecs
import os
import sys
from collections.abc import Sequence

from lint_plugin.engine.source import normalised
from lint_plugin.findings import FileError
from lint_plugin.fix.collection import released
from lint_plugin.fix.file_text import read_for_fix, restore_line_endings
from lint_plugin.noqa.directives import may_hold_own_directive
from lint_plugin.prefilter import could_match
from lint_plugin.printable import printable
from lint_plugin.records import record
from lint_plugin.source_files import SourceError, decoded

# The rewriter, its gate, the diff and the atomic write are imported by the
# first file that needs them: a run over files no rule can match (the commit a
# pre-commit hook sees most) only reads and parses them.
TYPE_CHECKING = False  # not `typing`: its import costs milliseconds every run
if TYPE_CHECKING:
    from typing import TextIO

    from lint_plugin.fix.options import Options
    from lint_plugin.fix.rewrite import Rewrite


@record
class FixReport:
    changed_files: int = 0
    fixed: int = 0
    unsafe: int = 0
    failed: int = 0
    crashed: int = 0
    definitions: int = 0  # added to modules of the tree (helper_homes)
    homes: int = 0
    created: int = 0  # of the homes, modules the tree lacked


@record
class _Fixed:
    """One file's rewrite, before anything is written."""

    before: str  # the text as read (its own line endings)
    after: str  # what is to be written (the same endings), past the gate
    rewrite: Rewrite
    bom: bool
    encoded: bytes
    encoding: str = "utf-8"  # the file's own (PEP 263), written back in it
    # The ``from ... import`` statements of ``after`` (helper_homes.imports_from):
    # read from the tree the gate parsed, so planning parses nothing again.
    imports: list[tuple[str | None, int, tuple[str, ...]]] | None = None
    # The bytes read: the file must still hold them when it is replaced.
    data: bytes = b""


def run_fix(
    files: Sequence[str],
    options: Options,
    *,
    diff: bool = False,
    check: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
    roots: Sequence[str] | None = None,
) -> int:
    """Fix ``files``; ``roots`` are the paths the user named (a file reached through
    a symbolic link leading outside all of them is not written).

    Every file's rewrite is made first, then the modules of the tree the
    rewritten files import a helper (or the guard) from are given the
    definitions they lack (:mod:`lint_plugin.fix.helper_homes`); only then is
    anything written, those modules first, and a file whose imports would be
    left undefined (its module could not be given them) is left unchanged."""
    out = out or sys.stdout
    err = err or sys.stderr
    report = FixReport()
    # Deep but valid code (a 1000-term sum) must not hit Python's default limit;
    # what still does becomes a one-line refusal for that file.
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))
    allowed = None if roots is None else [os.path.realpath(r) for r in roots]
    fixed: list[tuple[str, _Fixed]] = []
    for path in files:
        try:
            try:
                outcome = _fix_one(path, options, skip_inert=True)
            finally:
                released()  # the file's trees
        except RecursionError:
            outcome = FileError(path, "nested too deeply to rewrite, left unchanged")
        except Exception as error:  # one file must not stop the others
            print(FileError(path, f"internal error, left unchanged: {error}"), file=err)
            report.crashed += 1
            continue
        if isinstance(outcome, FileError):
            print(outcome, file=err)
            report.failed += 1
            continue
        if outcome is not None and (
            outcome.rewrite.changed or outcome.rewrite.elsewhere
        ):
            fixed.append((path, outcome))

    homes, blocked, notes = _plan_homes(fixed, options)
    ready = [c for c in homes if not c.error]
    if not (diff or check):
        for change in ready:
            why = _outside(change.home.path, [os.path.realpath(change.home.root)])
            if why is None:
                why = _write(
                    change.home.path,
                    change.encoded,
                    change.original,
                    create=change.created,
                )
            if why is not None:
                from lint_plugin.fix.helper_homes import blocked_by

                change.error = why
                blocked.update(blocked_by(change))
    for change in homes:
        if change.error:
            print(FileError(change.home.shown, change.error), file=err)
            report.failed += 1
    for path, reason in blocked.items():
        print(FileError(path, reason), file=err)
        report.failed += 1
    by_home = {os.path.abspath(c.home.path): c for c in ready}
    for path, outcome in fixed:
        rewrite = outcome.rewrite
        if not rewrite.changed or path in blocked:
            continue
        home = by_home.get(os.path.abspath(path))
        if home is not None and home.error:
            continue  # its write failed, reported above
        if not (diff or check) and home is None:
            why = _outside(path, allowed) or _write(path, outcome.encoded, outcome.data)
            if why is not None:
                print(FileError(path, why), file=err)
                report.failed += 1
                continue
        report.changed_files += 1
        report.fixed += len(rewrite.applied)
        # --diff and --check write nothing: they say what would happen.
        done = "would apply" if diff or check else "applied"
        for finding in rewrite.applied:
            if finding.fix.applicability == "unsafe":
                report.unsafe += 1
                print(
                    printable(
                        f"{path}:{finding.row}:{finding.column}: {finding.code} "
                        f"unsafe fix {done}: {finding.fix.message}"
                    ),
                    file=err,
                )
        after = home.after if home is not None else outcome.after
        if diff:
            _write_diff(out, path, outcome.before, after)
        elif check:
            print(
                printable(f"Would fix {len(rewrite.applied)} site(s) in {path}"),
                file=err,
            )
    shown_paths = {os.path.abspath(p) for p, o in fixed if o.rewrite.changed}
    for change in ready:
        if change.error:
            continue
        report.homes += 1
        report.created += change.created
        report.definitions += len(change.names)
        names = ", ".join(change.names)
        if diff and os.path.abspath(change.home.path) not in shown_paths:
            _write_diff(
                out, change.home.shown, change.before, change.after, change.created
            )
        if change.created:
            verb = "Would create" if diff or check else "Created"
            what = f"{verb} {change.home.shown} with {names}"
        else:
            verb = "Would add" if diff or check else "Added"
            what = f"{verb} {names} to {change.home.shown}"
        print(
            printable(f"{what} (imported there by {len(change.importers)} file(s))"),
            file=err,
        )
    for note in notes:
        print(printable(note), file=err)
    _summarise(report, diff or check, err)
    if report.crashed:
        return 2
    if report.failed:
        return 1
    changed = report.changed_files or report.homes
    return 1 if (diff or check) and changed else 0


def _write_diff(
    out: TextIO, path: str, before: str, after: str, created: bool = False
) -> None:
    from lint_plugin.fix.diff import unified_diff

    out.writelines(
        unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            # A new file's diff, as git writes one (``git apply`` creates it).
            fromfile="/dev/null" if created else _diff_name("a", path),
            tofile=_diff_name("b", path),
        )
    )


def fix_file(
    path: str,
    options: Options,
    *,
    write: bool,
    roots: Sequence[str] | None = None,
):
    """``(before, after, rewrite)`` for one file, or a FileError saying why not.

    ``after`` is exactly what is (or would be) written, and it has passed the gate
    (:func:`lint_plugin.fix.rewrite.check_written`) on those very bytes. One file
    alone: the definitions its imports may need elsewhere are ``run_fix``'s.
    """
    outcome = _fix_one(path, options)
    if isinstance(outcome, FileError):
        return outcome
    if write and outcome.rewrite.changed:
        why = _outside(path, roots) or _write(path, outcome.encoded, outcome.data)
        if why is not None:
            return FileError(path, why)
    return outcome.before, outcome.after, outcome.rewrite


def _write(
    path: str, encoded: bytes, expected: bytes | None, *, create: bool = False
) -> str | None:
    """Why ``path`` was not written: ``expected``, the bytes it was read as,
    must still be there (``create``: no file must be)."""
    from lint_plugin.fix.atomic import ChangedMeanwhile, write_atomic

    try:
        write_atomic(path, encoded, expected=expected, create=create)
    except ChangedMeanwhile as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot write: {exc.strerror or exc}"
    return None


def _fix_one(
    path: str, options: Options, *, skip_inert: bool = False
) -> _Fixed | FileError | None:
    """``skip_inert``: None for a file that parses, no rule can match and holds
    no directive of ours: nothing in it would change, and the rewriter is not
    imported to say so."""
    read = read_for_fix(path)
    if isinstance(read, str):
        return FileError(path, read)
    bom, raw, encoding, data = read
    # Python reads CRLF and a lone CR as LF: the engine sees LF only, and each
    # line gets its own ending back afterwards.
    text = normalised(raw)
    from lint_plugin.engine.syntax import error_of

    # What CPython would refuse to compile (a parse error, and the compiler's
    # own: `break` outside a loop, an unbound `nonlocal`) is never rewritten.
    error = error_of(text, path)
    if error is not None:
        where = f"{error.row}:{error.column}: {error.message}"
        return FileError(path, f"cannot parse, left unchanged: {where}")
    if skip_inert and _inert(text):
        return None
    if len(data) > MAX_FIX_BYTES:
        return FileError(path, _too_large(len(data)))
    from lint_plugin.fix.rewrite import RewriteRefused, check_written, rewrite_text

    try:
        rewrite = rewrite_text(text, path, options, verify_result=False)
    except SyntaxError as exc:
        return FileError(path, f"cannot parse, left unchanged: {exc}")
    except RewriteRefused as exc:
        return FileError(path, f"left unchanged: {exc}")
    if not rewrite.changed:
        rewrite.parsed_original = rewrite.original_names = None
        return _Fixed(raw, raw, rewrite, bom, b"", encoding, data=data)
    after = restore_line_endings(raw, text, rewrite.text)
    try:
        encoded = (codecs.BOM_UTF8 if bom else b"") + after.encode(encoding)
        # The gate reads the very bytes to be written, as Python will.
        written = decoded(encoded)[0]
    except (UnicodeError, SourceError) as exc:
        return FileError(
            path, f"left unchanged: the rewrite cannot be written as {encoding}: {exc}"
        )
    from dataclasses import replace

    try:
        tree = check_written(text, replace(rewrite, text=written), options)
    except RewriteRefused as exc:
        return FileError(path, f"left unchanged: {exc}")
    from lint_plugin.fix.helper_homes import imports_from

    # Kept until every file is planned: what its imports are, not its trees.
    rewrite.parsed_original = rewrite.original_names = None
    return _Fixed(
        raw, after, rewrite, bom, encoded, encoding, imports_from(tree), data=data
    )


# The rewrite holds about 320 MB of memory per MB of source it rewrites
# (bench/bench_fix_memory.py); SGLang's largest file is 0.36 MB. A file that could
# hold a site and is larger than this is refused rather than risk the machine.
MAX_FIX_BYTES = 2 * 1024 * 1024


def _too_large(size: int) -> str:
    return (
        f"{size:,} bytes: files over {MAX_FIX_BYTES:,} bytes are not rewritten "
        "(the rewrite needs about 320 MB of memory per MB), left unchanged"
    )


def _inert(text: str) -> bool:
    """Nothing to rewrite, whatever the options: the byte test the engine runs
    first turns the file away, and no directive of ours is there to drop."""
    return not could_match(text) and not may_hold_own_directive(text)


def _plan_homes(fixed, options: Options):
    """``helper_homes.plan_homes``, imported only when a file was rewritten or
    reported elsewhere (nothing else can need a definition)."""
    if not fixed:
        return [], {}, []
    from lint_plugin.fix.helper_homes import plan_homes

    return plan_homes(fixed, options)


def _outside(path: str, roots: Sequence[str] | None) -> str | None:
    """Why ``path`` must not be written because it leads outside the named paths."""
    if roots is None:
        return None
    target = os.path.realpath(path)
    for root in roots:
        if target == root or target.startswith(root.rstrip(os.sep) + os.sep):
            return None
    return (
        f"symbolic link to {target}, outside the paths given, not written "
        "(name the target to fix it)"
    )


def _diff_name(side: str, path: str) -> str:
    name = path if os.path.isabs(path) else f"{side}/{path}"
    return name if name.isprintable() else _quoted(name)


def _quoted(name: str) -> str:
    """git's quoting of a name in a diff header (``quote_c_style``): in double
    quotes, C escapes for the usual controls, octal for every other byte that is
    not printable ASCII; ``git apply`` and ``patch`` read the name back."""
    named = {"\a": "a", "\b": "b", "\t": "t", "\n": "n", "\v": "v", "\f": "f"}
    named |= {"\r": "r", '"': '"', "\\": "\\"}
    out = []
    for byte in os.fsencode(name):
        char = chr(byte)
        if char in named:
            out.append("\\" + named[char])
        elif 0x20 <= byte < 0x7F:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _summarise(report: FixReport, dry_run: bool, err: TextIO) -> None:
    if not (report.fixed or report.failed or report.definitions):
        print("Nothing to fix.", file=err)
        return
    verb = "Would fix" if dry_run else "Fixed"
    unsafe = f" ({report.unsafe} unsafe)" if report.unsafe else ""
    if report.fixed or report.failed:
        print(
            f"{verb} {report.fixed} site(s){unsafe} in {report.changed_files} file(s).",
            file=err,
        )
    if report.definitions:
        created = (
            f" ({report.created} {'to be ' if dry_run else ''}created)"
            if report.created
            else ""
        )
        print(
            f"{'Would add' if dry_run else 'Added'} {report.definitions} "
            f"definition(s) to {report.homes} file(s){created}.",
            file=err,
        )
    if report.failed:
        print(f"{report.failed} file(s) could not be fixed.", file=err)
