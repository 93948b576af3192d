"""What a ``fix`` run asks of each file's rewrite.

Apart from the rewriter, so that ``fix`` builds them without importing it: a
run over files no rule can match never does.
"""

from __future__ import annotations

from lint_plugin.engine.settings import (
    DEFAULT_GUARD_MODULE,
    DEFAULT_HELPERS_MODULE,
    Settings,
)
from lint_plugin.records import record

TYPE_CHECKING = False  # not `typing`: its import costs milliseconds every run
if TYPE_CHECKING:
    from collections.abc import Callable

    from lint_plugin.findings import Finding


@record(frozen=True)
class Options:
    unsafe_fixes: bool = False
    helpers_module: str = DEFAULT_HELPERS_MODULE
    # Where KVI006's inserted guard is imported from; None: from the tree (where
    # it defines the guard, or where the file imports it from), else the default.
    guard_module: str | None = None
    wrap: bool = True  # format rewritten statements to the line length
    # Selection (--select/--ignore); noqa directives are always honoured.
    selected: Callable[[Finding], bool] = lambda finding: True

    @property
    def settings(self) -> Settings:
        """The engine's settings for this run (every pass of fix uses them)."""
        return Settings(self.helpers_module, self.guard_module or DEFAULT_GUARD_MODULE)

    def applies(self, finding: Finding) -> bool:
        """Would this run apply ``finding``'s fix (it is selected, and safe or
        ``--unsafe-fixes`` given)? ``check`` and the rewrite ask alike."""
        fix = finding.fix
        if fix is None or not self.selected(finding):
            return False
        return fix.applicability == "safe" or self.unsafe_fixes
