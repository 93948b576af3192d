"""``check`` and ``fix`` read their common command lines without argparse
(``lint_plugin.cli.quick``). Held to argparse itself: each subcommand's table is
its parser's options, and on any command line (fixed and generated) the quick
reading is either none (argparse reads it) or the namespace argparse gives."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from import_probe import imported_by

from lint_plugin.cli import quick
from lint_plugin.cli.parsers import SUBPARSERS, build_parser

pytest_plugins = ("cli_helpers",)
# A real inline copy: the engine reports one KVI001 at 1:5 for it.
REAL_KVI001 = "n = seq_lens_sum * self.topk + bs * (i + 1)\n"

COMMANDS = ("check", "fix")


def _argparse_reading(argv: list[str]) -> dict | None:
    """argparse's namespace for ``argv``, or None where it rejects it (an error,
    help, or words it leaves unrecognized)."""
    parser = build_parser(argv)
    with (
        contextlib.redirect_stderr(io.StringIO()),
        contextlib.redirect_stdout(io.StringIO()),
    ):
        try:
            args, extras = parser.parse_known_args(argv)
        except SystemExit:
            return None
    return None if extras else vars(args)


def _quick_reading(argv: list[str]) -> dict | None:
    found = quick.parse(argv)
    return None if found is None else vars(found)


def _table_of(parser: argparse.ArgumentParser) -> set:
    """The parser's options as a quick table states them (the help section
    of an option listed under the parser's own, None)."""
    sections = {
        id(action): group.title
        for group in parser._action_groups[2:]
        for action in group._group_actions
    }
    options = set()
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if not action.option_strings:
            assert (action.dest, action.nargs, action.default) == ("paths", "*", None)
            continue
        if isinstance(action, argparse._StoreConstAction):
            kind, given_ = quick.FLAG, action.const
        elif isinstance(action, argparse._ExtendAction):
            kind, given_ = quick.EXTEND, action.type
        elif isinstance(action, argparse._AppendAction):
            assert action.type is None
            kind, given_ = quick.APPEND, None
        else:
            assert type(action) is argparse._StoreAction and action.type is None
            kind = quick.VALUE
            given_ = tuple(action.choices) if action.choices else None
        options.add(
            quick.Option(
                tuple(action.option_strings),
                action.dest,
                kind,
                given_,
                action.default,
                action.help,
                action.metavar,
                sections.get(id(action)),
            )
        )
    return options


@pytest.mark.parametrize("command", COMMANDS)
def test_each_table_is_its_parser(command: str) -> None:
    build_parser([command])
    parser = SUBPARSERS[command]
    table = __import__(f"lint_plugin.cli.{command}", fromlist=["_"]).QUICK
    assert set(table.options) == _table_of(parser)
    assert len(table.options) == len(_table_of(parser))
    assert parser._defaults == {"handler": table.handler}
    exclusive = {
        tuple(action.dest for action in group._group_actions)
        for group in parser._mutually_exclusive_groups
    }
    assert set(table.exclusive) == exclusive


# What pre-commit, CI jobs and people type: read without argparse.
COMMON = [
    ["check", "--force-exclude", "a.py", "b/c.py"],
    ["fix", "--force-exclude", "a.py"],
    ["check"],
    ["check", "."],
    ["check", "--no-cache", "--no-config", "-q", "src", "tests"],
    ["check", "--output-format", "json", "--exit-zero", "src"],
    ["check", "--output-format=github", "--select=KVI001,KVI002", "x.py"],
    ["check", "a.py", "--statistics", "--extend-select", "KVI006"],
    ["check", "--select", "KVI001", "--select", "KVI003", "--ignore", "KVI002"],
    ["check", "--per-file-ignores", "t/*:KVI001", "--per-file-ignores", "u:KVI3"],
    ["check", "-o", "out.txt", "--color", "never", "--cache-dir", "c", "-"],
    ["check", "--stdin-filename", "x.py", "-"],
    ["check", "--diff", "--unsafe-fixes", "a.py"],
    ["check", "--explain", "a.py:12"],
    ["check", "--show-settings", "a.py", "--config", "pyproject.toml"],
    ["fix", "--diff", "--unsafe-fixes", "--extend-select", "KVI006", "x.py"],
    ["fix", "--check", "--no-respect-gitignore", "--exclude", "a,b", "."],
    ["fix", "--helpers-module", "pkg.helpers", "--guard-module", "pkg.g", "a.py"],
    ["check", "--select", "", "a.py"],
    ["check", ""],
]


@pytest.mark.parametrize("argv", COMMON, ids=" ".join)
def test_a_common_command_line_is_read_as_argparse_reads_it(argv: list[str]) -> None:
    expected = _argparse_reading(argv)
    assert expected is not None
    assert _quick_reading(argv) == expected


# Left to argparse: it prints help or an error, or reads a form kept out of here.
LEFT = [
    ["check", "-h"],
    ["fix", "--help"],
    ["--version"],
    ["chek", "a.py"],
    ["rule", "KVI001"],
    ["check", "--no-cach", "a.py"],  # an abbreviation argparse accepts
    ["check", "a.py", "--no-cache", "b.py"],  # the second run is unrecognized
    ["fix", "--diff", "--check", "a.py"],
    ["check", "--output-format", "xml"],
    ["check", "--select"],
    ["check", "--select", "-q"],
    ["check", "--", "-a.py"],
    ["check", "-qo", "out"],
    ["check", "-o=out", "a.py"],
    ["check", "-o", "-"],
    ["check", "--no-cache=1"],
    ["check", "-1"],
]


@pytest.mark.parametrize("argv", LEFT, ids=" ".join)
def test_what_is_not_common_is_left_to_argparse(argv: list[str]) -> None:
    assert quick.parse(argv) is None


_WORDS = st.sampled_from(
    [
        "--select",
        "--ignore",
        "--extend-select",
        "--per-file-ignores",
        "--exclude",
        "--extend-exclude",
        "--force-exclude",
        "--no-respect-gitignore",
        "--no-config",
        "--config",
        "--helpers-module",
        "--output-format",
        "--output-format=json",
        "--color=always",
        "--color",
        "--exit-zero",
        "--statistics",
        "--explain",
        "--add-noqa",
        "--show-settings",
        "-q",
        "--quiet",
        "-o",
        "--output-file",
        "--show-fixes",
        "--no-cache",
        "--cache-dir",
        "--stdin-filename",
        "--fix",
        "--diff",
        "--check",
        "--unsafe-fixes",
        "--select=KVI001",
        "--exit-zero=1",
        "--sel",
        "--no-c",
        "-h",
        "--",
        "-",
        "-x",
        "-1",
        "-qo",
        "",
        "a.py",
        "b c.py",
        "KVI001,KVI002",
        "t/*:KVI001",
        "json",
        "text",
        "never",
        "x=y",
    ]
)


@settings(max_examples=400, deadline=None)
@given(command=st.sampled_from(COMMANDS), words=st.lists(_WORDS, max_size=7))
def test_generated_command_lines_read_as_argparse_reads_them(
    command: str, words: list[str]
) -> None:
    argv = [command, *words]
    found = _quick_reading(argv)
    if found is not None:
        assert found == _argparse_reading(argv)


def test_a_quick_run_imports_no_argparse(tmp_path) -> None:
    """argparse, gettext and locale are the cost quick saves."""
    (tmp_path / "a.py").write_text(REAL_KVI001)
    body = (
        "import contextlib, io\n"
        "from lint_plugin.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    _result = main(['check', '--no-cache', '--no-config', 'a.py'])"
    )
    imported, status = imported_by(
        body, ("argparse", "gettext", "locale"), cwd=tmp_path
    )
    assert (imported, status) == ([], "1")


def test_a_usage_error_after_a_quick_reading_prints_the_usage(
    run, monkeypatch, tmp_path
):
    """A mistake found once the command line is read (``--stdin-filename``
    without ``-``) is printed by the subcommand's parser, as argparse's run
    prints it."""
    monkeypatch.chdir(tmp_path)
    argv = ("check", "--stdin-filename", "x.py", "a.py")
    assert quick.parse(list(argv)) is not None
    quickly = run(*argv)
    monkeypatch.setattr(quick, "parse", lambda argv: None)
    slowly = run(*argv)
    assert (quickly.status, quickly.err) == (slowly.status, slowly.err)
    assert quickly.status == 2
    assert quickly.err.startswith("usage: draft-kv-lint check ")
    assert quickly.err.splitlines()[-1].endswith("--stdin-filename needs the PATH `-`")
