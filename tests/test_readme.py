"""The README is what a newcomer follows: its rule table, commands and CI line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lint_plugin.rules import RULES

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
SAFETY = {"safe": "safe", "unsafe": "unsafe", None: "none"}


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_table_row_matches_the_catalogue(code: str) -> None:
    rule = RULES[code]
    row = next(line for line in README.splitlines() if line.startswith(f"| [{code}]"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1] == f"`{rule.name}`"
    assert cells[-1] == SAFETY[rule.fix_safety]


def test_ci_runs_the_readme_test_command() -> None:
    commands = re.findall(r"```sh\n(.+?)\n```", README)
    assert commands[0] == "pip install . && draft-kv-lint check fixtures/"
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci == commands[1]
