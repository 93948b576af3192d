"""``draft-kv-lint check``: its options, the run, ``--show-settings``, ``--explain``,
``--add-noqa`` and the report.
"""

from __future__ import annotations

import os
import sys

from lint_plugin.cli.common import (
    CACHE_OPTIONS,
    QUICK_COMMON,
    STDIN_FILENAME,
    Plan,
    load_plan,
    print_file_errors,
    print_warning,
    reads_stdin,
    run_cache,
    run_settings,
)
from lint_plugin.cli.quick import VALUE, Command, Option, switch
from lint_plugin.config.table import OUTPUT_FORMATS
from lint_plugin.engine.source import normalised
from lint_plugin.errors import RunError, UsageError

TYPE_CHECKING = False  # typing itself costs milliseconds at every start

if TYPE_CHECKING:  # imported for annotations only: keeps startup lean
    import argparse

    from lint_plugin.check.pipeline import CheckResult


def show_settings(args: argparse.Namespace, plan: Plan, path: str) -> int:
    """``--show-settings FILE``: what applies to FILE, one ``key = value`` a line:
    every key of the table (selection resolved into codes) and the cache folder.
    ``tests/config/test_config_per_file.py`` holds every configuration key to a line."""
    config = plan.resolver.for_path(path)
    path_filter = plan.filter_for(path)
    selection = plan.selection.for_path(path)
    codes = selection.codes_for(path)
    settings = run_settings(args, plan)
    cache = run_cache(args, plan, settings)
    per_file = {glob: sorted(codes) for glob, codes in selection.per_file_ignores}
    lines = [
        f"Resolved settings for: {os.path.abspath(path)}",
        f"Settings path: {config.path and os.path.abspath(config.path)}",
        f"root = {config.root}",
        f"enabled = {sorted(selection.enabled)}",
        f"reported = {sorted(codes)}",
        f"per-file-ignored = {sorted(selection.enabled - codes)}",
        f"include = {list(path_filter.include)}",
        f"exclude = {list(path_filter.exclude)}",
        f"excluded-when-walking = {path_filter.is_excluded(path)}",
        f"force-exclude = {path_filter.force_exclude}",
        f"respect-gitignore = {path_filter.respect_gitignore}",
        f"output-format = {plan.config.output_format or 'text'}",
        f"per-file-ignores = {per_file}",
        # Engine settings are run-wide: the current folder's configuration's.
        f"helpers-module = {settings.helpers_module}",
        f"guard-module = {settings.guard_module}",
        f"cache-dir = {cache.root if cache is not None else None}",
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def add_check_parser(subparsers: argparse._SubParsersAction) -> None:
    from lint_plugin.cli.parsers import add_command

    add_command(
        subparsers,
        "check",
        QUICK,
        help="report inline kv_indices formulas and unsized draft buffers",
        description="Report KVI findings; exit 1 when there are any.",
    )


def _add_noqa(result: CheckResult) -> int:
    from lint_plugin.findings import SYNTAX_ERROR_CODE
    from lint_plugin.fix.atomic import write_atomic
    from lint_plugin.noqa.directives import add_noqa
    from lint_plugin.source_files import decoded

    added = 0
    for report in result.reports:
        rows: dict[int, set[str]] = {}
        for finding in report.findings:
            if finding.code != SYNTAX_ERROR_CODE:
                rows.setdefault(finding.row, set()).add(finding.code)
        if not rows:
            continue
        # In the file's own encoding (PEP 263), as it was read.
        text, encoding, bom = decoded(report.data)
        edit = add_noqa(text, rows)
        for row in edit.skipped:
            print_warning(
                f"{report.path}:{row}: no room for a noqa comment "
                "(the line ends inside a string or with a backslash)"
            )
        if edit.added:
            try:
                prefix = b"\xef\xbb\xbf" if bom else b""
                write_atomic(report.path, prefix + edit.source.encode(encoding))
            except OSError as error:  # read-only, someone else's: one line, go on
                print(f"{report.path}: error: cannot write: {error}", file=sys.stderr)
                continue
            added += edit.added
    noun = "directive" if added == 1 else "directives"
    print(f"Added {added} noqa {noun}.", file=sys.stderr)
    return 0


def _use_color(choice: str, stream) -> bool:
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


def _check_stdin(args: argparse.Namespace, plan: Plan) -> CheckResult:
    from lint_plugin.check.pipeline import (
        CheckResult,
        FileReport,
        SourceFile,
        check_file,
    )

    name = args.stdin_filename or "-"
    data = sys.stdin.buffer.read()
    result = CheckResult(files_checked=1)
    file = SourceFile(name, data)
    findings = check_file(file, plan.selection, run_settings(args, plan))
    if findings:
        result.reports.append(FileReport(name, data, findings))
    return result


def run_check(args: argparse.Namespace) -> int:
    from lint_plugin.check.pipeline import check_files

    stdin = reads_stdin(args)
    if args.fix or args.diff:
        from lint_plugin.cli.fix import fix_stdin, run_fix_command

        if stdin:
            args.paths = [args.stdin_filename or "."]
            return fix_stdin(args, load_plan(args, discover_files=False))
        if args.add_noqa:
            raise UsageError("--add-noqa cannot be combined with --fix/--diff")
        args.check = False
        return run_fix_command(args)
    if args.show_settings:
        args.paths = [args.show_settings]
        return show_settings(args, load_plan(args), args.show_settings)
    if args.explain:
        return _explain(args)
    if stdin:
        if args.add_noqa:
            raise UsageError("--add-noqa cannot write to standard input")
        args.paths = [args.stdin_filename or "."]
        plan = load_plan(args, discover_files=False)
        settings = run_settings(args, plan)
        result = _check_stdin(args, plan)
    else:
        plan = load_plan(args)
        if not plan.files and not plan.errors and not args.quiet:
            print_warning("No Python files found under the given path(s)")
        settings = run_settings(args, plan)
        result = check_files(
            plan.files,
            plan.selection,
            settings,
            run_cache(args, plan, settings),
            notes=args.statistics,
        )
    errors = plan.errors + result.errors
    print_file_errors(errors)
    print_file_errors(result.crashes)

    if args.add_noqa:
        status = _add_noqa(result)
        return 2 if result.crashes else status

    output_format = args.output_format or plan.config.output_format or "text"
    findings = result.findings
    sources = {report.path: report.data for report in result.reports}
    # A file the engine failed on was not checked: the summary must not say
    # "All checks passed!" (it counts such files with the unreadable ones).
    unchecked = len(errors) + len(result.crashes)
    if args.statistics:
        from lint_plugin.output import statistics

        if output_format in ("json", "json-lines"):
            report = statistics.render_json(findings, result.notes)
        else:
            from lint_plugin.output.text import summary

            report = statistics.render_text(findings, result.notes)
            if not args.quiet:
                report += "\n".join(summary(findings, unchecked)) + "\n"
    elif output_format in ("text", "concise", "full"):
        from lint_plugin.output import text

        report = text.render(
            findings,
            unchecked,
            sources=sources if output_format == "full" else None,
            show_fixes=args.show_fixes or output_format == "full",
            color=not args.output_file and _use_color(args.color, sys.stdout),
            quiet=args.quiet,
        )
    else:
        from lint_plugin.output import render

        report = render(
            output_format,
            findings,
            unchecked,
            sources=sources,
            helpers_module=settings.helpers_module,
        )
    if args.output_file:
        try:
            with open(args.output_file, "w", encoding="utf-8") as handle:
                handle.write(report)
        except OSError as error:
            raise RunError(
                f"--output-file {args.output_file}: {error.strerror or error}"
            ) from None
    else:
        sys.stdout.write(report)

    if result.crashes or plan.unusable:
        return 2
    if args.exit_zero:
        return 0
    return 1 if findings or errors else 0


def _explain(args: argparse.Namespace) -> int:
    """``check --explain FILE:ROW``: 1 when an allocation there is unsized. An
    argument that is no FILE:ROW is a usage error; a file that cannot be read,
    parsed or holds no allocation at the row, one line (both exit 2)."""
    from lint_plugin.explain import NothingToExplain, explain
    from lint_plugin.findings import FileError
    from lint_plugin.source_files import SourceError, decode, read_source

    path, _, row = args.explain.rpartition(":")
    if not path or not row.isdigit() or int(row) < 1:
        raise UsageError(f"--explain takes FILE:ROW, not {args.explain!r}")
    args.paths = [path]
    plan = load_plan(args, discover_files=False)
    data = read_source(path)
    if isinstance(data, FileError):
        raise RunError(f"--explain: {path}: {data.reason}")
    try:
        text = normalised(decode(data))
        report, verdict = explain(text, path, int(row), run_settings(args, plan))
    except SourceError as error:
        raise RunError(f"--explain: {path}: {error}") from None
    except SyntaxError as error:
        raise RunError(
            f"--explain: {path}:{error.lineno or 1}: SyntaxError: {error.msg}"
        ) from None
    except NothingToExplain as error:
        raise RunError(f"--explain: {error}") from None
    sys.stdout.write(report)
    return 1 if verdict == "unsized" else 0


_FIXING = "fixing (as `draft-kv-lint fix`)"

# check's options: read by ``lint_plugin.cli.quick``, built into argparse's
# parser by ``add_check_parser``.
QUICK = Command(
    (
        *QUICK_COMMON,
        Option(
            ("--output-format",),
            "output_format",
            VALUE,
            OUTPUT_FORMATS,
            help="default: text, or output-format from the configuration",
        ),
        switch(
            ("--exit-zero",),
            "exit_zero",
            help="exit 0 even when there are findings",
        ),
        switch(
            ("--statistics",),
            "statistics",
            help="count findings per code instead, and the allocations KVI003 "
            "could not judge",
        ),
        Option(
            ("--explain",),
            "explain",
            VALUE,
            help="print how KVI003 reads the allocation at ROW of FILE: each path's "
            "row width and verdict (exit 1 when one is unsized)",
            metavar="FILE:ROW",
        ),
        switch(
            ("--add-noqa",),
            "add_noqa",
            help="add `# noqa: CODE` to every reported row, then exit 0",
        ),
        Option(
            ("--show-settings",),
            "show_settings",
            VALUE,
            help="print the settings that apply to FILE, then exit",
            metavar="FILE",
        ),
        switch(
            ("-q", "--quiet"),
            "quiet",
            help="print the findings and nothing else (no summary, no warnings)",
        ),
        Option(
            ("-o", "--output-file"),
            "output_file",
            VALUE,
            help="write the report to FILE instead of standard output",
            metavar="FILE",
        ),
        switch(
            ("--show-fixes",),
            "show_fixes",
            help="say under each finding what its fix does",
        ),
        Option(
            ("--color",),
            "color",
            VALUE,
            ("auto", "always", "never"),
            "auto",
            help="colour the text formats (auto: on a terminal, unless NO_COLOR is "
            "set)",
        ),
        *CACHE_OPTIONS,
        STDIN_FILENAME,
        switch(
            ("--fix",),
            "fix",
            help="apply the fixes: same as `fix`",
            group=_FIXING,
        ),
        switch(
            ("--diff",),
            "diff",
            help="print the fixes as a diff, write nothing: same as `fix --diff`",
            group=_FIXING,
        ),
        switch(
            ("--unsafe-fixes",),
            "unsafe_fixes",
            help="with --fix/--diff, also the fixes that change allocations (KVI003)",
            group=_FIXING,
        ),
    ),
    run_check,
)
