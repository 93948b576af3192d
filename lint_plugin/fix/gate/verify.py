"""The last gate before a file is replaced: is the text to be written the original
program?

The final text is parsed and compared with the original, comments aside: both
modules are brought to canonical form (:mod:`lint_plugin.fix.gate.poly`: each helper
call expanded back into its formula, every ``+ - *`` multiplied out over the integers)
after the helpers' module-level ``from <helpers> import`` names are dropped from both,
and the forms must be identical. The gate looks at the text that is written, not at the
edits that were planned, so a splice, comment-move or formatter bug becomes a refusal
instead of a wrong program. Equal forms are a proof under the one assumption the rules
make everywhere: the arithmetic is on integers.

Unsafe fixes change values on purpose: they are compared against the original
with exactly their stated replacements applied (``reference``), so nothing else
may change.
"""

from __future__ import annotations

import ast
import copy

from lint_plugin.fix.gate.poly import HELPER_FORMULAS, Canonicalizer
from lint_plugin.fix.names import ModuleNames
from lint_plugin.fix.parsing import parse_module


class NotEqual(Exception):
    """The text to be written is not provably the original program."""


def verify(
    reference: str,
    final: str,
    helpers_module: str,
    guard_module: str | None = None,
    *,
    reference_tree: ast.Module | None = None,
    hypothetical: bool = False,
    reference_names: ModuleNames | None = None,
    definitions: frozenset[str] = frozenset(),
    helpers_file: bool = False,
    owner_imports: frozenset[tuple[str, str]] = frozenset(),
) -> ast.Module:
    """Raise NotEqual unless ``final`` is ``reference`` up to comments, layout,
    integer arithmetic and the helpers' calls and imports.

    ``reference_tree``: ``reference`` as already parsed (it is read, never
    changed). ``final`` is always parsed here: it is what is written.
    ``hypothetical``: ``reference`` is the original with stated replacements
    spliced in, whose helper calls mean the helpers ``final`` imports.
    ``reference_names``: the facts of ``reference_tree``, already computed.
    ``definitions``: helpers ``final`` defines at module level where the
    original did not (``final`` is the helpers module itself, and the caller
    has proven each definition): left out of the comparison as the helpers'
    imports are, and bound where they stand. ``helpers_file``: the texts are
    the helpers module itself, where its proven definitions are the helpers.
    ``owner_imports``: ``(module, name)`` imports an unsafe edit's owner call
    needs (``reference`` already calls it): left out like the guard's.
    Returns ``final``'s tree (what is written, parsed once)."""
    try:
        before = reference_tree or parse_module(reference, "the original")
        after = parse_module(final, "the rewritten text")
    except SyntaxError as exc:
        raise NotEqual(str(exc)) from None
    written = after
    own = helpers_file or bool(definitions)
    names_after = ModuleNames(after, final, helpers_module, own=own)
    assume = (
        _dropped_names(after, helpers_module, definitions) if hypothetical else None
    )
    names_before = reference_names
    if (
        names_before is None
        or names_before.tree is not before
        or names_before.own != own
        or assume
    ):
        names_before = ModuleNames(before, reference, helpers_module, assume, own=own)
    if ast.get_docstring(before, clean=False) != ast.get_docstring(after, clean=False):
        raise NotEqual("the module's docstring would change")
    before, old = _drop_helper_imports(
        before, helpers_module, guard_module, owners=owner_imports
    )
    after, new = _drop_helper_imports(
        after, helpers_module, guard_module, definitions, owner_imports
    )
    _check_bindings(old, new, names_before, names_after)
    calls = {**names_before.calls(), **names_after.calls()}
    canon = Canonicalizer(resolve=lambda call: calls.get(id(call), (None,))[0])
    changed: list[tuple[ast.AST, ast.AST]] = []
    texts = (_Text(reference), _Text(final))
    if not _equal(canon, before.body, after.body, changed, texts):
        why = _unresolved(changed[-1:], names_after.calls()) if changed else None
        raise NotEqual(why or _first_difference(canon, before, after))
    return written


def _unresolved(pairs, calls) -> str | None:
    """Why a call of a helper's name in the rewritten statements is no helper."""
    for _, new in pairs:
        for node in ast.walk(new):
            why = calls.get(id(node), (None, None))[1]
            if why is not None:
                return f"line {node.lineno}: {why}"
    return None


def _dropped_names(
    tree: ast.Module, helpers_module: str, definitions: frozenset[str] = frozenset()
) -> dict[str, str]:
    """Name -> helper for the names top-level helpers' imports (and the added
    ``definitions``) bind."""
    dropped = _drop_helper_imports(tree, helpers_module, None, definitions)[1]
    return {name: helper for name, (helper, _) in dropped.items()}


def _check_bindings(old: dict, new: dict, names_before, names_after) -> None:
    """The helpers' imports are left out of the comparison: a name they bind in
    the rewritten text must either mean the same as in the original, bound as
    early (``old``/``new``: name -> (helper, statements kept before its first
    import)), or be new: then it means only that helper in the rewritten text,
    and the original binds it to nothing else and no code of it uses the name."""
    for name, (helper, rank) in new.items():
        if name in old:
            if old[name] != (helper, rank):
                raise NotEqual(f"the import of `{name}` would move or change")
            continue
        meaning = names_after.meaning(name)
        if meaning.why_not is not None:
            raise NotEqual(
                f"the rewritten text imports `{name}`, also bound by {meaning.why_not}"
            )
        if name in names_before.assume:
            continue
        earlier = names_before.meaning(name)
        if (earlier.bound and earlier.helper != helper) or names_before.global_uses(
            name
        ):
            raise NotEqual(
                f"the rewritten text imports `{name}`, a name the original uses"
            )
    lost = sorted(set(old) - set(new))
    if lost:
        raise NotEqual(f"the rewritten text no longer imports `{lost[0]}`")


_BLOCK_FIELDS = ("body", "orelse", "finalbody")


class _Text:
    """A text's lines as UTF-8 bytes (``ast`` columns count bytes)."""

    def __init__(self, text: str) -> None:
        self.lines = text.encode().splitlines(keepends=True)

    def segment(self, node: ast.AST) -> bytes:
        first, last = node.lineno - 1, node.end_lineno - 1
        if first == last:
            return self.lines[first][node.col_offset : node.end_col_offset]
        return (
            self.lines[first][node.col_offset :]
            + b"".join(self.lines[first + 1 : last])
            + self.lines[last][: node.end_col_offset]
        )


def _equal(
    canon: Canonicalizer, old: list, new: list, changed: list, texts: tuple
) -> bool:
    """Are two statement lists the same program? Statements spelled the same
    (same text, or the same ``ast.dump``) are skipped, compound ones with the same
    header are compared block by block, the rest by canonical form: on a large
    file with a few rewrites this is a fraction of canonicalising it all.
    ``changed`` collects the pairs of statements that are spelled differently."""
    if len(old) != len(new):
        changed.append((ast.Module(old, []), ast.Module(new, [])))
        return canon.canonical(old) == canon.canonical(new)
    for a, b in zip(old, new, strict=True):
        same_type = type(a) is type(b)
        if same_type and texts[0].segment(a) == texts[1].segment(b):
            continue
        blocks = [f for f in _BLOCK_FIELDS if isinstance(getattr(a, f, None), list)]
        # A compound statement is opened before it is dumped: a class holding one
        # rewrite would otherwise be dumped whole, twice.
        if (
            same_type
            and blocks
            and canon.canonical(_header(a)) == canon.canonical(_header(b))
            and canon.canonical(_handlers(a)) == canon.canonical(_handlers(b))
        ):
            if not all(
                _equal(canon, getattr(a, f), getattr(b, f), changed, texts)
                for f in blocks
            ):
                return False
            continue
        if same_type and ast.dump(a) == ast.dump(b):
            continue
        changed.append((a, b))
        if canon.canonical(a) != canon.canonical(b):
            return False
    return True


def _handlers(node: ast.AST) -> list:
    return [getattr(node, f, None) for f in ("handlers", "cases")]


def _first_difference(canon: Canonicalizer, before: ast.Module, after: ast.Module):
    pending = [(before.body, after.body)]
    while pending:
        old, new = pending.pop()
        for a, b in zip(old, new, strict=False):
            if canon.canonical(a) != canon.canonical(b):
                inner = [
                    (getattr(a, f), getattr(b, f))
                    for f in ("body", "orelse", "finalbody")
                    if isinstance(getattr(a, f, None), list)
                    and type(a) is type(b)
                    and canon.canonical(getattr(a, f)) != canon.canonical(getattr(b, f))
                ]
                if inner and canon.canonical(_header(a)) == canon.canonical(_header(b)):
                    pending.extend(inner)
                    break
                return (
                    f"the statement at line {a.lineno} would become a different "
                    f"program (line {b.lineno} of the rewritten text)"
                )
        else:
            if len(old) != len(new):
                where = old[len(new)] if len(old) > len(new) else new[len(old)]
                return f"a statement is lost or added near line {where.lineno}"
    return "the rewritten text is a different program"


def _header(node: ast.stmt) -> list:
    return [
        getattr(node, f)
        for f in node._fields
        if f not in ("body", "orelse", "finalbody", "handlers", "cases")
    ]


# KVI006's guard, imported by an unsafe fix from the guard module.
_GUARD = "assert_buffer_fits"


def _drop_helper_imports(
    tree: ast.Module,
    helpers_module: str,
    guard_module: str | None = None,
    definitions: frozenset[str] = frozenset(),
    owners: frozenset[tuple[str, str]] = frozenset(),
) -> tuple[ast.Module, dict[str, tuple[str, int]]]:
    """``tree`` without the helpers' (and the guard's) top-level imports and
    the top-level ``def`` of each helper in ``definitions``, and for each name
    such an import (or def) binds: the helper, and how many kept statements come
    before its first binding. ``tree`` itself is left as it was, so a caller may
    hand in a tree it keeps."""
    body: list[ast.stmt] = []
    bound: dict[str, tuple[str, int]] = {}
    for statement in tree.body:
        if (
            isinstance(statement, ast.FunctionDef)
            and statement.name in definitions
            and statement.name in HELPER_FORMULAS
        ):
            bound.setdefault(statement.name, (statement.name, len(body)))
            continue
        if not (isinstance(statement, ast.ImportFrom) and statement.level == 0):
            body.append(statement)
            continue
        if statement.module == helpers_module:
            for alias in statement.names:
                if alias.name in HELPER_FORMULAS:
                    bound.setdefault(
                        alias.asname or alias.name, (alias.name, len(body))
                    )

            def dropped(alias: ast.alias) -> bool:
                return alias.name in HELPER_FORMULAS  # under any name: see above

        elif guard_module is not None and statement.module == guard_module:

            def dropped(alias: ast.alias) -> bool:
                return alias.name == _GUARD and alias.asname is None

        elif any(module == statement.module for module, _ in owners):

            def dropped(alias: ast.alias, module: str = statement.module) -> bool:
                return alias.asname is None and (module, alias.name) in owners

        else:
            body.append(statement)
            continue
        # The order of the names left is no part of the program: merging the
        # helpers in sorts them.
        names = sorted(
            (a for a in statement.names if not dropped(a)),
            key=lambda a: (a.name, a.asname or ""),
        )
        if not names:
            continue
        statement = copy.copy(statement)
        statement.names = names
        body.append(statement)
    return ast.Module(body, tree.type_ignores), bound
