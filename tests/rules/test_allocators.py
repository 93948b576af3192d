"""One table of the torch calls that make a tensor, held to torch itself.

The rules (KVI003's allocations), the width analysis and the proof's recording
torch all read ``lint_plugin.allocators``; each name is a real torch function or
tensor method of the installed torch.
"""

from __future__ import annotations

import pytest

from lint_plugin import allocators
from lint_plugin.engine import vocabulary
from lint_plugin.engine.flow import known_values

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "name",
    [
        *allocators.TORCH_ALLOCATORS,
        *allocators.MADE_FROM_VALUES,
        *allocators.SHAPED_LIKE,
    ],
)
def test_a_torch_allocator_is_a_torch_function(name: str) -> None:
    assert callable(getattr(torch, name))


@pytest.mark.parametrize("name", allocators.TENSOR_ALLOCATORS)
def test_a_tensor_allocator_is_a_tensor_method(name: str) -> None:
    # `new_full` takes the fill value after the size.
    args = ((2,), 7) if name == "new_full" else ((2,),)
    made = getattr(torch.zeros(1), name)(*args)
    assert tuple(made.shape) == (2,)


def test_every_reader_reads_the_one_table() -> None:
    from lint_plugin.proof import torch_proxy

    assert (
        *allocators.TORCH_ALLOCATORS,
        *allocators.TENSOR_ALLOCATORS,
    ) == vocabulary.ALLOCATOR_WORDS
    assert frozenset(vocabulary.ALLOCATOR_WORDS) == known_values.ALLOCATORS
    recorded = set(torch_proxy.ALLOCATORS)
    assert recorded.isdisjoint(allocators.RANDOM)
    assert recorded == (
        set(allocators.TORCH_ALLOCATORS) - set(allocators.RANDOM)
        | set(allocators.MADE_FROM_VALUES)
        | set(allocators.SHAPED_LIKE)
    )
    assert set(allocators.RANDOM) <= set(allocators.TORCH_ALLOCATORS)
