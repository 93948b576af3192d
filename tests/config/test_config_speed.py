"""The configuration is found and read cheaply: validating a table's globs imports
no glob library when none could be invalid, and ``per-file-ignores`` keys are
compiled once, not once per file; the verdicts are pathspec's all the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from import_probe import imported_by

from lint_plugin.config import globs
from lint_plugin.config.globs import invalid_patterns, key_matches

pytest_plugins = ("cli_helpers",)


def _pathspec_invalid(patterns: tuple[str, ...]) -> list[str]:
    """The slow path alone: every pattern asked of pathspec."""
    return [p for p in patterns if not globs._valid(p.removeprefix("!") or "!")]


# Glob characters, the ones the fast path turns away, white space and a letter.
_PATTERN_CHARS = "ab/*?!.#-_ \\[]\t"


# pathspec hands `[[` on to `re`, which warns of nested sets to come.
@pytest.mark.filterwarnings("ignore::FutureWarning")
@given(st.lists(st.text(alphabet=_PATTERN_CHARS, max_size=8), max_size=4))
def test_invalid_patterns_agree_with_pathspec(patterns: list[str]) -> None:
    patterns_tuple = tuple(patterns)
    try:
        expected = _pathspec_invalid(patterns_tuple)
    except Exception as error:  # a bracket range `re` rejects: same error
        with pytest.raises(type(error)):
            invalid_patterns(patterns_tuple)
        return
    assert invalid_patterns(patterns_tuple) == expected


@pytest.mark.filterwarnings("ignore::FutureWarning")
@given(st.text(alphabet=_PATTERN_CHARS, max_size=8))
def test_a_surely_valid_pattern_is_one_pathspec_accepts(pattern: str) -> None:
    if globs._surely_valid(pattern):
        assert globs._valid(pattern)


@pytest.mark.parametrize(
    ("pattern", "bad"),
    [
        ("!", True),
        ("\\", True),
        ("a\\", True),
        ("!!", True),
        ("", True),
        ("fixtures/expected", False),
        ("!src/**/*.py", False),
        ("/top.py", False),
    ],
)
def test_invalid_patterns_examples(pattern: str, bad: bool) -> None:
    assert invalid_patterns(("fixtures", pattern)) == ([pattern] if bad else [])


def test_a_configuration_with_slashed_globs_imports_no_glob_library(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text(
        "[tool.draft-kv-lint]\n"
        'extend-exclude = ["fixtures", "fixtures/expected", "tests/**/data"]\n'
        'include = ["src/*.py"]\n'
    )
    (tmp_path / "a.py").write_text("x = 1\n")
    body = "from lint_plugin.cli import main\n_result = main(['check', 'a.py'])"
    # The table is read (tomllib) and validated, but no pattern needed pathspec.
    assert imported_by(body, ("pathspec", "tomllib"), cwd=tmp_path) == (
        ["tomllib"],
        "0",
    )


def test_an_invalid_slashed_glob_is_still_an_error(
    tmp_path, monkeypatch, run, fake_engine
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.draft-kv-lint]\nextend-exclude = ["src/*", "!"]\n'
    )
    (tmp_path / "a.py").write_text("x = 1\n")
    result = run("check", "a.py")
    assert result.status == 2
    assert "extend-exclude: invalid glob '!'" in result.err


def test_a_per_file_ignores_key_is_compiled_once(tmp_path: Path) -> None:
    root = str(tmp_path)
    first = globs._key_list("tests/*", root)
    assert key_matches("tests/*", str(tmp_path / "tests" / "a.py"), root)
    assert not key_matches("tests/*", str(tmp_path / "src" / "a.py"), root)
    assert key_matches("!tests/*", str(tmp_path / "src" / "a.py"), root)
    assert globs._key_list("tests/*", root) is first
