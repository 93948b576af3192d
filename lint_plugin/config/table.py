"""The ``[tool.draft-kv-lint]`` table that applies to each file, as ruff resolves it.

Discovery is per file: from the file's folder, walk up to the file-system root and
take the first ``.draft-kv-lint.toml`` (its top-level keys are the table, like
``ruff.toml``) or ``pyproject.toml`` that has a ``[tool.draft-kv-lint]`` table; a
``pyproject.toml`` without one is passed over, so a sub-project's own pyproject does
not hide the repository's settings. Patterns in a table are relative to its file's
folder. So ``check a.py test/b.py`` and ``check test/b.py a.py`` agree whatever the
order, and with ``python/pyproject.toml`` holding the table (SGLang's layout) a run
from the repository root finds it. ``--config PATH`` makes one file apply to all;
run-wide settings (``output-format``) come from the configuration of the current
folder, as in ruff.

Speed: ``check`` runs on every commit, so the TOML parser is imported only for a file
whose bytes show the table header; most runs in most repositories never import it.

Keys (all optional)::

    select, ignore, extend-select = ["KVI", "KVI003", ...]   # codes or prefixes
    per-file-ignores = { "tests/*" = ["KVI001"] }
    include = ["glob", ...]                                 # for discovered files
    exclude = ["glob", ...]          # replaces the default skip list (build, ...)
    extend-exclude = ["glob", ...]   # adds to it
    force-exclude = false                                   # excludes named files too
    respect-gitignore = true                                # skip what git ignores
    output-format = "text" | "json" | "github" | "sarif"

An unknown key or a value of the wrong type is a ``ConfigError`` with one line naming
the file; the command line turns it into exit status 2 (a typo in the gate's settings
must not silently switch a rule off).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable

from lint_plugin.findings import FileError
from lint_plugin.records import record
from lint_plugin.source_files import read_regular_file

TABLE = "draft-kv-lint"
FILENAME = "pyproject.toml"
OWN_FILENAME = ".draft-kv-lint.toml"

# `[tool.draft-kv-lint]`, `[tool.draft-kv-lint.per-file-ignores]` or the quoted
# `[tool."draft-kv-lint"]`, at the start of a line.
_TABLE_HEADER = re.compile(
    rb"""(?m)^[ \t]*\[[ \t]*tool[ \t]*\.[ \t]*["']?draft-kv-lint\b"""
)

_LIST_KEYS = (
    "select",
    "ignore",
    "extend-select",
    "include",
    "exclude",
    "extend-exclude",
)
_BOOL_KEYS = ("force-exclude", "respect-gitignore")
# Where the helpers (and KVI006's guard) are trusted from.
_MODULE_KEYS = ("helpers-module", "guard-module")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")

# The default ``exclude`` (ruff's idea, our list): nobody wants findings from vendored
# or generated code, and walking a cache or node_modules costs seconds per commit.
DEFAULT_EXCLUDE = (
    "__pycache__",
    "build",
    "dist",
    ".tox",
    ".nox",
    ".eggs",
    "node_modules",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".cache",
    "site-packages",
    "__pypackages__",
)
# What ``output-format`` may name (``lint_plugin.output`` writes each).
OUTPUT_FORMATS = (
    "text",
    "concise",
    "full",
    "json",
    "json-lines",
    "github",
    "sarif",
)


class ConfigError(Exception):
    """A configuration file that cannot be used; ``str()`` is one line naming it."""


@record(frozen=True)
class Config:
    """Settings from one file; ``select`` is None when the file does not set it."""

    path: str | None = None  # the pyproject.toml, None when no file was used
    root: str = "."  # the folder patterns are relative to
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] | None = None  # None: the default skip list
    extend_exclude: tuple[str, ...] = ()
    force_exclude: bool = False
    respect_gitignore: bool = True
    output_format: str | None = None
    helpers_module: str | None = None
    guard_module: str | None = None

    def exclusions(self) -> tuple[str, ...]:
        """The skip list: ``exclude`` (or the defaults) and ``extend-exclude``."""
        base = DEFAULT_EXCLUDE if self.exclude is None else self.exclude
        return (*base, *self.extend_exclude)


def has_table(data: bytes) -> bool:
    """Cheap test on raw bytes: could this pyproject.toml hold our table?"""
    return _TABLE_HEADER.search(data) is not None


CONFIG_LIMIT = 1024 * 1024  # a pyproject.toml is kilobytes
_warned: set[str] = set()  # one warning per unusable file and process


def _config_in(folder: str) -> str | None:
    own = os.path.join(folder, OWN_FILENAME)
    if os.path.isfile(own):
        return own
    candidate = os.path.join(folder, FILENAME)
    data = read_regular_file(candidate, CONFIG_LIMIT)
    if isinstance(data, FileError):  # missing, a FIFO, a link to /dev/zero...
        if os.path.lexists(candidate) and candidate not in _warned:
            _warned.add(candidate)
            print(f"warning: {data}; skipped", file=sys.stderr)
        return None
    return candidate if has_table(data) else None


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


def _check_globs(patterns: tuple[str, ...], path: str, key: str) -> None:
    from lint_plugin.config.globs import invalid_patterns

    bad = invalid_patterns(tuple(patterns))
    if bad:
        raise ConfigError(f"{path}: [tool.{TABLE}] {key}: invalid glob {bad[0]!r}")


def parse_table(table: object, path: str) -> Config:
    """Validate the table's keys and types; the error names the file and the key."""
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.{TABLE}] must be a table")
    known = (
        *_LIST_KEYS,
        "per-file-ignores",
        *_BOOL_KEYS,
        "output-format",
        *_MODULE_KEYS,
    )
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise ConfigError(
            f"{path}: [tool.{TABLE}] unknown key {unknown[0]!r} "
            f"(known keys: {', '.join(known)})"
        )
    lists = {
        key: _string_list(table[key], path, key) for key in _LIST_KEYS if key in table
    }
    for key in ("include", "exclude", "extend-exclude"):
        _check_globs(lists.get(key, ()), path, key)

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
    _check_globs(tuple(per_file), path, "per-file-ignores")

    for key in _BOOL_KEYS:
        if not isinstance(table.get(key, False), bool):
            raise ConfigError(f"{path}: [tool.{TABLE}] {key} must be true or false")

    output_format = table.get("output-format")
    if output_format is not None and output_format not in OUTPUT_FORMATS:
        raise ConfigError(
            f"{path}: [tool.{TABLE}] output-format must be one of "
            f"{', '.join(OUTPUT_FORMATS)}, got {output_format!r}"
        )

    modules = {}
    for key in _MODULE_KEYS:
        value = table.get(key)
        if value is not None and not (
            isinstance(value, str) and _DOTTED.fullmatch(value)
        ):
            raise ConfigError(
                f"{path}: [tool.{TABLE}] {key} must be a dotted module name, "
                f"got {value!r}"
            )
        modules[key] = value

    return Config(
        path=path,
        root=os.path.dirname(os.path.abspath(path)),
        select=lists.get("select"),
        ignore=lists.get("ignore", ()),
        extend_select=lists.get("extend-select", ()),
        per_file_ignores=per_file_ignores,
        include=lists.get("include", ()),
        exclude=lists.get("exclude"),
        extend_exclude=lists.get("extend-exclude", ()),
        force_exclude=table.get("force-exclude", False),
        respect_gitignore=table.get("respect-gitignore", True),
        output_format=output_format,
        helpers_module=modules["helpers-module"],
        guard_module=modules["guard-module"],
    )


# Where a configuration's parsed table may be kept, for the folder it is in.
MemoFolder = Callable[[str], "str | None"]


def load_config(path: str, memo: MemoFolder | None = None) -> Config:
    """Read ``path``; without our table it gives the defaults, rooted at its folder.
    ``memo``: where the parsed table is kept between runs (``config.memo``)."""
    data = _read(path)
    if os.path.basename(path) == OWN_FILENAME:
        return parse_table(_parse_toml(data, path), path)
    table = _table(path, data, memo)
    if table is None:
        return Config(path=path, root=os.path.dirname(os.path.abspath(path)))
    return parse_table(table, path)


def load_named_config(path: str, memo: MemoFolder | None = None) -> Config:
    """``--config PATH``: the file it is given is read whatever its name, in
    either shape: a ``[tool.draft-kv-lint]`` table (a ``pyproject.toml``), else
    its top-level keys (a ``ruff.toml``-style file, ``.draft-kv-lint.toml``).
    A file that would set nothing is a ``ConfigError``: the user named it to be
    used, and silently running on the defaults would be no gate."""
    data = _read(path)
    table = _table(path, data, memo)
    if table is not None:
        return parse_table(table, path)
    # The header test reads `[tool.draft-kv-lint]` only: an inline table or
    # dotted keys (`tool.draft-kv-lint.select = ...`) are the table too.
    document = _parse_toml(data, path)
    tool = document.get("tool")
    if isinstance(tool, dict) and TABLE in tool:
        return parse_table(tool[TABLE], path)
    if set(document) <= _PYPROJECT_KEYS:  # an empty file, or a pyproject
        raise ConfigError(
            f"{path}: --config: no [tool.{TABLE}] table and no top-level "
            f"{TABLE} keys: nothing in it would be used"
        )
    return parse_table(document, path)  # an unknown key is named there


def _read(path: str) -> bytes:
    data = read_regular_file(path, CONFIG_LIMIT)
    if isinstance(data, FileError):
        raise ConfigError(f"{path}: cannot read: {data.reason}")
    return data


def _table(path: str, data: bytes, memo: MemoFolder | None) -> object:
    """The ``[tool.draft-kv-lint]`` table of ``data``, None when there is none
    (TOML parsed only when the bytes show its header)."""
    if not has_table(data):
        return None
    from lint_plugin.config.memo import parsed

    folder = memo(os.path.dirname(os.path.abspath(path))) if memo else None
    # None also where the header regex matched inside a string, say.
    return parsed(
        data, folder, lambda: _parse_toml(data, path).get("tool", {}).get(TABLE)
    )


# Top-level keys of a pyproject.toml, never of ours: a file holding them and no
# table of ours is a pyproject that does not configure us.
_PYPROJECT_KEYS = frozenset({"tool", "project", "build-system", "dependency-groups"})


class ConfigResolver:
    """The configuration of each file: ``fixed`` for every file when given
    (``--config``/``--no-config``), else the nearest one, found once per folder."""

    def __init__(
        self, fixed: Config | None = None, memo: MemoFolder | None = None
    ) -> None:
        self.fixed = fixed
        self._memo = memo
        self._by_folder: dict[str, Config | ConfigError] = {}
        self._by_file: dict[str, Config | ConfigError] = {}
        self._default = Config(root=os.path.abspath("."))

    def for_path(self, path: str) -> Config:
        """Raises ConfigError for a configuration that cannot be used (each time
        it is asked for a file it governs; the file is read once)."""
        config = self._governing(path)
        if isinstance(config, ConfigError):
            raise config
        return config

    def _governing(self, path: str) -> Config | ConfigError:
        if self.fixed is not None:
            return self.fixed
        folder = os.path.abspath(path)
        if not os.path.isdir(folder):
            folder = os.path.dirname(folder)
        visited = []
        config = None
        while config is None:
            if folder in self._by_folder:
                config = self._by_folder[folder]
                break
            visited.append(folder)
            found = _config_in(folder)
            if found is not None:
                config = self._by_file.get(found)
                if config is None:
                    try:
                        config = load_config(found, self._memo)
                    except ConfigError as error:
                        config = error
                self._by_file[found] = config
                break
            parent = os.path.dirname(folder)
            if parent == folder:
                config = self._default
                break
            folder = parent
        for seen in visited:
            self._by_folder[seen] = config
        return config
