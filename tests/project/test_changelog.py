"""The CHANGELOG's latest release is the version the package and pyproject say."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import lint_plugin

ROOT = Path(__file__).resolve().parents[2]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the project's own dependency on 3.10
    import tomli as tomllib


def _sections() -> list[str]:
    """The versions of the ``## [VERSION]`` headings, newest first."""
    text = (ROOT / "CHANGELOG.md").read_text()
    return re.findall(r"^## \[([^\]]+)\]", text, flags=re.M)


def test_unreleased_comes_first() -> None:
    assert _sections()[0] == "Unreleased"


def test_the_latest_release_is_the_package_version() -> None:
    latest = next(version for version in _sections() if version != "Unreleased")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert latest == lint_plugin.__version__ == pyproject["project"]["version"]


def test_each_release_is_dated() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    for version in _sections()[1:]:
        heading = f"## [{version}] - "
        assert re.search(rf"^{re.escape(heading)}\d{{4}}-\d{{2}}-\d{{2}}$", text, re.M)
