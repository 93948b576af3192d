"""``draft-kv-lint prove`` on a throw-away git repository holding a real backend.

The repository holds sglang 0.5.12.post1's FlashInfer backend and the speculative
file with upstream's index kernel, committed, then rewritten by
``fix --unsafe-fixes`` and committed again: ``prove --base HEAD~1`` must print
the table and exit 0; a hand-corrupted argument in
the rewrite must exit 1 naming the class and the first differing record.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from corpus import OLD, speculative_dir

from lint_plugin.cli import main

pytestmark = pytest.mark.corpus
BACKEND = "sglang/srt/layers/attention/flashinfer_backend.py"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path, old_attention, monkeypatch):
    root = tmp_path / "repo"
    target = root / BACKEND
    target.parent.mkdir(parents=True)
    shutil.copy(old_attention / "flashinfer_backend.py", target)
    spec = root / "sglang/srt/speculative"
    spec.mkdir(parents=True)
    kernel_file = next(
        p
        for p in speculative_dir(OLD).glob("*.py")
        if "def generate_draft_decode_kv_indices(" in p.read_text()
    )
    shutil.copy(kernel_file, spec / kernel_file.name)
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "0.5.12.post1")
    monkeypatch.chdir(root)
    assert main(["fix", "--unsafe-fixes", "--no-config", BACKEND]) in (0, 1)
    assert "draft_kv_indices_buffer_width(" in target.read_text()
    _git(root, "commit", "-qam", "fix --unsafe-fixes")
    return root


def test_prove_proves_the_unsafe_fix(repo, capsys):
    status = main(["prove", "--base", "HEAD~1", BACKEND])
    out = capsys.readouterr().out
    print(out)
    assert status == 0, out
    assert "upstream's kernel from" in out and "interpreted" in out
    header = next(line for line in out.splitlines() if line.startswith("class"))
    for column in ("cases", "allocations", "launches", "slices", "overruns"):
        assert column in header
    row = next(
        line for line in out.splitlines() if "FlashInferMultiStepDraftBackend" in line
    )
    assert "proven (widened x topk)" in row
    before, after = row.split()[5].split("/")
    assert int(before) > 0 and int(after) == 0, row


def test_prove_names_the_first_difference(repo, capsys):
    target = repo / BACKEND
    text = target.read_text()
    corrupted = text.replace(
        "draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)",
        "draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 2)",
        1,
    )
    assert corrupted != text
    target.write_text(corrupted)
    status = main(["prove", "--base", "HEAD~1", BACKEND])
    out = capsys.readouterr().out
    print(out)
    assert status == 1, out
    failure = next(line for line in out.splitlines() if line.startswith("NOT PROVEN"))
    assert "FlashInferMultiStepDraftBackend" in failure
    assert "assignments[" in failure  # the first differing record, by name


def test_prove_without_changes_says_so(repo, capsys):
    assert main(["prove", "--base", "HEAD", BACKEND]) == 0
    assert "nothing to prove" in capsys.readouterr().out


def test_prove_without_the_extra_says_what_to_install(tmp_path):
    # A child where torch and triton cannot be found: one line, exit 2.
    code = (
        "import sys, importlib.util as u\n"
        "real = u.find_spec\n"
        "u.find_spec = lambda n, *a: None if n in ('torch', 'triton') else real(n, *a)\n"
        "from lint_plugin.cli import main\n"
        "sys.exit(main(['prove', 'a.py', 'b.py']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 2
    # The command adds the extra to this very install (an editable checkout here;
    # tests/test_readme.py runs it for an install from git, tests/test_install_origin
    # covers each origin).
    from lint_plugin.install_origin import install_command
    from lint_plugin.prove import NEEDS

    assert done.stderr.strip() == f"{NEEDS}: {install_command('proof')}"
    assert "draft-kv-lint[proof]'" not in done.stderr  # never a bare registry name
    assert not done.stdout


def test_prove_two_files(repo, tmp_path, capsys):
    original = tmp_path / "original.py"
    original.write_text(
        subprocess.run(
            ["git", "show", f"HEAD~1:{BACKEND}"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert main(["prove", str(original), BACKEND]) == 0
    assert "proven (widened x topk)" in capsys.readouterr().out


def test_prove_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["prove", "only_one.py"]) == 2
    assert "give --base REV" in capsys.readouterr().err
