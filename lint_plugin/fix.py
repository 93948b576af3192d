"""``draft-kv-lint fix``: rewrite files in place, or show (``--diff``) or test
(``--check``) what would change.

Exit codes: 0 nothing left to do (files may have been rewritten); 1 something would
change (``--diff``/``--check``) or a file could not be fixed (unreadable, not a
regular file, too large, not readable as Python source, does not parse, rewrite
refused by the gate,
not writable, a link leading outside the named paths); 2 usage or internal error
(an internal error on one file is reported for it and the others are still fixed).

The gate: the bytes about to be written are decoded, parsed and proved equal to the
original (:mod:`lint_plugin.verify`); otherwise the file is left byte-identical.

A file's bytes are kept as they were outside the rewritten statements: its
encoding (read as Python reads it, PEP 263: a coding cookie, a BOM, and written
back in it), each line's ending (LF, CRLF, lone CR, or a mix) and its mode. A
file Python would refuse for its encoding is refused. Writes go to a
temporary file in the same folder that is renamed over the original, so a file is
never half written.
"""

from __future__ import annotations

import codecs
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TextIO

from lint_plugin.atomic import write_atomic
from lint_plugin.collection import released
from lint_plugin.diff import opcodes, unified_diff
from lint_plugin.files import read_regular_file
from lint_plugin.findings import FileError
from lint_plugin.prefilter import SourceError, decoded
from lint_plugin.rewrite import Options, RewriteRefused, check_written, rewrite_text


@dataclass
class FixReport:
    changed_files: int = 0
    fixed: int = 0
    unsafe: int = 0
    failed: int = 0
    crashed: int = 0


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
    a symbolic link leading outside all of them is not written)."""
    out = out or sys.stdout
    err = err or sys.stderr
    report = FixReport()
    # Deep but valid code (a 1000-term sum) must not hit Python's default limit;
    # what still does becomes a one-line refusal for that file.
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))
    allowed = None if roots is None else [os.path.realpath(r) for r in roots]
    for path in files:
        try:
            try:
                outcome = fix_file(
                    path, options, write=not (diff or check), roots=allowed
                )
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
        before, after, rewrite = outcome
        if not rewrite.changed:
            continue
        report.changed_files += 1
        report.fixed += len(rewrite.applied)
        for finding in rewrite.applied:
            if finding.fix.applicability == "unsafe":
                report.unsafe += 1
                print(
                    f"{path}:{finding.row}:{finding.column}: {finding.code} "
                    f"unsafe fix applied: {finding.fix.message}",
                    file=err,
                )
        if diff:
            out.writelines(
                unified_diff(
                    before.splitlines(keepends=True),
                    after.splitlines(keepends=True),
                    fromfile=_diff_name("a", path),
                    tofile=_diff_name("b", path),
                )
            )
        elif check:
            print(f"Would fix {len(rewrite.applied)} site(s) in {path}", file=err)
    _summarise(report, diff or check, err)
    if report.crashed:
        return 2
    if report.failed:
        return 1
    return 1 if (diff or check) and report.changed_files else 0


def fix_file(
    path: str,
    options: Options,
    *,
    write: bool,
    roots: Sequence[str] | None = None,
):
    """``(before, after, rewrite)`` for one file, or a FileError saying why not.

    ``after`` is exactly what is (or would be) written, and it has passed the gate
    (:func:`lint_plugin.rewrite.check_written`) on those very bytes.
    """
    data = read_regular_file(path)
    if isinstance(data, FileError):
        return FileError(path, data.reason)
    try:
        raw, encoding, bom = decoded(data)
    except SourceError as exc:
        return FileError(path, f"cannot parse, left unchanged: {exc}")
    # Python reads CRLF and a lone CR as LF: the engine sees LF only, and each
    # line gets its own ending back afterwards.
    text = raw.replace("\r\n", "\n").replace("\r", "\n")
    try:
        rewrite = rewrite_text(text, path, options, verify_result=False)
    except SyntaxError as exc:
        return FileError(path, f"cannot parse, left unchanged: {exc}")
    except RewriteRefused as exc:
        return FileError(path, f"left unchanged: {exc}")
    if not rewrite.changed:
        return raw, raw, rewrite
    after = restore_line_endings(raw, text, rewrite.text)
    try:
        encoded = (codecs.BOM_UTF8 if bom else b"") + after.encode(encoding)
        # The gate reads the very bytes to be written, as Python will.
        written = decoded(encoded)[0]
    except (UnicodeError, SourceError) as exc:
        return FileError(
            path, f"left unchanged: the rewrite cannot be written as {encoding}: {exc}"
        )
    try:
        check_written(text, replace(rewrite, text=written), options)
    except RewriteRefused as exc:
        return FileError(path, f"left unchanged: {exc}")
    if write:
        outside = _outside(path, roots)
        if outside:
            return FileError(path, outside)
        try:
            write_atomic(path, encoded)
        except OSError as exc:
            return FileError(path, f"cannot write: {exc.strerror or exc}")
    return raw, after, rewrite


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


def restore_line_endings(original: str, normalized: str, new: str) -> str:
    """``new`` (LF only) with the line endings of ``original``: its one style, or,
    in a file that mixes them, each unchanged line's own and its neighbour's for a
    new line."""
    styles = {
        ending
        for ending, present in (
            ("\r\n", "\r\n" in original),
            ("\r", "\r" in original.replace("\r\n", "")),
            ("\n", "\n" in original.replace("\r\n", "")),
        )
        if present
    }
    if styles <= {"\n"}:
        return new
    if len(styles) == 1:
        return new.replace("\n", styles.pop())
    endings = [m.group() for m in _ENDING.finditer(original)]
    old_lines = normalized.split("\n")
    new_lines = new.split("\n")
    result: list[str] = []
    for tag, i1, _, j1, j2 in opcodes(old_lines, new_lines):
        for offset, line in enumerate(new_lines[j1:j2]):
            if tag == "equal":
                ending = endings[i1 + offset] if i1 + offset < len(endings) else "\n"
            else:
                ending = endings[min(i1, len(endings) - 1)] if endings else "\n"
            result.append(line + ending)
    joined = "".join(result)
    # The last line has no ending of its own: drop the one just added.
    last = result[-1] if result else ""
    return joined[: len(joined) - (len(last) - len(new_lines[-1]))]


_ENDING = re.compile(r"\r\n|\r|\n")


def _diff_name(side: str, path: str) -> str:
    return path if os.path.isabs(path) else f"{side}/{path}"


def _summarise(report: FixReport, dry_run: bool, err: TextIO) -> None:
    if not (report.fixed or report.failed):
        print("Nothing to fix.", file=err)
        return
    verb = "Would fix" if dry_run else "Fixed"
    unsafe = f" ({report.unsafe} unsafe)" if report.unsafe else ""
    print(
        f"{verb} {report.fixed} site(s){unsafe} in {report.changed_files} file(s).",
        file=err,
    )
    if report.failed:
        print(f"{report.failed} file(s) could not be fixed.", file=err)
