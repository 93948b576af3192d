"""Wrapping rewritten statements the way ruff format and black would.

Only the statements a rewrite touched are formatted, so the rest of a file stays
byte-for-byte as its authors left it. The file's own indentation (tabs, two
spaces) is passed on to ruff; a formatter that fails leaves the statements as the
rewrite left them (still correct, maybe long). Whatever comes back is checked by
the gate in :mod:`lint_plugin.fix.gate.verify` before anything is written.
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
    """``text`` with the whole statements in ``ranges`` formatted.

    One formatter run for the whole file, however many ranges: each statement is
    copied into a small synthetic module (under ``if True:`` lines for its
    indentation, with a ``pass`` body for a compound header), the module is
    formatted in full, and each statement's new lines replace its old ones. The
    rest of the file is never handed to the formatter, so it cannot change.
    """
    merged = _merged(ranges)
    if not merged:
        return text
    unit = indent_unit(text)
    lines = text.split("\n")
    chunks = []
    for first, last in merged:
        chunk = _chunk(lines[first - 1 : last], unit)
        if chunk is not None:
            chunks.append((first, last, *chunk))
    if not chunks:
        return text
    synthetic = "".join(
        f"{_MARKER}{index}\n{body}" for index, (*_, body, _, _) in enumerate(chunks)
    )
    try:
        formatted = _run_ruff(synthetic, path, _indent_options(unit))
    except FormatError:
        return text  # left unwrapped: correct, maybe long
    pieces = formatted.split(_MARKER)[1:]
    if len(pieces) != len(chunks):
        return text
    for (first, last, body, depth, padded), piece in zip(
        chunks[::-1], pieces[::-1], strict=True
    ):  # bottom up: rows above stay put
        if not _same_program(body, piece.split("\n", 1)[-1]):
            continue  # a docstring re-indented, a comment re-spaced: left as is
        new = piece.rstrip("\n").split("\n")[1 + depth :]  # marker, `if True:`s
        if padded:
            new = new[:-1]  # the `pass` body
        if not new:
            continue
        lines[first - 1 : last] = new
    return "\n".join(lines)


_MARKER = "# draft-kv-lint statement "


def _chunk(statement: list[str], unit: str) -> tuple[str, int, bool] | None:
    """The statement as a module of its own: ``(text, depth, padded)``, or None
    when its indentation is not a whole number of the file's units."""
    first = next((line for line in statement if line.strip()), "")
    indent = first[: len(first) - len(first.lstrip())]
    if not unit or indent.replace(unit, ""):
        depth = 0 if not indent else -1
    else:
        depth = len(indent) // len(unit)
    if depth < 0:
        return None
    head = "".join(f"{unit * level}if True:\n" for level in range(depth))
    body = "\n".join(statement) + "\n"
    text = head + body
    if _compiles(text):
        return text, depth, False
    text += f"{unit * (depth + 1)}pass\n"
    if _compiles(text):
        return text, depth, True
    return None


def _same_program(before: str, after: str) -> bool:
    """Did formatting change layout only: the same tree (a docstring's text is
    part of it) and every comment kept character for character?"""
    import ast
    import io
    import tokenize
    from collections import Counter

    def comments(text: str) -> Counter[str]:
        tokens = tokenize.generate_tokens(io.StringIO(text).readline)
        return Counter(t.string for t in tokens if t.type == tokenize.COMMENT)

    try:
        return ast.dump(ast.parse(before)) == ast.dump(ast.parse(after)) and (
            comments(before) == comments(after)
        )
    except (SyntaxError, ValueError, tokenize.TokenError, RecursionError):
        return False


def _compiles(text: str) -> bool:
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


_INDENT = re.compile(r"^(?:[ \t]*\S.*:[ \t]*(?:#.*)?\n)([ \t]+)\S", re.M)


def indent_unit(text: str) -> str:
    """The file's indentation unit, read from its first indented block."""
    match = _INDENT.search(text)
    if match is None:
        return "    "
    unit = match.group(1)
    return "\t" if unit.startswith("\t") else unit


def _indent_options(unit: str) -> list[str]:
    if unit == "\t":
        return ["--config", "format.indent-style='tab'"]
    if unit.strip(" ") == "" and len(unit) != 4:
        return ["--config", f"indent-width={len(unit)}"]
    return []


def _run_ruff(text: str, path: Path, options: list[str]) -> str:
    command = [
        _ruff(),
        "format",
        "--quiet",
        *options,
        # `=` and an absolute path: a file called `--select=X.py` stays a name.
        f"--stdin-filename={os.path.abspath(path)}",
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
