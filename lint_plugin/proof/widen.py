"""The original with exactly its KVI003 sites widened: the proof's second oracle.

``fix --unsafe-fixes`` changes numbers at one kind of site only: KVI003's unsized
per-step buffers, whose width gains the topk factor. To prove such a rewrite,
the original is run a second time with those allocations -- and nothing else --
widened as the unsafe fix states (the engine's own KVI003 findings and their
edits, computed on the original), and the rewrite must then match it in every
record. The edits are spliced in place (no import, no reformatting) so each
line keeps its number; the helper they call is one of the harness's names.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass

from lint_plugin.fix.edits import splice
from lint_plugin.fix.rewrite import Options, RewriteRefused, rewrite_text

from .loader import find_class

KVI003 = "KVI003"


@dataclass(frozen=True)
class Widened:
    """The original's text with its KVI003 sites widened, and where they are."""

    text: str
    sites: tuple[tuple[int, int], ...]  # (first, last) line of each site's statement

    def holds(self, line: int) -> bool:
        return any(first <= line <= last for first, last in self.sites)

    @property
    def lines(self) -> tuple[int, ...]:
        return tuple(first for first, _ in self.sites)


def _statement_span(node: ast.ClassDef, row: int) -> tuple[int, int]:
    """The innermost statement of the class holding ``row``."""
    best = (node.lineno, node.end_lineno or node.lineno)
    for sub in ast.walk(node):
        if isinstance(sub, ast.stmt) and not isinstance(
            sub, ast.FunctionDef | ast.ClassDef | ast.If | ast.For | ast.With | ast.Try
        ):
            first, last = sub.lineno, sub.end_lineno or sub.lineno
            if first <= row <= last and last - first <= best[1] - best[0]:
                best = (first, last)
    return best


@functools.lru_cache(maxsize=64)
def widen_kvi003(text: str, class_name: str) -> Widened | None:
    """``text`` with the KVI003 sites of ``class_name`` widened as their unsafe
    fix states; None when the class has none (or the fix is refused)."""
    options = Options(unsafe_fixes=True, selected=lambda f: f.code == KVI003)
    try:
        rewrite = rewrite_text(text, "backend.py", options)
    except (RewriteRefused, SyntaxError):
        return None
    node = find_class(ast.parse(text), class_name)
    inside = [
        f
        for f in rewrite.applied
        if f.code == KVI003 and node.lineno <= f.row <= (node.end_lineno or f.row)
    ]
    edits = [
        e
        for f in inside
        for e in f.fix.edits
        if "\n" not in e.content and e.row == e.end_row
    ]
    if not edits:
        return None
    sites = tuple(sorted({_statement_span(node, e.row) for e in edits}))
    return Widened(splice(text, edits), sites)
