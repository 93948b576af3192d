"""The scan's text layout agrees with plain left-to-right references.

The triple-quoted string finder jumps from one triple quote to the next and reads
only the line that could hide it; its reference reads every comment and string in
order. The block finder searches for the keywords and checks each line's start;
its reference is a pattern anchored at every line. Any disagreement would make
check skip real code or read a docstring as code. The same holds for the class
attributes that make a class a draft backend, and for the rows the words of
the rules are found on: found word by word with ``str.find``, their reference is
the one pattern of all the words.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lint_plugin.engine import vocabulary
from lint_plugin.engine.draft_backend import role_attributes
from lint_plugin.engine.scan import (
    _QUOTED,
    Layout,
    StringSpans,
    _seed_starts,
    interesting_rows,
)
from lint_plugin.engine.source import rows_matching, rows_of
from lint_plugin.roles import Role, role_of_name

# One character per step: linear, where a repeated run (`[^"\\]+`) inside the
# group backtracks exponentially on an unterminated string.
_TRIPLE_END = {
    '"""': re.compile(r'(?:[^"\\]|\\[\s\S]|"(?!""))*"""'),
    "'''": re.compile(r"(?:[^'\\]|\\[\s\S]|'(?!''))*'''"),
}


def reference_spans(text: str) -> list[tuple[int, int]]:
    spans, position = [], 0
    while True:
        match = _QUOTED.search(text, position)
        if match is None:
            return spans
        if match.group(1) is None:
            position = match.end()
            continue
        end = _TRIPLE_END[match.group(1)].match(text, match.end())
        if end is None:
            spans.append((match.start(), len(text)))
            return spans
        spans.append((match.start(), end.end()))
        position = end.end()


def spans(text: str) -> list[tuple[int, int]]:
    return StringSpans(text)._find()


PIECES = [
    '"""',
    "'''",
    '"',
    "'",
    "#",
    "\\",
    "\n",
    "\\\n",
    " ",
    "x = ",
    "def f():",
    "topk",
    '"a"',
    "'b'",
    '"""doc"""',
    "# '''",
    "'\\''",
    '"\\""',
]


def joined(pieces: list[str], max_size: int) -> st.SearchStrategy[str]:
    """Texts made of ``pieces``: the shapes each finder has to tell apart."""
    return st.lists(st.sampled_from(pieces), max_size=max_size).map("".join)


@given(joined(PIECES, 40))
def test_generated_text_agrees_with_the_reference(text: str) -> None:
    assert spans(text) == reference_spans(text)


@given(st.text(alphabet="\"'#\\\n xa", max_size=60))
def test_random_quote_soup_agrees_with_the_reference(text: str) -> None:
    assert spans(text) == reference_spans(text)


def test_known_shapes() -> None:
    text = (
        'x = "a\'\'\'b"  # not a string: """\n'
        "y = '''real\n'''\n"
        "z = 'c\\\n'''still one-line'\n"
        '"""open'
    )
    assert spans(text) == reference_spans(text)
    assert [text[a:b][:3] for a, b in spans(text)] == ["'''", '"""']


def test_an_unterminated_string_is_found_at_once() -> None:
    """A file being edited: the old pattern backtracked for hours on this."""
    text = 'topk = 1\nx = """' + "a" * 10_000 + '\\"""' + "b" * 10_000
    assert spans(text) == [(13, len(text))] == reference_spans(text)


_BLOCK_LINE = re.compile(r"^([ \t]*)(?:async[ \t]+)?(def|class)[ \t]+(\w+)", re.M)


def blocks(text: str) -> list[tuple[int, int, str, str]]:
    return Layout(text, text.split("\n"), StringSpans(text)).blocks


def reference_blocks(text: str) -> list[tuple[int, int, str, str]]:
    strings = StringSpans(text)
    found, row, counted = [], 0, 0
    for m in _BLOCK_LINE.finditer(text):
        # The newlines before the match, counted on from the previous one's
        # (counting from 0 at every match is quadratic in a long file).
        row += text.count("\n", counted, m.start())
        counted = m.start()
        if not strings.holds(m.start()):
            found.append((row, len(m.group(1)), m.group(2), m.group(3)))
    return found


BLOCK_PIECES = [
    *PIECES,
    "class C:",
    "async def g():",
    "\tdef h(x):",
    "    class D(B):",
    "undef x",
    "x.def y",
    "classdef z",
    "async  class",
    "#def c",
    "def",
    "class",
]


@given(joined(BLOCK_PIECES, 30))
def test_generated_blocks_agree_with_the_reference(text: str) -> None:
    assert blocks(text) == reference_blocks(text)


# Every `self.<identifier>` not inside a longer name, overlapping ones too
# (`a.self.topk` holds one: a pre-filter may keep a class it need not).
_SELF_ATTRIBUTE = re.compile(r"(?=(?<!\w)self\s*\.\s*((?!\d)\w+))")


def _self_attributes(text: str) -> list[str]:
    """``_SELF_ATTRIBUTE.findall(text)``: the pattern tried only where ``self``
    starts, the one place it can match (tried at every position, as ``findall``
    does, it was most of this reference's time on a release)."""
    names, at = [], text.find("self")
    while at != -1:
        match = _SELF_ATTRIBUTE.match(text, at)
        if match:
            names.append(match.group(1))
        at = text.find("self", at + 1)
    return names


def reference_role_attributes(text: str) -> set[str]:
    return {
        name
        for name in _self_attributes(text)
        if role_of_name(name) in (Role.TOPK, Role.NUM_STEPS)
    }


ATTRIBUTE_PIECES = [
    "self",
    ".",
    " ",
    "\n",
    "myself",
    "_self",
    "topk",
    "_topk",
    "eagle_topk",
    "num_steps",
    "speculative_num_steps",
    "topk_x",
    "x",
    "é",
    "(",
    "=",
    "1",
]


@given(joined(ATTRIBUTE_PIECES, 30))
def test_role_attributes_agree_with_the_reference(text: str) -> None:
    assert role_attributes(text) == reference_role_attributes(text)


def seed_rows(text: str) -> list[int]:
    return rows_of(text, _seed_starts(text, ()))


def reference_seed_rows(text: str) -> list[int]:
    return rows_matching(vocabulary.region_seeds(), text)


def reference_interesting_rows(text: str) -> list[int]:
    return rows_matching(vocabulary.row_words(), text)


ALIASES = ("alloc", "_buf")


def fact_rows(text: str) -> tuple[list[int], list[int]]:
    return vocabulary.fact_rows(text, (), 3), vocabulary.fact_rows(text, ALIASES, 3)


def reference_fact_rows(text: str) -> tuple[list[int], list[int]]:
    return tuple(
        rows_matching(vocabulary.fact_pattern(aliases), text, 3)
        for aliases in ((), ALIASES)
    )


WORD_PIECES = [
    *vocabulary.region_seed_words(),
    *vocabulary.row_word_list(),
    *vocabulary.fact_words(),
    *ALIASES,
    "new_empty",
    "empty_strided",
    "x",
    "_",
    "é",
    "(",
    "[",
    " ",
    "\t",
    "\n",
    "\u00a0",  # Unicode whitespace: `\s` in the pattern
    "\u3000(",
]


@given(joined(WORD_PIECES, 30))
def test_rows_of_words_agree_with_the_reference(text: str) -> None:
    assert seed_rows(text) == reference_seed_rows(text)
    assert interesting_rows(text) == reference_interesting_rows(text)
    assert fact_rows(text) == reference_fact_rows(text)


@pytest.fixture(scope="module")
def latest_files(latest_package) -> list[tuple[Path, bytes, str]]:
    """Every ``.py`` file of the latest release: its bytes, and its text with
    ``\r\n`` and ``\r`` made ``\n``. Read once for the tests below, not once each."""
    files = []
    for path in Path(latest_package).rglob("*.py"):
        data = path.read_bytes()
        files.append((path, data, re.sub(r"\r\n?", "\n", data.decode("utf-8"))))
    return files


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        (spans, reference_spans),
        (blocks, reference_blocks),
        (role_attributes, reference_role_attributes),
    ],
    ids=["strings", "blocks", "role-attributes"],
)
def test_every_file_of_the_latest_release_agrees(latest_files, found, expected):
    checked = 0
    for path, _, text in latest_files:
        assert found(text) == expected(text), path
        checked += 1
    assert checked > 4000


@pytest.mark.parametrize(
    "source",
    [
        # A string's closing quotes at column 0 end no statement: the formula
        # after them is in the same one (found by issue 18's execution oracle).
        'class Backend:\n    v1 = ("""kv used:\n""", (16 +\n'
        "        (seq_lens_sum * topk + bs * num_steps)))[1]\n",
        'def f(seq_lens_sum, topk, bs, num_steps):\n    x = ("""a\nb\n""",\n'
        "        seq_lens_sum * topk + bs * num_steps)\n    return x\n",
    ],
    ids=["class body", "function body"],
)
def test_a_formula_after_a_string_closed_at_column_0_is_found(source: str) -> None:
    from lint_plugin.linter import lint_source

    (finding,) = lint_source(source.encode(), "m.py")
    assert (
        finding.code == "KVI001"
        and finding.row == source.count("\n", 0, source.index("seq_lens_sum *")) + 1
    )


def test_every_candidate_file_of_the_latest_release_has_the_same_rows(latest_files):
    """The row finders run on the files the byte test lets through."""
    checked = 0
    for path, data, text in latest_files:
        if not vocabulary.could_match(data):
            continue
        assert seed_rows(text) == reference_seed_rows(text), path
        assert interesting_rows(text) == reference_interesting_rows(text), path
        assert fact_rows(text) == reference_fact_rows(text), path
        checked += 1
    assert checked > 100
