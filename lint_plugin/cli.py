"""``draft-kv-lint``: the command line (``check``, ``fix`` and ``rule``).

Exit status, as ruff documents it for ``ruff check``:

* 0: no findings (or ``--exit-zero``, or ``--add-noqa`` finished);
* 1: findings after selection and ``# noqa``, or a file that could not be checked
  (missing path, broken link, unreadable, not UTF-8). Ruff reports such files as
  E902 diagnostics and exits 1; we do the same, but print them on stderr as
  ``path: error: reason`` in every format, so JSON/SARIF on stdout stay parseable.
  A gate that passes when it could not read a file would be no gate;
  ``--exit-zero`` turns this into 0 as well, like ruff's;
* 2: a usage error (bad option, unknown rule selector or code, bad configuration) or
  an internal error, reported as one ``draft-kv-lint: error: ...`` line, never a
  traceback. An engine failure on one file is reported for that file, the other
  files are still checked, and the status is 2.

Text output ends with ruff's summary on stdout: ``All checks passed!`` on a clean
run, else ``Found N errors.`` (unreadable files included) and ``[*] M fixable with
`draft-kv-lint fix`.``. ``--add-noqa`` prints ``Added N noqa directives.`` on
stderr, as ruff does.

Startup time matters (pre-commit runs this on every commit): only argparse is
imported up front; json, tomllib, the rule catalogue and the engine are imported
when a run needs them, and libcst/torch never by ``check``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lint_plugin import __version__

if TYPE_CHECKING:  # imported for annotations only: keeps startup lean
    from lint_plugin.check import CheckResult
    from lint_plugin.config import Config
    from lint_plugin.findings import FileError
    from lint_plugin.selection import Selection

PROG = "draft-kv-lint"


class UsageError(Exception):
    """A mistake of the user's: one line on stderr, exit status 2, no traceback."""


def _error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


def _warning(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


# --- options shared by check and fix ------------------------------------------------


def _code_list(value: str) -> list[str]:
    return [code.strip() for code in value.split(",") if code.strip()]


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """Paths, configuration and selection: the same for ``check`` and ``fix``."""
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="files or folders (default: .)"
    )
    group = parser.add_argument_group("rule selection (codes or prefixes: KVI, KVI00)")
    for flag, help_text in (
        ("--select", "only these codes (replaces the configured select)"),
        ("--ignore", "not these codes"),
        ("--extend-select", "these codes in addition"),
    ):
        group.add_argument(
            flag,
            metavar="CODES",
            type=_code_list,
            action="extend",
            help=f"{help_text}; comma-separated",
        )
    group.add_argument(
        "--per-file-ignores",
        metavar="PATTERN:CODES",
        action="append",
        help="ignore CODES in files matching PATTERN (replaces the configured table)",
    )
    config = parser.add_argument_group("configuration")
    config.add_argument(
        "--config",
        metavar="PYPROJECT",
        help="read [tool.draft-kv-lint] from this file instead of searching",
    )
    config.add_argument(
        "--no-config", action="store_true", help="ignore every pyproject.toml"
    )
    config.add_argument(
        "--force-exclude",
        action="store_true",
        default=None,
        help="apply the configured exclude to files named on the command line too",
    )


@dataclass
class Plan:
    """What a run will look at and report, resolved from options and configuration."""

    files: list[str]
    errors: list[FileError]  # paths that could not be used
    selection: Selection
    config: Config


def _per_file_ignores(values: Sequence[str]) -> list[tuple[str, list[str]]]:
    pairs = []
    for value in values:
        for item in value.split():
            pattern, sep, codes = item.rpartition(":")
            if not sep or not pattern or not codes:
                raise UsageError(
                    f"--per-file-ignores expects PATTERN:CODES, got {item!r}"
                )
            pairs.append((pattern, _code_list(codes)))
    return pairs


def load_plan(args: argparse.Namespace) -> Plan:
    """Configuration, selection and files for ``args``; raises UsageError."""
    from lint_plugin.config import Config, ConfigError, discover_config, load_config
    from lint_plugin.files import PathFilter, discover
    from lint_plugin.selection import Layer, SelectorError, build_selection

    try:
        if args.no_config:
            config = Config(root=os.path.abspath("."))
        elif args.config:
            config = load_config(args.config)
        else:
            config = discover_config(args.paths[0] if args.paths else ".")
    except ConfigError as error:
        raise UsageError(str(error)) from None

    origin = f"{config.path}: [tool.draft-kv-lint]" if config.path else "configuration"
    layers = [
        Layer(config.select, config.extend_select, config.ignore, origin),
        Layer(args.select, args.extend_select or (), args.ignore or ()),
    ]
    if args.per_file_ignores is not None:  # the command line beats the configuration
        per_file, per_file_origin = (
            _per_file_ignores(args.per_file_ignores),
            "--per-file-ignores",
        )
    else:
        per_file, per_file_origin = (
            config.per_file_ignores,
            f"{origin} per-file-ignores",
        )
    try:
        selection = build_selection(
            layers, per_file, config.root, per_file_origin=per_file_origin
        )
    except SelectorError as error:
        raise UsageError(str(error)) from None

    force_exclude = (
        config.force_exclude if args.force_exclude is None else args.force_exclude
    )
    found = discover(
        args.paths,
        PathFilter(config.root, config.include, config.exclude),
        force_exclude=force_exclude,
    )
    return Plan(found.files, found.errors, selection, config)


# --- check ------------------------------------------------------------------------


def _add_check_parser(subparsers: argparse._SubParsersAction) -> None:
    from lint_plugin.output import OUTPUT_FORMATS

    parser = subparsers.add_parser(
        "check",
        help="report inline kv_indices formulas and unsized draft buffers",
        description="Report KVI findings; exit 1 when there are any.",
    )
    add_common_arguments(parser)
    parser.add_argument(
        "--output-format",
        choices=OUTPUT_FORMATS,
        help="default: text, or output-format from the configuration",
    )
    parser.add_argument(
        "--exit-zero", action="store_true", help="exit 0 even when there are findings"
    )
    parser.add_argument(
        "--statistics", action="store_true", help="count findings per code instead"
    )
    parser.add_argument(
        "--add-noqa",
        action="store_true",
        help="add `# noqa: CODE` to every reported row, then exit 0",
    )
    parser.set_defaults(handler=run_check)


def _print_file_errors(errors: Sequence[FileError]) -> None:
    for error in errors:
        print(error, file=sys.stderr)


def _add_noqa(result: CheckResult) -> int:
    from lint_plugin.atomic import write_atomic
    from lint_plugin.findings import SYNTAX_ERROR_CODE
    from lint_plugin.noqa import add_noqa

    added = 0
    for report in result.reports:
        rows: dict[int, set[str]] = {}
        for finding in report.findings:
            if finding.code != SYNTAX_ERROR_CODE:
                rows.setdefault(finding.row, set()).add(finding.code)
        if not rows:
            continue
        edit = add_noqa(report.data.decode("utf-8"), rows)
        for row in edit.skipped:
            _warning(
                f"{report.path}:{row}: no room for a noqa comment "
                "(the line ends inside a string or with a backslash)"
            )
        if edit.added:
            try:
                write_atomic(report.path, edit.source.encode("utf-8"))
            except OSError as error:  # read-only, someone else's: one line, go on
                print(f"{report.path}: error: cannot write: {error}", file=sys.stderr)
                continue
            added += edit.added
    noun = "directive" if added == 1 else "directives"
    print(f"Added {added} noqa {noun}.", file=sys.stderr)
    return 0


def run_check(args: argparse.Namespace) -> int:
    from lint_plugin.check import check_files

    plan = load_plan(args)
    if not plan.files and not plan.errors:
        _warning("No Python files found under the given path(s)")
    result = check_files(plan.files, plan.selection)
    errors = plan.errors + result.errors
    _print_file_errors(errors)
    _print_file_errors(result.crashes)

    if args.add_noqa:
        status = _add_noqa(result)
        return 2 if result.crashes else status

    output_format = args.output_format or plan.config.output_format or "text"
    findings = result.findings
    if args.statistics:
        from lint_plugin.output import statistics

        if output_format == "json":
            sys.stdout.write(statistics.render_json(findings))
        else:
            from lint_plugin.output.text import summary

            sys.stdout.write(statistics.render_text(findings))
            sys.stdout.write("\n".join(summary(findings, len(errors))) + "\n")
    else:
        from lint_plugin.output import render

        sys.stdout.write(render(output_format, findings, len(errors)))

    if result.crashes:
        return 2
    if args.exit_zero:
        return 0
    return 1 if findings or errors else 0


# --- rule -------------------------------------------------------------------------


def _add_rule_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "rule", help="print a rule's documentation", description="Print rule docs."
    )
    parser.add_argument("code", nargs="?", metavar="CODE", help="e.g. KVI001")
    parser.add_argument("--all", action="store_true", help="print every rule")
    parser.set_defaults(handler=run_rule)


def run_rule(args: argparse.Namespace) -> int:
    from lint_plugin.rules import RULES

    if args.all == (args.code is not None):
        raise UsageError("rule: give one rule CODE or --all")
    if args.all:
        sys.stdout.write("\n".join(RULES[code].render() for code in sorted(RULES)))
        return 0
    code = args.code.strip().upper()
    if code not in RULES:
        raise UsageError(
            f"unknown rule code {args.code!r} (known: {', '.join(sorted(RULES))})"
        )
    sys.stdout.write(RULES[code].render())
    return 0


# --- fix --------------------------------------------------------------------------


def add_fix_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "fix",
        help="rewrite inline formulas into helper calls (libcst codemod)",
        description=(
            "Rewrite KVI001/KVI002 sites into draft_kv_indices_used_len / "
            "draft_kv_indices_buffer_width calls and import them; with "
            "--unsafe-fixes also size KVI003 buffers. Exit 0 when done, 1 when "
            "--diff/--check found something to change or a file could not be fixed."
        ),
    )
    add_common_arguments(parser)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--diff", action="store_true", help="print a unified diff, write nothing"
    )
    mode.add_argument(
        "--check",
        action="store_true",
        help="write nothing, print nothing on stdout, exit 1 if anything would change",
    )
    parser.add_argument(
        "--unsafe-fixes",
        action="store_true",
        help="also apply fixes that change allocations (KVI003)",
    )
    parser.add_argument(
        "--helpers-module",
        metavar="MODULE",
        help="where the helpers are imported from "
        "(default: sglang.srt.speculative.spec_utils; lint_plugin.runtime works too)",
    )
    parser.set_defaults(handler=run_fix_command)


def run_fix_command(args: argparse.Namespace) -> int:
    # Imported here: libcst is the codemod's business, never check's.
    from lint_plugin.fix import run_fix
    from lint_plugin.rewrite import DEFAULT_HELPERS_MODULE, Options

    plan = load_plan(args)
    for error in plan.errors:
        print(error, file=sys.stderr)
    selection = plan.selection
    options = Options(
        unsafe_fixes=args.unsafe_fixes,
        helpers_module=args.helpers_module or DEFAULT_HELPERS_MODULE,
        selected=lambda f: selection.is_reported(f.code, f.path),
    )
    status = run_fix(
        plan.files,
        options,
        diff=args.diff,
        check=args.check,
        roots=args.paths or ["."],
    )
    return max(status, 1 if plan.errors else 0)


# --- entry point ------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Keep SGLang's EAGLE draft-decode kv_indices buffers sized.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_check_parser(subparsers)
    add_fix_parser(subparsers)
    _add_rule_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse already printed the usage and the error
        return exit_.code if isinstance(exit_.code, int) else 2
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return args.handler(args)
    except UsageError as error:
        _error(str(error))
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`): nothing more to say, and Python must not
        # complain again while flushing stdout at exit.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return 2
    except Exception as error:  # the last line of defence: no traceback for users
        _error(f"internal error: {type(error).__name__}: {error}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
