"""The harness's own failure, kept apart from the code under test's errors."""

from __future__ import annotations


class HarnessError(RuntimeError):
    """The harness cannot run this class faithfully (unknown names, bad calls)."""
