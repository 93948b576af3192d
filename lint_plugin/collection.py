"""Python's cyclic garbage collector paused while one file is processed.

Parsing a large file makes millions of ``ast`` nodes and the engine's records,
none of them in cycles (refcounting frees them), but each full collection walks
every live object, and their number triggers collections over and over: on a
2 MB file that was a third of ``fix``'s time, and the share grows with the file.
Collection runs as usual between files.
"""

from __future__ import annotations

import gc


class paused:
    """``with paused():`` runs its block with the collector off (a class, not
    ``contextlib``: check imports nothing it does not need)."""

    def __enter__(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc_info: object) -> None:
        if self._was_enabled:
            gc.enable()
