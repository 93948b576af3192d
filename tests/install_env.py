"""A fresh Python environment to run install commands in, offline and in seconds.

An install command is tested the way a user runs it: ``pip install ...`` exactly
as printed, in a virtual environment of its own. What it would download is
already on this machine (the test environment's own packages: libcst, torch,
...), so the new environment sees them through a ``.pth`` file, as packages
installed elsewhere, and pip finds them satisfied instead of fetching them:

* ``view(exclude)`` is a folder of symbolic links to the test environment's
  ``site-packages``, less draft-kv-lint itself and the ``exclude``d
  distributions (torch, say, to see what ``prove`` says without it);
* pip runs with ``PIP_NO_INDEX`` (nothing is fetched: a dependency the view
  lacks fails the install instead of downloading) and without build isolation
  (the project builds with the view's setuptools), which is configuration, not
  the command: the command line is the one printed.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

OWN = ("draft_kv_lint", "__editable__.draft_kv_lint", "__editable___draft_kv_lint")
OWN += ("lint_plugin",)


class Environment:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "bin"
        self.python = self.bin / "python"
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(root)], check=True
        )
        purelib = subprocess.run(
            [
                str(self.python),
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        self.site = Path(purelib)
        self.views = 0

    def see(self, exclude: tuple[str, ...] = ()) -> Path:
        """Make the test environment's packages, less draft-kv-lint and
        ``exclude``, visible here; each call adds a view (earlier ones stay)."""
        source = Path(sysconfig.get_paths()["purelib"])
        self.views += 1
        view = self.root / f"view-{self.views}"
        view.mkdir()
        skipped = tuple(name.lower() for name in (*OWN, *exclude))
        for entry in source.iterdir():
            if entry.name.lower().startswith(skipped) or entry.suffix == ".pth":
                continue
            (view / entry.name).symlink_to(entry)
        (self.site / f"zz-view-{self.views}.pth").write_text(f"{view}\n")
        return view

    def env(self) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("PYTHON", "VIRTUAL_ENV", "PIP_REQUIRE"))
        }
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.root)
        env["PIP_NO_INDEX"] = "1"
        env["PIP_NO_BUILD_ISOLATION"] = "0"  # pip reads this as "isolation: off"
        env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        return env

    def run(self, line: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        """A command line as a user types it here; ``pip`` is this environment's
        (``python -m pip``: the view brings pip, the environment has none)."""
        argv = shlex.split(line)
        if argv[0] == "pip":
            argv = [str(self.python), "-m", "pip", *argv[1:]]
        elif (self.bin / argv[0]).exists():
            argv[0] = str(self.bin / argv[0])
        return subprocess.run(
            argv, cwd=cwd, env=self.env(), capture_output=True, text=True, timeout=600
        )
