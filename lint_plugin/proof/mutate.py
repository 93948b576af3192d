"""Editing one class of a backend's text, for the harness's own mutation tests.

The proof compares a backend with ``draft-kv-lint fix``'s rewrite of it; this
module only makes deliberate one-token changes (an off-by-one, ``empty`` for
``zeros``) to show the harness notices them. Only the named class is edited, and
every replacement must hit, so a changed upstream text fails here instead of
"proving" an untouched file different from itself.
"""

from __future__ import annotations

import ast

from .loader import find_class


class StandInRewriteError(ValueError):
    """The text does not hold the snippet a mutation expects."""


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
