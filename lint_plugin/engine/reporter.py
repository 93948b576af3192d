"""What a rule decides with and reports through, for one parsed tree.

The walk (:mod:`lint_plugin.engine.analysis`) gathers facts; each rule's
``decide(facts, reporter)`` reads them, asks the width analysis for values, and
adds findings (or notes: what it could not judge) here. Positions are the tree's
source offsets, turned into the file's rows and columns.
"""

from __future__ import annotations

import ast

from lint_plugin.engine.flow.widths import Analysis
from lint_plugin.engine.module_scope import ModuleScope
from lint_plugin.engine.settings import Settings
from lint_plugin.engine.source import Source
from lint_plugin.findings import Edit, Finding, Fix

Span = tuple[int, int]


class Reporter:
    """The findings and notes of one tree, and what rules read to decide."""

    def __init__(
        self,
        source: Source,
        path: str,
        settings: Settings,
        module: ModuleScope,
        helper_names: dict[str, str],
    ) -> None:
        self.source = source
        self.path = path
        self.settings = settings
        self.findings: list[Finding] = []
        self.notes: list[Finding] = []
        self._module = module
        self._helper_names = helper_names
        self._analysis: Analysis | None = None

    @property
    def analysis(self) -> Analysis:
        """The values of this tree, computed as the rules ask for them."""
        if self._analysis is None:
            self._analysis = Analysis(self._module, self._helper_names, self.source)
        return self._analysis

    def span(self, node: ast.AST) -> Span:
        return self.source.span(node)

    def edit(self, span: Span, content: str) -> Edit:
        row, column = self.source.position(span[0])
        end_row, end_column = self.source.position(span[1])
        return Edit(content, row, column, end_row, end_column)

    def add(self, code: str, span: Span, message: str, fix: Fix | None = None) -> None:
        row, column = self.source.position(span[0])
        end_row, end_column = self.source.position(span[1])
        self.findings.append(
            Finding(self.path, row, column, end_row, end_column, code, message, fix)
        )

    def note(self, code: str, span: Span, message: str) -> None:
        """Something the rule could not judge (never reported as a finding)."""
        row, column = self.source.position(span[0])
        end_row, end_column = self.source.position(span[1])
        self.notes.append(
            Finding(self.path, row, column, end_row, end_column, code, message)
        )

    def release(self) -> None:
        """Drop the analysis (its scopes point back at the tree) once decided."""
        if self._analysis is not None:
            self._analysis.release()
            self._analysis = None
