"""What every rule decides through, for one parsed tree: the rule API.

As ruff's ``Checker`` or Fixit's ``LintRule`` context: the tree walked (the
whole module, or a region ``check`` parsed) and its source, the file's
module-level statements (``module``: what a value may flow from outside the
tree), the facts the walk gathered (:mod:`lint_plugin.engine.facts`), the
values of an expression on each path (``analysis``:
:mod:`lint_plugin.engine.flow.widths`), and the reporter: findings, and notes
(what a rule could not judge). A rule with a question the facts do not answer
asks the tree itself, in its own module. Positions are the tree's source
offsets, turned into the file's rows and columns.
"""

from __future__ import annotations

import ast

from lint_plugin.findings import Edit, Finding, Fix

TYPE_CHECKING = False  # not `typing`: the catalogue is read on every run
if TYPE_CHECKING:
    from lint_plugin.engine.facts import HelperCall, ModuleFacts
    from lint_plugin.engine.flow.widths import Analysis
    from lint_plugin.engine.module_scope import ModuleScope
    from lint_plugin.engine.settings import Settings
    from lint_plugin.engine.source import Source

Span = tuple[int, int]


class Checker:
    """One tree's facts and findings, and what a rule reads to decide."""

    def __init__(
        self,
        tree: ast.AST,
        source: Source,
        path: str,
        settings: Settings,
        module: ModuleScope,
        facts: ModuleFacts,
    ) -> None:
        self.tree = tree
        self.source = source
        self.path = path
        self.settings = settings
        self.module = module
        self.facts = facts
        self.findings: list[Finding] = []
        self.notes: list[Finding] = []
        self._analysis: Analysis | None = None
        self._helper_names: dict[str, str] | None = None

    @property
    def helper_names(self) -> dict[str, str]:
        """The names a call here is trusted to call a helper by: the helpers'
        own and the aliases of trusted imports (``facts.helper_names``), less
        every name something else in the file may bind (``facts.rebound``: any
        binding form, anywhere, :mod:`lint_plugin.bindings`), and none at all
        in a file with a ``*`` import from an untrusted module (it may bind
        any name). The file's facts are complete when a rule asks (every
        region of a file is walked before any is decided)."""
        found = self._helper_names
        if found is None:
            facts = self.facts
            if self._untrusted_star_import():
                found = {}
            else:
                found = {
                    name: helper
                    for name, helper in facts.helper_names.items()
                    if name not in facts.rebound
                }
            self._helper_names = found
        return found

    @property
    def helper_calls(self) -> list[HelperCall]:
        """The walk's helper calls (``facts.helper_calls``) by a trusted name."""
        names = self.helper_names
        return [
            call
            for call in self.facts.helper_calls
            if _called_name(call.call.func) in names
        ]

    def _untrusted_star_import(self) -> bool:
        from lint_plugin.engine.settings import resolve_module

        for node in self.module.star_imports():
            module = resolve_module(node.module, node.level, self.path)
            if not self.settings.trusts(module):
                return True
        return False

    @property
    def analysis(self) -> Analysis:
        """The values of this tree's expressions on each path, computed as the
        rules ask for them."""
        if self._analysis is None:
            from lint_plugin.engine.flow.widths import Analysis

            self._analysis = Analysis(self.module, self.helper_names, self.source)
        return self._analysis

    def values(self, node: ast.AST, function, at: ast.AST | None = None):
        """The values ``node`` may hold on each path (``Alt``s: a value and the
        conditions of its path), read in ``function`` (its facts; None: at
        module level) at the statement holding ``at`` (default: ``node``)."""
        analysis = self.analysis
        frame = analysis.frame_of(function)
        where = node if at is None else at
        stmt = analysis.statement(frame, where) if function is not None else None
        return analysis.values(node, frame, stmt)

    def span(self, node: ast.AST) -> Span:
        return self.source.span(node)

    def edit(self, span: Span, content: str) -> Edit:
        row, column = self.source.position(span[0])
        end_row, end_column = self.source.position(span[1])
        return Edit(content, row, column, end_row, end_column)

    def add(self, code: str, span: Span, message: str, fix: Fix | None = None) -> None:
        """Report a finding of ``code`` over ``span``."""
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


def _called_name(func: ast.AST) -> str | None:
    """The name a call is by, as the walk reads it (``f(...)``, ``m.f(...)``)."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None
