"""No lost update: a file another writer changes while ``fix`` runs is left as
that writer left it, and a killed run's temporary files do not pile up.

``fix`` reads every file, plans the definitions across them, then writes. The
other writer is put exactly between the two (``_plan_homes`` wrapped), where
an editor's save or a formatter in the same pre-commit run would land.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lint_plugin.cli import main
from lint_plugin.fix import atomic, command

INLINE = (
    "from sglang.srt.speculative.spec_utils import draft_kv_indices_used_len\n"
    "\n\n"
    "def f(self, seq_lens_sum, bs, i):\n"
    "    return seq_lens_sum * self.topk + bs * (i + 1)\n"
)
SPEC_UTILS = "python/sglang/srt/speculative/spec_utils.py"
BACKEND = "python/sglang/srt/layers/attention/foo_backend.py"


def _tree(root: Path, spec_utils: str | None) -> tuple[Path, Path]:
    (root / "python/sglang").mkdir(parents=True)
    (root / "python/sglang/__init__.py").write_text("")
    backend = root / BACKEND
    backend.parent.mkdir(parents=True)
    backend.write_text(INLINE.replace("draft_kv_indices_used_len", "os"))
    spec = root / SPEC_UTILS
    spec.parent.mkdir(parents=True)
    if spec_utils is not None:
        spec.write_text(spec_utils)
    return backend, spec


def _meanwhile(monkeypatch, change) -> None:
    """Run ``change`` after every file is read and planned, before any write."""
    real = command._plan_homes

    def planned_then_changed(fixed, options):
        planned = real(fixed, options)
        change()
        return planned

    monkeypatch.setattr(command, "_plan_homes", planned_then_changed)


def _temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def _rewrite_in_place(path: Path) -> None:
    path.write_text(path.read_text() + "# saved by an editor\n")


def _replace_by_rename(path: Path) -> None:
    # A formatter's way: a new file renamed over the old one.
    new = path.with_name("new.tmp-editor")
    new.write_text(path.read_text().replace("\n\n\n", "\n\n\n# formatted\n"))
    os.replace(new, path)


def _truncate(path: Path) -> None:
    path.write_text("")


@pytest.mark.parametrize(
    "other_writer", [_rewrite_in_place, _replace_by_rename, _truncate]
)
def test_a_file_changed_meanwhile_is_left_as_the_other_writer_left_it(
    tmp_path: Path, capsys, monkeypatch, other_writer
) -> None:
    path = tmp_path / "backend.py"
    path.write_text(INLINE)
    _meanwhile(monkeypatch, lambda: other_writer(path))
    status = main(["fix", "--no-config", str(path)])
    err = capsys.readouterr().err
    assert status == 1
    assert (
        f"{path}: error: changed on disk while being fixed, left as it is now "
        "(run fix again)"
    ) in err.splitlines()
    other = tmp_path / "as_the_writer_left_it.py"
    other.write_text(INLINE)
    other_writer(other)
    assert path.read_bytes() == other.read_bytes()
    assert _temporaries(tmp_path) == []
    # Left alone since, the next run fixes what the other writer kept.
    monkeypatch.undo()
    assert main(["fix", "--no-config", str(path)]) == 0
    assert ("draft_kv_indices_used_len(" in path.read_text()) == bool(other.read_text())


def test_a_home_changed_meanwhile_is_left_and_so_are_its_importers(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    backend, spec = _tree(tmp_path, "import os\n")
    backend_before = backend.read_bytes()
    _meanwhile(monkeypatch, lambda: spec.write_text("import os\n\nLIMIT = 2\n"))
    status = main(["fix", "--no-config", str(backend)])
    err = capsys.readouterr().err
    assert status == 1
    assert f"{spec}: error: changed on disk while being fixed" in err
    assert f"{backend}: error: left unchanged: its rewrite imports" in err
    assert spec.read_text() == "import os\n\nLIMIT = 2\n"
    assert backend.read_bytes() == backend_before


def test_a_module_created_meanwhile_is_not_replaced(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    backend, spec = _tree(tmp_path, None)
    backend_before = backend.read_bytes()
    _meanwhile(monkeypatch, lambda: spec.write_text("MINE = 1\n"))
    status = main(["fix", "--no-config", str(backend)])
    err = capsys.readouterr().err
    assert status == 1
    assert f"{spec}: error: created by another writer while being fixed" in err
    assert spec.read_text() == "MINE = 1\n"
    assert backend.read_bytes() == backend_before
    assert _temporaries(spec.parent) == []


def test_write_atomic_compares_the_bytes_it_was_given(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_bytes(b"x = 2\n")
    with pytest.raises(atomic.ChangedMeanwhile):
        atomic.write_atomic(str(path), b"x = 3\n", expected=b"x = 1\n")
    assert path.read_bytes() == b"x = 2\n"
    atomic.write_atomic(str(path), b"x = 3\n", expected=b"x = 2\n")
    assert path.read_bytes() == b"x = 3\n"
    assert _temporaries(tmp_path) == []


def test_a_created_file_gets_the_permissions_a_new_file_gets(tmp_path: Path) -> None:
    path = tmp_path / "new.py"
    atomic.write_atomic(str(path), b"x = 1\n", create=True)
    mask = os.umask(0o022)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask
    with pytest.raises(atomic.ChangedMeanwhile):
        atomic.write_atomic(str(path), b"x = 2\n", create=True)
    assert path.read_bytes() == b"x = 1\n"


def test_a_killed_runs_temporary_files_are_removed_by_the_next_write(
    tmp_path: Path,
) -> None:
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    gone = int(child.stdout)  # a process that has ended
    host = atomic._OWN.split("-")[-2]
    dead = f".a.py.draft-kv-lint-{host}-{gone}.k2j4x9aa.tmp"
    alive = f".a.py.draft-kv-lint-{host}-{os.getppid()}.q8w7e6rr.tmp"
    other_host = f".a.py.draft-kv-lint-000000-{gone}.z1x2c3vv.tmp"
    not_ours = ".a.py.k2j4x9aa.tmp"
    for name in (dead, alive, other_host, not_ours):
        (tmp_path / name).write_text("half")
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    atomic.write_atomic(str(path), b"x = 2\n")
    assert _temporaries(tmp_path) == sorted([alive, other_host, not_ours])
