"""``fix`` across files: the helpers (and the guard) defined where they are
imported from.

After every file's own rewrite is known, each import of a helper or of the guard
that the run introduced (a rewrite calls the name) or that a selected KVI007
finding reports is followed to the module it names (:mod:`.package_tree`). A
module of the tree that lacks the name gets its definition
(:mod:`.definitions`) after its imports, formatted like the rewritten statements
(ruff format, the file's own indentation), and the text to be written passes a
gate of its own: parsed back, the added functions are proven to compute the
formulas, and everything else must be the module as it was (its ``ast``, comments
and layout aside). A module outside the tree is left alone; the run says where
the names must come from.
"""

from __future__ import annotations

import ast
import codecs
import os
import re
from dataclasses import dataclass, field

from lint_plugin.engine.formulas import HELPER_SLOTS
from lint_plugin.engine.package_tree import Home, cannot_read, defines, module_home
from lint_plugin.engine.settings import Settings, resolve_module
from lint_plugin.engine.source import normalised
from lint_plugin.engine.vocabulary import GUARD
from lint_plugin.fix.definitions import DEFINITIONS, ORDER, prove_definition
from lint_plugin.fix.edits import header_last_row, iter_statements
from lint_plugin.fix.parsing import parse_module

_NAMES = frozenset({*HELPER_SLOTS, GUARD})


@dataclass
class Need:
    """``importer`` imports ``name`` from ``home``, which does not define it."""

    importer: str
    name: str
    home: Home
    introduced: bool  # by this run's rewrite of the importer (else KVI007's)


@dataclass
class Needs:
    found: list[Need] = field(default_factory=list)
    # Module -> names this run imports from it that it cannot see: not in the tree.
    outside: dict[str, set[str]] = field(default_factory=dict)


Imports = list[tuple[str | None, int, tuple[str, ...]]]


def imports_from(tree: ast.Module) -> Imports:
    """``(module, level, imported names)`` of every ``from ... import`` in
    ``tree``, at any depth (statements only are visited: a large file's
    expressions are most of its nodes)."""
    return [
        (node.module, node.level, tuple(alias.name for alias in node.names))
        for node in iter_statements(tree)
        if isinstance(node, ast.ImportFrom)
    ]


def needs_of(
    path: str,
    text: str,
    introduced: frozenset[str],
    reported: frozenset[str],
    settings: Settings,
    needs: Needs,
    imports: Imports | None = None,
) -> None:
    """Add to ``needs`` what ``text`` (``path``'s text as it will be written)
    imports and its module lacks: names this run ``introduced`` into the file,
    and names a selected KVI007 finding ``reported``. ``imports``: those of
    ``text`` (:func:`imports_from`), when its tree has been read already."""
    from lint_plugin.rules.kvi007_undefined_helper import undefined_home

    wanted = (introduced | reported) & _NAMES
    if not wanted:
        return
    if imports is None:
        try:
            imports = imports_from(parse_module(text))
        except SyntaxError:
            return  # the gate has refused this file already
    for module, level, names in imports:
        trusted = settings.trusts(resolve_module(module, level, path))
        for name in names:
            if name not in wanted:
                continue
            home = undefined_home(name, module, level, trusted, path)
            if home is not None:
                needs.found.append(Need(path, name, home, name in introduced))
                continue
            if name not in introduced:
                continue
            home = module_home(module, level, path)
            if home is None:
                shown = "." * level + (module or "")
                needs.outside.setdefault(shown, set()).add(name)
            elif cannot_read(home.path):
                # The import this run adds would not resolve: ``plan`` says why.
                needs.found.append(Need(path, name, home, True))


def unmet_needs(path: str, text: str, rewrite, settings: Settings) -> list[Need]:
    """What one file's ``rewrite`` (of ``text``, at ``path``) imports, or its
    KVI007 findings report, from a module of the tree that lacks it: what a
    route rewriting one file alone (standard input, the libcst codemod) cannot
    add, and so must refuse when the rewrite introduced it."""
    needs = Needs()
    introduced = rewrite.imported if rewrite.changed else frozenset()
    reported = reported_names(text, rewrite.elsewhere)
    needs_of(path, rewrite.text, introduced, reported, settings, needs)
    return needs.found


def refusal(needs: list[Need]) -> str | None:
    """Why a rewrite made alone is not written: the names it introduced that
    their module lacks, or is missing (None: nothing)."""
    introduced = [n for n in needs if n.introduced]
    if not introduced:
        return None
    need = introduced[0]
    where = "missing from this tree" if need.home.missing else "lacking it"
    return (
        f"its rewrite imports {need.name} from {need.home.module} "
        f"({need.home.shown}, {where}): run `draft-kv-lint fix` on the tree, "
        "which adds the definitions with the rewrite"
    )


def plan_homes(fixed, options) -> tuple[list[HomeChange], dict[str, str], list[str]]:
    """What ``fix`` adds where, for ``fixed`` (``(path, outcome)`` of the files
    rewritten or reported by KVI007): the changes, the files left unchanged
    because a module they would import from cannot be given its definitions
    (path to reason), and the notes on modules outside the tree."""
    needs = Needs()
    for path, outcome in fixed:
        rewrite = outcome.rewrite
        original = normalised(outcome.before) if rewrite.elsewhere else ""
        introduced = rewrite.imported if rewrite.changed else frozenset()
        reported = reported_names(original, rewrite.elsewhere)
        imports = outcome.imports if rewrite.changed else None
        needs_of(
            path, rewrite.text, introduced, reported, options.settings, needs, imports
        )
    rewritten = {
        os.path.abspath(path): (
            outcome.bom,
            outcome.after,
            outcome.encoding,
            outcome.data,
        )
        for path, outcome in fixed
        if outcome.rewrite.changed
    }
    changes = plan(needs.found, rewritten)
    blocked: dict[str, str] = {}
    for change in changes:
        if change.error is not None:
            blocked.update(blocked_by(change))
    for path, outcome in fixed:
        why = closes_a_cycle(path, outcome)
        if why is not None:
            blocked.setdefault(path, why)
    return changes, blocked, outside_notes(needs.outside)


def closes_a_cycle(path: str, outcome) -> str | None:
    """Why the rewrite of ``path`` must not be written: a module it now imports
    the helpers (or the guard) from at its top level, which it did not before,
    imports ``path`` at its own top level. Importing either would then reach
    the other half made (``cannot import name ... from partially initialized
    module``). Only that direct cycle is read; a longer one is not."""
    rewrite = outcome.rewrite
    if not rewrite.changed or not rewrite.imported or outcome.imports is None:
        return None
    target = os.path.abspath(path)
    before = {
        (module, level)
        for module, level, _ in imports_from(parse_module(normalised(outcome.before)))
    }
    for module, level, names in outcome.imports:
        if (module, level) in before or not set(names) & rewrite.imported:
            continue
        home = module_home(module, level, path)
        if home is None or home.path == target:
            continue
        if target in _top_level_imports(home.path):
            return (
                f"left unchanged: {home.shown} imports this module at its top "
                "level: importing the helpers from it here would close an import "
                "cycle"
            )
    return None


def _top_level_imports(path: str) -> set[str]:
    """The files of the tree the module at ``path`` imports while it loads (its
    statements outside functions and classes)."""
    from lint_plugin.engine.package_tree import module_text

    text = module_text(path)
    try:
        tree = parse_module(text) if text is not None else None
    except SyntaxError:
        tree = None
    if tree is None:
        return set()
    found = set()
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.Import):
            targets = [(alias.name, 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            prefix = f"{node.module}." if node.module else ""
            targets = [(node.module, node.level)] if node.module else []
            targets += [(prefix + alias.name, node.level) for alias in node.names]
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                pending.extend(getattr(node, field, []))
            continue
        for module, level in targets:
            home = module_home(module, level, path)
            if home is not None:
                found.add(home.path)
    return found


def blocked_by(change: HomeChange) -> dict[str, str]:
    """The files left unchanged because ``change`` failed, and why."""
    return {
        path: (
            f"left unchanged: its rewrite imports {', '.join(change.names)} from "
            f"{change.home.shown}, which could not be given the definitions"
        )
        for path in change.dependents
    }


def reported_names(text: str, findings) -> frozenset[str]:
    """The names KVI007 ``findings`` of ``text`` point at (each at its import)."""
    lines = text.split("\n")
    names = set()
    for finding in findings:
        if finding.code != "KVI007" or finding.row > len(lines):
            continue
        match = _WORD.match(lines[finding.row - 1], finding.column - 1)
        if match:
            names.add(match.group())
    return frozenset(names)


_WORD = re.compile(r"\w+")


@dataclass
class HomeChange:
    """The definitions added to one module of the tree (or why they cannot be)."""

    home: Home
    names: list[str]
    importers: list[str]
    # The importers whose own rewrite imports a name from it: left unchanged
    # when the definitions cannot be added (their imports would not resolve).
    dependents: list[str] = field(default_factory=list)
    before: str = ""  # the text as read (or as this run rewrote it)
    after: str = ""
    encoded: bytes = b""
    error: str | None = None
    original: bytes | None = None  # the bytes read: still there when replaced
    created: bool = False  # the module was missing: a new file


def plan(
    needs: list[Need], rewritten: dict[str, tuple[bool, str, str, bytes]]
) -> list[HomeChange]:
    """One change per module lacking names. ``rewritten`` maps an absolute path
    to the BOM flag, text and encoding this run's rewrite of that file will
    write, and the bytes it was read as: a module both rewritten and given
    definitions gets them in that text, and every module is written back in its
    own encoding (PEP 263). A module missing from its package is created
    (:data:`NEW_MODULE` and the definitions), when its folder is there."""
    from lint_plugin.fix.file_text import read_for_fix, restore_line_endings

    by_home: dict[str, HomeChange] = {}
    for need in needs:
        change = by_home.setdefault(need.home.path, HomeChange(need.home, [], []))
        if need.name not in change.names:
            change.names.append(need.name)
        if need.importer not in change.importers:
            change.importers.append(need.importer)
        if need.introduced and need.importer not in change.dependents:
            change.dependents.append(need.importer)
    changes = []
    for path, change in by_home.items():
        change.names.sort(key=ORDER.index)
        if change.home.missing and not os.path.lexists(path):
            if not change.home.creatable:
                names = ", ".join(change.names)
                folder = os.path.dirname(change.home.shown) or "."
                why = (
                    "a folder of that name is there (a namespace package)"
                    if os.path.isdir(path[: -len(".py")])
                    else f"its folder {folder} does not exist"
                )
                change.error = f"cannot create it to define {names}: {why}"
                changes.append(change)
                continue
            read: tuple[bool, str, str, bytes | None] | str = (
                False,
                NEW_MODULE,
                "utf-8",
                None,
            )
            change.created = True
        else:
            read = rewritten.get(path) or read_for_fix(path)
        if isinstance(read, str):
            change.error = read
            changes.append(change)
            continue
        bom, raw, encoding, change.original = read
        text = normalised(raw)
        try:
            parse_module(text)
        except SyntaxError as exc:
            change.error = (
                f"cannot parse, so cannot add {', '.join(change.names)}: {exc}"
            )
            changes.append(change)
            continue
        missing = [
            n for n in change.names if change.created or defines(path, n, text) is False
        ]
        if not missing:
            continue
        change.names = missing
        try:
            new_text = add_definitions(text, missing, path)
            check_added(text, new_text, missing)
        except (SyntaxError, DefinitionRefused) as exc:
            change.error = f"cannot add {', '.join(missing)}, left unchanged: {exc}"
            changes.append(change)
            continue
        change.before = "" if change.created else raw
        change.after = restore_line_endings(raw, text, new_text)
        try:
            encoded = change.after.encode(encoding)
        except UnicodeError as exc:
            change.error = (
                f"cannot add {', '.join(missing)}, left unchanged: "
                f"the definitions cannot be written as {encoding}: {exc}"
            )
            changes.append(change)
            continue
        change.encoded = (codecs.BOM_UTF8 if bom else b"") + encoded
        changes.append(change)
    return changes


# The text a module created for its definitions starts from (they follow it).
NEW_MODULE = '''"""Sizes of the speculative-decoding draft buffers, and their guard.

Created by `draft-kv-lint fix`: this tree imports these names from here and had
no such module (sglang before 0.5.3 has no speculative/spec_utils.py). Each
function is upstream sglang's definition (0.5.13), proven to compute the formula
its callers replaced.
"""
'''


class DefinitionRefused(Exception):
    """The text with the added definitions is not provably right: not written."""


def add_definitions(text: str, names: list[str], path: str) -> str:
    """``text`` with the definitions of ``names`` after its imports (after its
    docstring, or its opening comments, when it has none), two blank lines on
    each side as black and ruff format keep them, formatted in the file's own
    indentation."""
    tree = parse_module(text)
    last = header_last_row(tree)
    lines = text.split("\n")
    if last == 0:
        opening = 0
        while opening < len(lines) and (
            not lines[opening].strip() or lines[opening].lstrip().startswith("#")
        ):
            opening += 1
        last = opening
        # Comments right above code belong to it: the definitions go above them.
        while last and lines[last - 1].strip():
            last -= 1
    head = "\n".join(lines[:last])
    rest = "\n".join(lines[last:]).lstrip("\n")
    from lint_plugin.fix.formatting import indent_unit

    # In the module's own indentation before the formatter reads it from the
    # first indented block, which is then the first definition.
    unit = indent_unit(text)
    block = "\n\n\n".join(
        _reindented(DEFINITIONS[name].rstrip("\n"), unit) for name in names
    )
    pieces = [head.rstrip("\n")] if head.strip() else []
    first_row = (len(head.rstrip("\n").split("\n")) + 3) if pieces else 1
    pieces.append(block)
    if rest.strip():
        pieces.append(rest)
        new_text = "\n\n\n".join(pieces)
    else:
        new_text = "\n\n\n".join(pieces) + "\n"
    last_row = first_row + block.count("\n")
    from pathlib import Path

    from lint_plugin.fix.formatting import format_ranges

    return format_ranges(new_text, [(first_row, last_row)], Path(path))


def missing_definitions(text: str, path: str, names) -> list[str]:
    """Which of ``names`` the module ``text`` (at ``path``) does not bind, in the
    order they are added; none when what it binds cannot be told."""
    from lint_plugin.engine.package_tree import module_names

    bound = module_names(path, text)
    if bound is None:
        return []
    return [name for name in ORDER if name in names and name not in bound]


def without_definitions(text: str, names) -> str:
    """``text`` without its module-level functions named in ``names``."""
    tree = parse_module(text)
    lines = _LINES.findall(text)
    drop = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            drop.update(range(first - 1, node.end_lineno))
    return "".join(line for index, line in enumerate(lines) if index not in drop)


# Lines as Python ends them (not str.splitlines, which also ends one at \f).
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def _reindented(text: str, unit: str) -> str:
    """``text`` (indented by four spaces a level) indented by ``unit``."""
    if unit == "    ":
        return text
    lines = []
    for line in text.split("\n"):
        stripped = line.lstrip(" ")
        depth, extra = divmod(len(line) - len(stripped), 4)
        lines.append(unit * depth + " " * extra + stripped if stripped else "")
    return "\n".join(lines)


def check_added(before: str, after: str, names: list[str]) -> None:
    """The gate for a module given definitions: ``after`` is ``before`` plus one
    module-level function per name of ``names``, each proven to be that name's
    definition; raises DefinitionRefused otherwise."""
    try:
        old = parse_module(before, "the module")
        new = parse_module(after, "the module with its definitions")
    except SyntaxError as exc:
        raise DefinitionRefused(str(exc)) from None
    added = [
        s
        for s in new.body
        if isinstance(s, ast.FunctionDef)
        and s.name in names
        and not any(
            isinstance(o, ast.FunctionDef) and o.name == s.name for o in old.body
        )
    ]
    if sorted(s.name for s in added) != sorted(names):
        raise DefinitionRefused("the added definitions are not one per name")
    for node in added:
        reason = prove_definition(node)
        if reason is not None:
            raise DefinitionRefused(reason)
    kept = ast.Module([s for s in new.body if s not in added], new.type_ignores)
    if ast.dump(kept) != ast.dump(old):
        raise DefinitionRefused("the rest of the module would change")


def outside_notes(outside: dict[str, set[str]]) -> list[str]:
    """One line per module the run imports names from that is not in the tree."""
    from lint_plugin.engine.settings import RUNTIME_MODULE

    notes = []
    for module in sorted(outside):
        if module == RUNTIME_MODULE:
            continue  # installed with this tool
        names = ", ".join(sorted(outside[module], key=ORDER.index))
        where = (
            "sglang 0.5.13 and later define the helpers"
            if GUARD not in outside[module]
            else "sglang 0.5.13 defines assert_buffer_fits in "
            "sglang.srt.layers.attention.utils, 0.5.23 in "
            "sglang.kernels.ops.attention.utils"
        )
        notes.append(
            f"note: {names} must come from {module}, which is not in the tree "
            f"being fixed: it must define them where this code runs ({where})"
        )
    return notes
