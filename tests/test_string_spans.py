"""The scan's triple-quoted string finder agrees with a plain left-to-right scan.

The finder jumps from one triple quote to the next and reads only the line that
could hide it; the reference below reads every comment and string in order. Any
disagreement would make check skip real code or read a docstring as code.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from lint_plugin.scan import _QUOTED, _StringSpans

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
    return _StringSpans(text)._find()


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


@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
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


def test_every_file_of_the_latest_release_agrees(latest_package) -> None:
    checked = 0
    for path in Path(latest_package).rglob("*.py"):
        text = re.sub(r"\r\n?", "\n", path.read_text(encoding="utf-8"))
        assert spans(text) == reference_spans(text), path
        checked += 1
    assert checked > 4000
