"""KVI100: a directive's KVI codes that suppress nothing of their statement, and
what is never judged (codes of other tools, blanket directives, strings)."""

from __future__ import annotations

import pytest

from lint_plugin.engine.settings import DEFAULT_SETTINGS
from lint_plugin.linter import lint_source
from lint_plugin.noqa.directives import review

SITE = "x = seq_lens_sum * self.topk + bs * (i + 1)"
WRAPPED = "x = (\n    seq_lens_sum * self.topk + bs * (i + 1)\n)"


def unused(source: str) -> list[tuple[int, str]]:
    findings = lint_source(source.encode(), "a.py", DEFAULT_SETTINGS)
    return [
        (f.row, f.message)
        for f in review(findings, source, "a.py")
        if f.code == "KVI100"
    ]


VALID = [
    f"{SITE}  # noqa: KVI001\n",
    f"{WRAPPED}  # noqa: KVI001\n",  # a statement's directive is on its last row
    "x = 1  # noqa: E501\n",
    "x = 1  # noqa\n",
    f"{SITE}  # noqa: KVI001, KVI100\n",
    'x = "# noqa: KVI001"\n',
    "x = 1  # noqa: KVI001, KVI100\n",  # suppressed itself
]
INVALID = [
    ("x = 1  # noqa: KVI001\n", [(1, "(unused: `KVI001`)")]),
    (f"{SITE}  # noqa: KVI001, KVI002\n", [(1, "(unused: `KVI002`)")]),
    ("x = 1  # noqa: KVI999\n", [(1, "(unknown: `KVI999`)")]),
    # Codes are matched as written, as flake8 matches them.
    ("x = 1  # noqa: kvi001\n", [(1, "(unknown: `kvi001`)")]),
    ("x = 1  # NOQA:KVI001,E501\n", [(1, "(unused: `KVI001`)")]),
    (f"{SITE}  # noqa: KVI001 # noqa: KVI001\n", [(1, "(unused: `KVI001`)")]),
    ("a = 1  # noqa: KVI002\nb = 2\nc = 3  # noqa: KVI003\n",
     [(1, "(unused: `KVI002`)"), (3, "(unused: `KVI003`)")]),
]  # fmt: skip


@pytest.mark.parametrize("source", VALID)
def test_valid(source: str) -> None:
    assert unused(source) == []


@pytest.mark.parametrize(("source", "expected"), INVALID)
def test_invalid(source: str, expected: list[tuple[int, str]]) -> None:
    found = unused(source)
    assert [row for row, _ in found] == [row for row, _ in expected]
    for (_, message), (_, part) in zip(found, expected, strict=True):
        assert message == f"unused `noqa` directive {part}"


def test_unused_codes_in_a_string_are_not_reported():
    source = 'x = len("# noqa: KVI001")\n'
    assert review([], source, "a.py") == []
    unused = review([], "x = 1  # noqa: KVI001\n", "a.py")
    assert [f.code for f in unused] == ["KVI100"]
