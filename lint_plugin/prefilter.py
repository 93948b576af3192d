"""The byte test: could any rule find anything in a file, decided on its bytes.

A front end's first question about every file it did not answer from the cache;
kept apart from the engine, so a file no rule can match never imports it.
"""

from __future__ import annotations


def could_match(data: bytes | str) -> bool:
    """Could any rule find anything here (a file's bytes, or its text as
    decoded, which is read as its UTF-8)? Each rule declares the words it needs
    (:mod:`lint_plugin.engine.vocabulary`): a helper's or the kernel's name, the
    guard's (KVI007: its import), or a topk beside a second role (seq_lens_sum
    for KVI001, a context size for KVI002 and KVI003); in the whole 0.5.23
    package 634 files name a topk and about 115 also a second role, 5 name the
    guard (4 of them a topk too)."""
    # Imported here: a run the cache answers asks no byte test. Importing the
    # catalogue declares every rule's words to the vocabulary (its rules import
    # the engine lazily: no engine import).
    import lint_plugin.rules  # noqa: F401
    from lint_plugin.engine import vocabulary

    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return vocabulary.could_match(data)
