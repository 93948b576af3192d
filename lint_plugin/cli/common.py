"""What every subcommand shares: errors, the common options, the plan of a run
(its files, configurations and selection), the engine's settings and cache.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from lint_plugin.cli.quick import APPEND, EXTEND, FLAG, VALUE, Option, switch
from lint_plugin.errors import RunError, UsageError
from lint_plugin.records import record

TYPE_CHECKING = False  # typing itself costs milliseconds at every start

if TYPE_CHECKING:  # imported for annotations only: keeps startup lean
    import argparse
    from collections.abc import Callable

    from lint_plugin.check.files import PathFilter
    from lint_plugin.config.selection import PerFileSelection
    from lint_plugin.config.table import Config, ConfigResolver
    from lint_plugin.findings import FileError


PROG = "draft-kv-lint"


def print_error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


def print_warning(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _code_list(value: str) -> list[str]:
    return [code.strip() for code in value.split(",") if code.strip()]


_SELECTION = "rule selection (codes or prefixes: KVI, KVI00)"
_FILES = "file selection"

# Paths, configuration and selection: the same for ``check`` and ``fix``.
QUICK_COMMON = (
    Option(
        ("--helpers-module",),
        "helpers_module",
        VALUE,
        help="the only module the helpers are trusted from, and fix imports them "
        "from (default: sglang.srt.speculative.spec_utils; lint_plugin.runtime is "
        "always trusted too); config key helpers-module",
        metavar="MODULE",
    ),
    Option(
        ("--guard-module",),
        "guard_module",
        VALUE,
        help="where KVI006's inserted assert_buffer_fits is imported from "
        "(default: where the tree defines it, else sglang.srt.layers.attention.utils);"
        " config key guard-module",
        metavar="MODULE",
    ),
    *(
        Option(
            (flag,),
            flag[2:].replace("-", "_"),
            EXTEND,
            _code_list,
            help=f"{help_text}; comma-separated",
            metavar="CODES",
            group=_SELECTION,
        )
        for flag, help_text in (
            ("--select", "only these codes (replaces the configured select)"),
            ("--ignore", "not these codes"),
            ("--extend-select", "these codes in addition"),
        )
    ),
    Option(
        ("--per-file-ignores",),
        "per_file_ignores",
        APPEND,
        help="ignore CODES in files matching PATTERN (replaces the configured table)",
        metavar="PATTERN:CODES",
        group=_SELECTION,
    ),
    Option(
        ("--config",),
        "config",
        VALUE,
        help="use this file for every file instead of each file's nearest "
        "configuration: a [tool.draft-kv-lint] table (pyproject.toml), else its "
        "top-level keys (as .draft-kv-lint.toml); a file that sets nothing is an "
        "error",
        metavar="PATH",
        group="configuration",
    ),
    switch(
        ("--no-config",),
        "no_config",
        help="ignore every configuration file",
        group="configuration",
    ),
    Option(
        ("--exclude",),
        "exclude",
        EXTEND,
        _code_list,
        help="skip these globs while walking folders (replaces the configured "
        "exclude and the default list); comma-separated",
        metavar="PATTERNS",
        group=_FILES,
    ),
    Option(
        ("--extend-exclude",),
        "extend_exclude",
        EXTEND,
        _code_list,
        help="skip these globs too; comma-separated",
        metavar="PATTERNS",
        group=_FILES,
    ),
    Option(
        ("--force-exclude",),
        "force_exclude",
        FLAG,
        True,
        help="apply the exclusions to files named on the command line too",
        group=_FILES,
    ),
    Option(
        ("--no-respect-gitignore",),
        "respect_gitignore",
        FLAG,
        False,
        help="also walk into what .gitignore files ignore",
        group=_FILES,
    ),
)


# The cache and standard input: the same for ``check`` and ``fix`` (``fix`` reads
# check's answers first, so a tree with nothing to fix costs what check costs).
CACHE_OPTIONS = (
    switch(
        ("--no-cache",),
        "no_cache",
        help="check every file again and store nothing (env: DRAFT_KV_LINT_NO_CACHE)",
        group="cache",
    ),
    Option(
        ("--cache-dir",),
        "cache_dir",
        VALUE,
        help="where answers for unchanged files are kept (default: "
        ".draft_kv_lint_cache in the project root; env: DRAFT_KV_LINT_CACHE_DIR)",
        metavar="DIR",
        group="cache",
    ),
)
STDIN_FILENAME = Option(
    ("--stdin-filename",),
    "stdin_filename",
    VALUE,
    help="with PATH `-`: read the source from standard input and report it "
    "(and resolve its configuration) as NAME",
    metavar="NAME",
)


def reads_stdin(args: argparse.Namespace) -> bool:
    """Is standard input the one file of this run (the PATH ``-``)? A ``-``
    among other paths, or ``--stdin-filename`` without it, is a usage error."""
    stdin = args.paths == ["-"]
    if "-" in args.paths and not stdin:
        raise UsageError("`-` (standard input) must be the only PATH")
    if args.stdin_filename and not stdin:
        raise UsageError("--stdin-filename needs the PATH `-`")
    return stdin


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
        load_named_config,
    )
    from lint_plugin.findings import FileError

    memo = None if getattr(args, "no_cache", False) else _memo_folder(args)
    try:
        fixed = None
        if args.no_config:
            fixed = Config(root=os.path.abspath("."))
        elif args.config:
            fixed = load_named_config(args.config, memo)
    except ConfigError as error:
        raise _config_error(error) from None
    resolver = ConfigResolver(fixed, memo)
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


def _memo_folder(args: argparse.Namespace):
    """Where a configuration's parsed table is kept (``config.memo``): in the
    cache folder of its project (``--cache-dir`` and the environment as for the
    cache), only one this tool made and a run has used; None without a cache."""

    def folder(root: str) -> str | None:
        from lint_plugin.check.cache import cache_config_folder

        return cache_config_folder(getattr(args, "cache_dir", None), root)

    return folder


def print_file_errors(errors: Sequence[FileError]) -> None:
    for error in errors:
        print(error, file=sys.stderr)


def run_cache(args: argparse.Namespace, plan: Plan, settings):
    """The run's cache: in the project root (the folder of the configuration that
    governs the current folder, else the current folder), unless switched off."""
    if args.no_cache:
        return None
    from lint_plugin.check.cache import cache_for

    return cache_for(args.cache_dir, plan.config.root, settings)


def run_settings(args: argparse.Namespace, plan: Plan):
    """The engine settings: the command line beats the configuration."""
    from lint_plugin.engine.settings import Settings

    defaults = Settings()
    return Settings(
        helpers_module=args.helpers_module
        or plan.config.helpers_module
        or defaults.helpers_module,
        guard_module=getattr(args, "guard_module", None)
        or plan.config.guard_module
        or defaults.guard_module,
    )


def configured_guard_module(args: argparse.Namespace, plan: Plan) -> str | None:
    """``--guard-module`` or the configuration's; None: ``fix`` reads it from the
    tree (see :mod:`lint_plugin.fix.guard_home`)."""
    return getattr(args, "guard_module", None) or plan.config.guard_module
