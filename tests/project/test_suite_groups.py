"""The suite's own ``--dist loadgroup`` (``.ci/run``): tests marked with one
``xdist_group`` run on one worker, so the work they share is done once (the
pre-commit environment, prove's grid). pytest-xdist 3.8 loses the groups on
pytest 9 without ``tests/xdist_groups.py``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent

PROBE = """
import pytest

pytestmark = pytest.mark.xdist_group("together")


@pytest.mark.parametrize("i", range(8))
def test_grouped(i):
    pass


@pytest.mark.xdist_group(name="other")
def test_alone():
    pass
"""


def test_one_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
        "from xdist_groups import pytest_collection_modifyitems  # noqa: F401\n"
    )
    (tmp_path / "test_probe.py").write_text(PROBE)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2",
         "--dist", "loadgroup", "-v", "test_probe.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    ran = re.findall(
        r"\[(gw\d)\] .*PASSED test_probe\.py::(\w+)(?:\[\d\])?@(\w+)", done.stdout
    )
    assert len(ran) == 9, done.stdout
    together = {worker for worker, _, group in ran if group == "together"}
    assert len(together) == 1, done.stdout
