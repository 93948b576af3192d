"""Sizing contracts: each buffer a speculative kernel writes, what it must hold.

The bug class is one: a buffer sized by hand, smaller than what its writer
writes. Each contract says, as plain data, which buffer it is (how its class is
recognised, the phase it is written in), its least size by value in roles (the
names of :mod:`lint_plugin.roles`, ``context`` standing for any context size),
what a token count stands for in that phase, the helper SGLang sizes it with
(where it has one) and who writes it. A rule module reports on one contract
through the rule API; the engine reads the contracts' class words to know which
classes to read whole. Adding a contract is an entry here and a rule module.

The least sizes are SGLang's own owners' values: ``draft_kv_indices_buffer_width``
(0.5.13), ``tree_mask_numel(TreeMaskMode.FULL_MASK, ...)`` (0.5.23's
``srt/layers/attention/verify_mask.py``), and the draft slack AITER's target
verify reserves since 0.5.13 (#27485). They are the envelope SGLang runs in: a
request reaches the context wall (``seq_len`` up to ``max_context_len``) and the
draft tokens are written beyond it.
"""

from __future__ import annotations

from lint_plugin.records import record


@record(frozen=True)
class Owner:
    """The helper SGLang sizes the buffer with: ``call`` is its call, in the
    roles' names (``{num_seqs}`` the function's sequence count, ``{topk}``,
    ``{num_draft_tokens}``, ``{context}`` the width's context size);
    ``imports``: ``(module, name)`` pairs the call needs."""

    name: str
    module: str
    call: str
    imports: tuple[tuple[str, str], ...] = ()


@record(frozen=True)
class Writer:
    """What writes the buffer: ``kind`` is ``kernel`` (a Triton launch,
    ``name[grid](...)``, the buffer its ``argument`` position or keyword),
    ``copy`` (the verify mask of the spec copied in: ``buf[: n] =
    spec_info.custom_mask``) or ``packed copy``."""

    kind: str
    name: str = ""
    argument: int = -1
    keyword: str = ""
    # A kernel's per-request lengths (what each program writes), where known,
    # and what they are in roles (``seq_len`` a request's, up to the wall).
    lengths: int = -1
    lengths_keyword: str = ""
    per_request: str = ""


@record(frozen=True)
class Contract:
    """``key`` names it; ``code`` is the rule that reports it. ``class_words``:
    a class whose text holds a word of each group may write the buffer (it is
    read whole). ``least``: the least size, ``tokens``: what a token count
    (``max_num_tokens``) is in the phase, ``exact``: the writes of one batch
    by its lengths' sum, all over the roles' names."""

    key: str
    code: str
    buffer: str
    phase: str
    class_words: tuple[tuple[str, ...], ...]
    least: str
    tokens: str
    writer: Writer
    owner: Owner | None = None
    # What the writer writes for one batch, by its lengths' sum: the least size
    # of a buffer allocated per batch from that sum (``seq_lens_sum``).
    exact: str | None = None


DRAFT_KV_INDICES = Contract(
    key="draft-kv-indices-rows",
    code="KVI003",
    buffer="the per-step kv_indices rows of a multi-step draft backend",
    phase="draft decode",
    # Read whole by its own test (lint_plugin.engine.draft_backend).
    class_words=(),
    least="num_seqs * topk * context",
    tokens="num_seqs * topk",
    writer=Writer("kernel", "generate_draft_decode_kv_indices", 3, "kv_indices"),
    owner=Owner(
        "draft_kv_indices_buffer_width",
        "sglang.srt.speculative.spec_utils",
        "draft_kv_indices_buffer_width({num_seqs}, {topk}, {context})",
    ),
)

VERIFY_CUSTOM_MASK = Contract(
    key="verify-custom-mask",
    code="KVI008",
    buffer="the flat target-verify custom mask a backend copies the tree mask into",
    phase="target verify",
    class_words=(("custom_mask",), ("context_len", "window")),
    least="num_seqs * num_draft_tokens * (context + num_draft_tokens)",
    tokens="num_seqs * num_draft_tokens",
    exact="num_draft_tokens * (seq_lens_sum + num_seqs * num_draft_tokens)",
    writer=Writer("copy", "custom_mask"),
    owner=Owner(
        "tree_mask_numel",
        "sglang.srt.layers.attention.verify_mask",
        "tree_mask_numel(TreeMaskMode.FULL_MASK, {num_seqs}, {num_draft_tokens}, "
        "{context})",
        (
            ("sglang.srt.layers.attention.verify_mask", "tree_mask_numel"),
            ("sglang.srt.speculative.eagle_utils", "TreeMaskMode"),
        ),
    ),
)

TARGET_VERIFY_KV_INDICES = Contract(
    key="target-verify-kv-indices",
    code="KVI009",
    buffer=(
        "the flat kv_indices a backend's target verify fills with each "
        "request's sequence and its draft tokens"
    ),
    phase="target verify",
    class_words=(
        ("create_flashinfer_kv_indices_triton",),
        ("num_draft_tokens", "draft_token_num", "num_tokens_per_req"),
    ),
    least="num_seqs * (context + num_draft_tokens)",
    tokens="num_seqs * num_draft_tokens",
    exact="seq_lens_sum + num_seqs * num_draft_tokens",
    writer=Writer(
        "kernel",
        "create_flashinfer_kv_indices_triton",
        5,
        "kv_indices_ptr",
        2,
        "page_kernel_lens_ptr",
        "seq_len + num_draft_tokens",
    ),
)

CONTRACTS: tuple[Contract, ...] = (
    DRAFT_KV_INDICES,
    VERIFY_CUSTOM_MASK,
    TARGET_VERIFY_KV_INDICES,
)


def class_may_write(text: str) -> bool:
    """May a class of this text write a contract's buffer (a word of each group
    of some contract's ``class_words``)? Such a class is read whole."""
    for contract in CONTRACTS:
        groups = contract.class_words
        if groups and all(any(w in text for w in group) for group in groups):
            return True
    return False
