"""argparse's reading of the command line: every subcommand's parser, its help,
usage and errors. Imported only when ``lint_plugin.cli.quick`` cannot read the
command line, or a usage error must be printed with its usage.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from lint_plugin import __version__
from lint_plugin.cli.common import PROG
from lint_plugin.cli.quick import APPEND, FLAG, VALUE, Command, Option


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


# The subcommands in the order ``--help`` lists them: ``lint_plugin.cli.NAME``
# holds ``add_NAME_parser``.
COMMANDS = ("check", "fix", "rule", "prove", "clean")


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser. When ``argv`` starts with a subcommand's name,
    only that subcommand's parser is built (and its module imported): the others
    would cost every run a few milliseconds and can take no part in it, since
    argparse hands everything after the name to the subcommand. Any other
    ``argv`` (help, ``--version``, a misspelt name) gets every subcommand, so
    what is printed lists them all."""
    parser = _Parser(
        prog=PROG,
        description="Keep SGLang's EAGLE draft-decode kv_indices buffers sized.",
    )
    parser.add_argument(
        "-V", "--version", action="version", version=f"{PROG} {__version__}"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", prog=PROG)
    first = argv[0] if argv else None
    for name in (first,) if first in COMMANDS else COMMANDS:
        module = __import__(f"lint_plugin.cli.{name}", fromlist=["_"])
        getattr(module, f"add_{name}_parser")(subparsers)
    SUBPARSERS.clear()
    SUBPARSERS.update(subparsers.choices)
    return parser


# The subcommands' parsers, by name, for usage errors (set by build_parser).
SUBPARSERS: dict[str, argparse.ArgumentParser] = {}


def add_command(
    subparsers: argparse._SubParsersAction, name: str, command: Command, **kwargs
) -> argparse.ArgumentParser:
    """Subcommand ``name``'s parser, built from the table ``quick`` reads:
    ``paths``, then each option in its order, in the help section its group
    names (sections in the order first named), the options argparse makes
    exclusive in one group."""
    parser = subparsers.add_parser(name, **kwargs)
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="files or folders (default: .)"
    )
    sections: dict[str, argparse._ArgumentGroup] = {}
    exclusive: dict[tuple[str, ...], argparse._MutuallyExclusiveGroup] = {}
    for option in command.options:
        target = parser
        if option.group is not None:
            if option.group not in sections:
                sections[option.group] = parser.add_argument_group(option.group)
            target = sections[option.group]
        group = next((g for g in command.exclusive if option.dest in g), None)
        if group is not None:
            if group not in exclusive:
                exclusive[group] = target.add_mutually_exclusive_group()
            target = exclusive[group]
        target.add_argument(*option.strings, **_arguments(option))
    parser.set_defaults(handler=command.handler)
    return parser


def _arguments(option: Option) -> dict[str, object]:
    """``add_argument``'s keywords for ``option`` (argparse's defaults left out)."""
    found: dict[str, object] = {"dest": option.dest, "help": option.help}
    if option.metavar is not None:
        found["metavar"] = option.metavar
    if option.kind == FLAG:
        found["action"] = "store_true" if option.given else "store_false"
        if option.default is not (not option.given):
            found["default"] = option.default
    elif option.kind == VALUE:
        if option.given is not None:
            found["choices"] = option.given
        if option.default is not None:
            found["default"] = option.default
    elif option.kind == APPEND:
        found["action"] = "append"
    else:
        found["action"], found["type"] = "extend", option.given
    return found
