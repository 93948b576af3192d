"""Ctrl-C and SIGTERM held while a temporary file exists.

A signal that arrives between a temporary file's creation and its rename (or
removal) would leave it behind: no cleanup can be in place at every instant, and
the cleanup itself can be interrupted. So the two signals are blocked for that
window (it is a few system calls long) and delivered, and acted on, right after.
``_signal`` is the interpreter's own module, already loaded at startup: holding
costs ``check`` no import.
"""

from __future__ import annotations

import _signal

HELD = (_signal.SIGINT, _signal.SIGTERM)


class held:
    """``with held():`` runs its block with SIGINT and SIGTERM blocked (a class,
    not ``contextlib``: it costs no import). Where signals cannot be blocked
    (no ``pthread_sigmask``) the block runs as it is."""

    def __enter__(self) -> None:
        mask = getattr(_signal, "pthread_sigmask", None)
        self._previous = None if mask is None else mask(_signal.SIG_BLOCK, HELD)

    def __exit__(self, *exc_info: object) -> None:
        if self._previous is not None:
            _signal.pthread_sigmask(_signal.SIG_SETMASK, self._previous)
