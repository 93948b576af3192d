"""Wrapping rewritten statements the way ruff format and black would.

Only the lines a rewrite touched are formatted (``ruff format --range``), so the
rest of a file stays byte-for-byte as its authors left it.
"""

from __future__ import annotations

import difflib
import subprocess
from functools import lru_cache
from pathlib import Path


class FormatError(RuntimeError):
    pass


@lru_cache(maxsize=1)
def _ruff() -> str:
    try:
        from ruff.__main__ import find_ruff_bin

        return find_ruff_bin()
    except (ImportError, FileNotFoundError):
        return "ruff"


def changed_line_ranges(before: str, after: str) -> list[tuple[int, int]]:
    """1-based inclusive line ranges of ``after`` that differ from ``before``."""
    matcher = difflib.SequenceMatcher(
        None, before.splitlines(), after.splitlines(), autojunk=False
    )
    ranges = []
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert") and j2 > j1:
            ranges.append((j1 + 1, j2))
    return ranges


def format_ranges(text: str, ranges: list[tuple[int, int]], path: Path) -> str:
    """``text`` with the statements overlapping ``ranges`` formatted."""
    for first, last in sorted(ranges, reverse=True):
        text = _format_range(text, first, last, path)
    return text


def _format_range(text: str, first: int, last: int, path: Path) -> str:
    last_line = text.splitlines()[last - 1] if text else ""
    command = [
        _ruff(),
        "format",
        "--quiet",
        "--stdin-filename",
        str(path),
        f"--range={first}:1-{last}:{len(last_line) + 1}",
        "-",
    ]
    try:
        result = subprocess.run(
            command, input=text, capture_output=True, text=True, check=False
        )
    except OSError as exc:
        raise FormatError(f"cannot run ruff: {exc}") from None
    if result.returncode != 0:
        raise FormatError(result.stderr.strip().splitlines()[-1:] or "ruff failed")
    return result.stdout
