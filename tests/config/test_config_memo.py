"""A warm run reads its configuration's table without the TOML parser: the
table parsed from the same bytes is kept in the run's cache folder."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from import_probe import imported_by

from lint_plugin.config import memo

SITE = (
    "class XMultiStepDraftBackend:\n"
    "    def f(self, seq_lens_sum, bs, i):\n"
    "        return seq_lens_sum * self.topk + bs * (i + 1)\n"
)


def _project(tmp_path: Path, ignore: str = "") -> Path:
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.draft-kv-lint]\nignore = [{ignore}]\nextend-exclude = ["a/b"]\n'
    )
    (tmp_path / "m.py").write_text(SITE)
    return tmp_path


def _run(tmp_path: Path, *options: str) -> tuple[list[str], str]:
    """The TOML parser's import in a fresh interpreter, and the codes found."""
    body = (
        "import contextlib, io, os\n"
        "os.environ.pop('DRAFT_KV_LINT_NO_CACHE', None)\n"
        "from lint_plugin.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    main(['check', '--output-format', 'json', *{options!r}, 'm.py'])\n"
        "import json\n"
        "_result = sorted(f['code'] for f in json.loads(out.getvalue()))"
    )
    imported, result = imported_by(body, ("tomllib",), cwd=tmp_path)
    return imported, result


def test_a_warm_run_reads_the_kept_table(tmp_path: Path) -> None:
    project = _project(tmp_path)
    # The first run makes the cache folder, the second keeps the table there.
    assert _run(project) == (["tomllib"], "['KVI001']")
    assert _run(project) == (["tomllib"], "['KVI001']")
    assert _run(project) == ([], "['KVI001']")
    assert len(list((project / ".draft_kv_lint_cache" / "config").iterdir())) == 1


def test_an_edited_table_is_read_again(tmp_path: Path) -> None:
    project = _project(tmp_path)
    for _ in range(3):
        _run(project)
    _project(tmp_path, ignore='"KVI001"')
    assert _run(project) == (["tomllib"], "[]")
    assert _run(project) == ([], "[]")


@pytest.mark.parametrize("options", [("--no-cache",), ("--cache-dir", ".")])
def test_nothing_is_kept_where_no_cache_of_ours_is(tmp_path: Path, options) -> None:
    """``--no-cache``, or a cache folder this tool did not make (the project's
    own folder): the table is parsed every run, and nothing is written."""
    project = _project(tmp_path)
    for _ in range(3):
        assert _run(project, *options) == (["tomllib"], "['KVI001']")
    assert not (project / "config").exists()
    assert not (project / ".draft_kv_lint_cache" / "config").exists()


def test_a_damaged_kept_table_is_parsed_again(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    calls = []

    def parse():
        calls.append(1)
        return {"select": ["KVI001"], "per-file-ignores": {"a.py": ["KVI003"]}}

    first = memo.parsed(b"x", str(kept), parse)
    assert memo.parsed(b"x", str(kept), parse) == first and len(calls) == 1
    (entry,) = kept.iterdir()
    entry.write_bytes(b"\x00garbage")
    assert memo.parsed(b"x", str(kept), parse) == first and len(calls) == 2
    assert memo.parsed(b"y", str(kept), parse) == first and len(calls) == 3


def test_a_table_marshal_cannot_keep_is_parsed_every_time(tmp_path: Path) -> None:
    import datetime

    found = {"when": datetime.date(2026, 12, 6)}
    assert memo.parsed(b"x", str(tmp_path / "kept"), lambda: found) is found
    assert not (tmp_path / "kept").exists() or not list((tmp_path / "kept").iterdir())


def test_the_kept_table_is_the_parsed_one(tmp_path: Path) -> None:
    """What is kept reads back equal to what tomllib gave (lists, tables,
    booleans, strings)."""
    import tomllib

    text = (
        '[tool.draft-kv-lint]\nselect = ["KVI"]\nforce-exclude = true\n'
        '[tool.draft-kv-lint.per-file-ignores]\n"tests/*" = ["KVI003"]\n'
    )
    table = tomllib.loads(text)["tool"]["draft-kv-lint"]
    kept = str(tmp_path / "kept")
    memo.parsed(text.encode(), kept, lambda: table)
    assert memo.parsed(text.encode(), kept, lambda: None) == table
    assert ast.literal_eval(repr(table)) == table
