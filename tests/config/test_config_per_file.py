"""Configuration per file, as ruff resolves it: the nearest table for each file,
``--config`` for all, ``--show-settings``; gitignore-style globs; ``.gitignore``
honoured while walking; the skip list configurable."""

from __future__ import annotations

from itertools import permutations
from pathlib import Path

import pytest
from import_probe import imported_by

pytest_plugins = ("cli_helpers",)

ALL = "a = kvi001_here\nb = kvi002_here\nc = kvi003_here\nd = kvi004_here\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def table(path: Path, body: str) -> Path:
    return write(path, f"[tool.draft-kv-lint]\n{body}\n")


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def findings(result) -> list[str]:
    return sorted(line for line in result.out.splitlines() if ": KVI" in line)


@pytest.fixture
def nested(tree: Path) -> Path:
    """SGLang's shape: no table at the root, one in python/, another in test/."""
    table(tree / "python" / "pyproject.toml", 'select = ["KVI001", "KVI003"]')
    write(tree / "python" / "sglang" / "a.py", ALL)
    write(tree / "test" / "pyproject.toml", '[project]\nname = "tests"\n')
    write(tree / "test" / ".draft-kv-lint.toml", 'select = ["KVI002"]\n')
    write(tree / "test" / "unit" / "b.py", ALL)
    write(tree / "c.py", ALL)
    return tree


def test_each_file_uses_its_nearest_configuration(nested, run, fake_engine):
    result = run("check", "python/sglang/a.py", "test/unit/b.py", "c.py")
    assert findings(result) == [
        "c.py:1:5: KVI001 [*] marker kvi001_here",
        "c.py:2:5: KVI002 [*] marker kvi002_here",
        "c.py:3:5: KVI003 marker kvi003_here",
        "c.py:4:5: KVI004 marker kvi004_here",
        "python/sglang/a.py:1:5: KVI001 [*] marker kvi001_here",
        "python/sglang/a.py:3:5: KVI003 marker kvi003_here",
        "test/unit/b.py:2:5: KVI002 [*] marker kvi002_here",
    ]


@pytest.mark.parametrize(
    "order", list(permutations(["python/sglang/a.py", "test/unit/b.py", "c.py"]))
)
def test_the_order_of_the_arguments_changes_nothing(nested, run, fake_engine, order):
    reference = run("check", "python", "test", "c.py")
    assert findings(run("check", *order)) == findings(reference)


def test_config_option_applies_one_file_to_all(nested, run, fake_engine):
    result = run("check", "--config", "test/.draft-kv-lint.toml", "python", "c.py")
    assert {line.split()[1] for line in findings(result)} == {"KVI002"}


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("kvi.toml", 'select = ["KVI002"]\n'),  # ruff.toml's shape, any name
        ("ci.toml", '[tool.draft-kv-lint]\nselect = ["KVI002"]\n'),
        (
            "pyproject.toml",
            '[project]\nname = "x"\n[tool.draft-kv-lint]\nselect = ["KVI002"]\n',
        ),
        (".draft-kv-lint.toml", 'select = ["KVI002"]\n'),
        ("inline.toml", '[tool]\ndraft-kv-lint = { select = ["KVI002"] }\n'),
        ("dotted.toml", 'tool.draft-kv-lint.select = ["KVI002"]\n'),
    ],
)
def test_config_option_reads_either_shape_whatever_the_name(
    nested, run, fake_engine, name, body
):
    write(nested / "conf" / name, body)
    result = run("check", "--config", f"conf/{name}", "python", "c.py")
    assert result.status == 1
    assert {line.split()[1] for line in findings(result)} == {"KVI002"}


def test_config_option_names_a_key_it_does_not_know(nested, run, fake_engine):
    # Our key beside another tool's table: neither shape, and it says why.
    write(nested / "conf" / "mixed.toml", 'select = ["KVI002"]\n[tool.ruff]\nx = 1\n')
    result = run("check", "--config", "conf/mixed.toml", "python", "c.py")
    assert result.status == 2
    assert "conf/mixed.toml: " in result.err and "unknown key 'tool'" in result.err


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("pyproject.toml", '[project]\nname = "x"\n'),  # no table of ours
        ("kvi.toml", ""),
        ("kvi.toml", "# only a comment\n"),
        ("ruff.toml", "[tool.ruff]\nline-length = 88\n"),
    ],
)
def test_config_option_naming_a_file_that_sets_nothing_is_an_error(
    nested, run, fake_engine, name, body
):
    write(nested / "conf" / name, body)
    result = run("check", "--config", f"conf/{name}", "python", "c.py")
    assert result.status == 2
    assert result.out == ""
    assert result.err == (
        f"draft-kv-lint: error: conf/{name}: --config: no [tool.draft-kv-lint] "
        "table and no top-level draft-kv-lint keys: nothing in it would be used\n"
    )


def test_show_settings_names_the_file_that_applies(nested, run, fake_engine):
    result = run("check", "--show-settings", "python/sglang/a.py")
    assert result.status == 0
    lines = result.out.splitlines()
    assert f"Settings path: {nested / 'python' / 'pyproject.toml'}" in lines
    assert "reported = ['KVI001', 'KVI003']" in lines
    other = run("check", "--show-settings", "test/unit/b.py").out.splitlines()
    assert f"Settings path: {nested / 'test' / '.draft-kv-lint.toml'}" in other


def test_a_bad_nested_configuration_stops_only_its_files(nested, run, fake_engine):
    """Reported for the files it governs; the others are still checked, and
    the run exits 2 once they are."""
    write(nested / "test" / ".draft-kv-lint.toml", 'select = ["KVX"]\n')
    result = run("check", "c.py", "test/unit/b.py")
    assert result.status == 2
    (line,) = result.err.splitlines()
    assert line.startswith("test/unit/b.py: error: skipped, its configuration")
    assert ".draft-kv-lint.toml" in line and "KVX" in line
    assert "c.py:1:5: KVI001" in result.out


SITE = "def f(self, seq_lens_sum, bs, i):\n    return seq_lens_sum * self.topk + bs * (i + 1)\n"


def test_fix_leaves_the_files_of_a_bad_configuration_and_fixes_the_rest(tree, run):
    write(tree / "test" / ".draft-kv-lint.toml", "select = [\n")
    broken = write(tree / "test" / "b.py", SITE)
    good = write(tree / "c.py", SITE)
    result = run("fix", ".")
    assert result.status == 2
    (line,) = [line for line in result.err.splitlines() if "error" in line]
    assert line.startswith("test/b.py: error: skipped, its configuration")
    assert broken.read_text() == SITE
    assert "draft_kv_indices_used_len(" in good.read_text()


def test_an_invalid_pyproject_stops_no_other_project(tree, run, fake_engine):
    write(tree / "one" / "pyproject.toml", "[tool.draft-kv-lint]\nselect = [\n")
    write(tree / "one" / "a.py", ALL)
    write(
        tree / "two" / "pyproject.toml", '[tool.draft-kv-lint]\nselect = ["KVI001"]\n'
    )
    write(tree / "two" / "b.py", ALL)
    write(tree / "one" / "deeper" / "pyproject.toml", "[tool.draft-kv-lint]\n")
    write(tree / "one" / "deeper" / "c.py", ALL)
    result = run("check", ".")
    assert result.status == 2
    errors = [line for line in result.err.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith("one/a.py: error: skipped")
    assert "invalid TOML" in errors[0]
    assert findings(result) == [
        "one/deeper/c.py:1:5: KVI001 [*] marker kvi001_here",
        "one/deeper/c.py:2:5: KVI002 [*] marker kvi002_here",
        "one/deeper/c.py:3:5: KVI003 marker kvi003_here",
        "one/deeper/c.py:4:5: KVI004 marker kvi004_here",
        "two/b.py:1:5: KVI001 [*] marker kvi001_here",
    ]


# --- globs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "ignored_in"),
    [
        ("**/top.py", {"top.py", "pkg/top.py", "pkg/sub/top.py"}),
        ("top.py", {"top.py", "pkg/top.py", "pkg/sub/top.py"}),  # a bare name
        ("/top.py", {"top.py"}),  # anchored
        ("pkg/**/*.py", {"pkg/top.py", "pkg/sub/top.py", "pkg/sub/other.py"}),
        ("pkg/*.py", {"pkg/top.py"}),
        ("pkg/", {"pkg/top.py", "pkg/sub/top.py", "pkg/sub/other.py"}),
        ("!pkg/**", {"top.py"}),  # negated key: every file outside pkg/
        ("*.py", {"top.py", "pkg/top.py", "pkg/sub/top.py", "pkg/sub/other.py"}),
    ],
)
def test_per_file_ignores_keys_follow_ruff(tree, run, fake_engine, pattern, ignored_in):
    files = ["top.py", "pkg/top.py", "pkg/sub/top.py", "pkg/sub/other.py"]
    for name in files:
        write(tree / name, "x = kvi001_here\n")
    table(tree / "pyproject.toml", f'per-file-ignores = {{ "{pattern}" = ["KVI001"] }}')
    result = run("check")
    reported = {line.split(":")[0] for line in findings(result)}
    assert reported == set(files) - ignored_in


@pytest.mark.parametrize(
    ("body", "options", "walked"),
    [
        ("", (), {"a.py", "src/b.py"}),  # build/ and .cache/ skipped by default
        ("exclude = []", (), {"a.py", "src/b.py", "build/g.py", ".cache/c.py"}),
        ('extend-exclude = ["src"]', (), {"a.py"}),
        ('exclude = ["src/"]', (), {"a.py", "build/g.py", ".cache/c.py"}),
        ('exclude = ["*.py", "!a.py"]', (), {"a.py"}),  # "!" re-includes
        ("", ("--exclude", "a.py"), {"src/b.py", "build/g.py", ".cache/c.py"}),
        ("", ("--extend-exclude", "src/b.py"), {"a.py"}),
        ('extend-exclude = ["src"]', ("--extend-exclude", "a.py"), set()),
    ],
)
def test_exclusions(tree, run, fake_engine, body, options, walked):
    for name in ("a.py", "src/b.py", "build/g.py", ".cache/c.py"):
        write(tree / name, "x = kvi001_here\n")
    table(tree / "pyproject.toml", body)
    result = run("check", *options)
    assert {line.split(":")[0] for line in findings(result)} == walked


def test_gitignore_is_honoured_while_walking(tree, run, fake_engine):
    (tree / ".git").mkdir()
    write(tree / ".gitignore", "generated/\n*_pb2.py\n!keep_pb2.py\n")
    write(tree / "sub" / ".gitignore", "local.py\n")
    for name in ("a.py", "generated/g.py", "x_pb2.py", "keep_pb2.py", "sub/local.py"):
        write(tree / name, "x = kvi001_here\n")
    walked = {line.split(":")[0] for line in findings(run("check"))}
    assert walked == {"a.py", "keep_pb2.py"}
    everything = findings(run("check", "--no-respect-gitignore"))
    assert len(everything) == 5
    # Named on the command line, an ignored file is still checked (as in ruff).
    assert len(findings(run("check", "generated/g.py"))) == 1


def test_respect_gitignore_can_be_configured_off(tree, run, fake_engine):
    (tree / ".git").mkdir()
    write(tree / ".gitignore", "generated/\n")
    write(tree / "generated" / "g.py", "x = kvi001_here\n")
    table(tree / "pyproject.toml", "respect-gitignore = false")
    assert len(findings(run("check"))) == 1


def test_named_files_import_no_glob_library(tree):
    (tree / ".git").mkdir()
    write(tree / ".gitignore", "generated/\n")
    table(tree / "pyproject.toml", 'extend-exclude = ["fixtures"]')
    write(tree / "a.py", "x = 1\n")
    body = "from lint_plugin.cli import main\n_result = main(['check', 'a.py'])"
    # The table is read (tomllib), but no pattern needed pathspec.
    assert imported_by(body, ("pathspec", "tomllib"), cwd=tree) == (["tomllib"], "0")


def test_an_ignored_folder_named_explicitly_is_walked(tree, run, fake_engine):
    (tree / ".git").mkdir()
    write(tree / ".gitignore", ".cache/\n")
    write(tree / ".cache" / "pkg" / "a.py", "x = kvi001_here\n")
    write(tree / ".cache" / "pkg" / "build" / "b.py", "x = kvi001_here\n")
    assert findings(run("check")) == []
    walked = {line.split(":")[0] for line in findings(run("check", ".cache/pkg"))}
    assert walked == {".cache/pkg/a.py"}  # its build/ is still the default skip


def test_an_invalid_glob_in_the_table_is_a_usage_error(tree, run, fake_engine):
    table(tree / "pyproject.toml", 'extend-exclude = ["src/*", "\\\\"]')
    write(tree / "a.py", "x = kvi001_here\n")
    result = run("check")
    assert result.status == 2 and "extend-exclude: invalid glob" in result.err


def test_a_gitignore_line_git_cannot_read_is_skipped(tree, run, fake_engine):
    (tree / ".git").mkdir()
    write(tree / ".gitignore", "!\ngenerated/\n")
    write(tree / "generated" / "g.py", "x = kvi001_here\n")
    write(tree / "a.py", "x = kvi001_here\n")
    assert {line.split(":")[0] for line in findings(run("check"))} == {"a.py"}


@pytest.mark.parametrize(
    ("patterns", "checked"),
    [
        ('"fx"', ["fx/a.py", "fx/exp/b.py"]),  # a named folder is walked
        ('"fx", "fx/exp"', ["fx/a.py"]),  # ... and its own exclusions apply below it
        ('"fx/exp"', ["fx/a.py"]),
        ('"fx", "!fx/a.py"', ["fx/a.py", "fx/exp/b.py"]),
        ('"exp"', ["fx/a.py"]),
        ('"*.py"', []),
    ],
)
def test_exclusions_inside_a_named_folder(
    tmp_path, monkeypatch, run, fake_engine, patterns, checked
):
    (tmp_path / "fx" / "exp").mkdir(parents=True)
    (tmp_path / "fx" / "a.py").write_text("kvi001_here\n")
    (tmp_path / "fx" / "exp" / "b.py").write_text("kvi001_here\n")
    (tmp_path / "pyproject.toml").write_text(
        f"[tool.draft-kv-lint]\nextend-exclude = [{patterns}]\n"
    )
    monkeypatch.chdir(tmp_path)
    result = run("check", "fx")
    found = sorted(line.split(":")[0] for line in findings(result))
    assert found == checked
