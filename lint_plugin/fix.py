"""``draft-kv-lint fix``: rewrite files in place, or show (``--diff``) or test
(``--check``) what would change.

Exit codes: 0 nothing left to do (files may have been rewritten); 1 something would
change (``--diff``/``--check``) or a file could not be fixed (unreadable, not
UTF-8, does not parse, rewrite refused by the oracle); 2 usage or internal error
(an internal error on one file is reported for it and the others are still fixed).

A file's bytes are kept as they were outside the rewritten statements: its BOM,
its line endings (CRLF stays CRLF) and its mode. Writes go to a temporary file in
the same folder that is renamed over the original, so a file is never half
written.
"""

from __future__ import annotations

import codecs
import difflib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from lint_plugin.atomic import write_atomic
from lint_plugin.findings import FileError
from lint_plugin.rewrite import Options, RewriteRefused, rewrite_text
from lint_plugin.scan import SourceError, decode


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
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    report = FixReport()
    for path in files:
        try:
            outcome = fix_file(path, options, write=not (diff or check))
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
                difflib.unified_diff(
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


def fix_file(path: str, options: Options, *, write: bool):
    """``(before, after, rewrite)`` for one file, or a FileError saying why not."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        return FileError(path, exc.strerror or str(exc))
    bom = data.startswith(codecs.BOM_UTF8)
    try:
        text = decode(data[len(codecs.BOM_UTF8) :] if bom else data)
    except SourceError as exc:
        return FileError(path, str(exc))
    crlf = "\r\n" in text and "\n" not in text.replace("\r\n", "")
    if crlf:
        text = text.replace("\r\n", "\n")
    try:
        rewrite = rewrite_text(text, path, options)
    except SyntaxError as exc:
        return FileError(path, f"cannot parse, left unchanged: {exc}")
    except RewriteRefused as exc:
        return FileError(path, f"left unchanged: {exc}")
    after = rewrite.text.replace("\n", "\r\n") if crlf else rewrite.text
    before = text.replace("\n", "\r\n") if crlf else text
    if rewrite.changed and write:
        encoded = (codecs.BOM_UTF8 if bom else b"") + after.encode("utf-8")
        try:
            write_atomic(path, encoded)
        except OSError as exc:
            return FileError(path, f"cannot write: {exc.strerror or exc}")
    return before, after, rewrite


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
