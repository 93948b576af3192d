"""``# noqa`` comments: reading them (``check``) and writing them (``--add-noqa``).

Forms honoured, as flake8 and ruff users write them:

* ``# noqa`` (any case) on a finding's row suppresses every finding on that row;
* ``# noqa: KVI001,KVI002`` (commas and/or spaces, optional space after the colon)
  suppresses those codes; a prefix such as ``KVI00`` works as in flake8;
* ``# flake8: noqa`` or ``# ruff: noqa`` as a comment on its own line suppresses the
  whole file; with codes (``# ruff: noqa: KVI003``) only those codes, as ruff does.

A directive applies only to the row a finding is reported on (the row where its
expression starts), which is also where flake8 looks. Syntax errors (E999) are never
suppressed: a file that does not parse was not checked.

Comments are found with ``tokenize`` so that ``"# noqa"`` inside a string does not
count; a file that does not tokenize (it has a syntax error) falls back to a plain
search of each line, since its only reportable finding is E999 anyway.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from lint_plugin.findings import SYNTAX_ERROR_CODE, Finding

# A code is letters then digits (KVI001, or a prefix such as KVI00), any case, as
# flake8 reads them; words without digits are not codes, so a blanket directive
# followed by ": this is fine" stays blanket instead of suppressing THIS, IS, FINE.
_CODE = r"[A-Za-z]+[0-9]+"
_CODES = rf"{_CODE}(?:[\s,]+{_CODE})*"
_LINE_DIRECTIVE = re.compile(rf"#\s*(?i:noqa)\b(?:\s*:\s*(?P<codes>{_CODES}))?")
_FILE_DIRECTIVE = re.compile(
    rf"^#\s*(?i:flake8|ruff)\s*[:=]\s*(?i:noqa)\b(?:\s*:\s*(?P<codes>{_CODES}))?\s*$"
)
_SPLIT = re.compile(r"[\s,]+")
_NEWLINE = re.compile(r"\r\n|\r|\n")


def _matches(code: str, listed: Iterable[str]) -> bool:
    # flake8 compares with startswith, so listing KVI00 covers KVI001..KVI004.
    return any(code.startswith(prefix) for prefix in listed)


@dataclass(frozen=True)
class Directive:
    """One ``# noqa`` on a row; ``codes`` None means all codes."""

    codes: frozenset[str] | None
    start: int  # 0-based column span of the directive within the row's text
    end: int

    def covers(self, code: str) -> bool:
        return self.codes is None or _matches(code, self.codes)


@dataclass
class Suppressions:
    """What the noqa comments of one file suppress."""

    rows: dict[int, Directive] = field(default_factory=dict)
    file_all: bool = False
    file_codes: frozenset[str] = frozenset()

    def suppresses(self, finding: Finding) -> bool:
        if finding.code == SYNTAX_ERROR_CODE:
            return False
        if self.file_all or _matches(finding.code, self.file_codes):
            return True
        directive = self.rows.get(finding.row)
        return directive is not None and directive.covers(finding.code)


def _codes(text: str | None) -> frozenset[str] | None:
    if not text:
        return None
    return frozenset(code.upper() for code in _SPLIT.split(text.strip()) if code)


def _comments(source: str) -> list[tuple[int, int, str, bool]] | None:
    """(row, column, text, alone on its line) for every comment, or None when the
    source does not tokenize."""
    comments = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                row, column = token.start
                alone = not token.line[:column].strip()
                comments.append((row, column, token.string, alone))
    except (tokenize.TokenError, SyntaxError):
        return None
    return comments


def _fallback_comments(source: str) -> list[tuple[int, int, str, bool]]:
    # Without tokens, take everything from the first "#" of a line: wrong only for a
    # "#" inside a string, and only in a file that is reported as E999 anyway.
    comments = []
    for row, line in enumerate(_NEWLINE.split(source), start=1):
        column = line.find("#")
        if column >= 0:
            comments.append((row, column, line[column:], not line[:column].strip()))
    return comments


_CANDIDATE = re.compile(r"#[^\r\n]*(?i:noqa)")


def _candidate_comments(source: str) -> list[tuple[int, int, str, bool]] | None:
    """Comments that mention noqa, found line by line without tokenizing the file
    (tokenize costs more than the whole check of a large backend). None when a
    file-level directive shows up in a file with triple quotes: only tokenize can
    tell it from a line of a docstring, which must silence nothing."""
    comments = []
    row, counted = 1, 0
    for match in _CANDIDATE.finditer(source):
        start = (
            max(
                source.rfind("\n", 0, match.start()),
                source.rfind("\r", 0, match.start()),
            )
            + 1
        )
        row += len(_NEWLINE.findall(source, counted, start))
        counted = start
        end = _NEWLINE.search(source, start)
        line = source[start : end.start() if end else len(source)]
        column = _comment_start(line)
        if column is None:
            continue
        alone = not line[:column].strip()
        if alone and not _FILE_DIRECTIVE.match(line[column:].rstrip()):
            continue  # a comment-only row holds no finding: nothing to suppress
        if alone and ('"""' in source or "'''" in source):
            return None  # a docstring line must not silence the file: tokenize
        comments.append((row, column, line[column:], alone))
    return comments


def _comment_start(line: str) -> int | None:
    """Column of the ``#`` that starts a comment on ``line``, skipping strings."""
    quote = None
    index = 0
    while index < len(line):
        char = line[index]
        if quote is not None:
            if char == "\\":
                index += 2
                continue
            if line.startswith(quote, index):
                index += len(quote)
                quote = None
                continue
        elif char in "\"'":
            quote = char * 3 if line.startswith(char * 3, index) else char
            index += len(quote)
            continue
        elif char == "#":
            return index
        index += 1
    return None


def parse_suppressions(source: str) -> Suppressions:
    """Read every noqa directive of ``source`` (text, BOM already removed)."""
    found = Suppressions()
    # Cheap exit for the common case: no directive anywhere, no tokenizing.
    if _CANDIDATE.search(source) is None:
        return found
    comments = _candidate_comments(source)
    if comments is None:
        comments = _comments(source)
    if comments is None:
        comments = _fallback_comments(source)
    for row, column, text, alone in comments:
        if alone:
            file_match = _FILE_DIRECTIVE.match(text.rstrip())
            if file_match:
                codes = _codes(file_match.group("codes"))
                if codes is None:
                    found.file_all = True
                else:
                    found.file_codes |= codes
                continue
        match = _LINE_DIRECTIVE.search(text)
        if match:
            found.rows[row] = Directive(
                _codes(match.group("codes")),
                column + match.start(),
                column + match.end(),
            )
    return found


def _strip_bom(source: str) -> tuple[str, str]:
    return ("\ufeff", source[1:]) if source.startswith("\ufeff") else ("", source)


def apply_noqa(findings: Sequence[Finding], source: str) -> list[Finding]:
    """``findings`` without the ones a noqa directive of ``source`` suppresses."""
    suppressions = parse_suppressions(_strip_bom(source)[1])
    return [f for f in findings if not suppressions.suppresses(f)]


@dataclass
class NoqaEdit:
    """Result of ``add_noqa``: the new text, how many rows changed, rows left alone."""

    source: str
    added: int
    skipped: list[int] = field(default_factory=list)


def _rows_without_room(source: str) -> set[int]:
    """Rows whose end is inside a string or continues with a backslash: a comment
    appended there would change the string or break the statement."""
    rows: set[int] = set()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return rows
    commented = set()
    for token in tokens:
        (start_row, _), (end_row, _) = token.start, token.end
        if token.type == tokenize.COMMENT:
            commented.add(start_row)
        elif end_row > start_row and token.type not in (tokenize.NL, tokenize.NEWLINE):
            rows.update(range(start_row, end_row))
    for row, line in enumerate(_NEWLINE.split(source), start=1):
        if line.rstrip().endswith("\\") and row not in commented:
            rows.add(row)
    return rows


def _format(codes: Iterable[str]) -> str:
    return "# noqa: " + ", ".join(sorted(set(codes)))


def add_noqa(source: str, codes_by_row: Mapping[int, Iterable[str]]) -> NoqaEdit:
    """Add or merge ``# noqa: CODES`` at the end of the given 1-based rows.

    An existing ``# noqa: X`` is widened in place (``# noqa: KVI001, X``) and any other
    comment on the row is kept; a blanket ``# noqa`` already covers everything. Each
    row keeps its own line ending, so CRLF and mixed files stay byte-identical outside
    the edited rows. E999 is never added (it cannot be suppressed).
    """
    bom, text = _strip_bom(source)
    pieces = _NEWLINE.split(text)
    endings = [*_NEWLINE.findall(text), ""]
    suppressions = parse_suppressions(text)
    no_room = _rows_without_room(text)
    result = NoqaEdit(source, 0)
    for row in sorted(codes_by_row):
        codes = {c.upper() for c in codes_by_row[row]} - {SYNTAX_ERROR_CODE}
        if not codes or not 1 <= row <= len(pieces):
            continue
        existing = suppressions.rows.get(row)
        if existing is not None and all(existing.covers(code) for code in codes):
            continue  # nothing new to say
        if row in no_room:
            result.skipped.append(row)
            continue
        line = pieces[row - 1]
        if existing is None:
            pieces[row - 1] = line.rstrip() + "  " + _format(codes)
        else:
            # existing.codes is not None here: a blanket noqa covers every code.
            merged = _format(codes | set(existing.codes or ()))
            pieces[row - 1] = line[: existing.start] + merged + line[existing.end :]
        result.added += 1
    result.source = bom + "".join(p + e for p, e in zip(pieces, endings, strict=True))
    return result
