"""The harness's own failure, kept apart from the code under test's errors."""

from __future__ import annotations


class HarnessError(BaseException):
    """The harness cannot run this class faithfully (unknown names, bad calls).

    A BaseException, like KeyboardInterrupt: the driven code's own
    ``except Exception`` must not swallow the harness saying it is guessing, or
    a run would be compared on a value nobody computed.
    """
