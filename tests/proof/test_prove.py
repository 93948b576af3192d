"""``draft-kv-lint prove`` on a throw-away git repository holding a real backend.

The repository holds sglang 0.5.12.post1's FlashInfer backend and the speculative
file with upstream's index kernel, committed, then rewritten by
``fix --unsafe-fixes`` and committed again: ``prove --base HEAD~1`` must print
the kernel it used, the grid, its assumptions and the table, and exit 0; a
hand-corrupted argument in the rewrite must exit 1 naming the class and the
first differing record; a tree without the kernel is "cannot drive" (exit 3),
never a silent substitute; a path that does not exist is a usage error.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from corpus import OLD, speculative_dir

from lint_plugin.cli import main

# One xdist worker runs prove's grid on real classes (see test_releases.PROVE_GRID).
pytestmark = [pytest.mark.corpus, pytest.mark.xdist_group("prove-grid")]
BACKEND = "sglang/srt/layers/attention/flashinfer_backend.py"
SPEC = "sglang/srt/speculative/spec_utils.py"


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
    kernel = next(line for line in out.splitlines() if line.startswith("kernel"))
    assert kernel.startswith("kernel (both sides): ") and "interpreted" in kernel
    assert "sglang/srt/speculative/spec_utils.py (digest 83884eb0901f" in kernel
    # Under it, the write extent derived from that same kernel's source.
    lines = out.splitlines()
    extent = lines[lines.index(kernel) + 1]
    assert extent.startswith("  kernel extent: generate_draft_decode_kv_indices (")
    assert "(spec_utils.py:" in extent
    # Both sides overrun alike at the context wall: said, and not the verdict.
    assert "DOES NOT FIT at the context wall" in extent
    assert lines[lines.index(kernel) + 2].startswith("    envelope: the context wall")
    assert "seq_len + num_steps <= max_context_len): fits for all sizes" in out
    assert "NOT PROVEN" not in out
    assert "max_num_tokens = max_bs * topk" in out  # the assumptions are stated
    header = next(line for line in out.splitlines() if line.startswith("class"))
    for column in ("cases", "allocations", "launches", "slices", "overruns", "wall"):
        assert column in header
    row = next(
        line for line in out.splitlines() if "FlashInferMultiStepDraftBackend" in line
    )
    # At the context wall the original overruns; the fix's guard raises instead.
    assert re.search(
        r"no difference in \d+ cases \(widened x topk at line 1618; 2 stopped by "
        r"its guard at the context wall\)$",
        row,
    ), row
    # "proven" is said of what holds for all sizes only: the kernel's fit.
    assert "proven" not in row
    # Under the table, the bounds the cases reached and what they assumed.
    verdict = next(
        line
        for line in out.splitlines()
        if line.startswith("  ") and " within " in line
    )
    assert " within num_seqs 1-" in verdict and "page sizes 1, " in verdict
    assert "identical under: max_num_tokens = max_bs * topk" in verdict
    assert "raised the same on both sides" not in out
    before, after = row.split()[5].split("/")
    assert int(before) > 0 and int(after) == 0, row
    assert "graph entry points" not in out  # same API on both sides


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
    # With the kernel named, its lines are printed, and the status stays about
    # the (empty) rewrite: the wall's overrun alone is no failure of a change.
    assert main(["prove", "--base", "HEAD", "--kernel", SPEC, BACKEND]) == 0
    out = capsys.readouterr().out
    assert "nothing to prove" in out and "DOES NOT FIT at the context wall" in out
    assert main(["prove", "--kernel", SPEC]) == 1  # alone, the kernel is judged


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
    # tests/project/test_readme.py runs it for an install from git, tests/test_install_origin
    # covers each origin).
    from lint_plugin.install_origin import install_command
    from lint_plugin.proof.prove import NEEDS

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
    # The original, outside any sglang tree, has no kernel of its own.
    assert main(["prove", str(original), BACKEND]) == 3
    out = capsys.readouterr().out
    assert "cannot drive: " in out and "is not inside an sglang/ package" in out
    assert main(["prove", "--kernel", str(repo / SPEC), str(original), BACKEND]) == 0
    out = capsys.readouterr().out
    assert "kernel (both sides): " in out and "--kernel" in out
    assert "(widened x topk at line 1618; 2 stopped by its guard" in out


def test_prove_without_the_kernel_cannot_drive(repo, capsys):
    (repo / SPEC).unlink()
    status = main(["prove", "--base", "HEAD~1", BACKEND])
    out = capsys.readouterr().out
    print(out)
    assert status == 3, out
    row = next(line for line in out.splitlines() if "DraftBackend" in line)
    assert "cannot drive: no generate_draft_decode_kv_indices in the tree" in row
    assert "DIFFERS" not in out and "the reference kernel" not in out  # no stand-in


def test_prove_reference_kernel_only_when_asked(repo, capsys):
    status = main(["prove", "--base", "HEAD~1", "--reference-kernel", BACKEND])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "kernel (both sides): the reference kernel (--reference-kernel" in out


def test_exceptions_are_records(repo, capsys):
    """A rewrite that raises where the original does not differs, and the line
    is named; both raising the same is equal."""
    target = repo / BACKEND
    text = target.read_text()
    guard = "        num_seqs = forward_batch.batch_size\n"
    assert text.count(guard) == 1
    target.write_text(
        text.replace(guard, guard + "        assert num_seqs < 5, 'five'\n", 1)
    )
    status = main(["prove", "--base", "HEAD~1", BACKEND])
    out = capsys.readouterr().out
    print(out)
    assert status == 1, out
    failure = next(line for line in out.splitlines() if line.startswith("NOT PROVEN"))
    assert "raised[0]" in failure and "AssertionError" in failure, failure
    assert f"{target}:" in failure  # where the rewrite raised


def test_prove_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["prove", "only_one.py"]) == 2
    assert "give --base REV" in capsys.readouterr().err


def test_prove_missing_path_is_a_usage_error(repo, capsys):
    assert main(["prove", "--base", "HEAD~1", "no/such/backend.py"]) == 2
    captured = capsys.readouterr()
    assert "no/such/backend.py: no such file or directory" in captured.err
    assert "nothing to prove" not in captured.out


def test_a_kernel_the_helpers_do_not_hold_is_not_proven(repo, capsys):
    """A kernel writing one entry more per branch: its extent line under the
    kernel's names the counterexample and prove exits 1, whatever the grid says."""
    from kernel_plants import plant

    kernel = repo / SPEC
    kernel.write_text(plant(kernel.read_text(), "one_more_entry"))
    status = main(["prove", "--base", "HEAD~1", BACKEND])
    out = capsys.readouterr().out
    print(out)
    assert status == 1, out
    lines = out.splitlines()
    named = next(line for line in lines if line.startswith("kernel (both sides): "))
    extent = lines[lines.index(named) + 1]
    assert extent.startswith("  kernel extent: ") and "DOES NOT FIT" in extent
    assert "> draft_kv_indices_buffer_width(num_seqs, topk, max_context_len) =" in out
    assert f"NOT PROVEN {kernel}: the helpers do not hold its writes" in lines


def test_a_renamed_class_is_not_nothing_to_prove(repo, capsys):
    """A class renamed (or deleted) since the base is on one side only: not
    compared, said so, exit 3 (cannot drive), never "nothing to prove"."""
    target = repo / BACKEND
    target.write_text(
        target.read_text().replace(
            "class FlashInferMultiStepDraftBackend",
            "class RenamedMultiStepDraftBackend",
        )
    )
    status = main(["prove", "--base", "HEAD", BACKEND])
    out = capsys.readouterr().out
    assert status == 3, out
    assert "nothing to prove" not in out
    assert (
        f"{BACKEND}::FlashInferMultiStepDraftBackend: only in the original "
        "(removed or renamed): not compared"
    ) in out
    assert f"{BACKEND}::RenamedMultiStepDraftBackend: only in the rewrite" in out


def test_a_deleted_file_is_not_nothing_to_prove(repo, capsys):
    (repo / BACKEND).unlink()
    status = main(["prove", "--base", "HEAD"])
    out = capsys.readouterr().out
    assert status == 3, out
    assert "FlashInferMultiStepDraftBackend: only in the original" in out


def test_two_unrelated_files_are_not_nothing_to_prove(repo, tmp_path, capsys):
    other = tmp_path / "other.py"
    other.write_text("x = 1\n")
    status = main(["prove", str(other), BACKEND])
    out = capsys.readouterr().out
    assert status == 3, out
    assert "FlashInferMultiStepDraftBackend: only in the rewrite" in out
