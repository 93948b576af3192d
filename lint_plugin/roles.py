"""Which part a name plays in the two sizing formulas, read from the name alone.

A role is recognised from the last segment of a dotted name (``self.topk``,
``forward_batch.seq_lens_sum``, ``self.attn_backends[0].max_context_len``), so the
engine never needs to know where a value came from, only what it is called.

Each role is declared once, in ``ROLES``: the names it covers, the words every such
name contains (``anchors``: the byte pre-filters and row searches are built from
them, see :mod:`lint_plugin.engine.vocabulary`) and whether it is a context size (what
KVI003 sizes a draft row by). Adding a context-sized role is one entry here.
"""

from __future__ import annotations

import enum
import re

from lint_plugin.records import record


class Role(enum.Enum):
    TOPK = "topk"
    SEQ_LENS_SUM = "seq_lens_sum"
    MAX_CONTEXT_LEN = "max_context_len"
    WINDOW = "window_size"  # a sliding window: a context size of its own
    NUM_STEPS = "num_steps"
    # Tokens a request verifies: its draft tokens (the verify phase's query length).
    NUM_DRAFT_TOKENS = "num_draft_tokens"
    TOKENS = "num_tokens"  # already sequences times topk: never a sequence count
    NUM_SEQS = "num_seqs"  # a number of sequences (requests) in a batch


@record(frozen=True)
class RoleSpec:
    """``pattern`` fullmatches every name of the role; each such name contains
    one of ``anchors`` (a test holds them to it); ``context_sized``: a width
    sized by this role is a kv_indices row (KVI003)."""

    pattern: str
    anchors: tuple[str, ...]
    context_sized: bool = False


ROLES: dict[Role, RoleSpec] = {
    Role.TOPK: RoleSpec(r"(?:.*_)?topk", ("topk",)),
    Role.SEQ_LENS_SUM: RoleSpec(
        r"(?:.*_)?seq_lens?_sum", ("seq_lens_sum", "seq_len_sum")
    ),
    Role.MAX_CONTEXT_LEN: RoleSpec(
        r"(?:max_)?context_len(?:gth)?", ("context_len",), context_sized=True
    ),
    Role.WINDOW: RoleSpec(
        r"(?:.*_)?window(?:_size|_len(?:gth)?)?", ("window",), context_sized=True
    ),
    Role.NUM_STEPS: RoleSpec(r"(?:.*_)?num_steps", ("num_steps",)),
    Role.NUM_DRAFT_TOKENS: RoleSpec(
        r"(?:.*_)?num_draft_tokens|draft_token_num|num_tokens_per_req",
        ("num_draft_tokens", "draft_token_num", "num_tokens_per_req"),
    ),
    Role.TOKENS: RoleSpec(r"(?:.*_)?num_tokens?", ("num_token",)),
    Role.NUM_SEQS: RoleSpec(
        r"(?:.*_)?(?:bs|num_seqs?|batch_size|num_reqs?|num_requests)",
        ("bs", "num_seq", "batch_size", "num_req"),
    ),
}

# Sizes named by an attribute and its owner together (``size`` alone names
# nothing): SGLang's request pool keeps a row per request slot, so its size is
# the most requests a batch holds (``max_bs = model_runner.req_to_token_pool.size``).
MEMBER_ROLES: dict[tuple[str, str], Role] = {
    ("req_to_token_pool", "size"): Role.NUM_SEQS,
}

CONTEXT_ROLES: frozenset[Role] = frozenset(
    role for role, spec in ROLES.items() if spec.context_sized
)

# First match wins, in declaration order. Compiled on first use: a run the cache
# answers reads the roles' anchors (the byte test), never a name.
_PATTERNS: list[tuple[Role, re.Pattern[str]]] = []

# A draft backend's per-step buffers other than its kv_indices rows, each by the
# words its names contain (``qo_``: any query offset buffer). A row allocated to a
# name holding one is not judged as kv_indices (KVI003); a rule about one of
# these buffers (kv_indptr rows, say) reads its words here.
OTHER_PER_STEP_BUFFERS: dict[str, tuple[str, ...]] = {
    "qo_indptr": ("qo_",),  # before kv_indptr: `qo_indptr` names this one
    "kv_indptr": ("indptr",),
    "custom_mask": ("mask",),
    "kv_last_page_len": ("last_page",),
    "seq_lens": ("seq_lens",),
    "positions": ("positions",),
}


def other_buffer_of(name: str) -> str | None:
    """Which of ``OTHER_PER_STEP_BUFFERS`` a target name (``self.kv_indptr``)
    holds, if any: the first whose word it contains."""
    for buffer, words in OTHER_PER_STEP_BUFFERS.items():
        if any(word in name for word in words):
            return buffer
    return None


# Names that count sequences; used only to pick the sequence count of a function
# when an unsafe KVI003 fix has to replace a token count.
SEQUENCE_COUNT_NAMES: tuple[str, ...] = ("max_bs", "num_seqs", "batch_size", "bs")


_KNOWN: dict[str, Role | None] = {}  # names repeat: each is matched once
_UNSEEN = object()


def role_of_member(owner: str | None, name: str) -> Role | None:
    """The role of ``owner.name`` (owner: the last segment of its owner)."""
    return MEMBER_ROLES.get((owner, name)) if owner else None


def role_of_name(name: str | None) -> Role | None:
    """The role of a bare identifier (the last segment of a dotted name)."""
    if not name:
        return None
    found = _KNOWN.get(name, _UNSEEN)
    if found is _UNSEEN:
        found = None
        if not _PATTERNS:
            _PATTERNS.extend(
                (role, re.compile(spec.pattern)) for role, spec in ROLES.items()
            )
        for role, pattern in _PATTERNS:
            if pattern.fullmatch(name):
                found = role
                break
        if len(_KNOWN) < 100_000:
            _KNOWN[name] = found
    return found
