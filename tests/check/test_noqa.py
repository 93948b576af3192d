"""``lint_plugin.noqa.directives``: parsing directives and the ``--add-noqa`` writer
(KVI100, the unused directives, is tests/rules/test_kvi100.py)."""

from __future__ import annotations

import pytest

from lint_plugin.findings import SYNTAX_ERROR_CODE, Finding
from lint_plugin.noqa.directives import add_noqa, apply_noqa, parse_suppressions


def at(row: int, code: str = "KVI001") -> Finding:
    return Finding("a.py", row, 1, row, 2, code, "msg")


# Every spelling people write, judged against flake8's own code (in process): the
# two front ends must agree on each (code, directive) pair.
SPELLINGS = [
    "# noqa",
    "#noqa",
    "#  noqa",
    "# NOQA",
    "# NoQA:KVI001",
    "# noqa: this is fine",
    "# noqa:KVI001",
    "# noqa:  KVI001",
    "# noqa: KVI001,KVI002",
    "# noqa: KVI001 KVI002",
    "# noqa: KVI001, E501",
    "# noqa : KVI003",
    "# noqa: kvi001",
    "# noqa: KVI00",
    "# noqa: KVI",
    "# pragma: x  # noqa: KVI004",
    "# noqa: KVI002  # noqa: KVI001",
    "# noqa:E501,KVI001 because",
]
CODES = ["KVI001", "KVI002", "KVI003", "KVI004"]
READ_FURTHER_THAN_FLAKE8 = {"# noqa: KVI002  # noqa: KVI001"}


@pytest.mark.parametrize("comment", SPELLINGS)
@pytest.mark.parametrize("code", CODES)
def test_a_directive_suppresses_exactly_what_flake8_suppresses(comment, code):
    from flake8.violation import Violation

    line = f"x = 1  {comment}\n"
    flake8 = Violation(code, "a.py", 1, 1, "msg", line).is_inline_ignored(False)
    ours = parse_suppressions(line).suppresses(at(1, code))
    if comment in READ_FURTHER_THAN_FLAKE8:
        # flake8 reads a row's first directive only (it may be in a string); every
        # one counts here, a superset, and the plugin applies it before flake8.
        assert ours >= flake8
    else:
        assert ours == flake8


@pytest.mark.parametrize(
    ("source", "row"),
    [
        ('x = "# noqa"\n', 1),  # flake8 searches the line, strings included
        ("x = '''\n# noqa\n'''\n", 1),  # a directive in the string's rows
    ],
)
def test_directive_text_counts_wherever_flake8_sees_it(source, row):
    assert parse_suppressions(source).suppresses(at(row))


@pytest.mark.parametrize(
    ("source", "file_all", "file_codes"),
    [
        ("# flake8: noqa\n", True, set()),
        ("  # flake8: noqa\n", True, set()),
        ("# FLAKE8=NOQA\n", True, set()),
        ("# flake8: noqa: KVI001\n", True, set()),  # flake8 skips the whole file
        ("#flake8: noqa\n", False, set()),  # flake8 wants "# flake8"
        ("  # ruff: noqa\n", True, set()),
        ("# ruff: noqa: KVI001, KVI002\n", False, {"KVI001", "KVI002"}),
        ("x = 1  # flake8: noqa\n", False, set()),  # not on its own line
        ('"""\n# flake8: noqa\n"""\n', True, set()),  # flake8 reads lines
    ],
)
def test_file_level_directives(source, file_all, file_codes):
    suppressions = parse_suppressions(source)
    assert suppressions.file_all is file_all
    assert suppressions.file_codes == frozenset(file_codes)


@pytest.mark.parametrize(
    "source",
    [
        "# flake8: noqa\n",
        "# flake8: noqa: KVI001\n",
        "#flake8: noqa\n",
        "x # flake8: noqa\n",
    ],
)
def test_file_level_flake8_directive_as_flake8_reads_it(source):
    from types import SimpleNamespace

    from flake8.processor import FileProcessor

    processor = FileProcessor.__new__(FileProcessor)
    processor.options = SimpleNamespace(disable_noqa=False)
    processor.lines = source.splitlines(keepends=True)
    assert parse_suppressions(source).file_all == processor.should_ignore_file()


def test_apply_noqa_is_per_row_and_spares_syntax_errors():
    source = "a = 1  # noqa\nb = 2  # noqa: KVI002\nc = 3\n"
    findings = [at(1), at(1, SYNTAX_ERROR_CODE), at(2), at(2, "KVI002"), at(3)]
    assert apply_noqa(findings, source) == [at(1, SYNTAX_ERROR_CODE), at(2), at(3)]


def test_apply_noqa_falls_back_to_line_search_when_tokenizing_fails():
    source = "def f(:  # noqa\n    x = (  # noqa: KVI001\n"
    assert apply_noqa([at(1), at(2), at(2, "KVI002")], source) == [at(2, "KVI002")]


def test_apply_noqa_ignores_a_byte_order_mark():
    assert apply_noqa([at(1)], "\ufeff# flake8: noqa\nx = 1\n") == []


@pytest.mark.parametrize(
    ("before", "codes", "after", "added"),
    [
        ("x = a\n", {"KVI001"}, "x = a  # noqa: KVI001\n", 1),
        ("x = a   \n", {"KVI002", "KVI001"}, "x = a  # noqa: KVI001, KVI002\n", 1),
        ("x = a  # why\n", {"KVI001"}, "x = a  # why  # noqa: KVI001\n", 1),
        (
            "x = a  # noqa: KVI004  # why\n",
            {"KVI001"},
            "x = a  # noqa: KVI001, KVI004  # why\n",
            1,
        ),
        ("x = a  # noqa:KVI001\n", {"KVI001"}, "x = a  # noqa:KVI001\n", 0),
        ("x = a  # noqa\n", {"KVI003"}, "x = a  # noqa\n", 0),
        ("x = a  # noqa: KVI00\n", {"KVI003"}, "x = a  # noqa: KVI00\n", 0),
        ("x = a\r\n", {"KVI001"}, "x = a  # noqa: KVI001\r\n", 1),
        ("x = a", {"KVI001"}, "x = a  # noqa: KVI001", 1),  # no final newline
        ("x = a\n", {SYNTAX_ERROR_CODE}, "x = a\n", 0),
    ],
)
def test_add_noqa_single_row(before, codes, after, added):
    edit = add_noqa(before, {1: codes})
    assert (edit.source, edit.added) == (after, added)


def test_add_noqa_keeps_each_rows_line_ending_and_the_bom():
    before = "\ufeffa = 1\r\nb = 2\nc = 3\rd = 4\n"
    edit = add_noqa(before, {1: ["KVI001"], 3: ["KVI002"]})
    assert edit.source == (
        "\ufeffa = 1  # noqa: KVI001\r\nb = 2\nc = 3  # noqa: KVI002\rd = 4\n"
    )
    assert edit.added == 2


@pytest.mark.parametrize(
    ("source", "row", "after"),
    [
        # The row ends inside a string: the directive goes where a comment can.
        ('x = f("""\nbody\n""")\n', 1, 'x = f("""\nbody\n""")  # noqa: KVI001\n'),
        ('x = f("""\nbody\n""")\n', 2, 'x = f("""\nbody\n""")  # noqa: KVI001\n'),
        ("x = a + \\\n    b\n", 1, "x = a + \\\n    b  # noqa: KVI001\n"),
    ],
)
def test_add_noqa_moves_off_rows_without_room_within_the_statement(source, row, after):
    edit = add_noqa(source, {row: ["KVI001"]})
    assert (edit.source, edit.added, edit.skipped) == (after, 1, [])
    assert apply_noqa([at(row)], edit.source) == []
    assert add_noqa(edit.source, {row: ["KVI001"]}).added == 0  # no duplicate


def test_add_noqa_after_a_closing_triple_quote_is_fine():
    source = 'x = f("""\nbody\n""")\n'
    edit = add_noqa(source, {3: ["KVI001"]})
    assert edit.source == 'x = f("""\nbody\n""")  # noqa: KVI001\n'


def test_add_noqa_then_apply_noqa_suppresses_everything():
    source = "a = 1\nb = 2  # noqa: KVI004\nc = 3  # keep\n"
    findings = [at(1), at(2, "KVI002"), at(3, "KVI003"), at(3)]
    rows: dict[int, set[str]] = {}
    for item in findings:
        rows.setdefault(item.row, set()).add(item.code)
    edited = add_noqa(source, rows).source
    assert apply_noqa(findings, edited) == []
    assert add_noqa(edited, rows).added == 0  # a second run changes nothing


def test_a_directive_inside_a_string_is_never_edited():
    source = 'x = a + len("# noqa: E501")\n'
    edit = add_noqa(source, {1: ["KVI001"]})
    assert edit.source == 'x = a + len("# noqa: E501")  # noqa: KVI001\n'
    assert apply_noqa([at(1)], edit.source) == []  # the comment's directive counts
    assert add_noqa(edit.source, {1: ["KVI001"]}).added == 0


@pytest.mark.parametrize(
    "comment",
    [*SPELLINGS, "# noqa: Kvi001", "# noqa: kVI002", "# ruff: noqa: kVi003"],
)
def test_the_byte_prefilter_never_hides_an_unused_directive(comment):
    """``check`` skips KVI100 for a file without findings when its bytes cannot
    hold a KVI directive: any code case counts (``Kvi001`` was missed)."""
    from lint_plugin.noqa.directives import may_hold_own_directive, review

    for source in (f"x = 1  {comment}\n", f"{comment}\n"):
        if review([], source, "a.py"):
            assert may_hold_own_directive(source.encode()), source
