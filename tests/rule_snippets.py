"""Running snippets through the engine for the rule tests: their codes after
``# noqa``, by check's shortcuts or by a walk of the whole tree."""

from __future__ import annotations

import ast
import textwrap

from lint_plugin.engine.settings import Settings
from lint_plugin.engine.source import Source
from lint_plugin.linter import lint_source, lint_tree
from lint_plugin.noqa.directives import review

# Every rule runs here (all are on by default): each example is its own rule's spec.
EVERY_RULE = Settings()


def codes(source: str, path: str = "snippet.py") -> list[str]:
    findings = lint_source(source.encode(), path, EVERY_RULE)
    return [f.code for f in review(findings, source, path)]


def example_codes(example, folder) -> list[str]:
    """The codes of an example, in its tree when it has one (written under
    ``folder``, the snippet at its own path)."""
    if not example.tree:
        return codes(example.code)
    for name, text in (*example.tree, (example.path, example.code)):
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return codes(example.code, str(folder / example.path))


def full_walk_codes(source: str) -> list[str]:
    """The engine on the whole tree, none of check's shortcuts."""
    findings = lint_tree(
        ast.parse(source), Source(source), "snippet.py", None, EVERY_RULE
    )
    return [f.code for f in review(findings, source, "snippet.py")]


def snippet(body: str) -> str:
    """``body`` as a method of a multi-step draft backend."""
    return "class XMultiStepDraftBackend:\n    def f(self, forward_batch, i):\n" + (
        textwrap.indent(textwrap.dedent(body), " " * 8)
    )
