"""``fix`` asks ``check`` first (its byte test, its cache, the engine) and hands
the rewriter only the files with a fix of this run in them: what it prints and
exits with is what the rewriter says when it reads every file itself
(``run_fix`` over the whole list, the path ``fix`` took before), on real
releases, cold and with the cache ``check`` filled."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from corpus import LATEST, NEW, OLD, WHEELS, attention_dir, speculative_dir

from lint_plugin.cli import main
from lint_plugin.fix.command import run_fix
from lint_plugin.fix.options import Options

pytestmark = pytest.mark.corpus

# Every sixth release from the first, and the three the project is built on.
VERSIONS = sorted({*list(WHEELS)[::6], OLD, NEW, LATEST}, key=list(WHEELS).index)


def _by_file(diff: str) -> dict[str, str]:
    """A unified diff, one entry per file (the two runs may list them in
    another order: the oracle's is sorted, the command's is the walk's)."""
    parts = re.split(r"(?m)^(?=--- )", diff)
    return {part.splitlines()[1]: part for part in parts if part}


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
@pytest.mark.parametrize("version", VERSIONS)
def test_fix_turns_away_only_what_the_rewriter_leaves(
    version: str, unsafe: bool, tmp_path, capsys, monkeypatch
) -> None:
    monkeypatch.delenv("DRAFT_KV_LINT_NO_CACHE", raising=False)  # conftest's
    folders = [str(attention_dir(version)), str(speculative_dir(version))]
    files = sorted(str(p) for folder in folders for p in Path(folder).rglob("*.py"))
    out, err = io.StringIO(), io.StringIO()
    expected = run_fix(
        files,
        Options(unsafe_fixes=unsafe),
        diff=True,
        out=out,
        err=err,
        roots=folders,
    )
    assert out.getvalue() or not unsafe  # every release has an unsafe fix
    argv = ["fix", "--diff", "--no-config", "--cache-dir", str(tmp_path), *folders]
    if unsafe:
        argv.insert(1, "--unsafe-fixes")
    for run in ("cold", "warm"):  # the second run reads check's cache
        if run == "warm":
            assert any(tmp_path.rglob("*")), "the cold run filled no cache"
        status = main(argv)
        said = capsys.readouterr()
        assert status == expected, run
        assert _by_file(said.out) == _by_file(out.getvalue()), run
        assert sorted(said.err.splitlines()) == sorted(err.getvalue().splitlines())
