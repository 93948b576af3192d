"""``draft-kv-lint``: the command line, one module per subcommand.

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

Startup time matters (pre-commit runs this on every commit): the common command
lines of check and fix are read without argparse (``quick``); any other builds
(and imports) only its own subcommand's argparse parser;
json, tomllib, the rule catalogue and the engine are imported when a run needs
them, and libcst/torch never by ``check``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from lint_plugin.cli.common import print_error
from lint_plugin.errors import RunError, UsageError

TYPE_CHECKING = False  # typing itself costs milliseconds at every start
if TYPE_CHECKING:
    import argparse

__all__ = ["build_parser", "main"]


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """argparse's parser of the command line (``lint_plugin.cli.parsers``)."""
    from lint_plugin.cli.parsers import build_parser

    return build_parser(argv)


def run() -> None:
    """The console script: ``main``, then out without the interpreter's teardown
    (as mypy's ``--fast-exit``). Freeing every module, cache and interned
    object at exit is ~10% of a check of a few files; everything the command
    does is done when ``main`` returns, so only the output streams remain, and
    they are flushed first. A flush that fails (a reader gone) leaves the exit
    to the interpreter, which reports it as usual."""
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        os._exit(CLOSED_PIPE)  # the reader went away: nothing left to say
    except BaseException:
        sys.exit(code)
    os._exit(code)


# The status when the reader closes the pipe (``fix --diff | head``): what was
# printed was a finding or a diff, and what the rest would have said is not
# known, so "found something" (1), quietly, as Python's documentation advises.
CLOSED_PIPE = 1


def main(argv: Sequence[str] | None = None) -> int:
    from lint_plugin.cli import quick

    argv = sys.argv[1:] if argv is None else list(argv)
    args = quick.parse(argv)
    if args is None:
        from lint_plugin.cli.parsers import SUBPARSERS

        parser = build_parser(argv)
        try:
            args, extras = parser.parse_known_args(argv)
            if extras:
                # Reported by the subcommand's own parser, so its usage is printed.
                subparser = SUBPARSERS.get(getattr(args, "command", None), parser)
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
        from lint_plugin.cli.parsers import SUBPARSERS

        parser = build_parser(argv)
        try:
            SUBPARSERS.get(args.command, parser).error(str(error))
        except SystemExit as exit_:
            return exit_.code if isinstance(exit_.code, int) else 2
        return 2  # pragma: no cover - error() always exits
    except RunError as error:
        print_error(str(error))
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`): nothing more to say, and Python must not
        # complain again while flushing stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return CLOSED_PIPE
    except Exception as error:  # the last line of defence: no traceback for users
        print_error(f"internal error: {type(error).__name__}: {error}")
        return 2
