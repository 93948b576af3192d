"""A file ``fix`` may rewrite: read as Python reads it, written back in its own
line endings. Shared by ``fix``'s rounds, the helpers' homes it completes and the
codemod API."""

from __future__ import annotations

import re

from lint_plugin.findings import FileError
from lint_plugin.source_files import SourceError, decoded, read_regular_file


def read_for_fix(path: str) -> tuple[bool, str, str, bytes] | str:
    """``(has a BOM, text as decoded, its encoding, the bytes read)`` of a file
    ``fix`` may rewrite, read as Python reads it (PEP 263), or why it cannot be
    read. The bytes are what the file must still hold when it is replaced."""
    data = read_regular_file(path)
    if isinstance(data, FileError):
        return data.reason
    try:
        text, encoding, bom = decoded(data)
    except SourceError as exc:
        return f"cannot parse, left unchanged: {exc}"
    return bom, text, encoding, data


def restore_line_endings(original: str, normalized: str, new: str) -> str:
    """``new`` (LF only) with the line endings of ``original``: its one style, or,
    in a file that mixes them, each unchanged line's own and its neighbour's for a
    new line."""
    styles = {
        ending
        for ending, present in (
            ("\r\n", "\r\n" in original),
            ("\r", "\r" in original.replace("\r\n", "")),
            ("\n", "\n" in original.replace("\r\n", "")),
        )
        if present
    }
    if styles <= {"\n"}:
        return new
    if len(styles) == 1:
        return new.replace("\n", styles.pop())
    from lint_plugin.fix.diff import opcodes

    endings = [m.group() for m in _ENDING.finditer(original)]
    old_lines = normalized.split("\n")
    new_lines = new.split("\n")
    result: list[str] = []
    for tag, i1, _, j1, j2 in opcodes(old_lines, new_lines):
        for offset, line in enumerate(new_lines[j1:j2]):
            if tag == "equal":
                ending = endings[i1 + offset] if i1 + offset < len(endings) else "\n"
            else:
                ending = endings[min(i1, len(endings) - 1)] if endings else "\n"
            result.append(line + ending)
    joined = "".join(result)
    # The last line has no ending of its own: drop the one just added.
    last = result[-1] if result else ""
    return joined[: len(joined) - (len(last) - len(new_lines[-1]))]


_ENDING = re.compile(r"\r\n|\r|\n")
