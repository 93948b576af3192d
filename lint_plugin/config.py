"""The ``[tool.draft-kv-lint]`` table of the nearest ``pyproject.toml``.

Discovery: starting at the first path given on the command line (its folder when it is
a file) or at the current folder, walk up to the file-system root and take the first
``pyproject.toml`` that has a ``[tool.draft-kv-lint]`` table; a ``pyproject.toml``
without one is passed over, so a sub-project's own pyproject does not hide the
repository's settings. Patterns in the table are relative to that file's folder.

Speed: ``check`` runs on every commit, so the TOML parser is imported only for a file
whose bytes show the table header; most runs in most repositories never import it.

Keys (all optional)::

    select, ignore, extend-select = ["KVI", "KVI003", ...]   # codes or prefixes
    per-file-ignores = { "tests/*" = ["KVI001"] }
    include, exclude = ["glob", ...]                        # for discovered files
    force-exclude = false                                   # excludes named files too
    output-format = "text" | "json" | "github" | "sarif"

An unknown key or a value of the wrong type is a ``ConfigError`` with one line naming
the file; the command line turns it into exit status 2 (a typo in the gate's settings
must not silently switch a rule off).
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass

from lint_plugin.files import read_regular_file
from lint_plugin.findings import FileError
from lint_plugin.output import OUTPUT_FORMATS

TABLE = "draft-kv-lint"
FILENAME = "pyproject.toml"

# `[tool.draft-kv-lint]`, `[tool.draft-kv-lint.per-file-ignores]` or the quoted
# `[tool."draft-kv-lint"]`, at the start of a line.
_TABLE_HEADER = re.compile(
    rb"""(?m)^[ \t]*\[[ \t]*tool[ \t]*\.[ \t]*["']?draft-kv-lint\b"""
)

CONFIG_LIMIT = 1024 * 1024  # a pyproject.toml is kilobytes

_LIST_KEYS = ("select", "ignore", "extend-select", "include", "exclude")


class ConfigError(Exception):
    """A configuration file that cannot be used; ``str()`` is one line naming it."""


@dataclass(frozen=True)
class Config:
    """Settings from one file; ``select`` is None when the file does not set it."""

    path: str | None = None  # the pyproject.toml, None when no file was used
    root: str = "."  # the folder patterns are relative to
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    force_exclude: bool = False
    output_format: str | None = None


def has_table(data: bytes) -> bool:
    """Cheap test on raw bytes: could this pyproject.toml hold our table?"""
    return _TABLE_HEADER.search(data) is not None


def find_config(start: str = ".") -> str | None:
    """The nearest pyproject.toml at or above ``start`` with our table, or None."""
    folder = os.path.abspath(start)
    if not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    while True:
        candidate = os.path.join(folder, FILENAME)
        data = read_regular_file(candidate, CONFIG_LIMIT)
        if isinstance(data, FileError):  # missing, a FIFO, a link to /dev/zero...
            if os.path.lexists(candidate):
                print(f"warning: {data}; skipped", file=sys.stderr)
            data = b""
        if has_table(data):
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _parse_toml(data: bytes, path: str) -> dict:
    try:
        import tomllib  # Python >= 3.11
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None


def _string_list(value: object, path: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(
            f"{path}: [tool.{TABLE}] {key} must be a list of strings, "
            f"got {type(value).__name__}: {value!r}"
        )
    return tuple(value)


def parse_table(table: object, path: str) -> Config:
    """Validate the table's keys and types; the error names the file and the key."""
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.{TABLE}] must be a table")
    known = (*_LIST_KEYS, "per-file-ignores", "force-exclude", "output-format")
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise ConfigError(
            f"{path}: [tool.{TABLE}] unknown key {unknown[0]!r} "
            f"(known keys: {', '.join(known)})"
        )
    lists = {
        key: _string_list(table[key], path, key) for key in _LIST_KEYS if key in table
    }

    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(
            f"{path}: [tool.{TABLE}] per-file-ignores must be a table of "
            "pattern = [codes], got " + type(per_file).__name__
        )
    per_file_ignores = tuple(
        (pattern, _string_list(codes, path, f"per-file-ignores.{pattern!r}"))
        for pattern, codes in per_file.items()
    )

    force_exclude = table.get("force-exclude", False)
    if not isinstance(force_exclude, bool):
        raise ConfigError(f"{path}: [tool.{TABLE}] force-exclude must be true or false")

    output_format = table.get("output-format")
    if output_format is not None and output_format not in OUTPUT_FORMATS:
        raise ConfigError(
            f"{path}: [tool.{TABLE}] output-format must be one of "
            f"{', '.join(OUTPUT_FORMATS)}, got {output_format!r}"
        )

    return Config(
        path=path,
        root=os.path.dirname(os.path.abspath(path)),
        select=lists.get("select"),
        ignore=lists.get("ignore", ()),
        extend_select=lists.get("extend-select", ()),
        per_file_ignores=per_file_ignores,
        include=lists.get("include", ()),
        exclude=lists.get("exclude", ()),
        force_exclude=force_exclude,
        output_format=output_format,
    )


def load_config(path: str) -> Config:
    """Read ``path``; without our table it gives the defaults, rooted at its folder."""
    data = read_regular_file(path, CONFIG_LIMIT)
    if isinstance(data, FileError):
        raise ConfigError(f"{path}: cannot read: {data.reason}")
    root = os.path.dirname(os.path.abspath(path))
    if not has_table(data):
        return Config(path=path, root=root)
    table = _parse_toml(data, path).get("tool", {}).get(TABLE)
    if table is None:  # the header regex matched inside a string, say
        return Config(path=path, root=root)
    return parse_table(table, path)


def discover_config(start: str = ".") -> Config:
    """The configuration that applies to a run started at ``start``."""
    path = find_config(start)
    if path is None:
        return Config(root=os.path.abspath("."))
    return load_config(path)
