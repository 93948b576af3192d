"""This project's working tree as a one-commit git repository of its own.

What a user's ``pip install "draft-kv-lint @ git+URL@REV"`` or pre-commit's
``repo:``/``rev:`` would clone, made from the tree as it is now: tracked files
plus untracked ones git does not ignore (a test or hook manifest not yet
committed is there too), so ``file://`` URLs to it stand in for the remote.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Snapshot:
    path: Path
    rev: str

    @property
    def url(self) -> str:
        """A URL pip and git both take. With an empty host (``file:///``) pip
        before 24 (its packaging before 22) rejects the requirement as an
        invalid URL; ``localhost`` is the same place to git and to pip."""
        from urllib.parse import quote

        return f"file://localhost{quote(self.path.as_posix())}"


def git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "-c", "commit.gpgsign=false", "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def snapshot(dest: Path) -> Snapshot:
    """Copy the working tree into ``dest`` (made here) and commit it; raises
    OSError or CalledProcessError when ROOT is not a git work tree."""
    listed = git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    dest.mkdir(parents=True)
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the work tree is left out
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    git(dest, "init", "-q")
    git(dest, "config", "user.name", "draft-kv-lint tests")
    git(dest, "config", "user.email", "tests@draft-kv-lint.invalid")
    return Snapshot(dest, commit_all(dest, "snapshot of the working tree"))
