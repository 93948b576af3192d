"""Inputs ``fix`` turns away with one line: a file too large to rewrite (the
rewrite holds about 320 MB a MB, bench/bench_fix_memory.py) and a symbolic
link that loops."""

from __future__ import annotations

import os
from pathlib import Path

from lint_plugin.cli import main
from lint_plugin.fix.command import MAX_FIX_BYTES

SITE = "def f(self, seq_lens_sum, bs, i):\n    return seq_lens_sum * self.topk + bs * (i + 1)\n"
PADDING = "# " + "x" * 77 + "\n"


def test_a_large_file_that_may_hold_a_site_is_refused(tmp_path: Path, capsys) -> None:
    path = tmp_path / "large.py"
    path.write_text(SITE + PADDING * (MAX_FIX_BYTES // len(PADDING) + 1))
    before = path.read_bytes()
    assert main(["fix", "--no-config", str(path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (
        f"{path}: error: {len(before):,} bytes: files over {MAX_FIX_BYTES:,} bytes "
        "are not rewritten (the rewrite needs about 320 MB of memory per MB), left "
        "unchanged"
    )
    assert path.read_bytes() == before


def test_a_large_file_with_nothing_to_fix_is_not_refused(tmp_path: Path, capsys):
    path = tmp_path / "large.py"
    path.write_text("x = 1\n" + PADDING * (MAX_FIX_BYTES // len(PADDING) + 1))
    assert main(["fix", "--no-config", str(path)]) == 0
    assert capsys.readouterr().err == "Nothing to fix.\n"


def test_a_symbolic_link_loop_is_called_a_loop(tmp_path: Path, capsys) -> None:
    os.symlink(tmp_path / "b.py", tmp_path / "a.py")
    os.symlink(tmp_path / "a.py", tmp_path / "b.py")
    for command in ("check", "fix"):
        assert main([command, "--no-config", str(tmp_path / "a.py")]) in (1, 2)
        err = capsys.readouterr().err
        assert f"{tmp_path / 'a.py'}: error: symbolic link loop (points to " in err
        assert "broken" not in err
