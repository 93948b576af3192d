"""Adoption in SGLang's own layout, through SGLang's own formatters.

The real 0.5.12.post1 attention folder in a throw-away git repository laid out like
SGLang (``python/sglang/srt/layers/attention/``, the table in ``python/pyproject.toml``,
``.isort.cfg`` at the root): ``check --add-noqa``, then black 24.10 and isort 5.13
with SGLang's settings on the files it changed, as SGLang's pre-commit runs them
when the directives are committed. The directives must survive the re-wrapping, a
second ``--add-noqa`` must add nothing, removing one directive must bring back
exactly its finding, and deleting a flagged site must leave an unused directive
(KVI100).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lint_plugin.cli import main

ISORT_CFG = "[settings]\nprofile=black\nknown_first_party=sglang\n"
PACKAGE = Path("python/sglang/srt/layers/attention")
DIRECTIVE = re.compile(r"\s*# noqa: (?P<codes>KVI\d{3}(?:, KVI\d{3})*)$")


def _run(*args: str, cwd: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def _check(capsys, *paths: str) -> tuple[int, list[dict]]:
    status = main(["check", "--output-format", "json", *paths])
    return status, json.loads(capsys.readouterr().out)


def _added(capsys, *paths: str) -> int:
    assert main(["check", "--add-noqa", *paths]) == 0
    return int(re.search(r"Added (\d+) noqa", capsys.readouterr().err).group(1))


@pytest.fixture
def sglang_repo(tmp_path: Path, old_attention: Path, monkeypatch) -> Path:
    repo = tmp_path / "sglang"
    shutil.copytree(old_attention, repo / PACKAGE)
    (repo / "python" / "pyproject.toml").write_text(
        '[project]\nname = "sglang"\n\n[tool.draft-kv-lint]\n'
    )
    (repo / ".isort.cfg").write_text(ISORT_CFG)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.chdir(repo / "python")
    return repo


def test_directives_survive_black_and_isort(sglang_repo: Path, capsys) -> None:
    status, before = _check(capsys, "sglang")
    # KVI001-KVI003 and KVI006 (0.5.12.post1 guards no launch) in each backend,
    # and the sizing contracts' four (AITER's, Triton's and Wave's verify masks,
    # AITER's target-verify kv_indices).
    assert status == 1 and len(before) == 16 + 4
    assert _added(capsys, "sglang") == 16 + 4

    # SGLang's pre-commit, as it runs when the directives are committed: black
    # (line length 88) and isort, black profile, on the files that changed.
    changed = sorted({str(Path("python", f["filename"])) for f in before})
    assert len(changed) == 5
    _run("black", "-q", *changed, cwd=sglang_repo)
    _run("isort", "-q", "--settings-path", ".isort.cfg", *changed, cwd=sglang_repo)

    assert _check(capsys, "sglang") == (0, [])
    assert _added(capsys, "sglang") == 0  # nothing is added twice

    # Removing one directive brings back exactly that finding.
    backend = sglang_repo / PACKAGE / "triton_backend.py"
    lines = backend.read_text().splitlines(keepends=True)
    row = next(i for i, line in enumerate(lines) if "# noqa: KVI003" in line)
    lines[row] = DIRECTIVE.sub("", lines[row].rstrip("\n")) + "\n"
    backend.write_text("".join(lines))
    status, after = _check(capsys, "sglang")
    assert status == 1
    assert [(Path(f["filename"]).name, f["code"]) for f in after] == [
        ("triton_backend.py", "KVI003")
    ]
    assert _added(capsys, "sglang") == 1
    assert _check(capsys, "sglang") == (0, [])

    # Deleting a flagged statement's site leaves its directive unused (KVI100).
    lines = backend.read_text().splitlines(keepends=True)
    row = next(i for i, line in enumerate(lines) if "# noqa: KVI001" in line)
    kept = lines[row]
    lines[row] = re.sub(r"(\S.*?)(\s*# noqa)", r"0\2", kept, count=1)
    lines[row] = kept[: len(kept) - len(kept.lstrip())] + lines[row].lstrip()
    backend.write_text("".join(lines))
    status, unused = _check(capsys, "sglang")
    assert status == 1
    assert [(f["code"], f["location"]["row"]) for f in unused] == [("KVI100", row + 1)]
    assert unused[0]["fix"]["applicability"] == "safe"

    # Its safe fix, applied as a JSON consumer would, leaves a clean file.
    (edit,) = unused[0]["fix"]["edits"]
    lines = backend.read_text().splitlines(keepends=True)
    line = lines[edit["location"]["row"] - 1]
    start, end = edit["location"]["column"] - 1, edit["end_location"]["column"] - 1
    lines[edit["location"]["row"] - 1] = line[:start] + edit["content"] + line[end:]
    backend.write_text("".join(lines))
    assert _check(capsys, "sglang") == (0, [])
    assert "noqa" not in backend.read_text().splitlines()[row]
