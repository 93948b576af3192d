"""Branch coverage of the class under test (``lint_plugin/proof/coverage.py``):
a changed arm of a multi-line conditional expression, or an operand a boolean
operator skipped, that never ran refuses "proven" like a changed line that
never ran. Its line ran (the test and the taken arm are on it): line events
alone would call it run."""

from __future__ import annotations

import sys

import pytest

from lint_plugin.proof.coverage import Coverage, never_ran
from lint_plugin.proof.loader import extract_class

pytestmark = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="instruction positions: Python 3.11+"
)

CLASS = """\
class FooMultiStepDraftBackend:
    def width(self, max_bs, flag):
        return (
            max_bs * 4 if flag else {other}
        )

    def count(self, a, b):
        return a or {operand}
"""


def _run(text: str, calls) -> Coverage:
    source = extract_class(text, "FooMultiStepDraftBackend", "backend.py")
    coverage = Coverage(source)
    namespace: dict = {}
    with coverage.measuring():
        exec(source.code, namespace)
        instance = namespace["FooMultiStepDraftBackend"]()
        for method, args in calls:
            getattr(instance, method)(*args)
    return coverage


def _unran(before: str, after: str, calls) -> list[str]:
    found = never_ran(_run(before, calls), before, _run(after, calls), after)
    return [line.describe() for line in found]


BEFORE = CLASS.format(other="max_bs * 8", operand="b")


def test_a_changed_else_arm_that_never_ran_is_named() -> None:
    after = CLASS.format(other="max_bs * 2", operand="b")
    # Only flag=True runs: the changed else arm never does.
    unran = _unran(BEFORE, after, [("width", (3, True)), ("count", (1, 2))])
    assert unran == [
        "before: backend.py:4: max_bs * 4 if flag else max_bs * 8  "
        "[its else arm never ran]",
        "after: backend.py:4: max_bs * 4 if flag else max_bs * 2  "
        "[its else arm never ran]",
    ]
    # Run both ways: nothing is left unran.
    both = [("width", (3, True)), ("width", (3, False)), ("count", (1, 2))]
    assert _unran(BEFORE, after, both) == []


def test_a_skipped_operand_that_changed_is_named() -> None:
    after = CLASS.format(other="max_bs * 8", operand="b + 1")
    unran = _unran(
        BEFORE, after, [("width", (3, True)), ("width", (3, False)), ("count", (1, 2))]
    )
    assert [u.split("  [")[1] for u in unran] == [
        "an operand of `or` never ran]",
        "an operand of `or` never ran]",
    ]
    assert (
        _unran(
            BEFORE,
            after,
            [("width", (3, True)), ("width", (3, False)), ("count", (0, 2))],
        )
        == []
    )
