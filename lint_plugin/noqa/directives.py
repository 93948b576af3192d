"""``# noqa`` directives: which findings they suppress, which are unused (KVI100),
and where ``--add-noqa`` writes them.

Spelling: flake8's own grammar, so both front ends read every spelling alike.

* A row holds a directive when flake8's inline pattern is found in its text:
  ``# noqa`` (exactly one space, any case), optionally followed by ``:`` and codes
  (``# noqa:KVI001,KVI002``, ``# noqa: KVI001 KVI002``). Only the first match of a
  row counts. ``#noqa`` and ``# noqa : X`` are not what they look like: the first
  is no directive, the second a blanket one, exactly as flake8 reads them.
* Codes compare as flake8 compares them: case-sensitively, a listed code covering
  every code it prefixes (``KVI00`` covers KVI001..KVI004). ``# noqa: kvi001``
  therefore suppresses nothing (it is reported as an unknown code, KVI100), and
  neither does ``# ruff: noqa: kvi001`` (ruff rejects it too). Selection reads
  codes the same way (``lint_plugin.config.selection``): ``--select kvi001`` is an
  error.
* ``# flake8: noqa`` (or ``# flake8=noqa``) at the start of any line silences the
  whole file, with or without codes after it, as flake8 does.
* ``# ruff: noqa`` on its own line silences the file too, and ``# ruff: noqa: CODES``
  only those codes, as ruff does: ruff users mark generated files that way. flake8
  ignores it; the flake8 plugin applies it itself (below), so both agree.

Where: a directive is honoured on any row of the statement (logical line) that holds
the finding, not only on the row the finding starts on. A formatter moves a
trailing comment when it re-wraps a statement (black 24.10 puts it after the last
leaf of the statement), but never out of the statement, so a suppression survives
``--add-noqa`` followed by black, and a second ``--add-noqa`` adds nothing.

Agreement with flake8: flake8 applies a directive only on the reported row (and
across a multi-line string). Everything flake8 suppresses is suppressed here too,
so the flake8 plugin filters its findings with this module before flake8 sees
them; flake8's own pass then removes nothing more, and ``flake8 --select KVI`` and
``check`` report the same findings.

Unused directives (KVI100, ruff's RUF100): a directive in a comment that lists a
``KVI`` code which suppressed no finding of the file (findings counted before
``--select``, so a directive for a rule that is switched off is not churned). Only
the KVI codes are judged: other codes belong to other tools, and a blanket
``# noqa`` may serve them. When two directives of one statement cover the same
finding, the one on the finding's own row is used, else the first; the other is
unused. E999 is never suppressed: a file that does not parse was not checked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from lint_plugin.findings import SYNTAX_ERROR_CODE, Edit, Finding, Fix
from lint_plugin.records import field, record

UNUSED_NOQA_CODE = "KVI100"
OWN_PREFIX = "KVI"

# flake8's defaults.NOQA_INLINE_REGEXP and defaults.NOQA_FILE, restated. Kept as
# text and compiled on the first comment that may be a directive (``re`` keeps
# them after that): most files hold none, and the three cost ~2 ms to compile.
_INLINE = r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?"
_FLAKE8_FILE = r"\s*# flake8[:=]\s*noqa"
_RUFF_FILE = (
    r"\s*#\s*ruff\s*:\s*noqa(?:\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?"
    r"\s*$"
)
_CANDIDATE = re.compile(r"#\s*(?:noqa|flake8|ruff)", re.IGNORECASE)
_SPLIT = re.compile(r"[,\s]+")
_NEWLINE = re.compile(r"\r\n|\r|\n")


def _codes(text: str | None) -> tuple[str, ...] | None:
    # flake8's utils.parse_comma_separated_list: split on commas and spaces.
    if text is None:
        return None
    return tuple(code for code in _SPLIT.split(text) if code)


def _covered(code: str, listed: Iterable[str]) -> bool:
    listed = tuple(listed)
    return code in listed or code.startswith(listed)


@record(frozen=True)
class Directive:
    """The first ``# noqa`` of a row; ``codes`` None means every code."""

    row: int
    start: int  # 0-based character span of the match within the row
    end: int
    codes: tuple[str, ...] | None
    codes_start: int = -1  # where the codes text starts (-1: no codes)

    def covers(self, code: str) -> bool:
        return self.codes is None or _covered(code, self.codes)

    def own_codes(self) -> tuple[str, ...]:
        """The listed codes this tool answers for (KVI..., any case)."""
        return tuple(c for c in self.codes or () if c.upper().startswith(OWN_PREFIX))


@record
class _Layout:
    """What tokenize tells about a file: statement extents, rows where a comment
    cannot go, where comments start. Computed only when a file needs it."""

    statement: dict[int, tuple[int, int]] = field(default_factory=dict)
    no_room: set[int] = field(default_factory=set)
    comment_columns: dict[int, int] = field(default_factory=dict)
    ok: bool = True


def _layout(lines: Sequence[str]) -> _Layout:
    layout = _Layout()
    text = "\n".join(lines) + "\n"
    import io
    import tokenize  # only for files holding a directive: ~5 ms to import

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        layout.ok = False
        return layout
    depth = 0
    first = last = None
    skip = (tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT)
    for token in tokens:
        if token.type in skip:
            continue
        (start_row, start_col), (end_row, _) = token.start, token.end
        if token.type == tokenize.COMMENT:
            layout.comment_columns.setdefault(start_row, start_col)
        elif end_row > start_row and token.type not in (tokenize.NL, tokenize.NEWLINE):
            layout.no_room.update(range(start_row, end_row))  # inside a string
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth = max(0, depth - 1)
        first = start_row if first is None else min(first, start_row)
        last = end_row if last is None else max(last, end_row)
        if token.type == tokenize.NEWLINE or (token.type == tokenize.NL and not depth):
            for row in range(first, last + 1):
                layout.statement[row] = (first, last)
            first = last = None
    for row, line in enumerate(lines, start=1):
        if line.rstrip().endswith("\\") and row not in layout.comment_columns:
            layout.no_room.add(row)
    return layout


@record
class Suppressions:
    """The directives of one file and what they suppress."""

    lines: list[str] = field(default_factory=list)
    # Every match on a row: flake8 reads only the first (which may sit in a
    # string), a person's comment may come after it; honouring all keeps this a
    # superset of flake8's reading.
    rows: dict[int, tuple[Directive, ...]] = field(default_factory=dict)
    file_all: bool = False
    file_codes: frozenset[str] = frozenset()
    _layout: _Layout | None = None

    @property
    def layout(self) -> _Layout:
        if self._layout is None:
            self._layout = _layout(self.lines)
        return self._layout

    def span(self, finding: Finding) -> tuple[int, int]:
        """Rows whose directives apply to ``finding``: its statement(s)."""
        first, last = finding.row, max(finding.row, finding.end_row)
        statement = self.layout.statement
        first = statement.get(first, (first, first))[0]
        last = statement.get(last, (last, last))[1]
        return first, last

    def directive_for(self, finding: Finding) -> Directive | None:
        """The directive that suppresses ``finding``: on its own row, else the
        first one of its statement that covers it."""
        for directive in self.rows.get(finding.row, ()):
            if directive.covers(finding.code):
                return directive
        if not any(d.covers(finding.code) for row in self.rows.values() for d in row):
            return None  # no need to tokenize
        first, last = self.span(finding)
        for row in range(first, last + 1):
            for directive in self.rows.get(row, ()):
                if directive.covers(finding.code):
                    return directive
        return None

    def in_comment(self, directive: Directive) -> bool:
        """Is the directive's text in a comment (not in a string)?"""
        layout = self.layout
        column = layout.comment_columns.get(directive.row)
        return layout.ok and column is not None and column <= directive.start

    def file_suppresses(self, code: str) -> bool:
        return self.file_all or _covered(code, self.file_codes)

    def suppresses(self, finding: Finding) -> bool:
        if finding.code == SYNTAX_ERROR_CODE:
            return False
        if self.file_suppresses(finding.code):
            return True
        return self.directive_for(finding) is not None


def parse_suppressions(source: str) -> Suppressions:
    """Every directive of ``source`` (text, BOM already removed)."""
    found = Suppressions()
    if _CANDIDATE.search(source) is None:
        return found  # the common case: nothing to read, nothing to tokenize
    found.lines = _NEWLINE.split(source)
    for row, line in enumerate(found.lines, start=1):
        if "#" not in line or _CANDIDATE.search(line) is None:
            continue
        if re.match(_FLAKE8_FILE, line, re.IGNORECASE):
            found.file_all = True
            continue
        ruff = re.match(_RUFF_FILE, line, re.IGNORECASE)
        if ruff:
            codes = _codes(ruff.group("codes"))
            if codes is None:
                found.file_all = True
            else:
                found.file_codes |= frozenset(codes)  # as written: case counts
            continue
        directives = tuple(
            Directive(
                row,
                match.start(),
                match.end(),
                _codes(match.group("codes")),
                match.start("codes") if match.group("codes") else -1,
            )
            for match in re.finditer(_INLINE, line, re.IGNORECASE)
        )
        if directives:
            found.rows[row] = directives
    return found


def _strip_bom(source: str) -> tuple[str, str]:
    return ("\ufeff", source[1:]) if source.startswith("\ufeff") else ("", source)


def apply_noqa(findings: Sequence[Finding], source: str) -> list[Finding]:
    """``findings`` without the ones a directive of ``source`` suppresses."""
    suppressions = parse_suppressions(_strip_bom(source)[1])
    return [f for f in findings if not suppressions.suppresses(f)]


def may_hold_own_directive(data: bytes | str) -> bool:
    """Cheap test on a file's bytes (or text): could KVI100 have anything to say
    about it?
    Codes are read in any case (``# noqa: Kvi001`` is an unused KVI directive);
    one search of a lower-cased copy costs less than two of the bytes."""
    lowered = data.lower()
    return (b"kvi" if isinstance(lowered, bytes) else "kvi") in lowered


def review(findings: Sequence[Finding], source: str, path: str) -> list[Finding]:
    """The findings no directive suppresses, plus a KVI100 finding for each
    directive listing KVI codes that suppressed nothing (itself suppressible)."""
    suppressions = parse_suppressions(_strip_bom(source)[1])
    if not (suppressions.rows or suppressions.file_all or suppressions.file_codes):
        return list(findings)
    kept: list[Finding] = []
    used: dict[tuple[int, int], set[str]] = {}
    for finding in findings:
        if finding.code == SYNTAX_ERROR_CODE:
            kept.append(finding)
            continue
        if suppressions.file_suppresses(finding.code):
            continue
        directive = suppressions.directive_for(finding)
        if directive is None:
            kept.append(finding)
        elif directive.codes is not None:
            used.setdefault((directive.row, directive.start), set()).update(
                code for code in directive.codes if _covered(finding.code, (code,))
            )
    if any(f.code == SYNTAX_ERROR_CODE for f in findings):
        return kept  # nothing was checked: no directive can be judged
    for unused in _unused(suppressions, used, path):
        if not suppressions.suppresses(unused):
            kept.append(unused)
    return kept


def _unused(
    suppressions: Suppressions, used: Mapping[tuple[int, int], set[str]], path: str
) -> list[Finding]:
    from lint_plugin.rules import RULES

    findings = []
    directives = [
        d for row in sorted(suppressions.rows) for d in suppressions.rows[row]
    ]
    for directive in directives:
        row = directive.row
        taken = used.get((row, directive.start), set())
        unused = [
            c for c in directive.own_codes() if c not in taken and c != UNUSED_NOQA_CODE
        ]
        if not unused or not suppressions.in_comment(directive):
            continue  # used, or its text is inside a string: nothing to remove
        column = suppressions.layout.comment_columns[row]
        line = suppressions.lines[row - 1]
        unknown = [c for c in unused if c not in RULES]
        detail = ", ".join(f"`{c}`" for c in unused)
        kind = "unknown" if len(unknown) == len(unused) else "unused"
        message = RULES[UNUSED_NOQA_CODE].message.format(kind=kind, codes=detail)
        edit = _removal(line, row, directive, set(unused), column)
        findings.append(
            Finding(
                path,
                row,
                directive.start + 1,
                row,
                directive.end + 1,
                UNUSED_NOQA_CODE,
                message,
                Fix("safe", "Remove unused `noqa` directive", (edit,)),
            )
        )
    return findings


def _removal(
    line: str, row: int, directive: Directive, unused: set[str], comment: int
) -> Edit:
    """The edit that drops ``unused`` codes, or the whole directive when no code is
    left: the comment goes, or the rest of it stays as a plain comment (never
    turned into a blanket ``# noqa``)."""
    kept = [c for c in directive.codes or () if c not in unused]
    if kept:
        written = line[directive.codes_start : directive.end].rstrip(", \t")
        end = directive.codes_start + len(written)
        return Edit(", ".join(kept), row, directive.codes_start + 1, row, end + 1)
    rest = line[directive.end :].strip()
    if not rest:
        start = directive.start
        if directive.start == comment:  # the comment is the directive: drop it
            start = len(line[:comment].rstrip())
        return Edit("", row, start + 1, row, len(line) + 1)
    content = rest if rest.startswith("#") else f"# {rest}"
    return Edit(content, row, directive.start + 1, row, len(line) + 1)


# --- writing directives (--add-noqa) ------------------------------------------------


@record
class NoqaEdit:
    """Result of ``add_noqa``: the new text, how many rows changed, rows left alone."""

    source: str
    added: int
    skipped: list[int] = field(default_factory=list)


def _format(codes: Iterable[str]) -> str:
    return "# noqa: " + ", ".join(sorted(set(codes)))


def add_noqa(
    source: str, wanted: Mapping[int, Iterable[str]] | Sequence[Finding]
) -> NoqaEdit:
    """Add or widen ``# noqa: CODES`` so every given finding (or each row's codes)
    is suppressed; a finding a directive already covers adds nothing.

    A directive goes on the finding's row, or, when that row ends inside a string
    or with a backslash, on the next row of its statement where a comment can go
    (the statement's last row always can). An existing ``# noqa: X`` there is
    widened in place and any other comment kept. Each row keeps its own line
    ending. E999 and KVI100 are never added.
    """
    bom, text = _strip_bom(source)
    if isinstance(wanted, Mapping):
        findings = [
            Finding("", row, 1, row, 1, code, "")
            for row, codes in wanted.items()
            for code in codes
        ]
    else:
        findings = list(wanted)
    pieces = _NEWLINE.split(text)
    endings = [*_NEWLINE.findall(text), ""]
    suppressions = parse_suppressions(text)
    suppressions.lines = list(pieces)  # the layout is read before any edit
    result = NoqaEdit(source, 0)
    by_row: dict[int, set[str]] = {}
    skipped: set[int] = set()
    for finding in findings:
        code = finding.code.upper()
        if code in (SYNTAX_ERROR_CODE, UNUSED_NOQA_CODE):
            continue
        if not 1 <= finding.row <= len(pieces):
            continue
        if suppressions.suppresses(finding):
            continue  # never a second directive for the same finding
        row = _placement(suppressions, finding)
        if row is None:
            skipped.add(finding.row)
            continue
        by_row.setdefault(row, set()).add(code)
    for row, codes in sorted(by_row.items()):
        line = pieces[row - 1]
        existing = next(
            (d for d in suppressions.rows.get(row, ()) if suppressions.in_comment(d)),
            None,
        )
        if existing is None:
            pieces[row - 1] = line.rstrip() + "  " + _format(codes)
        elif existing.codes is None:
            continue  # a blanket directive already covers the row
        else:
            merged = _format(codes | set(existing.codes))
            pieces[row - 1] = line[: existing.start] + merged + line[existing.end :]
            if line[existing.end : existing.end + 1] == "#":
                pieces[row - 1] = (
                    line[: existing.start] + merged + "  " + line[existing.end :]
                )
        result.added += 1
    result.skipped = sorted(skipped)
    result.source = bom + "".join(p + e for p, e in zip(pieces, endings, strict=True))
    return result


def _placement(suppressions: Suppressions, finding: Finding) -> int | None:
    layout = suppressions.layout
    if not layout.ok:
        return finding.row  # does not tokenize: E999 decides, rows are all we have
    if finding.row not in layout.no_room:
        return finding.row
    last = suppressions.span(finding)[1]
    for row in range(finding.row + 1, last + 1):
        if row not in layout.no_room:
            return row
    return None


# --- fixing KVI100 (``draft-kv-lint fix``) ------------------------------------------


def remove_unused_directives(
    text: str,
    path: str,
    selected: Callable[[Finding], bool],
    findings: Sequence[Finding],
) -> tuple[str, list[Finding]]:
    """``text`` without its unused KVI codes in directives (KVI100's safe fix) and
    the KVI100 findings fixed, given the engine's ``findings`` in ``text`` (the
    caller's: noqa judges directives, it does not run the engine). Only comment
    text changes, so the program does not."""
    if any(f.code == SYNTAX_ERROR_CODE for f in findings):
        return text, []
    unused = [
        f
        for f in review(findings, text, path)
        if f.code == UNUSED_NOQA_CODE and f.fix is not None and selected(f)
    ]
    if not unused:
        return text, []
    pieces = _NEWLINE.split(text)
    endings = [*_NEWLINE.findall(text), ""]
    for finding in unused:
        (edit,) = finding.fix.edits
        line = pieces[edit.row - 1]
        pieces[edit.row - 1] = (
            line[: edit.column - 1] + edit.content + line[edit.end_column - 1 :]
        )
    return "".join(p + e for p, e in zip(pieces, endings, strict=True)), unused


def noqa_rows(findings: Sequence[Finding], source: str) -> list[int | None]:
    """ruff's ``noqa_row`` for each finding: the row ``--add-noqa`` writes its
    directive on (None for E999, which no directive suppresses)."""
    text = _strip_bom(source)[1]
    suppressions = parse_suppressions(text)
    suppressions.lines = _NEWLINE.split(text)
    return [
        None if f.code == SYNTAX_ERROR_CODE else (_placement(suppressions, f) or f.row)
        for f in findings
    ]
