"""Which part a name plays in the two sizing formulas, read from the name alone.

A role is recognised from the last segment of a dotted name (``self.topk``,
``forward_batch.seq_lens_sum``, ``self.attn_backends[0].max_context_len``), so the
engine never needs to know where a value came from, only what it is called.
"""

from __future__ import annotations

import enum
import re


class Role(enum.Enum):
    TOPK = "topk"
    SEQ_LENS_SUM = "seq_lens_sum"
    MAX_CONTEXT_LEN = "max_context_len"
    NUM_STEPS = "num_steps"
    TOKENS = "num_tokens"  # already sequences times topk: never a sequence count


_PATTERNS: tuple[tuple[Role, re.Pattern[str]], ...] = (
    (Role.TOPK, re.compile(r"(?:.*_)?topk")),
    (Role.SEQ_LENS_SUM, re.compile(r"(?:.*_)?seq_lens?_sum")),
    (Role.MAX_CONTEXT_LEN, re.compile(r"(?:max_)?context_len(?:gth)?")),
    (Role.NUM_STEPS, re.compile(r"(?:.*_)?num_steps")),
    (Role.TOKENS, re.compile(r"(?:.*_)?num_tokens?")),
)

# Names that count sequences; used only to pick the sequence count of a function
# when an unsafe KVI003 fix has to replace a token count.
SEQUENCE_COUNT_NAMES: tuple[str, ...] = ("max_bs", "num_seqs", "batch_size", "bs")


def role_of_name(name: str | None) -> Role | None:
    """The role of a bare identifier (the last segment of a dotted name)."""
    if not name:
        return None
    for role, pattern in _PATTERNS:
        if pattern.fullmatch(name):
            return role
    return None
