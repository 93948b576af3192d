"""Which classes ``prove`` compares (``lint_plugin/proof/pairing.py``): a class
whose text or whose module-level dependencies differ is driven; a class on one
side only is reported as not compared, never "nothing to prove"."""

from __future__ import annotations

import pytest

from lint_plugin.proof.pairing import compared

BACKEND = """\
import torch

PAD = 64


def row_width(num_seqs, topk, context):
    return num_seqs * topk * context


def padded(n):
    return row_width(n, 1, 1) + PAD


class {name}MultiStepDraftBackend:
    def __init__(self, topk):
        self.topk = topk

    def init_cuda_graph_state(self, max_bs, max_num_tokens):
        self.rows = torch.zeros((2, row_width(max_bs, self.topk, 4096)))


class Unrelated:
    pass
"""


def backend(name: str = "Foo") -> str:
    return BACKEND.format(name=name)


ORIGINAL = backend()


@pytest.mark.parametrize(
    ("after", "why"),
    [
        (ORIGINAL.replace("2, row_width", "3, row_width"), "the class differs"),
        # The helper the class calls redefined without its topk factor.
        (
            ORIGINAL.replace("num_seqs * topk * context", "num_seqs * context"),
            "module-level row_width differs",
        ),
        (ORIGINAL.replace("import torch", "import torch as torch"), None),
    ],
)
def test_a_class_is_driven_when_it_or_what_it_reads_differs(after, why) -> None:
    changed, one_sided = compared(ORIGINAL, after)
    assert one_sided == []
    if why is None:
        assert changed == [("FooMultiStepDraftBackend", "module-level torch differs")]
    else:
        assert changed == [("FooMultiStepDraftBackend", why)]


def test_what_a_class_reads_transitively_is_compared() -> None:
    before = ORIGINAL.replace(
        "row_width(max_bs, self.topk, 4096)", "padded(max_bs) * self.topk"
    )
    after = before.replace("PAD = 64", "PAD = 0")
    assert compared(before, after)[0] == [
        ("FooMultiStepDraftBackend", "module-level PAD differs")
    ]


def test_an_unrelated_change_drives_nothing() -> None:
    after = ORIGINAL.replace(
        "class Unrelated:\n    pass", "class Unrelated:\n    x = 1"
    )
    assert compared(ORIGINAL, after) == ([], [])


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        # Renamed: both names, one side each.
        (
            ORIGINAL,
            backend("Bar"),
            [
                ("FooMultiStepDraftBackend", "only in the original"),
                ("BarMultiStepDraftBackend", "only in the rewrite"),
            ],
        ),
        (ORIGINAL, "", [("FooMultiStepDraftBackend", "only in the original")]),
        ("", ORIGINAL, [("FooMultiStepDraftBackend", "only in the rewrite")]),
        ("x = 1\n", ORIGINAL, [("FooMultiStepDraftBackend", "only in the rewrite")]),
    ],
)
def test_a_class_on_one_side_is_not_compared(before, after, expected) -> None:
    changed, one_sided = compared(before, after)
    assert changed == []
    assert [(n, why.split(" (")[0]) for n, why in one_sided] == expected
    assert all(why.endswith("not compared") for _, why in one_sided)
