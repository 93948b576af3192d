"""``lint_plugin.noqa``: parsing directives and the ``--add-noqa`` writer."""

from __future__ import annotations

import pytest

from lint_plugin.findings import SYNTAX_ERROR_CODE, Finding
from lint_plugin.noqa import add_noqa, apply_noqa, parse_suppressions


def at(row: int, code: str = "KVI001") -> Finding:
    return Finding("a.py", row, 1, row, 2, code, "msg")


@pytest.mark.parametrize(
    ("comment", "codes"),
    [
        ("# noqa", None),
        ("#noqa", None),
        ("# NOQA", None),
        ("# noqa: this is fine", None),  # no codes: flake8 reads it as blanket
        ("# noqa:KVI001", {"KVI001"}),
        ("# noqa: KVI001,KVI002", {"KVI001", "KVI002"}),
        ("# noqa: KVI001 KVI002", {"KVI001", "KVI002"}),
        ("# noqa : kvi003", {"KVI003"}),
        ("# pragma: x  # noqa: KVI004", {"KVI004"}),
    ],
)
def test_line_directive_codes(comment, codes):
    directive = parse_suppressions(f"x = 1  {comment}\n").rows[1]
    assert directive.codes == (None if codes is None else frozenset(codes))


@pytest.mark.parametrize(
    "source",
    [
        'x = "# noqa"\n',
        "x = '''\n# noqa\n'''\n",
        "x = 1  # not a noqaKVI001 directive\n",
    ],
)
def test_no_directive_outside_comments(source):
    suppressions = parse_suppressions(source)
    assert suppressions.rows == {} and not suppressions.file_all


@pytest.mark.parametrize(
    ("source", "file_all", "file_codes"),
    [
        ("# flake8: noqa\n", True, set()),
        ("  # ruff: noqa\n", True, set()),
        ("# flake8=noqa\n", True, set()),
        ("# ruff: noqa: KVI001, KVI002\n", False, {"KVI001", "KVI002"}),
        ("x = 1  # flake8: noqa\n", False, set()),  # not on its own line
        ('"""\n# flake8: noqa\n"""\n', False, set()),  # inside a string
    ],
)
def test_file_level_directives(source, file_all, file_codes):
    suppressions = parse_suppressions(source)
    assert suppressions.file_all is file_all
    assert suppressions.file_codes == frozenset(file_codes)


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
    ("source", "row"),
    [
        ('x = f("""\nbody\n""")\n', 1),  # row ends inside a string
        ('x = f("""\nbody\n""")\n', 2),
        ("x = a + \\\n    b\n", 1),  # backslash continuation
    ],
)
def test_add_noqa_skips_rows_without_room(source, row):
    edit = add_noqa(source, {row: ["KVI001"]})
    assert (edit.source, edit.added, edit.skipped) == (source, 0, [row])


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
