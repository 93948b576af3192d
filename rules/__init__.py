"""The rule catalogue: what each KVI code finds, why it matters, how it is fixed.

Installed as ``lint_plugin.rules``. Rules know nothing about flake8, libcst or the
command line; front ends read ``RULES`` for codes, messages, docs and examples.
"""

from __future__ import annotations

from lint_plugin import codes
from lint_plugin.engine import vocabulary
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


def _load() -> tuple:
    """Every rule module of this folder (``kviNNN_name.py``), in code order."""
    import importlib

    return tuple(
        importlib.import_module(f"lint_plugin.rules.{name}")
        for name in codes.RULE_MODULES
    )


_MODULES = _load()

RULES: dict[str, Rule] = {m.RULE.code: m.RULE for m in _MODULES}
if tuple(RULES) != codes.CODES or any(
    codes.code_of(m.__name__.rsplit(".", 1)[1]) != m.RULE.code for m in _MODULES
):
    raise ImportError("a rule module's name does not start with its rule's code")
# Each rule declares the words it needs, as plain data: the pre-filters are
# built from them (lint_plugin.engine.vocabulary). A rule module imports what it
# decides with lazily, so reading the declarations costs no engine import.
NEEDS: dict[str, vocabulary.Needs] = {m.RULE.code: m.NEEDS for m in _MODULES}
vocabulary.declare(NEEDS)
# The rules that decide, each ``decide(checker)`` (lint_plugin.engine.checker);
# KVI100 is decided after noqa (lint_plugin.noqa.directives).
DECISIONS = tuple((m.RULE.code, m.decide) for m in _MODULES if hasattr(m, "decide"))
