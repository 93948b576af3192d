"""A configuration's table as last parsed, kept in the run's cache folder.

Parsing a ``pyproject.toml`` imports ``tomllib``, which imports ``typing``:
about 10 ms, more than the rest of a warm run. So the table read from a file is
kept under the digest of the file's bytes, in a folder the caller names (a
cache folder this tool made: nothing is written anywhere else), and the same
bytes give the same table without the parser. What is kept is the parsed TOML
(``tomllib``'s answer), not its reading: the table is validated each run.
"""

from __future__ import annotations

import marshal
import os
from collections.abc import Callable

_PREFIX = f"config-{marshal.version}-"  # marshal's format differs by version


def parsed(data: bytes, folder: str | None, parse: Callable[[], object]) -> object:
    """``parse()``'s answer for a file of ``data``: kept in ``folder`` (None:
    nothing kept) from the run that parsed it."""
    if folder is None:
        return parse()
    from lint_plugin.digests import blake2b

    where = os.path.join(folder, _PREFIX + blake2b(data, digest_size=16).hexdigest())
    try:
        with open(where, "rb") as handle:
            return marshal.loads(handle.read())
    except (OSError, EOFError, ValueError, TypeError):
        pass  # none kept yet, or damaged: parsed again
    found = parse()
    try:
        kept = marshal.dumps(found)
    except ValueError:
        return found  # a value marshal cannot keep (a TOML date)
    temporary = f"{where}.{os.getpid()}.tmp"
    try:
        os.makedirs(folder, exist_ok=True)
        with open(temporary, "wb") as handle:
            handle.write(kept)
        os.replace(temporary, where)  # never half a table under its name
    except OSError:
        import contextlib

        with contextlib.suppress(OSError):
            os.unlink(temporary)
    return found
