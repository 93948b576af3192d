"""Wrapping rewritten statements the way ruff format and black would.

Only the lines a rewrite touched are formatted (``ruff format --range``), so the
rest of a file stays byte-for-byte as its authors left it.
"""

from __future__ import annotations

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


def format_ranges(text: str, ranges: list[tuple[int, int]], path: Path) -> str:
    """``text`` with the statements overlapping ``ranges`` formatted."""
    for first, last in _merged(ranges)[::-1]:  # bottom up: rows above stay put
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


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(last, merged[-1][1]))
        else:
            merged.append((first, last))
    return merged
