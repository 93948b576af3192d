"""What the command line says, said truly.

* A dry run (``fix --diff``/``--check``) says an unsafe fix *would apply*: it wrote
  nothing.
* Codes have one case everywhere, ruff's: upper. ``--select kvi001`` is a usage
  error (with ruff's "did you mean"), and ``# noqa: kvi002`` suppresses nothing
  (KVI100 reports it), as ``# ruff: noqa: kvi001`` does not either.
* ``--show-settings`` shows every key of the table.
* One finding is one line, whatever the file is called (control characters
  escaped as ruff shows them in code: ``␊``); a diff header quotes such a name as
  git does, and ``git apply`` reads it back.
* A file with a NUL byte is named, with where the NUL is and why it is refused.
* Every usage error prints its subcommand's usage; a configuration error does not
  (there is no command line to correct).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cli_helpers import USED_LEN_SITE

pytest_plugins = ("cli_helpers",)

ROOT = Path(__file__).resolve().parents[2]
# Its CUDA-graph buffer is sized by a token count: one KVI003 (unsafe fix) at 170:42.
TRITON = (ROOT / "fixtures" / "triton_backend.py").read_text()
USED_LEN = USED_LEN_SITE


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- a dry run says so --------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        (["--diff"], "would apply"),
        (["--check"], "would apply"),
        ([], "applied"),
    ],
)
def test_unsafe_fix_lines_say_whether_anything_was_written(tree, run, mode, said):
    (tree / "b.py").write_text(TRITON)
    result = run("fix", *mode, "--unsafe-fixes", "--select", "KVI003", "b.py")
    lines = [line for line in result.err.splitlines() if "KVI003 unsafe fix" in line]
    assert len(lines) == 1, result.err
    assert lines[0].startswith(f"b.py:170:42: KVI003 unsafe fix {said}: ")
    written = (tree / "b.py").read_text() != TRITON
    assert written is (said == "applied")


# --- codes have one case: upper, as ruff's -------------------------------------------


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["check", "--select", "kvi001", "a.py"], "did you mean 'KVI001'?"),
        (["check", "--ignore", "Kvi003", "a.py"], "did you mean 'KVI003'?"),
        (["check", "--extend-select", "kvi006", "a.py"], "did you mean 'KVI006'?"),
        (["check", "--select", "kvi", "a.py"], "did you mean 'KVI'?"),
        (["check", "--per-file-ignores", "a.py:kvi001", "a.py"], "'KVI001'"),
        (["fix", "--select", "kvi00", "a.py"], "did you mean 'KVI00'?"),
        (["rule", "kvi003"], "did you mean 'KVI003'?"),
    ],
)
def test_a_lower_case_code_is_a_usage_error(tree, run, fake_engine, argv, hint):
    (tree / "a.py").write_text("x = kvi001_here\n")
    result = run(*argv)
    assert result.status == 2 and result.out == ""
    assert result.err.startswith(f"usage: draft-kv-lint {argv[0]} ")
    assert hint in result.err


def test_a_lower_case_code_in_a_configuration_is_an_error_too(tree, run, fake_engine):
    (tree / "pyproject.toml").write_text('[tool.draft-kv-lint]\nselect = ["kvi001"]\n')
    (tree / "a.py").write_text("x = kvi001_here\n")
    result = run("check", "a.py")
    assert result.status == 2
    assert "pyproject.toml" in result.err and "did you mean 'KVI001'?" in result.err


@pytest.mark.parametrize(
    ("source", "codes"),
    [
        ("x = kvi001_here  # noqa: KVI001\n", []),
        ("x = kvi001_here  # noqa: kvi001\n", ["KVI001", "KVI100"]),  # no directive
        ("x = kvi001_here  # noqa: KVI00\n", []),  # a prefix, upper case
        ("# ruff: noqa: KVI001\nx = kvi001_here\n", []),
        ("# ruff: noqa: kvi001\nx = kvi001_here\n", ["KVI001"]),  # ruff rejects it
    ],
)
def test_directives_read_codes_as_selection_does(tree, run, fake_engine, source, codes):
    (tree / "a.py").write_text(source)
    assert run("check", "a.py").codes == codes


def test_the_real_engine_and_flake8_agree_on_a_lower_case_directive(tree):
    """What flake8 does with ``# noqa: kvi001`` (nothing) is what check does."""
    import sys

    (tree / "a.py").write_text(
        USED_LEN.replace("(i + 1)\n", "(i + 1)  # noqa: kvi001\n")
    )
    flake8 = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "KVI001", "a.py"],
        capture_output=True,
        text=True,
    )
    check = subprocess.run(
        [
            sys.executable,
            "-m",
            "lint_plugin.cli",
            "check",
            "--select",
            "KVI001",
            "a.py",
        ],
        capture_output=True,
        text=True,
    )
    assert "KVI001" in flake8.stdout and "a.py:3:16: KVI001" in check.stdout


# --- --show-settings shows every key ---------------------------------------------------


def test_show_settings_shows_every_key_of_the_table(tree, run, fake_engine):
    from lint_plugin.config.table import ConfigError, parse_table

    (tree / "pyproject.toml").write_text(
        "[tool.draft-kv-lint]\n"
        'select = ["KVI00"]\n'
        'extend-select = ["KVI006"]\n'
        'ignore = ["KVI004"]\n'
        'per-file-ignores = { "tests/*" = ["KVI001"] }\n'
        'include = ["*.py"]\n'
        'exclude = ["build"]\n'
        'extend-exclude = ["gen"]\n'
        "force-exclude = true\n"
        "respect-gitignore = false\n"
        'output-format = "json"\n'
        'helpers-module = "pkg.helpers"\n'
        'guard-module = "pkg.guard"\n'
    )
    (tree / "a.py").write_text("x = 1\n")
    result = run("check", "--show-settings", "a.py")
    assert result.status == 0
    shown = dict(
        line.split(" = ", 1) for line in result.out.splitlines() if " = " in line
    )
    # Selection is shown resolved into codes, extend-exclude within the exclusions.
    resolved = {"select": "enabled", "extend-select": "enabled", "ignore": "enabled"}
    resolved["extend-exclude"] = "exclude"
    with pytest.raises(ConfigError, match=r"known keys: ") as known:
        parse_table({"no-such-key": 1}, "x")
    keys = known.value.args[0].split("known keys: ")[1].rstrip(")").split(", ")
    assert len(keys) == 12
    for key in keys:
        assert resolved.get(key, key) in shown, key
    assert (
        shown["enabled"]
        == "['KVI001', 'KVI002', 'KVI003', 'KVI005', 'KVI006', 'KVI007', 'KVI008', "
        "'KVI009']"
    )
    assert shown["per-file-ignores"] == "{'tests/*': ['KVI001']}"
    assert shown["exclude"] == "['build', 'gen']"
    assert shown["helpers-module"] == "pkg.helpers"
    assert shown["guard-module"] == "pkg.guard"
    assert shown["output-format"] == "json"
    assert shown["force-exclude"] == "True"
    assert shown["respect-gitignore"] == "False"
    assert shown["cache-dir"] == "None"  # the tests run with DRAFT_KV_LINT_NO_CACHE


def test_show_settings_names_the_cache_folder(tree, run, fake_engine, monkeypatch):
    monkeypatch.delenv("DRAFT_KV_LINT_NO_CACHE")
    monkeypatch.delenv("DRAFT_KV_LINT_CACHE_DIR", raising=False)
    (tree / "a.py").write_text("x = 1\n")
    shown = run("check", "--show-settings", "a.py").out.splitlines()
    assert f"cache-dir = {tree / '.draft_kv_lint_cache'}" in shown
    assert not (tree / ".draft_kv_lint_cache").exists()  # shown, not made
    shown = run("check", "--show-settings", "a.py", "--cache-dir", "c").out
    assert "cache-dir = c\n" in shown


# --- one finding, one line ----------------------------------------------------------

STRANGE = [
    "new\nline.py",
    "tab\tand\x1besc.py",
    "carriage\rreturn.py",
    "sep\u2028ar.py",
]


@pytest.mark.parametrize("name", STRANGE)
@pytest.mark.parametrize("output_format", ["text", "full"])
def test_a_path_with_control_characters_stays_on_one_line(
    tree, run, name, output_format
):
    (tree / name).write_text(USED_LEN)
    result = run("check", "--output-format", output_format, "--no-cache", name)
    assert result.status == 1
    finding = [line for line in result.out.splitlines() if ": KVI001 " in line]
    assert len(finding) == 1, result.out
    shown = finding[0].split(":3:16:")[0]
    assert shown.isprintable() and "\x1b" not in result.out
    assert (
        shown
        == {
            "new\nline.py": "new\u240aline.py",
            "tab\tand\x1besc.py": "tab\u2409and\u241besc.py",
            "carriage\rreturn.py": "carriage\u240dreturn.py",
            "sep\u2028ar.py": "sep\\u2028ar.py",
        }[name]
    )


def test_a_printable_path_is_printed_as_it_is(tree, run):
    name = "caf\u00e9 et cr\u00e8me.py"  # non-ASCII, spaces: nothing to escape
    (tree / name).write_text(USED_LEN)
    assert run("check", name).out.startswith(f"{name}:3:16: KVI001 ")


def test_an_undecodable_byte_in_a_name_is_shown_as_its_byte(tree, run):
    import os

    name = os.fsdecode(b"bad\xffname.py")
    (tree / name).write_text(USED_LEN)
    result = run("check", name)
    assert result.out.startswith("bad\\xffname.py:3:16: KVI001 ")


def test_error_lines_are_one_line_too(tree, run):
    # Bytes Python refuses are the file's E999 (as a syntax error is); a file
    # whose configuration cannot be used is an error line of its own.
    (tree / "bad\nname.py").write_bytes(b"s = '\xff'\n")
    result = run("check", "bad\nname.py")
    assert result.out.splitlines()[0] == (
        "bad\u240aname.py:1:6: E999 SyntaxError: not valid UTF-8 and no encoding "
        "declared (byte 0xff at offset 5)"
    )
    (tree / "pyproject.toml").write_text("[tool.draft-kv-lint\n")
    result = run("check", "bad\nname.py")
    assert result.status == 2
    (line,) = result.err.splitlines()
    assert line.startswith("bad\u240aname.py: error: skipped, its configuration ")


def test_full_format_shows_control_characters_in_code_as_ruff_does(tree, run):
    # A form feed ends a line for str.splitlines, not for Python: the rows shown
    # must be Python's; an escape sequence in a comment is shown, not obeyed.
    source = "\x0c\n" + USED_LEN.replace("(i + 1)\n", "(i + 1)  # \x1b[2J\n")
    (tree / "a.py").write_text(source)
    result = run("check", "--output-format", "full", "a.py")
    assert result.out.startswith("a.py:4:16: KVI001 ")
    code = "4 |         return seq_lens_sum * self.topk + bs * (i + 1)  # \u241b[2J"
    assert code in result.out.splitlines()
    assert "\x1b" not in result.out


def test_a_diff_of_a_strangely_named_file_applies_with_git(tree, run):
    name = "new\nline.py"
    (tree / name).write_text(USED_LEN)
    subprocess.run(["git", "init", "-q"], check=True)
    diff = run("fix", "--diff", "--helpers-module", "lint_plugin.runtime", name)
    assert diff.status == 1
    assert diff.out.startswith('--- "a/new\\nline.py"\n+++ "b/new\\nline.py"\n')
    (tree / "change.diff").write_text(diff.out)
    done = subprocess.run(
        ["git", "apply", "change.diff"], capture_output=True, text=True, cwd=tree
    )
    assert done.returncode == 0, done.stderr
    assert "draft_kv_indices_used_len(" in (tree / name).read_text()


# --- a NUL byte is named, with where and why ---------------------------------------


def test_a_nul_byte_is_named_with_its_place_and_reason(tree, run):
    (tree / "nul.py").write_bytes(USED_LEN.encode() + b"x = 1\0\n")
    checked = run("check", "nul.py")
    # Python's own wording varies by version; the place is the NUL's everywhere.
    assert checked.out.startswith("nul.py:4:6: E999 SyntaxError: source code ")
    assert "null bytes" in checked.out.splitlines()[0]
    fixed = run("fix", "nul.py")
    assert fixed.status == 1
    line = fixed.err.splitlines()[0]
    assert line.startswith("nul.py: error: cannot parse, left unchanged: 4:6: ")
    assert "null bytes" in line and "None" not in line


# --- every usage error shows its usage ----------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "--select", "KVX"],
        ["check", "--no-such-option"],
        ["check", "-", "a.py"],
        ["check", "--stdin-filename", "x.py", "a.py"],
        ["check", "--add-noqa", "--diff", "a.py"],
        ["check", "--per-file-ignores", "nocolon", "a.py"],
        ["check", "--output-format", "xml", "a.py"],
        ["fix", "--ignore", "KVX", "a.py"],
        ["fix", "--diff", "--check", "a.py"],
        ["rule"],
        ["rule", "KVI999"],
        ["prove", "only-one.py"],
        ["prove", "missing.py", "also-missing.py"],
        ["clean", "--what"],
    ],
)
def test_every_usage_error_prints_its_subcommands_usage(tree, run, argv):
    (tree / "a.py").write_text("x = 1\n")
    result = run(*argv)
    assert result.status == 2 and result.out == ""
    lines = result.err.splitlines()
    assert lines[0].startswith(f"usage: draft-kv-lint {argv[0]} "), result.err
    assert lines[-1].startswith(f"draft-kv-lint {argv[0]}: error: ")


def test_a_configuration_error_names_the_file_without_a_usage(tree, run):
    # Reported for each file it governs (the others are still checked), exit 2.
    (tree / "pyproject.toml").write_text('[tool.draft-kv-lint]\nselect = ["KVX"]\n')
    (tree / "a.py").write_text("x = 1\n")
    result = run("check", "a.py")
    assert result.status == 2
    assert result.err.startswith("a.py: error: skipped, its configuration is unusable")
    assert "pyproject.toml" in result.err and "usage:" not in result.err
