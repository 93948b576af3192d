"""The rule catalogue: what each KVI code finds, why it matters, how it is fixed.

Installed as ``lint_plugin.rules``. Rules know nothing about flake8, libcst or the
command line; front ends read ``RULES`` for codes, messages, docs and examples.
What a rule declares is a ``Rule`` with its ``Example``s (:mod:`._rule`, which
each rule module imports: the catalogue imports the rule modules).
"""

from __future__ import annotations

from lint_plugin import codes
from lint_plugin.engine import vocabulary
from lint_plugin.rules._rule import Example as Example
from lint_plugin.rules._rule import Rule


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
