"""BLAKE2b digests of what this tool keeps (cache keys, states, kept tables).

From the ``_blake2`` module alone: ``hashlib`` would load OpenSSL, 3 ms a run.
"""

from __future__ import annotations

try:
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - an interpreter built without it
    from hashlib import blake2b

__all__ = ["blake2b"]
