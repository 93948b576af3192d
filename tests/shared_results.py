"""Work done once per test session, whichever process asks first.

pytest-xdist runs the suite in several worker processes: a session-scoped
fixture is then built once per worker, and a module-level dict answers only its
own worker. ``SharedResults`` keeps a computed value in a folder all workers of
one session share, under a lock, so the second asker waits for the first and
reads its answer instead of computing it again (the proof of a release whose
classes and kernel equal an earlier release's, say). Values are pickled; a key
names everything the value depends on (hash the inputs into it).

The folder belongs to one session: pytest's base temporary folder without
xdist, its parent joined with xdist's run id with it (the parent is shared by
the workers but also by earlier sessions, which may have run other code).
"""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


class SharedResults:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._here: dict[str, Any] = {}

    def get(self, key: str, compute: Callable[[], T]) -> T:
        """The value stored under ``key``, computed by ``compute`` on first use.
        An exception from ``compute`` is raised and nothing is stored."""
        if key in self._here:
            return self._here[key]
        from filelock import FileLock

        name = hashlib.sha256(key.encode()).hexdigest()
        path = self.folder / f"{name}.pickle"
        with FileLock(str(self.folder / f"{name}.lock")):
            if path.exists():
                value = pickle.loads(path.read_bytes())
            else:
                value = compute()
                partial = path.with_suffix(f".{os.getpid()}.partial")
                partial.write_bytes(pickle.dumps(value))
                partial.replace(path)
        self._here[key] = value
        return value


def session_folder(basetemp: Path) -> Path:
    """The folder every worker of this session shares (see the module doc)."""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run_id is None:
        return basetemp / "shared"
    return basetemp.parent / f"shared-{run_id}"
