"""The errors that end a run before any file is judged: exit status 2, one line.

Raised by whatever reads the run's arguments (the command line, the
configuration, ``prove``'s pairs); the CLI prints them.
"""

from __future__ import annotations


class RunError(Exception):
    """A run that cannot start (a bad configuration, an output file that cannot be
    written): one line on stderr, exit status 2, no traceback."""


class UsageError(RunError):
    """A mistake on the command line: the subcommand's usage, then one line."""
