"""A stand-in for ``draft-kv-lint fix``, until the codemod lands.

The proof compares an original backend with *the codemod's* rewrite of it. The
codemod is written in parallel, so for now the rewrite is produced by plain string
replacement of the exact inline formulas 0.5.12.post1 contains. Swap
:func:`stand_in_rewrite` for the real ``lint_plugin`` fix when it exists; the
harness and the tests do not care where the rewritten text comes from.

Only the draft class is edited (the same expressions in other classes of the file,
e.g. an ordinary decode backend's ``max_bs * self.max_context_len``, are not
findings), and every replacement must hit, so a changed upstream text fails here
instead of "proving" an untouched file equal to itself. The helper import is not
added: the harness compiles only the class and injects the helper names.
"""

from __future__ import annotations

import ast

from .loader import find_class

# KVI001 / KVI002: numerically identical by construction (safe fixes).
SAFE_REPLACEMENTS = (
    (
        "seq_lens_sum * self.topk + bs * (i + 1)",
        "draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)",
    ),
    (
        "forward_batch.batch_size * self.topk * self.max_context_len",
        "draft_kv_indices_buffer_width("
        "forward_batch.batch_size, self.topk, self.max_context_len)",
    ),
)

# KVI003: the unsized cuda-graph buffers. Unsafe: flashinfer's width grows by
# topk (the bug fix); triton's/aiter's is unchanged only while
# max_num_tokens == max_bs * topk (an invariant the harness keeps).
UNSAFE_REPLACEMENTS = (
    (
        "max_bs * self.max_context_len",
        "draft_kv_indices_buffer_width(max_bs, self.topk, self.max_context_len)",
    ),
    (
        "max_num_tokens * self.max_context_len",
        "draft_kv_indices_buffer_width(max_bs, self.topk, self.max_context_len)",
    ),
)


class StandInRewriteError(ValueError):
    """The text does not hold the inline formulas this stand-in knows."""


def stand_in_rewrite(
    text: str, *, unsafe_fixes: bool = False, class_name: str | None = None
) -> str:
    """Rewrite the draft class's inline formulas in ``text`` into helper calls.

    Safe fixes always; the KVI003 buffer widths only with ``unsafe_fixes``. The
    unsafe patterns are alternatives (a backend has one or the other); together
    they must hit at least once, each safe pattern at least once.
    """
    rewritten = rewrite_in_class(text, SAFE_REPLACEMENTS, class_name=class_name)
    if unsafe_fixes:
        # A backend has one of the two unsized widths, so either may miss.
        rewritten = rewrite_in_class(
            rewritten, UNSAFE_REPLACEMENTS, class_name=class_name, each=False
        )
    return rewritten


def rewrite_in_class(
    text: str,
    replacements: tuple[tuple[str, str], ...],
    *,
    class_name: str | None = None,
    each: bool = True,
) -> str:
    """Apply ``old -> new`` string replacements inside one class of ``text`` only.

    ``each``: every ``old`` must occur; otherwise at least one of them must.
    The rest of the file is returned byte for byte.
    """
    node = find_class(ast.parse(text), class_name)
    lines = text.splitlines(keepends=True)
    start = sum(len(line) for line in lines[: node.lineno - 1])
    end = sum(len(line) for line in lines[: node.end_lineno])
    body = text[start:end]
    hits = 0
    for old, new in replacements:
        found = body.count(old)
        if each and not found:
            raise StandInRewriteError(f"{node.name}: no `{old}` to rewrite")
        hits += found
        body = body.replace(old, new)
    if not hits:
        olds = [old for old, _ in replacements]
        raise StandInRewriteError(f"{node.name}: none of {olds} found")
    return text[:start] + body + text[end:]
