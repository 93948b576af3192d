"""What a rule declares: its code, name, message, docs and examples.

A leaf of the catalogue (``lint_plugin.rules``): every rule module imports it,
and the catalogue imports every rule module.
"""

from __future__ import annotations

from lint_plugin.records import field, record


@record(frozen=True)
class Example:
    """A snippet; ``fixed`` is what ``fix`` turns an invalid one into (None: no fix)."""

    code: str
    fixed: str | None = None
    unsafe: bool = False  # the fix needs --unsafe-fixes
    # Where the snippet lives and the other files of its tree (``(path, text)``,
    # relative paths): a rule that reads another module (KVI007) is judged there.
    path: str = "snippet.py"
    tree: tuple[tuple[str, str], ...] = ()


@record(frozen=True)
class Rule:
    code: str
    name: str  # kebab-case name of the bad pattern
    message: str  # str.format template, filled by the engine
    fix_title: str | None
    fix_safety: str | None  # "safe", "unsafe" or None (no fix)
    doc: str  # markdown with ruff's headings
    valid: tuple[Example, ...] = field(default=())
    invalid: tuple[Example, ...] = field(default=())

    @property
    def url(self) -> str:
        return f"draft-kv-lint rule {self.code}"

    def render(self) -> str:
        """What ``draft-kv-lint rule CODE`` prints."""
        safety = {
            "safe": "Fix is always available (safe).",
            "unsafe": "Fix is sometimes available (unsafe: needs --unsafe-fixes).",
            None: "No fix.",
        }[self.fix_safety]
        return f"# {self.name} ({self.code})\n\n{safety}\n\n{self.doc.strip()}\n"
