"""Shared pieces for the CLI tests: a stand-in engine and an in-process runner.

The stand-in engine reports one finding per marker word in the source (``kvi001_here``
gives KVI001 at that word, 1-based), so selection, noqa and output can be tested
for every code without depending on the real engine's matching rules. Tests that
need the real engine say so and do not use it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import pytest

from lint_plugin import linter
from lint_plugin.check import pipeline
from lint_plugin.cli import main
from lint_plugin.findings import SYNTAX_ERROR_CODE, Edit, Finding, Fix

MARKER = re.compile(r"kvi00(\d)_here")
# One KVI001 for the real engine, at 3:16.
USED_LEN_SITE = (
    "class XMultiStepDraftBackend:\n"
    "    def f(self, seq_lens_sum, bs, i):\n"
    "        return seq_lens_sum * self.topk + bs * (i + 1)\n"
)
SAFETY = {"1": "safe", "2": "safe", "3": "unsafe"}  # KVI004: no fix


def fake_lint_text(
    text: str, path: str, settings=None, **engine_options
) -> list[Finding]:
    try:
        ast.parse(text)
    except SyntaxError as error:
        row, column = error.lineno or 1, error.offset or 1
        message = f"SyntaxError: {error.msg}"
        return [Finding(path, row, column, row, column, SYNTAX_ERROR_CODE, message)]
    findings = []
    for row, line in enumerate(text.splitlines(), start=1):
        for match in MARKER.finditer(line):
            digit = match.group(1)
            start, end = match.start() + 1, match.end() + 1
            fix = None
            if digit in SAFETY:
                edit = Edit("fixed", row, start, row, end)
                fix = Fix(SAFETY[digit], "Replace it", (edit,))
            code = f"KVI00{digit}"
            message = f"marker {match.group(0)}"
            findings.append(Finding(path, row, start, row, end, code, message, fix))
    return findings


@dataclass
class Result:
    status: int
    out: str
    err: str

    @property
    def codes(self) -> list[str]:
        """Codes of the text-format finding lines, in output order."""
        return re.findall(r"^\S+:\d+:\d+: (\w+) ", self.out, flags=re.M)


@pytest.fixture
def fake_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-in engine, asked about every file: its markers are no words
    the real byte test lets through."""
    monkeypatch.setattr(linter, "lint_text", fake_lint_text)
    monkeypatch.setattr(pipeline, "could_match", lambda data: True)


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]):
    def _run(*argv: str) -> Result:
        status = main(list(argv))
        captured = capsys.readouterr()
        return Result(status, captured.out, captured.err)

    return _run
