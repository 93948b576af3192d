"""Making the helpers importable after a rewrite, the way isort (black profile) would.

Chosen behaviour: names go into an existing module-level
``from <helpers-module> import ...`` without ``as`` names (kept sorted as isort
orders names; when comments sit among its names, a second import right below it
instead, so that none is lost). When the module's imports all hold ``as`` names
(``... import draft_kv_indices_used_len as used_len``), which isort keeps apart,
the names get an import of their own beside them, in isort's order. Without any,
a new ``from`` import is placed among the module-level imports of the same
top-level package in isort's order, or after the last module-level import. A
function-local import of the module (sglang has them, e.g. in ``__init__``) is
left alone: it only serves its function, while rewrites land in other methods,
so the helpers get a module-level import, as upstream's own refactor did.
"""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from lint_plugin.fix.imports.by_text import ImportEntry, insertion_index, isort_name_key


def ensure_imported(
    module: cst.Module,
    names: Iterable[str],
    helpers_module: str,
    aliased: Iterable[tuple[str, str]] = (),
) -> cst.Module:
    """``module`` with every name in ``names`` importable at module level, and
    each ``(name, alias)`` of ``aliased`` imported as ``alias``."""
    bound = _module_level_names(module)
    for name, alias in sorted(aliased):
        if alias in bound:
            continue
        body = list(module.body)
        statement = cst.parse_statement(
            f"from {helpers_module} import {name} as {alias}\n"
        )
        module = _insert(module, body, statement, helpers_module, name, True)
    wanted = sorted(set(names) - _module_level_names(module))
    if not wanted:
        return module
    body = list(module.body)
    existing = _existing_import(body, helpers_module)
    if existing is not None and _has_comment(existing[2]):
        # Re-spelling its names would drop the comments among them: the names go
        # into an import of their own right below it.
        index = existing[0] + 1
        statement = cst.parse_statement(
            f"from {helpers_module} import {', '.join(wanted)}\n"
        )
        body.insert(index, statement)
        return module.with_changes(body=body)
    if existing is not None:
        index, line, node = existing
        aliases = list(node.names) + [cst.ImportAlias(cst.Name(n)) for n in wanted]
        aliases.sort(key=lambda a: isort_name_key(_alias_name(a)))
        aliases = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in aliases]
        new_node = node.with_changes(names=aliases, lpar=None, rpar=None)
        if len(aliases) > 1 or node.lpar:
            new_node = new_node.with_changes(
                lpar=cst.LeftParen(), rpar=cst.RightParen()
            )
        body[index] = line.with_changes(body=[new_node, *line.body[1:]])
        return module.with_changes(body=body)
    statement = cst.parse_statement(
        f"from {helpers_module} import {', '.join(wanted)}\n"
    )
    return _insert(module, body, statement, helpers_module, wanted[0], False)


def _insert(module, body, statement, helpers_module: str, first: str, has_as: bool):
    """``module`` with the import ``statement`` placed as isort would."""
    index = _insertion_index(body, helpers_module, first, has_as)
    if index == 1 and _is_docstring(body[0]):
        # black and ruff format keep one blank line after a module docstring.
        statement = statement.with_changes(leading_lines=[cst.EmptyLine()])
    if index < len(body):
        if index == 0:
            # The new import becomes the first statement: it takes over the
            # comments and blank lines that led the old first one.
            statement = statement.with_changes(leading_lines=body[0].leading_lines)
            body[0] = body[0].with_changes(leading_lines=())
        body[index] = _separated_from_imports(body[index])
    body.insert(index, statement)
    return module.with_changes(body=body)


def _has_comment(node: cst.ImportFrom) -> bool:
    # An import holds no strings: a "#" in it opens a comment.
    return "#" in cst.Module(body=[]).code_for_node(node)


def _separated_from_imports(statement: cst.BaseStatement) -> cst.BaseStatement:
    """Blank lines black and ruff format want between an import and what follows:
    two before a top-level def or class, one before other code, none before an
    import."""
    if isinstance(statement, cst.SimpleStatementLine) and isinstance(
        statement.body[0], (cst.Import, cst.ImportFrom)
    ):
        return statement
    wanted = 2 if isinstance(statement, (cst.FunctionDef, cst.ClassDef)) else 1
    lines = list(statement.leading_lines)
    blank = 0
    while blank < len(lines) and lines[blank].comment is None:
        blank += 1
    if blank >= wanted:
        return statement
    extra = [cst.EmptyLine()] * (wanted - blank)
    return statement.with_changes(leading_lines=[*extra, *lines])


def _module_level_names(module: cst.Module) -> set[str]:
    """Names bound at module level by imports or definitions."""
    names: set[str] = set()
    for statement in module.body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            names.add(statement.name.value)
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.ImportFrom) and not isinstance(
                small.names, cst.ImportStar
            ):
                for alias in small.names:
                    names.add(_bound_name(alias))
    return names


def _existing_import(body, helpers_module):
    """The import the names are merged into: the first ``from helpers_module
    import`` without an ``as`` name (isort keeps ``as`` imports apart) or a star."""
    for index, line in enumerate(body):
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        node = line.body[0]
        if (
            isinstance(node, cst.ImportFrom)
            and not node.relative
            and node.module is not None
            and _dotted(node.module) == helpers_module
            and not isinstance(node.names, cst.ImportStar)
            and all(alias.asname is None for alias in node.names)
        ):
            return index, line, node
    return None


def _insertion_index(
    body, helpers_module: str, first_name: str, has_as: bool = False
) -> int:
    entries: list[ImportEntry] = []
    for line in body:
        node = line.body[0] if isinstance(line, cst.SimpleStatementLine) else None
        entry = ImportEntry(isinstance(node, (cst.Import, cst.ImportFrom)))
        if isinstance(node, cst.ImportFrom) and node.module and not node.relative:
            first = None if isinstance(node.names, cst.ImportStar) else node.names[0]
            entry = ImportEntry(
                True,
                _dotted(node.module),
                "*" if first is None else _alias_name(first),
                first is not None and first.asname is not None,
            )
        entries.append(entry)
    docstring_first = bool(body) and _is_docstring(body[0])
    return insertion_index(entries, docstring_first, helpers_module, first_name, has_as)


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(
            statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString)
        )
    )


def _alias_name(alias: cst.ImportAlias) -> str:
    return _dotted(alias.name)


def _bound_name(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return _dotted(alias.name).split(".")[0]


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    raise TypeError(node)
