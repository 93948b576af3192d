"""The wheel cache under parallel workers (``tests/corpus.py``).

pytest-xdist's workers, and other checkouts sharing ``DRAFT_KV_LINT_WHEELS``, ask
for the same trees at once: each is unpacked once, under a lock, into a folder
of its own that is renamed into place, so no process reads a half-written tree.
Tried here on a small wheel of our own, in processes racing for it.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]  # tests/, where the helpers are
RACER = """
import sys
sys.path.insert(0, {tests!r})
import corpus
corpus.WHEELS["9.9"] = ("sglang-9.9-py3-none-any.whl", {sha!r})
root = corpus.tree("9.9")
files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))
sizes = sum(p.stat().st_size for p in root.rglob("*.py"))
print(len(files), sizes, (root / ".complete").exists())
"""


def _wheel(cache: Path) -> str:
    cache.mkdir()
    path = cache / "sglang-9.9-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for n in range(300):
            body = f"x = {n}\n" * 2000
            archive.writestr(f"sglang/srt/layers/attention/m{n}.py", body)
        archive.writestr("sglang/srt/other.py", "y = 1\n")  # not unpacked
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_racing_processes_each_see_the_whole_tree(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    sha = _wheel(cache)
    code = RACER.format(tests=str(HERE), sha=sha)
    env = {"DRAFT_KV_LINT_WHEELS": str(cache), "PATH": "/usr/bin:/bin"}
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env
        )
        for _ in range(4)
    ]
    answers = [racer.communicate(timeout=120)[0].split() for racer in racers]
    assert all(racer.returncode == 0 for racer in racers)
    expected = ["300", str(sum(len(f"x = {n}\n") * 2000 for n in range(300))), "True"]
    assert answers == [expected] * 4
    # One tree, no leftovers of the unpacking.
    assert sorted(p.name for p in cache.iterdir() if not p.name.startswith(".")) == [
        "9.9",
        "sglang-9.9-py3-none-any.whl",
    ]
