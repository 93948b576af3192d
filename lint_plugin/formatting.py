"""Wrapping rewritten statements the way ruff format and black would.

Only the lines a rewrite touched are formatted (``ruff format --range``), so the
rest of a file stays byte-for-byte as its authors left it. The file's own
indentation (tabs, two spaces) is passed on to ruff, and a formatter answer that
changed a line outside the range, or failed, is not used: that range stays as the
rewrite left it (still correct, maybe long). Whatever comes back is checked by the
gate in :mod:`lint_plugin.verify` before anything is written.
"""

from __future__ import annotations

import os
import re
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
    indent = _indent_options(text)
    for first, last in _merged(ranges)[::-1]:  # bottom up: rows above stay put
        try:
            text = _format_range(text, first, last, path, indent)
        except FormatError:
            continue  # left unwrapped: correct, maybe long
    return text


_INDENT = re.compile(r"^(?:[ \t]*\S.*:[ \t]*(?:#.*)?\n)([ \t]+)\S", re.M)


def _indent_options(text: str) -> list[str]:
    """ruff options for the file's indentation, read from the first indented block."""
    match = _INDENT.search(text)
    if match is None:
        return []
    unit = match.group(1)
    if unit.startswith("\t"):
        return ["--config", "format.indent-style='tab'"]
    if unit.strip(" ") == "" and len(unit) != 4:
        return ["--config", f"indent-width={len(unit)}"]
    return []


def _format_range(
    text: str, first: int, last: int, path: Path, indent: list[str]
) -> str:
    lines = text.split("\n")
    if last > len(lines):
        raise FormatError("range past the end of the text")
    last_line = lines[last - 1]
    command = [
        _ruff(),
        "format",
        "--quiet",
        *indent,
        # `=` and an absolute path: a file called `--select=X.py` stays a name.
        f"--stdin-filename={os.path.abspath(path)}",
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
    formatted = result.stdout
    new_lines = formatted.split("\n")
    # The lines above and below the range must come back untouched.
    below = len(lines) - last
    if (
        len(new_lines) < first - 1 + below
        or new_lines[: first - 1] != lines[: first - 1]
        or (below and new_lines[-below:] != lines[-below:])
    ):
        raise FormatError("the formatter changed lines outside the range")
    return formatted


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(last, merged[-1][1]))
        else:
            merged.append((first, last))
    return merged
