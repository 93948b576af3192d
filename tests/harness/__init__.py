"""The proof's harness lives in :mod:`lint_plugin.proof` (``draft-kv-lint prove``
uses it); the tests import it under this short name."""

from lint_plugin.proof import *  # noqa: F403
from lint_plugin.proof import __all__  # noqa: F401
