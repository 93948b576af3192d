"""Python's cyclic garbage collector kept off the large trees of ``fix``.

Parsing a large file makes millions of ``ast`` nodes, none of them in cycles
(reference counting frees them), but while they are made, and for as long as
they live, each full collection walks them all, and their number triggers
collections over and over: on a 2 MB file that was a third of ``fix``'s time,
and the share grows with the file. So a whole file is parsed with the collector
off, and the tree is then moved out of its sight (``gc.freeze``) until the file
is done (``released``), while the engine's short-lived objects, some of which do
form cycles, are still collected.
"""

from __future__ import annotations

import gc


class paused:
    """``with paused():`` runs its block with the collector off (a class, not
    ``contextlib``: it costs no import)."""

    def __enter__(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc_info: object) -> None:
        if self._was_enabled:
            gc.enable()


def keep_out_of_sight() -> None:
    """What exists now (a tree just parsed) is never walked by a collection."""
    gc.freeze()


def released() -> None:
    """The objects kept out of sight are collected as usual again."""
    gc.unfreeze()
