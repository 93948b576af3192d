"""flake8 front end: ``flake8 --select KVI`` reports what ``check`` reports.

flake8 has already parsed the file; the plugin only walks the top-level
statements that mention a word a finding needs, so files without one cost a
regex search.

``# noqa``: flake8 honours a directive only on the reported row, while ``check``
honours it on any row of the finding's statement (so it survives black moving the
comment). The plugin therefore applies the directives itself, with the same code as
``check`` (``noqa.review``), and reports KVI100 for unused ones; flake8's own pass
afterwards suppresses a subset of what was already suppressed, so the two front ends
agree. ``flake8 --disable-noqa`` turns both passes off.
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Iterator

from lint_plugin import __version__
from lint_plugin.engine.settings import DEFAULT_HELPERS_MODULE, Settings
from lint_plugin.noqa.directives import may_hold_own_directive, review
from lint_plugin.prefilter import could_match

# flake8 loads every installed plugin on every run, whatever it selects: the
# engine is imported by the first file the byte test lets through (as
# ``check`` does), not by a run over files none can match. The rules' words,
# which every file's byte test reads, are loaded with the options (below).
TYPE_CHECKING = False  # not `typing`: its import costs milliseconds every run
if TYPE_CHECKING:
    from lint_plugin.engine.source import Source
    from lint_plugin.findings import Finding


class KviChecker:
    name = "draft-kv-lint"
    version = __version__
    settings = Settings()
    disable_noqa = False

    @classmethod
    def add_options(cls, manager) -> None:
        # flake8 option names are global across plugins: ours carry --kvi-.
        manager.add_option(
            "--kvi-helpers-module",
            default=DEFAULT_HELPERS_MODULE,
            parse_from_config=True,
            help="module the draft kv_indices helpers are trusted from "
            f"(default: {DEFAULT_HELPERS_MODULE})",
        )

    @classmethod
    def parse_options(cls, options: argparse.Namespace) -> None:
        cls.settings = Settings(helpers_module=options.kvi_helpers_module)
        cls.disable_noqa = bool(getattr(options, "disable_noqa", False))
        # The catalogue every file's byte test reads (lint_plugin.prefilter),
        # loaded in flake8's main process, before it forks its workers (jobs
        # > 1): once per run, not once per worker.
        import lint_plugin.rules  # noqa: F401

    def __init__(self, tree: ast.Module, filename: str, lines: list[str]) -> None:
        self.tree = tree
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        text = "".join(self.lines)
        findings = []
        if could_match(text):
            findings = self._findings(text)
        if not self.disable_noqa and (findings or may_hold_own_directive(text)):
            findings = review(findings, text, self.filename)
        for finding in findings:
            # flake8 wants 0-based columns and adds 1 itself.
            message = f"{finding.code} {finding.message}"
            yield finding.row, finding.column - 1, message, type(self)

    def _findings(self, text: str) -> list[Finding]:
        from lint_plugin.engine.facts import helper_aliases, helper_names
        from lint_plugin.engine.module_scope import TreeModuleScope
        from lint_plugin.engine.scan import interesting_rows
        from lint_plugin.engine.source import Source
        from lint_plugin.linter import decide_tree, walk_tree

        aliases = helper_aliases(text)
        rows = interesting_rows(text, aliases)
        findings = []
        if rows:
            source = Source(text)
            # The names the helpers go by (trusted import aliases) hold for the
            # statements after the import, as in a walk of the whole tree; a
            # name something else binds in any statement is trusted in none:
            # every statement is walked before any is decided.
            names = (helper_names(), set())
            module = TreeModuleScope(self.tree, source)
            walked = [
                walk_tree(
                    node,
                    source,
                    self.filename,
                    rows,
                    self.settings,
                    names,
                    module,
                    aliases,
                )
                for node in _statements_around(self.tree.body, rows, source, aliases)
            ]
            for one in walked:
                findings += decide_tree(one)
        return findings


def _statements_around(
    body: list[ast.stmt], rows: list[int], source: Source, aliases: tuple[str, ...]
) -> Iterator[ast.AST]:
    """The statements holding ``rows``; a class only as a whole when ``check``
    reads it whole too (a possible draft backend, or one calling a helper)."""
    from lint_plugin.engine.draft_backend import read_whole

    for stmt in body:
        # A decorated def or class starts at its first decorator's row.
        decorators = getattr(stmt, "decorator_list", None)
        first = decorators[0].lineno if decorators else stmt.lineno
        if not any(first <= row <= stmt.end_lineno for row in rows):
            continue
        if isinstance(stmt, ast.ClassDef) and not read_whole(
            stmt.name, source.segment(stmt), aliases
        ):
            # Its header's expressions too: the walk reads them with the class.
            header = [*stmt.decorator_list, *stmt.bases, *stmt.keywords]
            yield from (
                node
                for node in header
                if any(node.lineno <= row <= node.end_lineno for row in rows)
            )
            yield from _statements_around(stmt.body, rows, source, aliases)
        else:
            yield stmt
