"""Text made safe to print: one finding, one line, whatever a file is called.

A path may hold any character but ``/`` and NUL: a newline in a file's name would
split its finding over two lines (a problem matcher or ``grep`` then reads two
wrong ones), and an escape character would reach the terminal as a command. Ruff
shows control characters in the code it prints as the Unicode control pictures
(``␊`` for a newline, ``␛`` for escape); paths and error lines get the same here:

* C0 controls and DEL become their control pictures (U+2400..U+241F, U+2421);
* a byte that was not UTF-8 (kept by the file system's ``surrogateescape``) is
  shown as ``\\xNN``;
* any other character Python does not call printable -- C1 controls, line and
  paragraph separators, bidirectional overrides -- as ``\\uNNNN``; spaces are kept.

Printable text, which is every ordinary path, is returned as it is, so outputs
are unchanged wherever nothing needed escaping. The machine formats (JSON, SARIF,
GitHub annotations) have escapes of their own and keep the path exact.
"""

from __future__ import annotations

_PICTURES = {code: chr(0x2400 + code) for code in range(0x20)} | {0x7F: "\u2421"}


def _shown(char: str, keep: str) -> str:
    if char in keep or char.isprintable():
        return char
    code = ord(char)
    if code in _PICTURES:
        return _PICTURES[code]
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for an undecodable byte
        return f"\\x{code - 0xDC00:02x}"
    import unicodedata  # only for text that is not printable as it is

    if unicodedata.category(char) == "Zs":  # a space (U+00A0...): ends no line
        return char
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def printable(text: str, keep: str = "") -> str:
    """``text`` with every character that could break or steer a line escaped;
    characters in ``keep`` (a tab in code) are left alone."""
    if text.isprintable():
        return text
    return "".join(_shown(char, keep) for char in text)
