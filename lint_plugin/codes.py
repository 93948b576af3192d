"""The rule codes, without the rules: what selection needs on every run.

Loading the catalogue itself (:mod:`lint_plugin.rules`) imports every rule and the
engine they decide with; a run answered from the cache needs only the codes. The
catalogue checks at import that these lists are its own.
"""

from __future__ import annotations

CODES = ("KVI001", "KVI002", "KVI003", "KVI004", "KVI005", "KVI006", "KVI007", "KVI100")
# Chosen only by their exact code (ruff's preview rules): see each rule's docs.
OPT_IN = frozenset({"KVI006"})
