"""``draft-kv-lint check`` end to end, in process (``main(argv)``), plus a few real
subprocess runs for the entry point and the lazy imports.

Most tests use the stand-in engine from ``cli_helpers`` (marker words become
findings); the ones marked "real engine" run ``lint_plugin.engine.scan`` as shipped.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from import_probe import imported_by

from lint_plugin.check import pipeline

pytest_plugins = ("cli_helpers",)

# A real inline copy: the engine reports one KVI001 at 1:5 for it.
REAL_KVI001 = "n = seq_lens_sum * self.topk + bs * (i + 1)\n"


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")
    return path


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project folder as the working folder, with no pyproject above it
    that could leak settings in (tmp_path has none)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- exit codes and the text summary ---------------------------------------------


def test_clean_run_exits_0_and_says_all_checks_passed(tree, run, fake_engine):
    write(tree / "a.py", "x = 1\n")
    result = run("check")
    assert (result.status, result.out, result.err) == (0, "All checks passed!\n", "")


def test_findings_exit_1_with_text_lines_and_ruff_summary(tree, run, fake_engine):
    write(tree / "a.py", "x = kvi001_here + kvi003_here\ny = kvi004_here\n")
    result = run("check")
    assert result.status == 1
    assert result.out.splitlines() == [
        "a.py:1:5: KVI001 [*] marker kvi001_here",
        "a.py:1:19: KVI003 marker kvi003_here",
        "a.py:2:5: KVI004 marker kvi004_here",
        "Found 3 errors.",
        "[*] 1 fixable with `draft-kv-lint fix` "
        "(1 unsafe fix available with `draft-kv-lint fix --unsafe-fixes`).",
    ]


def test_exit_zero_reports_but_exits_0(tree, run, fake_engine):
    write(tree / "a.py", "x = kvi002_here\n")
    result = run("check", "--exit-zero")
    assert result.status == 0
    assert result.codes == ["KVI002"]


def test_usage_error_exits_2_with_one_line(tree, run):
    result = run("check", "--no-such-option")
    assert result.status == 2
    assert "unrecognized arguments: --no-such-option" in result.err
    assert "Traceback" not in result.err


def test_internal_error_in_engine_is_one_line_exit_2_others_still_checked(
    tree, run, monkeypatch
):
    from cli_helpers import fake_lint_text

    from lint_plugin import linter

    def explode_on_b(text: str, path: str, settings=None, **engine_options):
        if path.endswith("b.py"):
            raise RuntimeError("boom")
        return fake_lint_text(text, path)

    monkeypatch.setattr(linter, "lint_text", explode_on_b)
    # Every file goes to the stand-in engine (its markers pass no byte test).
    monkeypatch.setattr(pipeline, "could_match", lambda data: True)
    write(tree / "a.py", "x = kvi001_here\n")
    write(tree / "b.py", "y = 1\n")
    result = run("check")
    assert result.status == 2
    assert result.err == "b.py: error: internal error: RuntimeError: boom\n"
    assert result.codes == ["KVI001"]


def test_unexpected_exception_outside_files_is_one_line_exit_2(tree, run, monkeypatch):
    from lint_plugin.cli import check

    def broken_plan(args):
        raise RuntimeError("unexpected")

    monkeypatch.setattr(check, "load_plan", broken_plan)
    result = run("check")
    assert result.status == 2
    expected = "draft-kv-lint: error: internal error: RuntimeError: unexpected\n"
    assert result.err == expected


def test_no_python_files_warns_and_exits_0(tree, run, fake_engine):
    (tree / "empty").mkdir()
    result = run("check", "empty")
    assert result.status == 0
    assert "No Python files found" in result.err


# --- selection ---------------------------------------------------------------------

ALL_MARKERS = "a = kvi001_here\nb = kvi002_here\nc = kvi003_here\nd = kvi004_here\n"


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ((), ["KVI001", "KVI002", "KVI003", "KVI004"]),
        (("--select", "KVI001"), ["KVI001"]),
        (("--select", "KVI001,KVI003"), ["KVI001", "KVI003"]),
        (("--select", "KVI001", "--select", "KVI004"), ["KVI001", "KVI004"]),
        (("--select", "KVI"), ["KVI001", "KVI002", "KVI003", "KVI004"]),
        (("--select", "KVI00"), ["KVI001", "KVI002", "KVI003", "KVI004"]),
        (("--select", "ALL", "--ignore", "KVI002"), ["KVI001", "KVI003", "KVI004"]),
        (("--ignore", "KVI00"), []),
        (("--ignore", "KVI", "--extend-select", "KVI003"), ["KVI003"]),
        (("--select", "KVI", "--ignore", "KVI003"), ["KVI001", "KVI002", "KVI004"]),
        # Codes are upper case: `--select kvi002` is a usage error (test_cli_messages).
    ],
)
def test_select_ignore_and_prefixes(tree, run, fake_engine, options, expected):
    write(tree / "a.py", ALL_MARKERS)
    result = run("check", *options)
    assert result.codes == expected
    assert result.status == (1 if expected else 0)


@pytest.mark.parametrize("option", ["--select", "--ignore", "--extend-select"])
def test_unknown_selector_is_a_usage_error(tree, run, fake_engine, option):
    write(tree / "a.py", ALL_MARKERS)
    result = run("check", option, "KVX9")
    assert result.status == 2
    *usage, error = result.err.splitlines()
    assert usage[0].startswith("usage: draft-kv-lint check ")
    assert error.startswith("draft-kv-lint check: error: ")
    assert "unknown rule selector 'KVX9'" in error


def test_per_file_ignores_on_command_line(tree, run, fake_engine):
    write(tree / "pkg" / "a.py", ALL_MARKERS)
    write(tree / "b.py", ALL_MARKERS)
    result = run("check", "--per-file-ignores", "pkg/*:KVI001,KVI002")
    assert result.codes == ["KVI001", "KVI002", "KVI003", "KVI004", "KVI003", "KVI004"]
    assert all(line.startswith("b.py") for line in result.out.splitlines()[:4])


# --- configuration -----------------------------------------------------------------


def pyproject(tree: Path, body: str) -> Path:
    table = textwrap.dedent(body).strip()
    return write(tree / "pyproject.toml", f"[tool.draft-kv-lint]\n{table}\n")


@pytest.mark.parametrize(
    ("config", "options", "expected"),
    [
        ('select = ["KVI001"]', (), ["KVI001"]),
        ('ignore = ["KVI00"]', (), []),
        ('select = ["KVI001"]\nextend-select = ["KVI004"]', (), ["KVI001", "KVI004"]),
        # the command line beats the configuration
        ('select = ["KVI001"]', ("--select", "KVI002"), ["KVI002"]),
        ('ignore = ["KVI002"]', ("--select", "KVI002"), ["KVI002"]),
        ('select = ["KVI001", "KVI002"]', ("--ignore", "KVI002"), ["KVI001"]),
        ('ignore = ["KVI"]', ("--extend-select", "KVI004"), ["KVI004"]),
        (
            'per-file-ignores = { "a.py" = ["KVI001", "KVI003"] }',
            (),
            ["KVI002", "KVI004"],
        ),
        (
            'per-file-ignores = { "a.py" = ["KVI001"] }',
            ("--per-file-ignores", "a.py:KVI004"),
            ["KVI001", "KVI002", "KVI003"],
        ),
    ],
)
def test_config_selection_and_command_line_precedence(
    tree, run, fake_engine, config, options, expected
):
    pyproject(tree, config)
    write(tree / "a.py", ALL_MARKERS)
    result = run("check", *options)
    assert result.codes == expected


def test_config_found_upward_from_a_subfolder(tree, run, fake_engine, monkeypatch):
    pyproject(tree, 'select = ["KVI003"]\nexclude = ["generated"]')
    write(tree / "src" / "a.py", ALL_MARKERS)
    write(tree / "src" / "generated" / "g.py", ALL_MARKERS)
    monkeypatch.chdir(tree / "src")
    result = run("check")
    assert result.out.splitlines()[0] == "a.py:3:5: KVI003 marker kvi003_here"
    assert result.codes == ["KVI003"]


def test_pyproject_without_our_table_is_passed_over(tree, run, fake_engine):
    pyproject(tree, 'select = ["KVI002"]')
    write(tree / "sub" / "pyproject.toml", '[project]\nname = "sub"\n')
    write(tree / "sub" / "a.py", ALL_MARKERS)
    result = run("check", "sub")
    assert result.codes == ["KVI002"]


def test_output_format_from_config(tree, run, fake_engine):
    pyproject(tree, 'output-format = "json"')
    write(tree / "a.py", "x = kvi001_here\n")
    result = run("check")
    assert [item["code"] for item in json.loads(result.out)] == ["KVI001"]


def test_no_config_ignores_pyproject(tree, run, fake_engine):
    pyproject(tree, 'select = ["KVI001"]')
    write(tree / "a.py", ALL_MARKERS)
    assert len(run("check", "--no-config").codes) == 4


def test_explicit_config_file(tree, run, fake_engine):
    write(
        tree / "conf" / "pyproject.toml", '[tool.draft-kv-lint]\nselect = ["KVI004"]\n'
    )
    write(tree / "a.py", ALL_MARKERS)
    assert run("check", "--config", "conf/pyproject.toml").codes == ["KVI004"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('selec = ["KVI001"]', "unknown key 'selec'"),
        ('select = "KVI001"', "select must be a list of strings"),
        ("ignore = [1]", "ignore must be a list of strings"),
        ('per-file-ignores = ["a.py"]', "per-file-ignores must be a table"),
        ('output-format = "xml"', "output-format must be one of"),
        ("force-exclude = 1", "force-exclude must be true or false"),
        ('select = ["KVX"]', "unknown rule selector 'KVX'"),
        ("select = [", "invalid TOML"),
    ],
)
def test_bad_config_is_one_line_naming_the_file_exit_2(
    tree, run, fake_engine, body, expected
):
    """Each file the configuration governs is one line naming it; none of them
    is checked, and the run exits 2."""
    path = pyproject(tree, body)
    write(tree / "a.py", ALL_MARKERS)
    result = run("check")
    assert result.status == 2
    assert ": KVI" not in result.out and "All checks passed" not in result.out
    assert result.err.count("\n") == 1
    assert result.err.startswith("a.py: error: skipped, its configuration")
    assert str(path) in result.err
    assert expected in result.err


# --- noqa ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "reported"),
    [
        ("x = kvi001_here + kvi002_here  # noqa", []),
        ("x = kvi001_here + kvi002_here  # NOQA", []),
        # flake8s grammar: no space after the hash is no directive, codes are
        # case-sensitive, and the line is searched as text, strings included.
        ("x = kvi001_here + kvi002_here  #noqa", ["KVI001", "KVI002"]),
        ("x = kvi001_here + kvi002_here  # noqa: KVI001", ["KVI002"]),
        ("x = kvi001_here + kvi002_here  # noqa:KVI001,KVI002", []),
        ("x = kvi001_here + kvi002_here  # noqa: KVI001 KVI002", []),
        ("x = kvi001_here + kvi002_here  # noqa: KVI001, KVI002", []),
        (
            "x = kvi001_here + kvi002_here  # NoQA: kvi002",
            ["KVI001", "KVI002", "KVI100"],
        ),
        ("x = kvi001_here + kvi002_here  # noqa: KVI00", []),
        (
            "x = kvi001_here + kvi002_here  # noqa: KVI003",
            ["KVI001", "KVI002", "KVI100"],
        ),
        ("x = kvi001_here + kvi002_here  # type: ignore # noqa: KVI002", ["KVI001"]),
        ('x = kvi001_here + kvi002_here + len("# noqa")', []),
    ],
)
def test_noqa_forms(tree, run, fake_engine, line, reported):
    write(tree / "a.py", line + "\n")
    result = run("check")
    assert result.codes == reported
    assert result.status == (1 if reported else 0)


def test_noqa_applies_to_the_findings_row_only(tree, run, fake_engine):
    write(tree / "a.py", "x = kvi001_here  # noqa\ny = kvi001_here\n")
    result = run("check")
    assert result.out.splitlines()[0] == "a.py:2:5: KVI001 [*] marker kvi001_here"
    assert result.codes == ["KVI001"]


@pytest.mark.parametrize(
    ("directive", "reported"),
    [
        ("# flake8: noqa", []),
        ("# ruff: noqa", []),
        ("# FLAKE8: NOQA", []),
        ("# ruff: noqa: KVI001, KVI003", ["KVI002", "KVI004"]),
        ("x = 0  # flake8: noqa", ["KVI001", "KVI002", "KVI003", "KVI004"]),
    ],
)
def test_file_level_noqa(tree, run, fake_engine, directive, reported):
    write(tree / "a.py", f"{directive}\n{ALL_MARKERS}")
    assert run("check").codes == reported


def test_noqa_never_hides_a_syntax_error(tree, run, fake_engine):
    write(tree / "a.py", "# flake8: noqa\ndef f(:  # noqa\n")
    result = run("check", "--ignore", "KVI")
    assert result.codes == ["E999"]
    assert result.status == 1


# --- bad input -------------------------------------------------------------------


def test_syntax_error_is_e999_and_other_files_are_checked_real_engine(tree, run):
    """Real engine: E999 for the broken file, KVI001 for the good one."""
    write(tree / "broken.py", "def f(:\n    n = seq_lens_sum * self.topk + bs * i\n")
    write(tree / "good.py", REAL_KVI001)
    result = run("check")
    assert result.status == 1
    assert result.codes == ["E999", "KVI001"]
    assert result.out.startswith("broken.py:1:")
    assert "good.py:1:5: KVI001 [*] " in result.out


def test_non_utf8_file_is_one_clear_line_and_others_are_checked_real_engine(tree, run):
    """A file Python refuses for its encoding is its syntax error, E999."""
    write(tree / "latin1.py", "x = 'caf\xe9'  # topk\n".encode("latin-1"))
    write(tree / "good.py", REAL_KVI001)
    result = run("check")
    assert result.status == 1
    assert result.err == ""
    assert result.codes == ["KVI001", "E999"]
    assert (
        "latin1.py:1:9: E999 SyntaxError: not valid UTF-8 and no encoding declared "
        "(byte 0xe9 at offset 8)"
    ) in result.out
    assert "Found 2 errors." in result.out


def test_broken_symlink_and_missing_path_reported_others_checked(
    tree, run, fake_engine
):
    write(tree / "good.py", "x = kvi001_here\n")
    os.symlink(tree / "nowhere.py", tree / "dangling.py")
    result = run("check", ".", "missing.py")
    assert result.status == 1
    assert result.err.splitlines() == [
        f"dangling.py: error: broken symbolic link (points to '{tree / 'nowhere.py'}')",
        "missing.py: error: No such file or directory",
    ]
    assert result.codes == ["KVI001"]


def test_file_errors_alone_exit_1_and_exit_zero_makes_it_0(tree, run, fake_engine):
    assert run("check", "missing.py").status == 1
    assert run("check", "missing.py", "--exit-zero").status == 0


def test_unreadable_file_is_reported_and_others_checked(
    tree, run, fake_engine, monkeypatch
):
    """Tests run as root, where chmod 000 does not stop reading: simulate EACCES."""
    import builtins

    real_open = builtins.open

    def guarded_open(file, *args, **kwargs):
        if str(file).endswith("secret.py"):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    write(tree / "secret.py", "x = kvi001_here\n")
    write(tree / "good.py", "x = kvi002_here\n")
    monkeypatch.setattr(builtins, "open", guarded_open)
    result = run("check")
    assert result.err == "secret.py: error: Permission denied\n"
    assert result.codes == ["KVI002"]


def test_unreadable_folder_is_reported_and_others_checked(
    tree, run, fake_engine, monkeypatch
):
    """As root, chmod cannot make a folder unreadable: make its listing fail."""
    real_scandir = os.scandir

    def guarded_scandir(path="."):
        if os.path.basename(os.fspath(path)) == "locked":
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    write(tree / "locked" / "hidden.py", "x = kvi001_here\n")
    write(tree / "open.py", "x = kvi002_here\n")
    monkeypatch.setattr(os, "scandir", guarded_scandir)
    result = run("check")
    assert result.err == "locked: error: Permission denied\n"
    assert result.codes == ["KVI002"]
    assert result.status == 1


def test_folder_named_like_a_module_is_walked_not_read(tree, run, fake_engine):
    write(tree / "pkg.py" / "inner.py", "x = kvi004_here\n")
    result = run("check")
    assert result.err == ""
    assert result.out.startswith(os.path.join("pkg.py", "inner.py") + ":1:5: KVI004")


def test_file_errors_go_to_stderr_in_every_format(tree, run, fake_engine):
    write(tree / "a.py", "x = kvi001_here\n")
    for output_format in ("text", "json", "github", "sarif"):
        result = run("check", ".", "missing.py", "--output-format", output_format)
        assert result.err == "missing.py: error: No such file or directory\n"
        if output_format in ("json", "sarif"):
            json.loads(result.out)  # stdout stays machine-readable


# --- discovery ------------------------------------------------------------------


def test_skipped_folders_are_not_walked(tree, run, fake_engine):
    marker = "x = kvi001_here\n"
    write(tree / "pkg" / "mod.py", marker)
    write(tree / "pkg" / "stub.pyi", marker)
    write(tree / "pkg" / "notes.txt", marker)
    for folder in (".git", ".hg", "build", "dist", "__pycache__", "x.egg-info", ".tox"):
        write(tree / folder / "m.py", marker)
    for folder in ("node_modules", ".mypy_cache", ".ruff_cache", ".cache"):
        write(tree / "pkg" / folder / "m.py", marker)
    write(tree / ".venv" / "pyvenv.cfg", "home = /usr\n")
    write(tree / ".venv" / "lib" / "m.py", marker)
    write(tree / "myenv" / "pyvenv.cfg", "home = /usr\n")  # any name with pyvenv.cfg
    write(tree / "myenv" / "m.py", marker)
    write(tree / "venv" / "bin" / "activate", "")  # old virtualenv layout
    write(tree / "venv" / "m.py", marker)
    write(tree / "env" / "m.py", marker)  # a package called env: checked
    result = run("check")
    checked = sorted(line.split(":")[0] for line in result.out.splitlines()[:-2])
    assert checked == sorted(
        [os.path.join("env", "m.py"), os.path.join("pkg", "mod.py"), "pkg/stub.pyi"]
    )


def test_the_root_is_walked_from_its_parent_whatever_its_name(
    tree, run, fake_engine, monkeypatch
):
    """Walked from a folder named like an excluded one (``build``), its parent
    named: no name excludes the root the patterns are relative to."""
    write(tree / "build" / "a.py", "x = kvi001_here\n")
    write(tree / "build" / "build" / "b.py", "x = kvi002_here\n")
    write(tree / "top.py", "x = kvi003_here\n")
    monkeypatch.chdir(tree / "build")
    result = run("check", "..")
    assert result.codes == ["KVI001", "KVI003"]


def test_explicit_file_in_skipped_folder_is_checked(tree, run, fake_engine):
    write(tree / "build" / "gen.py", "x = kvi001_here\n")
    assert run("check", "build/gen.py").codes == ["KVI001"]


def test_config_exclude_applies_to_discovered_not_explicit(tree, run, fake_engine):
    pyproject(tree, 'exclude = ["fixtures", "tests/data/*"]')
    write(tree / "fixtures" / "f.py", "x = kvi001_here\n")
    write(tree / "tests" / "data" / "d.py", "x = kvi002_here\n")
    write(tree / "tests" / "t.py", "x = kvi003_here\n")
    assert run("check").codes == ["KVI003"]
    assert run("check", "fixtures/f.py").codes == ["KVI001"]
    assert run("check", "fixtures/f.py", "--force-exclude").codes == []


def test_config_include_narrows_discovery(tree, run, fake_engine):
    pyproject(tree, 'include = ["*_backend.py"]')
    write(tree / "attention" / "triton_backend.py", "x = kvi001_here\n")
    write(tree / "attention" / "utils.py", "x = kvi002_here\n")
    assert run("check").codes == ["KVI001"]


# --- --statistics ----------------------------------------------------------------


def test_statistics_counts_per_code_most_frequent_first(tree, run, fake_engine):
    write(tree / "a.py", "a = kvi003_here + kvi003_here\nb = kvi001_here\n")
    result = run("check", "--statistics")
    assert result.status == 1
    assert result.out.splitlines() == [
        "2\tKVI003\t[ ] unsized-draft-kv-indices-buffer",
        "1\tKVI001\t[*] inline-draft-kv-indices-used-len",
        "Found 3 errors.",
        "[*] 1 fixable with `draft-kv-lint fix` "
        "(2 unsafe fixes available with `draft-kv-lint fix --unsafe-fixes`).",
    ]


def test_statistics_json(tree, run, fake_engine):
    write(tree / "a.py", "a = kvi004_here\n")
    result = run("check", "--statistics", "--output-format", "json")
    assert json.loads(result.out) == [
        {
            "code": "KVI004",
            "name": "misplaced-draft-kv-indices-helper-argument",
            "count": 1,
            "fixable": False,
            "fixable_count": 0,
        }
    ]


# --- --add-noqa ------------------------------------------------------------------


def test_add_noqa_writes_directives_then_check_is_clean(tree, run, fake_engine):
    path = write(
        tree / "a.py",
        "a = kvi001_here + kvi002_here\r\n"
        "b = kvi003_here  # keep me\r\n"
        "c = kvi004_here  # noqa: KVI001\r\n"
        "d = 1\r\n",
    )
    result = run("check", "--add-noqa")
    assert result.status == 0
    assert result.err == "Added 3 noqa directives.\n"
    assert path.read_bytes() == (
        b"a = kvi001_here + kvi002_here  # noqa: KVI001, KVI002\r\n"
        b"b = kvi003_here  # keep me  # noqa: KVI003\r\n"
        b"c = kvi004_here  # noqa: KVI001, KVI004\r\n"
        b"d = 1\r\n"
    )
    second = run("check", "--add-noqa")
    assert second.err == "Added 0 noqa directives.\n"
    # --add-noqa never removes a code; the stale KVI001 of row 3 is KVI100's.
    assert run("check").codes == ["KVI100"]


def test_add_noqa_respects_selection_and_leaves_clean_files_alone(
    tree, run, fake_engine
):
    path = write(tree / "a.py", "a = kvi001_here + kvi002_here\n")
    clean = write(tree / "b.py", "b = 1\n")
    before = clean.stat().st_mtime_ns
    result = run("check", "--add-noqa", "--select", "KVI002")
    assert result.err == "Added 1 noqa directive.\n"
    assert path.read_text() == "a = kvi001_here + kvi002_here  # noqa: KVI002\n"
    assert clean.stat().st_mtime_ns == before


def test_add_noqa_real_engine(tree, run):
    """Real engine: the KVI001 snippet gets its directive and is then clean."""
    path = write(tree / "a.py", REAL_KVI001)
    assert run("check", "--add-noqa").err == "Added 1 noqa directive.\n"
    assert path.read_text() == REAL_KVI001.rstrip("\n") + "  # noqa: KVI001\n"
    assert run("check").status == 0


# --- real engine, rule, version, entry point -----------------------------------------


def test_real_engine_snippet_reports_kvi001_at_1_5(tree, run):
    write(tree / "a.py", REAL_KVI001)
    result = run("check", "a.py")
    assert result.status == 1
    assert result.out.splitlines()[0].startswith("a.py:1:5: KVI001 [*] ")
    assert result.codes == ["KVI001"]


@pytest.mark.parametrize("code", ["KVI001", "KVI002", "KVI003", "KVI004"])
def test_rule_prints_the_rule_docs(run, code):
    from lint_plugin.rules import RULES

    result = run("rule", code)  # `rule kvi003` is a usage error (test_cli_messages)
    assert (result.status, result.out) == (0, RULES[code].render())


def test_rule_all_prints_every_rule(run):
    from lint_plugin.rules import RULES

    result = run("rule", "--all")
    assert result.status == 0
    for rule in RULES.values():
        assert rule.render() in result.out


@pytest.mark.parametrize(
    "argv", [("rule", "KVI999"), ("rule",), ("rule", "KVI001", "--all")]
)
def test_rule_misuse_is_exit_2(run, argv):
    result = run(*argv)
    assert result.status == 2
    assert result.err.startswith("usage: draft-kv-lint rule ")
    assert result.err.splitlines()[-1].startswith("draft-kv-lint rule: error: ")


def test_version(run):
    from lint_plugin import __version__

    result = run("--version")
    assert (result.status, result.out) == (0, f"draft-kv-lint {__version__}\n")


def test_entry_point_and_lazy_imports(tmp_path):
    """The installed command runs, and a text check imports no json, TOML parser,
    libcst or torch (startup cost on every commit), even next to a pyproject.toml
    that has no [tool.draft-kv-lint] table."""
    write(tmp_path / "a.py", REAL_KVI001)
    write(tmp_path / "pyproject.toml", '[project]\nname = "x"  # draft-kv-lint\n')
    body = "from lint_plugin.cli import main\n_result = main(['check', 'a.py'])"
    heavy = ("json", "tomllib", "tomli", "libcst", "torch")
    assert imported_by(body, heavy, cwd=tmp_path) == ([], "1")
    # The script of the interpreter running the tests: a `PATH` may lead to
    # another environment's (a base interpreter's stale install).
    script = Path(sys.executable).with_name("draft-kv-lint")
    command = subprocess.run(
        [
            str(script) if script.exists() else "draft-kv-lint",
            "check",
            "a.py",
            "--output-format",
            "json",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert command.returncode == 1
    assert json.loads(command.stdout)[0]["code"] == "KVI001"


def _package_modules() -> tuple[str, ...]:
    """Every module of the package, by its dotted name."""
    root = Path(__file__).resolve().parents[2]
    found = []
    for folder, package in (
        ("lint_plugin", "lint_plugin"),
        ("rules", "lint_plugin.rules"),
    ):
        for path in (root / folder).rglob("*.py"):
            parts = path.relative_to(root / folder).with_suffix("").parts
            found.append(".".join((package, *parts)).removesuffix(".__init__"))
    return tuple(sorted(found))


# What a run over files no rule can match may import of the package: the front
# end, the byte test with the rules' declarations and the words they are made
# of (the contracts their NEEDS read). No parser, no walk, nothing the rules
# decide with.
NO_MATCH_IMPORTS = re.compile(
    r"lint_plugin(\.(cli|config|check|noqa|output)(\..*)?"
    r"|\.(rules|engine|algebra)"
    r"|\.rules\.(kvi\d+_\w+|_rule)"
    r"|\.engine\.(vocabulary|settings|source)"
    r"|\.algebra\.helpers"
    r"|\.(prefilter|codes|records|findings|printable|errors|lazy|roles|allocators|contracts"
    r"|source_files|held_signals))?"
)


@pytest.mark.parametrize("cache", ["--no-cache", "--cache-dir=cache", "--statistics"])
def test_files_no_rule_can_match_never_import_the_engine(tmp_path, cache):
    """A commit that touches no backend: the byte test dismisses its files, and
    nothing of the engine but the rules' declarations and their words is
    imported (neither ``ast`` nor the walk, the flow, the algebra), with the
    cache or without, or for --statistics (the engine's notes, never cached).
    A file that can match imports them (the probe sees imports)."""
    write(tmp_path / "a.py", "x = 1\n")
    write(tmp_path / "b.py", REAL_KVI001)
    watch = (*_package_modules(), "ast")
    engine = (
        "ast",
        "lint_plugin.engine.analysis",
        "lint_plugin.engine.flow.row_sizing",
    )
    for name, status in (("a.py", "0"), ("b.py", "1")):
        body = f"from lint_plugin.cli import main\n_result = main(['check', {cache!r}, {name!r}])"
        found, result = imported_by(body, watch, cwd=tmp_path)
        assert result == status
        heavy = [m for m in found if not NO_MATCH_IMPORTS.fullmatch(m)]
        if name == "a.py":
            assert heavy == [], heavy
            assert "lint_plugin.rules.kvi003_unsized_draft_buffer" in found
        else:
            assert set(engine) <= set(heavy), heavy


@pytest.mark.parametrize("files", [["b.py"], ["a.py", "b.py"], ["b.py", "c.py"]])
def test_a_warm_run_over_files_it_knows_asks_no_byte_test(tmp_path, files):
    """Only a file the byte test let through is ever stored, so a stored entry
    answers for it: a warm run over files the cache knows neither runs the byte
    test nor builds the plan it needs (the rules' declarations). A file the cache does not know is asked, and answered as before."""
    write(tmp_path / "a.py", "x = 1\n")
    write(tmp_path / "b.py", REAL_KVI001)
    write(tmp_path / "c.py", "y = seq_lens_sum * self.topk\n")  # a candidate
    body = (
        "import contextlib, io, os\n"
        "os.environ.pop('DRAFT_KV_LINT_NO_CACHE', None)\n"
        "from lint_plugin.cli import main\n"
        "from lint_plugin.engine import vocabulary\n"
        "runs = []\n"
        f"for names in (['b.py'], {files!r}):\n"
        "    out = io.StringIO()\n"
        "    with contextlib.redirect_stdout(out):\n"
        "        code = main(['check', '--no-config', '--cache-dir=cache', *names])\n"
        "    runs.append((code, out.getvalue(), vocabulary._plan.cache_info().misses))\n"
        "    vocabulary._plan.cache_clear()\n"
        "_result = runs"
    )
    _, result = imported_by(body, (), cwd=tmp_path)
    (first, second) = ast.literal_eval(result)
    assert first[0] == 1 and "KVI001" in first[1] and first[2] == 1  # cold: asked
    # Warm: b.py's findings as before; the plan is built only for a file the
    # cache does not know (a.py, c.py).
    assert second[0] == 1 and first[1].splitlines()[0] in second[1]
    assert second[2] == (0 if files == ["b.py"] else 1)


OTHER_COMMANDS = tuple(
    f"lint_plugin.cli.{name}" for name in ("fix", "rule", "prove", "clean")
)


@pytest.mark.parametrize(
    ("argv", "imported"),
    [
        (["check", "a.py"], []),
        (["check", "--diff", "a.py"], ["lint_plugin.cli.fix"]),
        (["rule", "KVI001"], ["lint_plugin.cli.rule"]),
        # `-h` before the name, or no name: the top-level parser, every subcommand.
        (["-h"], list(OTHER_COMMANDS)),
        (["chek", "a.py"], list(OTHER_COMMANDS)),
    ],
)
def test_a_run_builds_only_its_subcommands_parser(tmp_path, argv, imported):
    """The other subcommands' modules are not imported (start-up on every commit);
    help and a misspelt subcommand still get them all."""
    write(tmp_path / "a.py", REAL_KVI001)
    body = (
        "import contextlib, io\n"
        "from lint_plugin.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), "
        "contextlib.redirect_stderr(io.StringIO()):\n"
        f"    try:\n        _result = main({argv!r})\n"
        "    except SystemExit as exit_:\n        _result = exit_.code"
    )
    assert imported_by(body, OTHER_COMMANDS, cwd=tmp_path)[0] == sorted(imported)


def test_help_and_a_misspelt_subcommand_list_every_subcommand(run):
    names = ("check", "fix", "rule", "prove", "clean")
    helped = run("--help")
    assert helped.status == 0
    rows = helped.out.splitlines()
    listed = [row.split()[0] for row in rows if row[:4] == "    " and row[4] != " "]
    assert listed == list(names)
    misspelt = run("chek", "a.py")
    assert misspelt.status == 2
    choices = "(choose from " + ", ".join(repr(n) for n in names) + ")"
    assert misspelt.err.splitlines()[-1].endswith(choices)


def test_this_repository_checks_clean_with_its_own_config(run, monkeypatch):
    """Real engine: our own code is clean; fixtures/ and tests/ are excluded by the
    [tool.draft-kv-lint] table of this repository's pyproject.toml."""
    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    result = run("check")
    assert (result.status, result.out, result.err) == (0, "All checks passed!\n", "")


def test_helpers_module_from_configuration_and_command_line(
    tmp_path, monkeypatch, run
) -> None:
    """The real engine: an import from the configured helpers module is trusted,
    the same import under the default setting is KVI005; the flag beats the table."""
    (tmp_path / "backend.py").write_text(
        "from mypkg.sizes import draft_kv_indices_buffer_width\n"
    )
    monkeypatch.chdir(tmp_path)
    assert run("check", "backend.py").codes == ["KVI005"]
    (tmp_path / "pyproject.toml").write_text(
        '[tool.draft-kv-lint]\nhelpers-module = "mypkg.sizes"\n'
    )
    assert run("check", "backend.py").status == 0
    flagged = run("check", "--helpers-module", "other.mod", "backend.py")
    assert flagged.codes == ["KVI005"]
    (tmp_path / "pyproject.toml").write_text(
        '[tool.draft-kv-lint]\nhelpers-module = "not a module"\n'
    )
    bad = run("check", "backend.py")
    assert bad.status == 2
    assert "helpers-module must be a dotted module name" in bad.err


def test_the_launch_rule_is_on_by_default(tmp_path, monkeypatch, run) -> None:
    """KVI006 is in the default selection and in every prefix of its code, as
    any other rule; a team that sizes its rows instead of guarding ignores it in
    its configuration, and the command line still beats that."""
    from lint_plugin.rules import RULES

    (tmp_path / "backend.py").write_text(RULES["KVI006"].invalid[0].code)
    monkeypatch.chdir(tmp_path)
    for flags in ((), ("--select", "KVI"), ("--select", "KVI00"), ("--select", "ALL")):
        found = run("check", "--no-config", *flags, "backend.py")
        assert (found.status, found.codes) == (1, ["KVI006"]), flags
    assert run("check", "--no-config", "--ignore", "KVI006", "backend.py").status == 0
    selected = run("check", "--no-config", "--select", "KVI001", "backend.py")
    assert selected.status == 0
    (tmp_path / "pyproject.toml").write_text(
        '[tool.draft-kv-lint]\nignore = ["KVI006"]\n'
    )
    assert run("check", "backend.py").status == 0
    assert run("check", "--extend-select", "KVI006", "backend.py").codes == ["KVI006"]
    (tmp_path / "pyproject.toml").write_text(
        '[tool.draft-kv-lint.per-file-ignores]\n"backend.py" = ["KVI006"]\n'
    )
    assert run("check", "backend.py").status == 0


def test_the_launch_rule_is_computed_once_for_every_selection(
    tmp_path, monkeypatch, run
) -> None:
    """KVI006 is computed for every file that may hold a launch, whatever is
    selected; a directive about it is used, so no KVI100 (``# noqa: KVI00``
    included); and a cache entry holds the file's findings before selection:
    an entry made by a run that ignores the rule answers a run that selects it."""
    from lint_plugin import linter
    from lint_plugin.rules import RULES

    computed: list[str] = []

    def counted(code, decide):
        def wrapper(checker):
            computed.append(checker.path)
            return decide(checker)

        return (code, wrapper if code == "KVI006" else decide)

    monkeypatch.setattr(
        linter, "DECISIONS", tuple(counted(c, d) for c, d in linter.DECISIONS)
    )
    code = RULES["KVI006"].invalid[0].code
    (tmp_path / "backend.py").write_text(code)
    monkeypatch.chdir(tmp_path)
    found = run("check", "--no-config", "--no-cache", "backend.py")
    assert (found.codes, computed) == (["KVI006"], ["backend.py"])
    computed.clear()
    ignored = run(
        "check", "--no-config", "--no-cache", "--ignore", "KVI006", "backend.py"
    )
    assert (ignored.status, computed) == (0, ["backend.py"])
    # The same file with a directive about the rule: the directive is used (no
    # KVI100), on the launch statement's last row (its closing bracket).
    lines = code.splitlines()
    last = max(i for i, line in enumerate(lines) if line == "        )")
    for directive in ("KVI006", "KVI00", "KVI"):  # a code's prefix is about it too
        named = [
            *lines[:last],
            f"{lines[last]}  # noqa: {directive}",
            *lines[last + 1 :],
        ]
        (tmp_path / "named.py").write_text("\n".join(named) + "\n")
        for flags in ((), ("--ignore", "KVI006")):
            computed.clear()
            quiet = run("check", "--no-config", "--no-cache", *flags, "named.py")
            assert (quiet.status, computed) == (0, ["named.py"]), (directive, flags)
    # A cache filled by a run that ignores the rule, then a run selecting it.
    monkeypatch.delenv("DRAFT_KV_LINT_NO_CACHE", raising=False)
    computed.clear()
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert (
        run("check", "--no-config", *cache, "--ignore", "KVI006", "backend.py").status
        == 0
    )
    assert computed == ["backend.py"]
    found = run("check", "--no-config", *cache, "backend.py")
    assert (found.codes, computed) == (["KVI006"], ["backend.py"])  # from the cache


def test_a_crash_is_never_summarised_as_all_checks_passed(tree, run, monkeypatch):
    from lint_plugin import linter

    def explode(text: str, path: str, settings=None, **engine_options):
        raise RuntimeError("boom")

    monkeypatch.setattr(linter, "lint_source", explode)
    monkeypatch.setattr(linter, "lint_text", explode)
    monkeypatch.setattr(pipeline, "could_match", lambda data: True)
    write(tree / "b.py", "y = 1\n")
    result = run("check")
    assert result.status == 2
    assert "All checks passed" not in result.out
    assert result.out == "Found 1 error.\n"  # the file it could not check
