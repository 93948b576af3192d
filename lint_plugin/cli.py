"""``draft-kv-lint``: the command line (``check``, ``fix`` and ``rule``).

Exit status, as ruff documents it for ``ruff check``:

* 0: no findings (or ``--exit-zero``, or ``--add-noqa`` finished);
* 1: findings after selection and ``# noqa``, or a file that could not be checked
  (missing path, broken link, unreadable, not UTF-8). Ruff reports such files as
  E902 diagnostics and exits 1; we do the same, but print them on stderr as
  ``path: error: reason`` in every format, so JSON/SARIF on stdout stay parseable.
  A gate that passes when it could not read a file would be no gate;
  ``--exit-zero`` turns this into 0 as well, like ruff's;
* 2: a usage error (bad option, unknown rule selector or code on the command line),
  reported by the subcommand's parser: its usage, then one ``draft-kv-lint check:
  error: ...`` line; or a configuration or internal error, one ``draft-kv-lint:
  error: ...`` line (a configuration is no command line to show the usage of);
  never a traceback. An engine failure on one file is reported for that file, the
  other files are still checked, and the status is 2.

Text output ends with ruff's summary on stdout: ``All checks passed!`` on a clean
run, else ``Found N errors.`` (unreadable files included) and ``[*] M fixable with
`draft-kv-lint fix`.`` (``--quiet``: findings only). ``--add-noqa`` prints ``Added N
noqa directives.`` on stderr, as ruff does. ``check --fix``/``--diff`` run ``fix``;
``check -`` reads standard input (``--stdin-filename`` names it). Every usage error
is reported by the subcommand's own parser, with its usage, whether argparse or a
later check of the arguments found it.

Every file gets the configuration nearest to it (``config.ConfigResolver``) with
the command line on top; see ``load_plan``.

Startup time matters (pre-commit runs this on every commit): only argparse is
imported up front; json, tomllib, the rule catalogue and the engine are imported
when a run needs them, and libcst/torch never by ``check``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from lint_plugin import __version__
from lint_plugin.prove import add_prove_parser
from lint_plugin.records import record

TYPE_CHECKING = False  # typing itself costs milliseconds at every start

if TYPE_CHECKING:  # imported for annotations only: keeps startup lean
    from collections.abc import Callable

    from lint_plugin.check.files import PathFilter
    from lint_plugin.check.pipeline import CheckResult
    from lint_plugin.config.selection import PerFileSelection
    from lint_plugin.config.table import Config, ConfigResolver
    from lint_plugin.findings import FileError

PROG = "draft-kv-lint"


class RunError(Exception):
    """A run that cannot start (a bad configuration, an output file that cannot be
    written): one line on stderr, exit status 2, no traceback."""


class UsageError(RunError):
    """A mistake on the command line: the subcommand's usage, then one line."""


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
    parser.add_argument(
        "--helpers-module",
        metavar="MODULE",
        help="the only module the helpers are trusted from, and fix imports them "
        "from (default: sglang.srt.speculative.spec_utils; lint_plugin.runtime is "
        "always trusted too); config key helpers-module",
    )
    parser.add_argument(
        "--guard-module",
        metavar="MODULE",
        help="where KVI006's inserted assert_buffer_fits is imported from "
        "(default: where the tree defines it, else sglang.srt.layers.attention.utils);"
        " config key guard-module",
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
        metavar="PATH",
        help="use this pyproject.toml or .draft-kv-lint.toml for every file "
        "instead of each file's nearest one",
    )
    config.add_argument(
        "--no-config", action="store_true", help="ignore every configuration file"
    )
    files = parser.add_argument_group("file selection")
    files.add_argument(
        "--exclude",
        metavar="PATTERNS",
        type=_code_list,
        action="extend",
        help="skip these globs while walking folders (replaces the configured "
        "exclude and the default list); comma-separated",
    )
    files.add_argument(
        "--extend-exclude",
        metavar="PATTERNS",
        type=_code_list,
        action="extend",
        help="skip these globs too; comma-separated",
    )
    files.add_argument(
        "--force-exclude",
        action="store_true",
        default=None,
        help="apply the exclusions to files named on the command line too",
    )
    files.add_argument(
        "--no-respect-gitignore",
        dest="respect_gitignore",
        action="store_false",
        default=None,
        help="also walk into what .gitignore files ignore",
    )


@record
class Plan:
    """What a run will look at and report, resolved from options and configuration."""

    files: list[str]
    errors: list[FileError]  # paths that could not be used
    selection: PerFileSelection
    config: Config  # the configuration of the current folder: run-wide settings
    resolver: ConfigResolver
    filter_for: Callable[[str], PathFilter]
    # Files not checked because their configuration cannot be used (in errors):
    # the run exits 2 once the others are done.
    unusable: int = 0


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


COMMAND_LINE = "command line"  # selection.Layer's default origin
CLI_PER_FILE = "--per-file-ignores"


def _config_error(error: Exception) -> RunError:
    """A selector typed on the command line is a usage error; anything read from a
    configuration file (or the file itself) is not."""
    origin = getattr(error, "origin", None)
    if origin in (COMMAND_LINE, CLI_PER_FILE):
        return UsageError(str(error))
    return RunError(str(error))


def _origin(config: Config) -> str:
    return f"{config.path}: [tool.draft-kv-lint]" if config.path else "configuration"


def load_plan(args: argparse.Namespace, *, discover_files: bool = True) -> Plan:
    """Configuration, selection and files for ``args``; raises RunError (a
    UsageError for a mistake on the command line).

    Every file gets the configuration nearest to it (or ``--config``), and the
    command line on top; every configuration a file uses is validated before any
    file is checked. A configuration that cannot be used stops only the files it
    governs: each is reported (``Plan.errors``) and the run exits 2 at the end;
    a bad ``--config`` or command line is a usage error."""
    from lint_plugin.check.files import Discovery, PathFilter, discover
    from lint_plugin.config.selection import (
        Layer,
        PerFileSelection,
        SelectorError,
        build_selection,
    )
    from lint_plugin.config.table import (
        Config,
        ConfigError,
        ConfigResolver,
        load_config,
    )
    from lint_plugin.findings import FileError

    try:
        fixed = None
        if args.no_config:
            fixed = Config(root=os.path.abspath("."))
        elif args.config:
            fixed = load_config(args.config)
    except ConfigError as error:
        raise _config_error(error) from None
    resolver = ConfigResolver(fixed)
    command_line = Layer(
        args.select, args.extend_select or (), args.ignore or (), COMMAND_LINE
    )
    cli_per_file = (
        None
        if args.per_file_ignores is None
        else _per_file_ignores(args.per_file_ignores)
    )

    def selection_for(path: str):
        config = resolver.for_path(path)
        layers = [
            Layer(config.select, config.extend_select, config.ignore, _origin(config)),
            command_line,
        ]
        if cli_per_file is not None:  # the command line beats the configuration
            per_file, origin = cli_per_file, CLI_PER_FILE
        else:
            per_file = config.per_file_ignores
            origin = f"{_origin(config)} per-file-ignores"
        return build_selection(layers, per_file, config.root, per_file_origin=origin)

    filters: dict[object, PathFilter] = {}

    def filter_for(path: str) -> PathFilter:
        try:
            config = resolver.for_path(path)
        except ConfigError:
            # Walked with the defaults: its files are reported, and a nested
            # project below it keeps its own configuration.
            config = Config(root=os.path.abspath("."))
        if config.path not in filters:
            base = config.exclusions()
            if args.exclude is not None:
                base = (*args.exclude, *config.extend_exclude)
            filters[config.path] = PathFilter(
                config.root,
                config.include,
                (*base, *(args.extend_exclude or ())),
                config.respect_gitignore
                if args.respect_gitignore is None
                else args.respect_gitignore,
                config.force_exclude,
            )
        return filters[config.path]

    selection = PerFileSelection(selection_for, lambda p: resolver.for_path(p).path)
    try:
        # A typo on the command line fails even with no file to check.
        build_selection(
            [command_line],
            cli_per_file or (),
            os.path.abspath("."),
            per_file_origin=CLI_PER_FILE,
        )
    except SelectorError as error:
        raise _config_error(error) from None
    try:
        run_config = resolver.for_path(".")
    except ConfigError:
        run_config = Config(root=os.path.abspath("."))  # reported for its files
    found = (
        discover(args.paths, filter_for, force_exclude=args.force_exclude)
        if discover_files
        else Discovery()
    )
    # Every configuration in use is validated now; a file whose configuration
    # cannot be used is reported and not checked, the others are.
    files, errors, unusable = [], list(found.errors), 0
    for path in found.files:
        try:
            selection.for_path(path)
        except (ConfigError, SelectorError) as error:
            errors.append(
                FileError(path, f"skipped, its configuration is unusable: {error}")
            )
            unusable += 1
            continue
        files.append(path)
    return Plan(files, errors, selection, run_config, resolver, filter_for, unusable)


def show_settings(args: argparse.Namespace, plan: Plan, path: str) -> int:
    """``--show-settings FILE``: what applies to FILE, one ``key = value`` a line:
    every key of the table (selection resolved into codes) and the cache folder.
    ``tests/test_config_per_file.py`` holds every configuration key to a line."""
    config = plan.resolver.for_path(path)
    path_filter = plan.filter_for(path)
    selection = plan.selection.for_path(path)
    codes = selection.codes_for(path)
    settings = _settings(args, plan)
    cache = _cache(args, plan, settings)
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
        "--statistics",
        action="store_true",
        help="count findings per code instead, and the allocations KVI003 "
        "could not judge",
    )
    parser.add_argument(
        "--explain",
        metavar="FILE:ROW",
        help="print how KVI003 reads the allocation at ROW of FILE: each path's "
        "row width and verdict (exit 1 when one is unsized)",
    )
    parser.add_argument(
        "--add-noqa",
        action="store_true",
        help="add `# noqa: CODE` to every reported row, then exit 0",
    )
    parser.add_argument(
        "--show-settings",
        metavar="FILE",
        help="print the settings that apply to FILE, then exit",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print the findings and nothing else (no summary, no warnings)",
    )
    parser.add_argument(
        "-o",
        "--output-file",
        metavar="FILE",
        help="write the report to FILE instead of standard output",
    )
    parser.add_argument(
        "--show-fixes",
        action="store_true",
        help="say under each finding what its fix does",
    )
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the text formats (auto: on a terminal, unless NO_COLOR is set)",
    )
    caching = parser.add_argument_group("cache")
    caching.add_argument(
        "--no-cache",
        action="store_true",
        help="check every file again and store nothing (env: DRAFT_KV_LINT_NO_CACHE)",
    )
    caching.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="where answers for unchanged files are kept (default: "
        ".draft_kv_lint_cache in the project root; env: DRAFT_KV_LINT_CACHE_DIR)",
    )
    parser.add_argument(
        "--stdin-filename",
        metavar="NAME",
        help="with PATH `-`: read the source from standard input and report it "
        "(and resolve its configuration) as NAME",
    )
    fixing = parser.add_argument_group("fixing (as `draft-kv-lint fix`)")
    fixing.add_argument(
        "--fix", action="store_true", help="apply the fixes: same as `fix`"
    )
    fixing.add_argument(
        "--diff",
        action="store_true",
        help="print the fixes as a diff, write nothing: same as `fix --diff`",
    )
    fixing.add_argument(
        "--unsafe-fixes",
        action="store_true",
        help="with --fix/--diff, also the fixes that change allocations (KVI003)",
    )
    parser.set_defaults(handler=run_check)


def _print_file_errors(errors: Sequence[FileError]) -> None:
    for error in errors:
        print(error, file=sys.stderr)


def _add_noqa(result: CheckResult) -> int:
    from lint_plugin.engine.prefilter import decoded
    from lint_plugin.findings import SYNTAX_ERROR_CODE
    from lint_plugin.fix.atomic import write_atomic
    from lint_plugin.noqa.directives import add_noqa

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
            _warning(
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
    from lint_plugin.check.pipeline import CheckResult, FileReport, check_bytes

    name = args.stdin_filename or "-"
    data = sys.stdin.buffer.read()
    result = CheckResult(files_checked=1)
    findings = check_bytes(data, name, plan.selection, _settings(args, plan))
    if findings:
        result.reports.append(FileReport(name, data, findings))
    return result


def _fix_stdin(args: argparse.Namespace, plan: Plan) -> int:
    """``check --fix -``: the fixed source on stdout (an editor replaces its buffer
    with it), the original when nothing could be fixed; ``--diff``: the diff."""
    from lint_plugin.engine.prefilter import SourceError, decoded
    from lint_plugin.findings import FileError
    from lint_plugin.fix.diff import unified_diff
    from lint_plugin.fix.rewrite import Options, RewriteRefused, rewrite_text

    name = args.stdin_filename or "-"
    data = sys.stdin.buffer.read()
    selection = plan.selection
    settings = _settings(args, plan)
    options = Options(
        unsafe_fixes=args.unsafe_fixes,
        helpers_module=settings.helpers_module,
        guard_module=_configured_guard_module(args, plan),
        opt_in=settings.opt_in,
        selected=lambda f: selection.is_reported(f.code, name),
    )
    try:
        text, encoding, bom = decoded(data)
        after = rewrite_text(text, name, options).text
    except (SourceError, SyntaxError, RewriteRefused) as error:
        print(FileError(name, f"left unchanged: {error}"), file=sys.stderr)
        if not args.diff:
            sys.stdout.buffer.write(data)
        return 1
    if args.diff:
        sys.stdout.writelines(
            unified_diff(
                text.splitlines(keepends=True),
                after.splitlines(keepends=True),
                fromfile=f"a/{name}",
                tofile=f"b/{name}",
            )
        )
        return 1 if after != text else 0
    # In the buffer's own encoding (its coding cookie, its BOM).
    sys.stdout.buffer.write((b"\xef\xbb\xbf" if bom else b"") + after.encode(encoding))
    return 0


def run_check(args: argparse.Namespace) -> int:
    from lint_plugin.check.pipeline import check_files

    stdin = args.paths == ["-"]
    if "-" in args.paths and not stdin:
        raise UsageError("`-` (standard input) must be the only PATH")
    if args.stdin_filename and not stdin:
        raise UsageError("--stdin-filename needs the PATH `-`")
    if args.fix or args.diff:
        if stdin:
            args.paths = [args.stdin_filename or "."]
            return _fix_stdin(args, load_plan(args, discover_files=False))
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
        settings = _settings(args, plan)
        result = _check_stdin(args, plan)
    else:
        plan = load_plan(args)
        if not plan.files and not plan.errors and not args.quiet:
            _warning("No Python files found under the given path(s)")
        settings = _settings(args, plan)
        result = check_files(
            plan.files,
            plan.selection,
            settings,
            _cache(args, plan, settings),
            notes=args.statistics,
        )
    errors = plan.errors + result.errors
    _print_file_errors(errors)
    _print_file_errors(result.crashes)

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
    from lint_plugin.check.files import read_source
    from lint_plugin.engine.prefilter import SourceError, decode
    from lint_plugin.explain import NothingToExplain, explain
    from lint_plugin.findings import FileError

    path, _, row = args.explain.rpartition(":")
    if not path or not row.isdigit() or int(row) < 1:
        raise UsageError(f"--explain takes FILE:ROW, not {args.explain!r}")
    args.paths = [path]
    plan = load_plan(args, discover_files=False)
    data = read_source(path)
    if isinstance(data, FileError):
        raise RunError(f"--explain: {path}: {data.reason}")
    try:
        text = decode(data).replace("\r\n", "\n").replace("\r", "\n")
        report, verdict = explain(text, path, int(row), _settings(args, plan))
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


def _cache(args: argparse.Namespace, plan: Plan, settings):
    """The run's cache: in the project root (the folder of the configuration that
    governs the current folder, else the current folder), unless switched off."""
    if args.no_cache:
        return None
    from lint_plugin.check.cache import cache_for

    return cache_for(args.cache_dir, plan.config.root, settings)


def _settings(args: argparse.Namespace, plan: Plan):
    """The engine settings: the command line beats the configuration."""
    from lint_plugin.codes import OPT_IN
    from lint_plugin.engine.settings import Settings

    defaults = Settings()
    return Settings(
        # Opt-in rules are computed; each file's own selection decides whether
        # they are reported (configuration is resolved per file).
        opt_in=OPT_IN,
        helpers_module=args.helpers_module
        or plan.config.helpers_module
        or defaults.helpers_module,
        guard_module=getattr(args, "guard_module", None)
        or plan.config.guard_module
        or defaults.guard_module,
    )


def _configured_guard_module(args: argparse.Namespace, plan: Plan) -> str | None:
    """``--guard-module`` or the configuration's; None: ``fix`` reads it from the
    tree (see :mod:`lint_plugin.fix.guard_home`)."""
    return getattr(args, "guard_module", None) or plan.config.guard_module


# --- clean ------------------------------------------------------------------------


def _add_clean_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "clean",
        help="remove the cache check keeps",
        description=(
            "Remove check's cache: .draft_kv_lint_cache in the project root (the "
            "folder of the configuration that governs the current folder, else "
            "the current folder), or --cache-dir / DRAFT_KV_LINT_CACHE_DIR. Answers "
            "for every version of every file checked accumulate there until then."
        ),
    )
    parser.add_argument("--cache-dir", metavar="DIR", help="the cache folder to remove")
    parser.set_defaults(handler=run_clean)


def run_clean(args: argparse.Namespace) -> int:
    from lint_plugin.check.cache import cache_folder, clean
    from lint_plugin.config.table import ConfigError, ConfigResolver

    try:
        root = ConfigResolver().for_path(".").root
    except ConfigError as error:
        raise RunError(str(error)) from None
    folder = cache_folder(args.cache_dir, root)
    try:
        said = clean(folder)
    except OSError as error:
        _error(f"{folder}: cannot remove: {error.strerror or error}")
        return 1
    print(f"{PROG} clean: {said}", file=sys.stderr)
    return 0


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
        raise UsageError("give one rule CODE or --all")
    if args.all:
        sys.stdout.write("\n".join(RULES[code].render() for code in sorted(RULES)))
        return 0
    code = args.code.strip()
    if code not in RULES:
        # Codes are case-sensitive everywhere (selection, noqa), as ruff's are.
        hint = (
            f"; codes are upper case: did you mean {code.upper()!r}?"
            if code.upper() in RULES
            else ""
        )
        raise UsageError(
            f"unknown rule code {args.code!r} (known: {', '.join(sorted(RULES))}){hint}"
        )
    sys.stdout.write(RULES[code].render())
    return 0


# --- fix --------------------------------------------------------------------------


def add_fix_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "fix",
        help="rewrite inline formulas into helper calls (a codemod)",
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
    parser.set_defaults(handler=run_fix_command)


def run_fix_command(args: argparse.Namespace) -> int:
    # Imported here: libcst is the codemod's business, never check's.
    from lint_plugin.fix.command import run_fix
    from lint_plugin.fix.rewrite import Options

    plan = load_plan(args)
    for error in plan.errors:
        print(error, file=sys.stderr)
    selection = plan.selection
    settings = _settings(args, plan)
    options = Options(
        unsafe_fixes=args.unsafe_fixes,
        helpers_module=settings.helpers_module,
        guard_module=_configured_guard_module(args, plan),
        opt_in=settings.opt_in,
        selected=lambda f: selection.is_reported(f.code, f.path),
    )
    status = run_fix(
        plan.files,
        options,
        diff=args.diff,
        check=args.check,
        roots=args.paths or ["."],
    )
    if plan.unusable:
        return 2  # a configuration could not be used: its files were not fixed
    return max(status, 1 if plan.errors else 0)


# --- entry point ------------------------------------------------------------------


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, sized without ``shutil``: argparse builds one for every
    ``add_argument`` and ``shutil`` (with bz2, lzma, locale) would be imported on
    every run for it."""

    def __init__(self, prog: str, **kwargs) -> None:
        if kwargs.get("width") is None:
            try:
                columns = int(os.environ.get("COLUMNS", ""))
            except ValueError:
                try:
                    columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
                except (AttributeError, ValueError, OSError):
                    columns = 80
            kwargs["width"] = max(columns - 2, 20)
        super().__init__(prog, **kwargs)


class _Parser(argparse.ArgumentParser):
    """Subcommand parsers are of the same class, so they share the formatter."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Keep SGLang's EAGLE draft-decode kv_indices buffers sized.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", prog=PROG)
    _add_check_parser(subparsers)
    add_fix_parser(subparsers)
    _add_rule_parser(subparsers)
    add_prove_parser(subparsers)
    _add_clean_parser(subparsers)
    _SUBPARSERS.clear()
    _SUBPARSERS.update(subparsers.choices)
    return parser


# The subcommands' parsers, by name, for usage errors (set by build_parser).
_SUBPARSERS: dict[str, argparse.ArgumentParser] = {}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args, extras = parser.parse_known_args(argv)
        if extras:
            # Reported by the subcommand's own parser, so its usage is printed.
            subparser = _SUBPARSERS.get(getattr(args, "command", None), parser)
            subparser.error(f"unrecognized arguments: {' '.join(extras)}")
    except SystemExit as exit_:  # argparse already printed the usage and the error
        return exit_.code if isinstance(exit_.code, int) else 2
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return args.handler(args)
    except UsageError as error:
        # The subcommand's parser prints its usage and `PROG COMMAND: error: ...`.
        try:
            _SUBPARSERS.get(args.command, parser).error(str(error))
        except SystemExit as exit_:
            return exit_.code if isinstance(exit_.code, int) else 2
        return 2  # pragma: no cover - error() always exits
    except RunError as error:
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
