"""The torch calls that make a tensor: one table for the rules and the proof.

KVI003 reads a call of one of these as an allocation (its first argument, or its
shape, the size); the width analysis reads what it makes; the proof's recording
torch (:mod:`lint_plugin.proof.torch_proxy`) records them. ``tests`` hold each
name to the installed torch.
"""

from __future__ import annotations

# Functions of the torch module that make a tensor of a given size.
TORCH_ALLOCATORS = (
    "empty",
    "zeros",
    "ones",
    "full",
    "empty_strided",
    "rand",
    "randn",
    "randint",
)
# Tensor methods that do (the size given, the dtype and device the tensor's).
TENSOR_ALLOCATORS = ("new_empty", "new_zeros", "new_ones", "new_full")
# Of those, the ones whose values are random: the proof never records them (two
# runs could not compare).
RANDOM = ("rand", "randn", "randint")
# What else the proof records: a tensor made from data, or shaped like another.
MADE_FROM_VALUES = ("arange", "tensor")
SHAPED_LIKE = ("empty_like", "zeros_like", "ones_like", "full_like")
