"""What a piece of code imports, measured in a fresh interpreter.

An installation may load modules before any of ours runs: a ``.pth`` file of the
environment (an editable install's finder, a certificate shim, setuptools' distutils
hack) can import ``typing`` or ``shutil`` at start-up. Those cost the user the same
with or without this tool, so a probe counts only the modules that appear after the
interpreter has started.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

_PROBE = """\
import sys
_before = set(sys.modules)
{body}
_watch = {watch!r}
print(sorted(m for m in _watch if m in sys.modules and m not in _before))
print(repr(_result))
"""


def imported_by(
    body: str, watch: tuple[str, ...], cwd: Path | None = None
) -> tuple[list[str], str]:
    """Run ``body`` (which sets ``_result``) in a fresh interpreter; return the
    watched modules it imported that start-up had not, and ``repr(_result)``."""
    code = _PROBE.format(body=body, watch=watch)
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    *_, modules, result = run.stdout.splitlines()
    return ast.literal_eval(modules), result
