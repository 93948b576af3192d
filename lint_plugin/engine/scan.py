"""``check``'s hot path: read bytes, skip what cannot match, parse only regions.

Most files never mention topk, a helper or a multi-step draft class, and are
dismissed by one bytes search. In the rest, each mention is widened to the
outermost function around it (or to the whole draft backend class, which KVI003
needs), and only those regions are parsed. When a region does not parse on its own
(an odd layout the line scan misread) the whole file is parsed instead, so the
shortcut can cost time but never a finding.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Callable

from lint_plugin.engine import vocabulary
from lint_plugin.engine.draft_backend import read_whole
from lint_plugin.engine.source import occurrences, rows_matching, rows_of

# The words are the rules' own (lint_plugin.engine.vocabulary): every finding needs one
# of the region seeds in the file; a region is parsed only if it also names the
# rest of a clause (or is a class read whole); rows naming a row word are walked.
# None: those words; a pattern put in their place (tests) is searched as one.
_INTEREST_TEXT: re.Pattern[str] | None = None
_ROW_INTEREST: re.Pattern[str] | None = None
_SECOND_ROLE: re.Pattern[str] | None = None
_BLOCK = vocabulary.BLOCK_HEAD


def interesting_rows(text: str, aliases: tuple[str, ...] = ()) -> list[int]:
    """1-based rows of ``text`` holding a word some finding needs (``aliases``:
    other names the file imports the helpers under, see ``helper_aliases``)."""
    if aliases or _ROW_INTEREST is not None:
        pattern = _ROW_INTEREST or vocabulary.row_words()
        return rows_matching(_with_aliases(pattern, aliases), text)
    return rows_of(text, occurrences(text, vocabulary.row_word_list()))


def _with_aliases(pattern: re.Pattern[str], aliases: tuple[str, ...]):
    """``pattern`` that also finds a helper called by one of its ``aliases``."""
    if not aliases:
        return pattern
    words = "|".join(rf"\b{re.escape(alias)}\b" for alias in aliases)
    return _compiled(f"{pattern.pattern}|{words}")


@functools.lru_cache(maxsize=32)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def regions(
    text: str,
    lines: list[str],
    aliases: tuple[str, ...] = (),
    layout: Layout | None = None,
) -> list[tuple[int, int, bool]] | None:
    """0-based ``[start, end)`` line ranges to parse, or None for the whole file."""
    if layout is None:
        layout = Layout(text, lines, StringSpans(text), aliases)
    strings = layout.strings
    second_role = _with_aliases(_SECOND_ROLE or vocabulary.second_words(), aliases)
    spans: list[tuple[int, int]] = []
    row = counted = 0
    for start in _seed_starts(text, aliases):
        row += text.count("\n", counted, start)
        counted = start
        if strings.holds(start):
            continue  # code quoted in a docstring is no code (flake8 agrees)
        if spans and spans[-1][0] <= row < spans[-1][1]:
            continue  # this block is already picked
        if lines[row].lstrip().startswith("#"):
            continue  # a mention in a comment matches nothing
        region = layout.region(row)
        if region is None:
            return None
        start, end = region
        while spans and spans[-1][1] > start:  # a larger block swallows earlier ones
            previous = spans.pop()
            start, end = min(start, previous[0]), max(end, previous[1])
        spans.append((start, end))
    regions = []
    for start, end in spans:
        whole_class = layout.whole_class(start) is not None
        # Searched in place: the span's lines joined, without a copy (a search
        # ending at ``endpos`` sees the text end there, as in the joined lines).
        first, last = layout.offset(start), layout.offset(end) - 1
        if not whole_class and not second_role.search(text, first, max(first, last)):
            continue
        regions.append((start, end, _indent(lines[start]) > 0))
    return regions


def _seed_starts(text: str, aliases: tuple[str, ...]) -> list[int]:
    """Ascending offsets where a region seed starts. Each word is found with
    ``str.find`` (``source.occurrences``); overlapping finds add offsets on
    rows already found, which the caller skips. Aliases, or another pattern put
    in the seeds' place, are searched as a pattern."""
    if aliases or _INTEREST_TEXT is not None:
        pattern = _with_aliases(_INTEREST_TEXT or vocabulary.region_seeds(), aliases)
        return [match.start() for match in pattern.finditer(text)]
    return occurrences(text, vocabulary.region_seed_words())


# The keyword first: a search for two words skips most of the text, where a
# pattern anchored at every line start (``^`` with re.M) is tried at each one.
# Whether only indentation (and ``async``) precedes it is checked per match.
_BLOCK_KEYWORDS = ("def", "class")
_BLOCK_NAME = re.compile(r"[ \t]+(\w+)")
_BLOCK_PREFIX = re.compile(r"[ \t]*(?:async[ \t]+)?")


class Layout:
    """Where the blocks of one file start and end, found with C-speed searches:
    the def and class lines once, a block's end by one regex search."""

    def __init__(
        self,
        text: str,
        lines: list[str],
        strings: StringSpans,
        aliases: tuple[str, ...] = (),
    ) -> None:
        self.text = text
        self.lines = lines
        self.strings = strings
        self.aliases = aliases
        self.blocks: list[tuple[int, int, str, str]] = []  # row, indent, kind, name
        row = counted = 0
        for start in occurrences(text, _BLOCK_KEYWORDS):
            kind = "def" if text.startswith("def", start) else "class"
            name = _BLOCK_NAME.match(text, start + len(kind))
            if name is None:
                continue  # `default`, `classes`: no block keyword
            line_start = text.rfind("\n", 0, start) + 1
            prefix = _BLOCK_PREFIX.match(text, line_start, start)
            if prefix.end() != start:
                continue  # not the line's first word: `undef x`, `x.def y`
            row += text.count("\n", counted, start)
            counted = start
            if strings.holds(start):
                continue
            indent = len(text[line_start:start]) - len(text[line_start:start].lstrip())
            self.blocks.append((row, indent, kind, name.group(1)))
        self._block_rows = [block[0] for block in self.blocks]
        self._parent_index: list[int] | None = None
        self._offsets: list[int] | None = None
        self._whole_rows: dict[int, bool] = {}
        self._ends: dict[int, int] = {}

    def top_level_blocks(self) -> list[tuple[int, int, str, str]]:
        """``(start, end, kind, name)`` of each ``def``/``class`` at column 0."""
        return [
            (row, self.block_end(row), kind, name)
            for row, indent, kind, name in self.blocks
            if indent == 0
        ]

    def region(self, row: int) -> tuple[int, int] | None:
        """The draft class holding ``row``, else the outermost def around it, else
        the innermost class, else the module-level statement it belongs to."""
        start = self._enclosing_block(row)
        if start is not None:
            end = self.block_end(start)
            if start <= row < end:
                return start, end
        # Module-level code, or a layout the block lines misread: go line by line.
        start = _region_start(self.lines, row, self.read_whole)
        return None if start is None else (start, self.block_end(start))

    def _enclosing_block(self, row: int) -> int | None:
        """The draft class or the outermost def around ``row``; None when ``row``
        sits in a class body outside any def (the line scan finds its statement)."""
        threshold = _indent(self.lines[row])
        outermost_def = None
        at = bisect.bisect_right(self._block_rows, row) - 1
        blocks, parents = self.blocks, self._parents()
        # Up the chain of enclosing blocks, never through their siblings: a
        # walk back over every earlier block (and a copy of the list for it)
        # made check quadratic in a file or class of many small functions.
        while at >= 0:
            block_row, indent, kind, name = blocks[at]
            if block_row != row:
                if indent >= threshold:
                    at = parents[at]
                    continue
                threshold = indent
            if kind == "def":
                outermost_def = block_row
            elif self.read_whole(block_row, name):
                return block_row
            elif outermost_def is None:
                return None
            if indent == 0:
                break
            at = parents[at]
        return outermost_def

    def children(self, row: int) -> list[tuple[int, str, str]]:
        """``(row, kind, name)`` of the blocks directly inside the block at
        ``row`` (a ``def`` under an ``if`` of a class body counts: no block
        line stands between)."""
        at = bisect.bisect_left(self._block_rows, row)
        if at == len(self.blocks) or self._block_rows[at] != row:
            return []
        parents, found = self._parents(), []
        for index in range(at + 1, len(self.blocks)):
            block = self.blocks[index]
            if block[1] <= self.blocks[at][1]:
                break  # past the block's end
            if parents[index] == at:
                found.append((block[0], block[2], block[3]))
        return found

    def _parents(self) -> list[int]:
        """For each block, the nearest block before it indented less (-1)."""
        if self._parent_index is None:
            parents: list[int] = []
            open_blocks: list[int] = []
            for at, (_, indent, _, _) in enumerate(self.blocks):
                while open_blocks and self.blocks[open_blocks[-1]][1] >= indent:
                    open_blocks.pop()
                parents.append(open_blocks[-1] if open_blocks else -1)
                open_blocks.append(at)
            self._parent_index = parents
        return self._parent_index

    def offset(self, row: int) -> int:
        """Where ``row`` (0-based) starts in the text (its length past the end)."""
        if self._offsets is None:
            self._offsets = list(itertools.accumulate(map(len, self.lines), initial=0))
        return self._offsets[row] + row

    def whole_class(self, row: int) -> str | None:
        """The name of the class read whole whose ``class`` line is ``row``."""
        block = _BLOCK.match(self.lines[row].lstrip())
        if block is None or block.group(1) != "class":
            return None
        return block.group(2) if self.read_whole(row, block.group(2)) else None

    def read_whole(self, row: int, name: str) -> bool:
        """Is the class at ``row`` read whole (``facts.read_whole``)?"""
        if row not in self._whole_rows:
            end = self.block_end(row)
            offsets = self._offsets
            text = self.text[offsets[row] + row : offsets[end] + end]
            self._whole_rows[row] = read_whole(name, text, self.aliases)
        return self._whole_rows[row]

    def block_end(self, start: int) -> int:
        """The first row after ``start`` indented no deeper than it (blank lines,
        comments, closing brackets and the lines of a triple-quoted string do
        not end a block: a string's closing quotes at column 0 are no code)."""
        if self._offsets is None:
            self._offsets = list(itertools.accumulate(map(len, self.lines), initial=0))
        following = start + 1
        if following >= len(self.lines):
            return len(self.lines)
        found = self._ends.get(start)
        if found is not None:
            return found
        position = self._offsets[following] + following  # + one "\n" per line
        # From the newline before the row: the pattern starts with "\n", which
        # is searched for as a literal (a "^" is tried at every offset). A line
        # start inside a triple-quoted string is no code.
        pattern = _block_end_pattern(_indent(self.lines[start]))
        match = pattern.search(self.text, position - 1)
        while match is not None and self.strings.holds(match.start() + 1):
            match = pattern.search(self.text, match.end())
        if match is None:
            found = len(self.lines)
        else:
            found = following + self.text.count("\n", position, match.start() + 1)
        self._ends[start] = found
        return found


# What can hide code-like text: comments and string literals. Only a triple-quoted
# string spans lines, so only those are remembered.
_QUOTED = re.compile(
    r"#[^\n]*"
    r"|(\"\"\"|''')"
    r'|"(?:[^"\\\n]|\\[\s\S])*"'
    r"|'(?:[^'\\\n]|\\[\s\S])*'"
)


def _string_end(text: str, quote: str, position: int) -> int:
    """Offset just after the triple ``quote`` closing a string whose body starts
    at ``position``, or -1 when it is never closed. A quote preceded by an odd
    run of backslashes is escaped. Searched with ``str.find``: a regular
    expression with a repeated group here backtracks exponentially on an
    unterminated string (a file being edited)."""
    while True:
        end = text.find(quote, position)
        if end < 0:
            return -1
        first = end
        while first > position and text[first - 1] == "\\":
            first -= 1
        if (end - first) % 2 == 0:
            return end + 3
        position = end + 1


class StringSpans:
    """Offsets of the triple-quoted strings of a file, found lazily by regex
    searches (none at all to find in a file without a triple quote)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._spans: list[tuple[int, int]] | None = None

    def holds(self, offset: int) -> bool:
        if self._spans is None:
            self._spans = self._find()
        index = bisect.bisect_right(self._spans, (offset, len(self.text) + 1)) - 1
        return index >= 0 and self._spans[index][0] < offset < self._spans[index][1]

    def _find(self) -> list[tuple[int, int]]:
        text = self.text
        if '"""' not in text and "'''" not in text:
            return []
        spans = []
        position = 0
        following = _TripleQuotes(text)
        while True:
            start = following.at_or_after(position)
            if start < 0:
                return spans
            # Only the line of the next triple quote can hide it (a comment or a
            # one-line string before it): the text in between holds no triple
            # quote, and no other string or comment spans lines, unless a
            # backslash continues a one-line string there.
            line_start = text.rfind("\n", 0, start) + 1
            scan = position
            if line_start > position and not text.startswith("\\\n", line_start - 2):
                scan = line_start
            match = _QUOTED.search(text, scan)
            while match is not None and match.group(1) is None and match.end() <= start:
                match = _QUOTED.search(text, match.end())
            if match is None:  # cannot happen: `start` itself matches
                return spans
            if match.group(1) is None:
                position = match.end()  # in a comment or a one-line string
                continue
            end = _string_end(text, match.group(1), match.end())
            if end < 0:  # unterminated: the parser will say so
                spans.append((match.start(), len(text)))
                return spans
            spans.append((match.start(), end))
            position = end


class _TripleQuotes:
    """The next triple quote of either kind at or after an offset. Each kind's
    next occurrence is remembered: searching again for a kind the file lacks
    would read the rest of the file for every string."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.next = {'"""': -2, "'''": -2}  # -2: not searched yet

    def at_or_after(self, position: int) -> int:
        found = []
        for quote, at in self.next.items():
            if -1 < at < position or at == -2:
                at = self.text.find(quote, position)
                self.next[quote] = at
            if at >= 0:
                found.append(at)
        return min(found, default=-1)


@functools.lru_cache(maxsize=64)
def _block_end_pattern(indent: int) -> re.Pattern[str]:
    return re.compile(rf"\n[ \t]{{0,{indent}}}[^ \t\r\n#)\]}}]")


def _region_start(
    lines: list[str], row: int, read_whole: Callable[[int, str], bool]
) -> int | None:
    """Line by line: the draft class holding ``row``, else the outermost def around
    it, else the class-body or module-level statement it belongs to. Only the
    draft class is taken whole: a large class (a settings dataclass) mentioning
    topk in one field is not worth parsing all of."""
    stripped = lines[row].lstrip()
    threshold = len(lines[row]) - len(stripped)
    outermost_def = None
    statement = row
    block = _BLOCK.match(stripped)
    if block:
        if block.group(1) == "def":
            outermost_def = row
        elif read_whole(row, block.group(2)):
            return row
    for k in range(row - 1, -1, -1) if threshold else ():
        line = lines[k]
        stripped = line.lstrip()
        if not stripped or stripped[0] in "#)]}\"'":
            continue
        indent = len(line) - len(stripped)
        if indent >= threshold:
            continue
        threshold = indent
        block = _BLOCK.match(stripped)
        if block and block.group(1) == "class":
            if read_whole(k, block.group(2)):
                return k
            if outermost_def is None:
                return statement  # the statement in the class body
        elif block:
            outermost_def = k
        statement = k
        if indent == 0:
            break
    else:
        if threshold:
            return None  # never reached column 0: a layout we cannot read
    return outermost_def if outermost_def is not None else statement


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())
