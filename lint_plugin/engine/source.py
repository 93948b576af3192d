"""Positions and text of parsed source: ``ast`` byte columns to character columns."""

from __future__ import annotations

import bisect
import re

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


# What str.splitlines ends a line at and Python's tokenizer does not.
_OTHER_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e")
_OTHER_WIDE_BREAKS = ("\x85", "\u2028", "\u2029")


def split_lines(text: str) -> list[str]:
    """``text``'s lines as Python ends them (LF, CRLF, a lone CR), each with its
    line end: ``str.splitlines(True)``, a quarter of the regular expression's
    time, where no other character it breaks at is present."""
    if any(c in text for c in _OTHER_BREAKS) or (
        not text.isascii() and any(c in text for c in _OTHER_WIDE_BREAKS)
    ):
        return _LINE.findall(text)
    return text.splitlines(True)


def rows_matching(pattern: re.Pattern[str], text: str, first_row: int = 1) -> list[int]:
    """Rows of ``text`` (its first line numbered ``first_row``) where ``pattern``
    matches, ascending, each once."""
    return rows_of(text, [match.start() for match in pattern.finditer(text)], first_row)


def normalised(text: str) -> str:
    """``text`` with Python's line ends (CRLF and a lone CR end a line) as ``\\n``:
    columns are unchanged, the CR being the last character of its line. The one
    place every front end normalises line ends (``fix`` restores them)."""
    if "\r" in text:
        return text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def rows_of(text: str, offsets: list[int], first_row: int = 1) -> list[int]:
    """Rows of ``text`` (its first line numbered ``first_row``) holding the
    ascending ``offsets``, each once."""
    rows: list[int] = []
    last, row = 0, first_row
    for offset in offsets:
        row += text.count("\n", last, offset)
        last = offset
        if not rows or rows[-1] != row:
            rows.append(row)
    return rows


def occurrences(text: str, words: tuple[str, ...]) -> list[int]:
    """Every offset where one of ``words`` starts, ascending (overlaps too).
    One ``str.find`` loop per word: a tenth of the time of one search for all
    of them, which ``re`` tries at every offset of the text."""
    found: list[int] = []
    for word in words:
        at = text.find(word)
        while at >= 0:
            found.append(at)
            at = text.find(word, at + 1)
    found.sort()
    return found


def syntax_error_position(exc: SyntaxError, text: str) -> tuple[int, int]:
    """1-based row and column of ``exc`` in ``text``. Python before 3.12 gives no
    position for a NUL byte ("source code string cannot contain null bytes"):
    the first NUL's is given, on every version, as ruff points at it, never
    ``None:None``."""
    index = text.find("\0") if "null byte" in (exc.msg or "") else -1
    if index < 0:
        return exc.lineno or 1, exc.offset or 1
    before = text[:index]
    breaks = list(re.finditer(r"\r\n|\r|\n", before))
    start = breaks[-1].end() if breaks else 0
    return len(breaks) + 1, index - start + 1


class Source:
    """The text a tree was parsed from; ``row_offset`` maps its rows to the file's."""

    def __init__(self, text: str, row_offset: int = 0) -> None:
        self.text = text
        self.row_offset = row_offset
        self._lines: list[str] | None = None
        self._starts: list[int] | None = None
        self._naming: dict[tuple[str, ...], list[int]] = {}

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = split_lines(self.text)
        return self._lines

    def _line_starts(self) -> list[int]:
        if self._starts is None:
            starts, offset = [], 0
            for line in self.lines:
                starts.append(offset)
                offset += len(line)
            self._starts = starts
        return self._starts

    def rows_naming(self, words: tuple[str, ...]) -> list[int]:
        """``rows_of`` the ``occurrences`` of ``words`` in the text, searched
        once: the flake8 plugin walks each statement of a file with a walker
        of its own over this one source, and a search of a whole file that is
        not ASCII costs ~50 us a word."""
        found = self._naming.get(words)
        if found is None:
            found = self._naming[words] = rows_of(
                self.text, occurrences(self.text, words)
            )
        return found

    def char_col(self, row: int, byte_col: int) -> int:
        """``ast`` counts UTF-8 bytes; people and ruff count characters."""
        line = self.lines[row - 1] if row - 1 < len(self.lines) else ""
        if line.isascii():
            return byte_col
        return len(line.encode()[:byte_col].decode(errors="ignore"))

    def index(self, row: int, byte_col: int) -> int:
        """Absolute character index of an ``ast`` position (row is 1-based)."""
        return self._line_starts()[row - 1] + self.char_col(row, byte_col)

    def position(self, index: int) -> tuple[int, int]:
        """1-based (row, column) in the file of an absolute character index."""
        starts = self._line_starts()
        row = bisect.bisect_right(starts, index) - 1
        return row + 1 + self.row_offset, index - starts[row] + 1

    def span(self, node) -> tuple[int, int]:
        return (
            self.index(node.lineno, node.col_offset),
            self.index(node.end_lineno, node.end_col_offset),
        )

    def segment(self, node) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    def widen_to_parens(
        self, span: tuple[int, int], bounds: tuple[int, int]
    ) -> tuple[int, int]:
        """Grow ``span`` over the parentheses that group it, staying inside
        ``bounds`` (an operator's span, where a ``(`` can only be grouping)."""
        start, end = span
        text = self.text
        while True:
            before = start - 1
            while before >= bounds[0] and text[before] in " \t\r\n\\":
                before -= 1
            after = end
            while after < bounds[1] and text[after] in " \t\r\n\\":
                after += 1
            if (
                before >= bounds[0]
                and after < bounds[1]
                and text[before] == "("
                and text[after] == ")"
            ):
                start, end = before, after + 1
            else:
                return start, end


# A comment in an arithmetic span (which holds no string literal to fool it).
COMMENT = re.compile(r"#[^\r\n]*")


def one_line(text: str) -> str:
    """An expression's text as one line, for messages: no comments, no backslash
    continuations, single spaces."""
    return " ".join(_CONTINUATION.sub(" ", COMMENT.sub("", text)).split())


_CONTINUATION = re.compile(r"\\\r?\n")
