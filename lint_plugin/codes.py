"""The rule codes, without the rules: what selection needs on every run.

Loading the catalogue itself (:mod:`lint_plugin.rules`) imports every rule and the
engine they decide with; a run answered from the cache needs only the codes, and
they are the rule modules' own names (``rules/kvi003_unsized_draft_buffer.py`` is
KVI003), read from the folder without importing it.
"""

from __future__ import annotations

import os
import re

RULE_MODULE = re.compile(r"(kvi\d{3})_\w+")  # a rule's module; its code upper-cased


_FOLDER: list[str] = []  # found once: the catalogue, the byte test and the cache ask


def rules_folder() -> str:
    """Where the rule modules are (``lint_plugin/rules``, installed or mapped)."""
    if not _FOLDER:
        import lint_plugin

        folder = os.path.join(os.path.dirname(lint_plugin.__file__), "rules")
        if not os.path.isdir(folder):
            # An editable install maps the rules elsewhere (pyproject's package-dir).
            from importlib.util import find_spec

            folder = find_spec("lint_plugin.rules").submodule_search_locations[0]
        _FOLDER.append(folder)
    return _FOLDER[0]


def code_of(module_name: str) -> str:
    """``KVI003`` for ``kvi003_unsized_draft_buffer`` (a rule module's name)."""
    return RULE_MODULE.fullmatch(module_name).group(1).upper()


def rule_modules() -> list[str]:
    """The rule modules' names, in code order."""
    names = [
        name[:-3]
        for name in os.listdir(rules_folder())
        if name.endswith(".py") and RULE_MODULE.fullmatch(name[:-3])
    ]
    return sorted(names)


RULE_MODULES = tuple(rule_modules())
CODES = tuple(code_of(name) for name in RULE_MODULES)
