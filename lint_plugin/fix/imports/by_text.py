"""The helpers' import added by editing text: what
:mod:`lint_plugin.fix.imports.by_libcst` does
with libcst, byte for byte, for the header shapes that leave no doubt.

Importing libcst is a fifth of a ``fix`` run on the four backends, and a header is
usually plain: one statement per line, comments and blank lines between them. For
anything else (two statements on a line, a parenthesised import to merge into, a
form feed, a header without statements) :func:`add_import` returns None and the
caller asks libcst. ``tests/fix/test_import_text.py`` holds the two to the same output.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

# What may follow a statement on its last line.
_TRAILING = re.compile(r"[ \t]*(?:#.*)?")
# What may fill a line between two statements: an indented comment there belongs
# to the block above in libcst's eyes, so it is left to libcst.
_BETWEEN = re.compile(r"#.*|[ \t]*")


def add_import(
    head: str,
    statements: Sequence[ast.stmt],
    names: Iterable[str],
    module: str,
    aliased: Iterable[tuple[str, str]] = (),
) -> tuple[str, bool] | None:
    """``head`` (a module's docstring and imports, ``statements`` its top-level
    statements) with every name in ``names`` importable from ``module`` (and each
    ``(name, alias)`` of ``aliased`` as ``from module import name as alias``), and
    whether its last statement is then an import; None when unsure."""
    if not statements or not head.endswith("\n") or "\r" in head or "\f" in head:
        return None
    lines = head.split("\n")
    if not _plain(lines, statements):
        return None
    bound = bound_names(statements)
    aliased = sorted((n, a) for n, a in aliased if a not in bound)
    if aliased:
        # One `as` import at a time, each placed among the others as isort would.
        name, alias = aliased[0]
        index = _insertion_index(statements, module, name, has_as=True)
        done = _inserted(lines, statements, [f"{name} as {alias}"], module, index)
        try:
            tree = ast.parse(done[0])
        except SyntaxError:
            return None
        return add_import(done[0], tree.body, names, module, aliased[1:])
    wanted = sorted(set(names) - bound)
    last_is_import = isinstance(statements[-1], (ast.Import, ast.ImportFrom))
    if not wanted:
        return head, last_is_import
    if isinstance(statements[0], ast.Expr) and isinstance(
        statements[0].value, ast.JoinedStr
    ):
        return None  # libcst's docstring test tells f"" from "" f"": ast cannot
    existing = _existing_import(statements, module)
    if existing is not None:
        merged = _merged(lines, existing, wanted)
        return None if merged is None else (merged, last_is_import)
    index = _insertion_index(statements, module, wanted[0])
    return _inserted(lines, statements, wanted, module, index)


def _plain(lines: list[str], statements: Sequence[ast.stmt]) -> bool:
    """One statement per line, nothing but comments after one on its line, and
    only comments and blank lines between two."""
    previous_end = 0
    for statement in statements:
        first, last = statement.lineno, statement.end_lineno or statement.lineno
        # (A statement sharing its line with the one before fails that one's
        # trailing test below.)
        for row in range(previous_end + 1, first):
            if not _BETWEEN.fullmatch(lines[row - 1]):
                return False
        rest = _after(lines[last - 1], statement.end_col_offset or 0)
        if not _TRAILING.fullmatch(rest):
            return False
        previous_end = last
    return True


def _after(line: str, byte_offset: int) -> str:
    # ast's columns count UTF-8 bytes.
    return line.encode()[byte_offset:].decode()


def _slice(line: str, start: int, end: int) -> str:
    return line.encode()[start:end].decode()


def bound_names(statements: Sequence[ast.stmt]) -> set[str]:
    """As :func:`lint_plugin.fix.imports.by_libcst._module_level_names`: names of
    ``from`` imports and of defs and classes (a plain ``import`` does not count)."""
    bound: set[str] = set()
    for statement in statements:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(statement.name)
        elif isinstance(statement, ast.ImportFrom):
            for alias in statement.names:
                if alias.name != "*":
                    bound.add(alias.asname or alias.name.split(".")[0])
    return bound


def _existing_import(
    statements: Sequence[ast.stmt], module: str
) -> ast.ImportFrom | None:
    """The import the names are merged into: the first ``from module import``
    without an ``as`` name (isort keeps ``as`` imports apart) or a star."""
    for statement in statements:
        if (
            isinstance(statement, ast.ImportFrom)
            and statement.level == 0
            and statement.module == module
            and statement.names[0].name != "*"
            and all(alias.asname is None for alias in statement.names)
        ):
            return statement
    return None


def _merged(lines: list[str], node: ast.ImportFrom, wanted: list[str]) -> str | None:
    row = node.lineno
    line = lines[row - 1]
    text = _slice(line, node.col_offset, node.end_col_offset or 0)
    if node.end_lineno != row or "(" in text or "\\" in text:
        return None
    first = node.names[0].col_offset
    aliases = [
        (a.name, _slice(line, a.col_offset, a.end_col_offset)) for a in node.names
    ]
    aliases += [(name, name) for name in wanted]
    aliases.sort(key=lambda alias: isort_name_key(alias[0]))
    rebuilt = (
        _slice(line, 0, first)
        + "("
        + ", ".join(text for _, text in aliases)
        + ")"
        + _after(line, node.end_col_offset or 0)
    )
    return "\n".join([*lines[: row - 1], rebuilt, *lines[row:]])


def _inserted(
    lines: list[str],
    statements: Sequence[ast.stmt],
    wanted: list[str],
    module: str,
    index: int,
) -> tuple[str, bool]:
    new = [f"from {module} import {', '.join(wanted)}"]
    if index == 1 and _is_docstring(statements[0]):
        new.insert(0, "")  # black and ruff format keep a blank line after it
    if index == len(statements):
        at = len(lines) - 1  # the empty string after the head's last newline
        return "\n".join([*lines[:at], *new, *lines[at:]]), True
    if index == 0:
        # libcst gives the comments above the first statement to the module, so
        # the import goes right above the statement.
        at = statements[0].lineno - 1
    else:
        at = statements[index - 1].end_lineno or statements[index - 1].lineno
        following = statements[index]
        if not isinstance(following, (ast.Import, ast.ImportFrom)):
            # One blank line between the imports and other code (no def or class
            # is in a header), unless one is already there above its comments.
            between = lines[at : following.lineno - 1]
            blank = 0
            while blank < len(between) and not between[blank].strip():
                blank += 1
            if blank < 1:
                new.append("")
    last_is_import = isinstance(statements[-1], (ast.Import, ast.ImportFrom))
    return "\n".join([*lines[:at], *new, *lines[at:]]), last_is_import


def import_position(
    statements: Sequence[ast.stmt], module: str, name: str, aliased: bool
) -> int:
    """Where :func:`add_import` puts an import of ``name`` among a header's
    ``statements``: the index of the statement it goes before; an existing
    import it merges into counts as standing right after that import."""
    if not statements:
        return 0
    if not aliased:
        existing = _existing_import(statements, module)
        if existing is not None:
            return list(statements).index(existing) + 1
    return _insertion_index(statements, module, name, has_as=aliased)


def _insertion_index(
    statements: Sequence[ast.stmt], module: str, first_name: str, has_as: bool = False
) -> int:
    entries: list[ImportEntry] = []
    for statement in statements:
        entry = ImportEntry(isinstance(statement, (ast.Import, ast.ImportFrom)))
        if isinstance(statement, ast.ImportFrom) and not statement.level:
            first = statement.names[0]
            entry = ImportEntry(True, statement.module, first.name, bool(first.asname))
        entries.append(entry)
    return insertion_index(
        entries, _is_docstring(statements[0]), module, first_name, has_as
    )


class ImportEntry(NamedTuple):
    """A top-level statement as the placement of a new import sees it."""

    is_import: bool
    absolute: str | None = None  # the module of an absolute `from` import
    first_name: str | None = None  # its first imported name
    first_has_as: bool = False  # ... and whether that one has an `as`


def insertion_index(
    entries: Sequence[ImportEntry],
    docstring_first: bool,
    module: str,
    first_name: str,
    has_as: bool = False,
) -> int:
    """Where a new ``from module import first_name, ...`` goes among a module's
    top-level statements. Beside the module's own imports when there are some
    (left only when each holds an ``as`` name, which isort keeps apart: the
    others take the names in), as isort orders one module's statements: by first
    name, a plain one before an ``as`` one of the same name. Otherwise in isort's
    order among the imports of the same top-level package, else after the last
    import, else after the docstring."""
    own = [
        (index, entry)
        for index, entry in enumerate(entries)
        if entry.absolute == module and entry.first_name not in (None, "*")
    ]
    if own:
        new_key = (isort_name_key(first_name), has_as)
        for index, entry in own:
            if new_key < (isort_name_key(entry.first_name), entry.first_has_as):
                return index
        return own[-1][0] + 1
    package = module.split(".")[0]
    key = module.lower()
    last_import = same_package_after = None
    for index, (is_import, absolute, _, _) in enumerate(entries):
        if not is_import:
            continue
        last_import = index
        if absolute and absolute.split(".")[0] == package:
            if absolute.lower() > key:
                return index
            same_package_after = index + 1
    if same_package_after is not None:
        return same_package_after
    if last_import is not None:
        return last_import + 1
    return 1 if docstring_first else 0


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, (str, bytes))
    )


def isort_name_key(name: str) -> tuple[int, str]:
    """isort's default order within an import: CONSTANTS, Classes, functions."""
    if name.isupper() and len(name) > 1:
        kind = 0
    elif name[:1].isupper():
        kind = 1
    else:
        kind = 2
    return kind, name.lower()
