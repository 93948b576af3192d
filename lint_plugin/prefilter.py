"""Whether a file can hold a finding at all, decided on its bytes.

Kept apart from the engine (:mod:`lint_plugin.scan`) so that a run answered from
the cache, or a file no rule can match, never imports the parser's side.
"""

from __future__ import annotations


class SourceError(ValueError):
    """The file's bytes are not text this tool can read (the reason says why)."""


def could_match(data: bytes) -> bool:
    """Could any rule find anything here? Each needs a helper's or the kernel's
    name, the guard's (KVI007: its import), or a topk beside a second role
    (seq_lens_sum for KVI001, a context length for KVI002 and KVI003); in the
    whole 0.5.23 package 634 files name a topk and about 115 also a second role,
    5 name the guard (4 of them a topk too)."""
    # Both names hold "kv_indices": one search rules both out in most files.
    if b"kv_indices" in data and (
        b"draft_kv_indices_" in data or b"generate_draft_decode_kv_indices" in data
    ):
        return True
    if b"assert_buffer_fits" in data:
        return True  # KVI007: the guard imported from a module lacking it
    if b"topk" not in data:
        return False
    return b"context_len" in data or b"seq_lens_sum" in data or b"seq_len_sum" in data


def decode(data: bytes) -> str:
    if data.isascii():
        return data.decode("ascii")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None
