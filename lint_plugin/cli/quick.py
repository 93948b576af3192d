"""The command lines pre-commit and CI give ``check`` and ``fix``, read without
argparse.

Importing argparse, building a subcommand's parser (thirty ``add_argument``
calls, each making a help formatter) and gettext's catalogue lookups (with
``locale``) cost about 10 ms, a warm run's quarter. A command line of the common
shape is read here into the namespace argparse gives it: a subcommand that
declares its options (``QUICK``, from which its argparse parser is built too),
option names spelt out in full, each value in its own word or after ``=``, not
starting with ``-`` and among the choices, the paths in one run, no two options
of a group argparse makes exclusive. Anything else (help, an abbreviation,
``--``, a word argparse would reject) is left to argparse, which prints what it
always printed.
``tests/check/test_quick_arguments.py`` holds each table to its parser and the
two readings to each other on generated command lines.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lint_plugin.records import record


class Namespace:
    """What argparse's namespace gives the handlers: the options as attributes."""

    def __init__(self, **values: object) -> None:
        self.__dict__.update(values)

    def __repr__(self) -> str:
        items = ", ".join(f"{key}={value!r}" for key, value in vars(self).items())
        return f"Namespace({items})"


# How an option takes its value (argparse's action).
FLAG = "flag"  # no value: ``given`` is stored (store_true, store_false)
VALUE = "value"  # one value, the last one stays (store); ``given``: its choices
APPEND = "append"  # each value appended to a list
EXTEND = "extend"  # each value converted by ``given`` into a list, appended


@record(frozen=True)
class Option:
    """One option, read here and built into argparse's parser from the same
    record (``lint_plugin.cli.parsers.add_command``)."""

    strings: tuple[str, ...]
    dest: str
    kind: str
    given: object = None
    default: object = None
    help: str = ""
    metavar: str | None = None
    group: str | None = None  # the title of the help section it is listed in


def switch(
    strings: tuple[str, ...], dest: str, help: str, group: str | None = None
) -> Option:
    """An option without a value that sets ``dest`` (False unless given)."""
    return Option(strings, dest, FLAG, True, False, help=help, group=group)


@record(frozen=True)
class Command:
    """A subcommand's options (its positional is always ``paths``, ``*``)."""

    options: tuple[Option, ...]
    handler: Callable
    # Options argparse forbids together (a mutually exclusive group), by dest.
    exclusive: tuple[tuple[str, ...], ...] = ()


# The subcommands read here, and the module declaring each one's ``QUICK``.
COMMANDS = ("check", "fix")


def parse(argv: Sequence[str]) -> Namespace | None:
    """The namespace argparse gives ``argv``, or None: argparse must read it."""
    if not argv or argv[0] not in COMMANDS:
        return None
    module = __import__(f"lint_plugin.cli.{argv[0]}", fromlist=["_"])
    command: Command = module.QUICK
    by_string = {name: option for option in command.options for name in option.strings}
    values = {option.dest: option.default for option in command.options}
    values["paths"] = []
    given: set[str] = set()
    run = 0  # 0: no path yet, 1: in the run of paths, 2: after it
    index = 1
    while index < len(argv):
        word = argv[index]
        index += 1
        if word[:1] != "-" or word == "-":
            if run == 2:
                return None  # argparse leaves a second run of paths unrecognized
            run = 1
            values["paths"].append(word)
            continue
        if run == 1:
            run = 2
        # `--name=value`; a short option's `-o=x` is argparse's to read.
        name, equals, inline = (
            word.partition("=") if word[:2] == "--" else (word, "", "")
        )
        option = by_string.get(name)
        if option is None:
            return None
        given.add(option.dest)
        if option.kind == FLAG:
            if equals:
                return None
            values[option.dest] = option.given
            continue
        if equals:
            value = inline
        elif index < len(argv) and argv[index][:1] != "-":
            value = argv[index]
            index += 1
        else:
            return None  # no value, or one argparse may read as an option
        if option.kind == VALUE:
            if option.given is not None and value not in option.given:
                return None
            values[option.dest] = value
        elif option.kind == APPEND:
            values[option.dest] = [*(values[option.dest] or ()), value]
        else:
            values[option.dest] = [*(values[option.dest] or ()), *option.given(value)]
    if any(len(given.intersection(group)) > 1 for group in command.exclusive):
        return None
    return Namespace(command=argv[0], **values, handler=command.handler)
