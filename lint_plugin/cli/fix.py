"""``draft-kv-lint fix`` (and ``check --fix``): its options and the run, files or
standard input.
"""

from __future__ import annotations

import sys

from lint_plugin.cli.common import (
    CACHE_OPTIONS,
    QUICK_COMMON,
    STDIN_FILENAME,
    Plan,
    configured_guard_module,
    load_plan,
    reads_stdin,
    run_cache,
    run_settings,
)
from lint_plugin.cli.quick import Command, switch

TYPE_CHECKING = False  # typing itself costs milliseconds at every start
if TYPE_CHECKING:  # for annotations only: the rewriter is imported when fix runs
    import argparse

    from lint_plugin.fix.options import Options


def fix_stdin(args: argparse.Namespace, plan: Plan) -> int:
    """``fix -`` (and ``check --fix -``): the fixed source on stdout (an editor
    replaces its buffer with it), the original when nothing could be fixed;
    ``--diff``: the diff; ``--check``: nothing, exit 1 when it would change."""
    from lint_plugin.findings import FileError
    from lint_plugin.fix.diff import unified_diff
    from lint_plugin.fix.rewrite import RewriteRefused, rewrite_text
    from lint_plugin.source_files import SourceError, decoded

    name = args.stdin_filename or "-"
    data = sys.stdin.buffer.read()
    # Standard input is one file, its findings reported under ``name``.
    options = _options(args, plan, lambda finding: name)
    try:
        text, encoding, bom = decoded(data)
        rewrite = rewrite_text(text, name, options)
        after = rewrite.text
        if name != "-" and rewrite.changed:
            # Standard input is one file: definitions its import needs in
            # another module of the tree cannot be added from here.
            from lint_plugin.fix.helper_homes import refusal, unmet_needs

            why = refusal(unmet_needs(name, text, rewrite, options.settings))
            if why is not None:
                raise RewriteRefused(why)
    except (SourceError, SyntaxError, RewriteRefused) as error:
        print(FileError(name, f"left unchanged: {error}"), file=sys.stderr)
        if not (args.diff or getattr(args, "check", False)):
            sys.stdout.buffer.write(data)
        return 1
    if getattr(args, "check", False):
        return 1 if after != text else 0
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


def add_fix_parser(subparsers: argparse._SubParsersAction) -> None:
    from lint_plugin.cli.parsers import add_command

    add_command(
        subparsers,
        "fix",
        QUICK,
        help="rewrite inline formulas into helper calls (a codemod)",
        description=(
            "Rewrite KVI001/KVI002 sites into draft_kv_indices_used_len / "
            "draft_kv_indices_buffer_width calls and import them; with "
            "--unsafe-fixes also size KVI003 buffers. Exit 0 when done, 1 when "
            "--diff/--check found something to change or a file could not be fixed."
        ),
    )


def run_fix_command(args: argparse.Namespace) -> int:
    if reads_stdin(args):
        args.paths = [args.stdin_filename or "."]
        return fix_stdin(args, load_plan(args, discover_files=False))
    # Imported here: libcst is the codemod's business, never check's.
    from lint_plugin.fix.command import run_fix

    plan = load_plan(args)
    for error in plan.errors:
        print(error, file=sys.stderr)
    options = _options(args, plan, lambda finding: finding.path)
    status = run_fix(
        _worth_reading(args, plan, options),
        options,
        diff=args.diff,
        check=args.check,
        roots=args.paths or ["."],
    )
    if plan.unusable:
        return 2  # a configuration could not be used: its files were not fixed
    return max(status, 1 if plan.errors else 0)


def _worth_reading(args: argparse.Namespace, plan: Plan, options: Options) -> list[str]:
    """The files the rewriter must read: those ``check`` (its byte test, then its
    cache, then the engine) finds a fix of this run in, or a syntax error (fix
    says it leaves them), or could not read or check (fix says why). Any other
    file holds nothing fix would change, so a tree with nothing to fix costs
    what ``check`` costs, and a warm cache makes both cheap."""
    from lint_plugin.check.pipeline import check_files
    from lint_plugin.findings import SYNTAX_ERROR_CODE

    settings = options.settings  # the rewrite's: the same findings, the same key
    result = check_files(
        plan.files, plan.selection, settings, run_cache(args, plan, settings)
    )
    wanted = {error.path for error in (*result.errors, *result.crashes)}
    for report in result.reports:
        if any(
            f.code == SYNTAX_ERROR_CODE or options.applies(f) for f in report.findings
        ):
            wanted.add(report.path)
    return [path for path in plan.files if path in wanted]


def _options(args: argparse.Namespace, plan: Plan, path_of) -> Options:
    """The rewrite's options for this run: the engine's settings, the guard's
    module, and which findings are reported (``path_of``: the path a finding's
    selection is read for)."""
    from lint_plugin.fix.options import Options

    selection = plan.selection
    settings = run_settings(args, plan)
    return Options(
        unsafe_fixes=args.unsafe_fixes,
        helpers_module=settings.helpers_module,
        guard_module=configured_guard_module(args, plan),
        selected=lambda f: selection.is_reported(f.code, path_of(f)),
    )


# fix's options: read by ``lint_plugin.cli.quick``, built into argparse's
# parser by ``add_fix_parser`` (``--diff`` and ``--check`` exclude each other).
QUICK = Command(
    (
        *QUICK_COMMON,
        switch(
            ("--diff",),
            "diff",
            help="print a unified diff, write nothing",
        ),
        switch(
            ("--check",),
            "check",
            help="write nothing, print nothing on stdout, exit 1 if anything would "
            "change",
        ),
        switch(
            ("--unsafe-fixes",),
            "unsafe_fixes",
            help="also apply fixes that change allocations (KVI003)",
        ),
        *CACHE_OPTIONS,
        STDIN_FILENAME,
    ),
    run_fix_command,
    exclusive=(("diff", "check"),),
)
