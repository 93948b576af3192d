"""How ``fix`` spells a helper's call so that it calls the helper where it is
written (the gate, :mod:`lint_plugin.fix.gate.verify`, proves it; this only plans).

The helper's own name when it resolves at every site (see
:mod:`lint_plugin.fix.names`), with the import added where it is missing; else a name
the file already imports the helper under; else the helpers module's attribute
(``spec_utils.draft_kv_indices_used_len``) where the file imports the module;
else an import under a free alias (``_draft_kv_indices_used_len``). When none
resolves at every site, the file is refused with one line saying what the name
is bound to there. In the helpers module itself only the plain name will do,
bound by its definition (the one it has, or the one ``fix`` adds after its
imports).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from lint_plugin.fix.edits import header_last_row
from lint_plugin.fix.imports.by_text import import_position
from lint_plugin.fix.names import ModuleNames, Where

Site = tuple[tuple[int, int], tuple[int, int]]  # (row, byte column) start, end
_ALIASES = 4  # free aliases tried: `_name`, `_name_1`, ...


class Unspellable(Exception):
    """No spelling of a helper resolves at all its sites (one line: why)."""


@dataclass(frozen=True)
class Spelling:
    callee: str  # the call's text before its parenthesis
    root: str  # the name it starts with, which must resolve at each site
    position: int  # the top-level statement its import stands before
    alias: str | None = None  # a new `from <helpers> import helper as alias`
    plain: bool = False  # a new (or merged) `from <helpers> import helper`

    def holds(self, names: ModuleNames, sites: Sequence[Site]) -> str | None:
        """Why this spelling does not resolve at more ``sites`` (a later round's,
        in a text whose imports fix has not added yet), or None."""
        for start, end in sites:
            where = names.where(start, end)
            if where is None:
                return f"cannot tell which scope a call of `{self.root}` is in"
            taken = names.taken_in(self.root, where)
            if taken is not None:
                return f"`{self.root}` is {taken}"
            if not names.runs_after(self.position, where):
                made = "definition" if names.own else "import"
                return f"`{self.root}` may be called before its {made} runs"
        return None


def plan(
    names: ModuleNames,
    helper: str,
    sites: Sequence[Site],
    avoid: frozenset[str] = frozenset(),
) -> Spelling:
    """The spelling of ``helper`` that resolves at every one of ``sites``
    (``avoid``: callees not to use, found not to resolve at a later site)."""
    wheres = [names.where(start, end) for start, end in sites]
    if any(where is None for where in wheres):
        raise Unspellable(f"cannot tell which scope a call of `{helper}` is in")
    header = _header_statements(names.tree)
    plain = _by_import(names, helper, helper, wheres, header)
    if helper in avoid and not isinstance(plain, str):
        plain = f"`{helper}` does not resolve at every site"
    if not isinstance(plain, str):
        position, new = plain
        return Spelling(helper, helper, position, plain=new)
    if names.own:
        # The helpers module itself: an import of its own helper (under any
        # name) would run while it is half made; only its definition will do.
        raise Unspellable(plain)
    for alias, imported in sorted(names.helper_bindings().items()):
        if imported == helper and alias != helper and alias not in avoid:
            found = _by_import(names, alias, helper, wheres, header, new=False)
            if not isinstance(found, str):
                return Spelling(alias, alias, found[0])
    stores = names.attribute_stores()
    for module in sorted(names.module_names()):
        if f"{module}.{helper}" in avoid:
            continue
        if helper not in stores and all(
            names.resolve_attribute(module, helper, where)[0] == helper
            for where in wheres
        ):
            first = names.meaning(module).first
            return Spelling(f"{module}.{helper}", module, first)
    for number in range(_ALIASES):
        alias = f"_{helper}" + (f"_{number}" if number else "")
        if alias in avoid:
            continue
        found = _by_import(names, alias, helper, wheres, header, aliased=True)
        if not isinstance(found, str):
            return Spelling(alias, alias, found[0], alias=alias)
    raise Unspellable(plain)


def _by_import(
    names: ModuleNames,
    name: str,
    helper: str,
    wheres: Sequence[Where],
    header: list[ast.stmt],
    *,
    new: bool = True,
    aliased: bool = False,
) -> tuple[int, bool] | str:
    """``(position, new)`` when ``name`` resolves to ``helper`` at every site
    once imported (by the import at ``position``, or by a new one fix adds
    there), else why not."""
    for where in wheres:
        taken = names.taken_in(name, where)
        if taken is not None:
            return f"`{name}` is {taken}"
    meaning = names.meaning(name)
    if meaning.why_not is not None:
        return f"`{name}` is bound at module level by {meaning.why_not}"
    if meaning.bound and meaning.helper != helper:
        return f"`{name}` is bound at module level to something else"
    if meaning.first is not None:
        position = meaning.first
        if all(names.runs_after(position, where) for where in wheres):
            return position, False
        row = names.tree.body[position].lineno
        made = "definition" if names.own else "import"
        return f"`{name}` may be called before its {made} (line {row}) runs"
    if not new:
        return f"`{name}` is only imported inside a block"
    if names.own and meaning.bound:
        return f"`{name}` is only defined inside a block"
    if names.global_uses(name):
        return f"`{name}` is used at module scope but never imported"
    if names.own:
        position = _definitions_position(names.tree)
    else:
        position = import_position(header, names.helpers_module, helper, aliased)
    if all(names.runs_after(position, where) for where in wheres):
        return position, True
    made = "defined" if names.own else "imported"
    return f"`{name}` would be {made} after code that may call it"


def _header_statements(tree: ast.Module) -> list[ast.stmt]:
    last = header_last_row(tree)
    return [s for s in tree.body if (s.end_lineno or s.lineno) <= last]


def _definitions_position(tree: ast.Module) -> int:
    """The top-level statement the definitions ``fix`` adds to the helpers
    module stand before (after its header: see ``helper_homes.add_definitions``)."""
    last = header_last_row(tree)
    return sum(1 for s in tree.body if (s.end_lineno or s.lineno) <= last)
