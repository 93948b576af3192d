"""What a helper's name means where it is called: a fact about one module, for
the fix gate (which proves a rewrite) and the rewrite (which plans its spelling).

``draft_kv_indices_used_len(...)`` calls the helper only where that name, in the
scope the call is written in and at the time it runs, is bound to the helpers
module's function:

* no scope between the call and the module binds the name: a function, a lambda,
  a comprehension, or a class for the code directly in its body (Python skips a
  class's scope from the functions inside it). CPython's own ``symtable`` says
  which scope binds what (parameters, assignments, loop and comprehension
  variables, imports, ``del``, ``global``, ``nonlocal``), with names compared
  after NFKC normalisation, as the parser does;
* at module level every binding of the name is an import of that very helper
  from the helpers module: no ``def``, assignment, ``del``, import from another
  module, ``*`` import, ``try``/``except ImportError`` fallback or ``global``
  rebinding in a function; and one of those imports is a top-level statement
  (it always runs);
* that import has run: the call's top-level statement comes after it, or the
  call is in a function (or lambda, or generator) made before it that nothing
  between the two can call (only imports, definitions and plain values sit in
  between: :meth:`ModuleNames.inert`).

In the helpers module itself a helper is its own top-level ``def``, once that
is proven to compute the formula (a plain name bound by it, under the same rules
of scope and time); an import of it there would run while the module is half
made.

``spec_utils.draft_kv_indices_used_len(...)`` calls the helper where
``spec_utils`` means, by the same rules, the helpers module itself
(``import a.b.spec_utils as spec_utils``, ``from a.b import spec_utils``) and the
module never assigns that attribute.

Left to the reader of a module, never proved here: code reaching names through
``globals()``, ``exec`` or ``setattr``, and circular imports that call into a
module before its imports have run.

The fact is computed once per text, lazily: ``symtable`` (C) for the scopes, the
module's top-level statements for its bindings, and a walk of only the
statements whose rows mention a name of interest. Nothing is imported or run.
"""

from __future__ import annotations

import ast
import bisect
import re
import symtable
import unicodedata
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from lint_plugin import bindings
from lint_plugin.engine.formulas import BUFFER_WIDTH, USED_LEN
from lint_plugin.engine.source import normalised

HELPERS = (USED_LEN, BUFFER_WIDTH)

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPREHENSIONS = {
    ast.ListComp: "listcomp",
    ast.SetComp: "setcomp",
    ast.DictComp: "dictcomp",
    ast.GeneratorExp: "genexpr",
}
_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


@dataclass(frozen=True)
class Scope:
    """A scope between a call and its module, as ``symtable`` names it."""

    kind: str  # "function" or "class"
    name: str  # a def's or class's name, "lambda", "listcomp", ...
    row: int

    def describe(self) -> str:
        if self.kind == "class":
            return f"class {self.name} (line {self.row})"
        if self.name in ("lambda", *_COMPREHENSIONS.values()):
            kind = "a lambda" if self.name == "lambda" else "a comprehension"
            return f"{kind} at line {self.row}"
        return f"{self.name}() (line {self.row})"


@dataclass(frozen=True)
class Where:
    """Where a piece of code is: its top-level statement, the scopes around it
    (outermost first), and whether it runs later than that statement (in a
    function, a lambda or a generator made there)."""

    index: int
    scopes: tuple[Scope, ...]
    deferred: bool


@dataclass(frozen=True)
class Meaning:
    """What a name means at module level."""

    helper: str | None = None  # bound only to this helper (by its imports)
    module: bool = False  # bound only to the helpers module
    first: int | None = None  # index of the first top-level import binding it
    why_not: str | None = None  # a binding to something else
    bound: bool = False  # bound at module level at all


@dataclass(frozen=True)
class _Binding:
    index: int  # the top-level statement holding it
    row: int
    top: bool  # the statement itself is top-level (it always runs)
    helper: str | None = None  # an import of this helper from the helpers module
    module: bool = False  # an import of the helpers module itself
    what: str = ""  # for messages: "a def", "an import from x", ...
    imported: bool = False  # an import (of anything)


class ModuleNames:
    """Which calls of a module provably call a helper, and why others do not.

    ``assume``: names to treat as imported from the helpers module before every
    statement (the gate's reference for unsafe fixes is a text the fix's import
    is not spliced into). ``own``: the text is the helpers module itself, where
    a helper is its module-level ``def``, once that provably computes its formula
    (:func:`lint_plugin.fix.definitions.prove_definition`)."""

    def __init__(
        self,
        tree: ast.Module,
        text: str,
        helpers_module: str,
        assume: Mapping[str, str] | None = None,
        *,
        own: bool = False,
    ) -> None:
        self.tree = tree
        self.text = text
        self.helpers_module = helpers_module
        self.assume = dict(assume or {})
        self.own = own
        self._table: symtable.SymbolTable | bool | None = False
        self._tables: list[symtable.SymbolTable] | None = None
        self._binders: dict[str, frozenset[Scope] | None] = {}
        self._rebinders: dict[str, str | None] = {}
        self._bindings: dict[str, list[_Binding]] | None = None
        self._star: _Binding | None = None
        self._meanings: dict[str, Meaning] = {}
        self._inert: dict[int, bool] = {}
        self._starts: list[int] | None = None  # each top-level statement's row
        self._calls: dict[int, tuple[str | None, str | None]] | None = None
        self._attribute_stores: dict[str, int] = {}
        scan = text if text.isascii() else unicodedata.normalize("NFKC", text)
        self._scan = normalised(scan)

    # ---- scopes (symtable) ----------------------------------------------------

    @property
    def table(self) -> symtable.SymbolTable | None:
        if self._table is False:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    self._table = symtable.symtable(self.text, "<fix>", "exec")
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._table = None  # no scopes known: nothing resolves
        return self._table  # type: ignore[return-value]

    def _all_tables(self) -> list[symtable.SymbolTable]:
        if self._tables is None:
            found: list[symtable.SymbolTable] = []
            pending = list(self.table.get_children()) if self.table else []
            while pending:
                table = pending.pop()
                found.append(table)
                pending.extend(table.get_children())
            self._tables = found
        return self._tables

    def mentions(self, name: str) -> bool:
        """Does the text hold ``name`` (after NFKC) at all? If not, no scope
        binds it and no code uses it: nothing to ask ``symtable``."""
        return name in self._scan

    def binders(self, name: str) -> frozenset[Scope] | None:
        """The scopes below the module that bind ``name`` (None: unknown)."""
        if name not in self._binders:
            if not self.mentions(name):
                self._binders[name] = frozenset()
                self._rebinders[name] = None
                return self._binders[name]
            if self.table is None:
                self._binders[name] = None
                return None
            scopes = set()
            rebinder = None
            for table in self._all_tables():
                if name not in table.get_identifiers():
                    continue
                symbol = table.lookup(name)
                kind = _kind(table)
                scope = Scope(kind, table.get_name(), table.get_lineno())
                if symbol.is_declared_global():
                    if symbol.is_assigned() or symbol.is_imported():
                        rebinder = rebinder or f"`global` in {scope.describe()}"
                    continue
                if symbol.is_local() or symbol.is_parameter():
                    if kind not in ("function", "class"):
                        self._binders[name] = None  # a scope we cannot place
                        return None
                    scopes.add(scope)
            self._binders[name] = frozenset(scopes)
            self._rebinders[name] = rebinder
        return self._binders[name]

    def global_uses(self, name: str) -> bool:
        """Does any code read ``name`` as a module-level name, or bind it so
        from a function (``global``)?"""
        if not self.mentions(name):
            return False
        table = self.table
        if table is None:
            return True
        if name in table.get_identifiers() and table.lookup(name).is_referenced():
            return True
        for inner in self._all_tables():
            if name in inner.get_identifiers():
                symbol = inner.lookup(name)
                if symbol.is_global() and (
                    symbol.is_referenced() or symbol.is_assigned()
                ):
                    return True
        return False

    def taken_in(self, name: str, where: Where) -> str | None:
        """Which scope around ``where`` binds ``name`` (None: none does)."""
        binders = self.binders(name)
        if binders is None:
            return "its scopes could not be read"
        innermost = True
        for scope in reversed(where.scopes):
            if scope.kind == "class" and not innermost:
                continue  # code in a method does not see its class's names
            if scope in binders:
                return f"bound in {scope.describe()}"
            innermost = False
        return None

    # ---- module-level bindings -------------------------------------------------

    def _module_bindings(self) -> dict[str, list[_Binding]]:
        if self._bindings is None:
            self._bindings = {}
            for index, statement in enumerate(self.tree.body):
                self._collect(statement, index, True)
        return self._bindings

    def _collect(self, statement: ast.stmt, index: int, top: bool) -> None:
        pending = [(statement, top)]
        while pending:
            node, top_level = pending.pop()
            for name, binding in self._binds(node, index, top_level):
                self._bindings.setdefault(name, []).append(binding)
            if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
                continue
            for block in _BLOCKS:
                for child in getattr(node, block, None) or ():
                    if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                        pending.append((child, False))

    def _binds(self, node, index: int, top: bool) -> Iterator[tuple[str, _Binding]]:
        row = getattr(node, "lineno", 0)
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    what = f"a `*` import from {'.' * node.level}{node.module or ''}"
                    self._star = self._star or _Binding(index, row, top, what=what)
                    continue
                bound = alias.asname or alias.name
                source = node.module if node.level == 0 else None
                ours = source == self.helpers_module and alias.name in HELPERS
                helper = alias.name if ours else None
                module = (
                    source is not None
                    and f"{source}.{alias.name}" == self.helpers_module
                )
                what = f"an import from {'.' * node.level}{node.module or ''}"
                if source == self.helpers_module and not ours:
                    what = f"an import of {alias.name} from {source}"
                yield bound, _Binding(index, row, top, helper, module, what, True)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                module = alias.asname is not None and alias.name == self.helpers_module
                yield bound, _Binding(index, row, top, None, module, "an import", True)
        elif isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            what = "a class" if isinstance(node, ast.ClassDef) else "a def"
            if self.own and _defines_helper(node):
                # The helper itself; it calls no code back (a computation).
                what = "its definition"
                yield node.name, _Binding(index, row, top, node.name, False, what, True)
            else:
                yield node.name, _Binding(index, row, top, what=what)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return
        # Every other binding of the module's names (lint_plugin.bindings: any
        # form: targets, walruses, `except ... as`, `match` captures, `del`, a
        # def's or class's walrus in a default or a base); those in a scope of
        # their own (parameters, comprehension targets) are not the module's.
        for found in bindings.own(node):
            if found.scope is not None or found.kind in bindings.DECLARATIONS:
                continue
            if found.kind in (bindings.FUNCTION, bindings.CLASS):
                continue  # yielded above
            at = getattr(found.node, "lineno", row)
            yield found.name, _Binding(index, at, top, what=found.words)

    def meaning(self, name: str) -> Meaning:
        """What ``name`` means at module level (see the module's docstring)."""
        if name in self._meanings:
            return self._meanings[name]
        bindings = list(self._module_bindings().get(name, ()))
        if name in self.assume:
            bindings.insert(0, _Binding(-1, 0, True, self.assume[name]))
        why_not = None
        table = self.table if self.mentions(name) else None
        if table is None and self.mentions(name):
            why_not = "its scopes could not be read"
        elif table is not None:
            self.binders(name)
            why_not = self._rebinders.get(name)
            symbol = table.lookup(name) if name in table.get_identifiers() else None
            defined = any(b.what == "its definition" for b in bindings)
            if (
                symbol is not None
                and symbol.is_assigned()
                and not any(not (b.helper or b.module) for b in bindings)
                and (not defined or self._walrus_binds(name))
            ):
                # Bound by an expression (a walrus at module level).
                why_not = why_not or "an assignment expression at module level"
        if self._star is not None and why_not is None:
            why_not = f"{self._star.what} (line {self._star.row})"
        helpers = {b.helper for b in bindings}
        modules = {b.module for b in bindings}
        for binding in bindings:
            if binding.helper is None and not binding.module:
                why_not = why_not or f"{binding.what} at line {binding.row}"
        if why_not is None and (len(helpers) > 1 or len(modules) > 1):
            why_not = "imports of different things"
        first = next((b.index for b in bindings if b.top), None)
        helper = next(iter(helpers)) if len(helpers) == 1 else None
        found = Meaning(
            helper=helper if why_not is None else None,
            module=why_not is None and modules == {True},
            first=first,
            why_not=why_not,
            bound=bool(bindings) or why_not is not None,
        )
        self._meanings[name] = found
        return found

    def _walrus_binds(self, name: str) -> bool:
        """Does an assignment expression anywhere bind ``name`` (a def of it
        is assigned too, so ``symtable`` cannot tell the two apart)?"""
        return any(
            isinstance(node, ast.NamedExpr)
            and isinstance(node.target, ast.Name)
            and unicodedata.normalize("NFKC", node.target.id) == name
            for node in ast.walk(self.tree)
        )

    def helper_bindings(self) -> dict[str, str]:
        """Names bound at module level to a helper, by any import of it."""
        return {
            name: b.helper
            for name, found in self._module_bindings().items()
            for b in found
            if b.helper in HELPERS
        }

    def module_names(self) -> set[str]:
        """Names some module-level import binds to the helpers module."""
        return {
            name
            for name, found in self._module_bindings().items()
            if any(b.module for b in found)
        }

    # ---- time -----------------------------------------------------------------

    def runs_after(self, position: int, where: Where) -> bool:
        """Has an import standing right before top-level statement ``position``
        (an existing one at that index, or one to be inserted there) run
        whenever code at ``where`` runs?"""
        if where.index >= position:
            return True
        if not where.deferred:
            return False
        return all(self.inert(index) for index in range(where.index, position))

    def inert(self, index: int) -> bool:
        """Can running top-level statement ``index`` call no code of this module
        (imports, definitions without decorators, plain values, calls of
        imported or built-in callables on values of no code of this module)?"""
        if index not in self._inert:
            self._inert[index] = self._inert_statement(self.tree.body[index])
        return self._inert[index]

    def _inert_statement(self, node: ast.stmt) -> bool:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Pass, ast.Global)):
            return True
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            return True
        if isinstance(node, _FUNCTIONS):
            args = node.args
            values = [*args.defaults, *args.kw_defaults, node.returns]
            values += [
                a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
            ]
            return not node.decorator_list and all(self._inert_value(v) for v in values)
        if isinstance(node, ast.ClassDef):
            return (
                not node.decorator_list
                and not node.keywords
                and all(self._import_rooted(b) for b in node.bases)
                and all(self._inert_statement(s) for s in node.body)
            )
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            return all(
                isinstance(t, ast.Name) or self._inert_value(t) for t in targets
            ) and (
                self._inert_value(node.value)
                and self._inert_value(getattr(node, "annotation", None))
            )
        if isinstance(node, ast.If):
            return self._inert_value(node.test) and all(
                self._inert_statement(s) for s in (*node.body, *node.orelse)
            )
        if isinstance(node, ast.Try):
            blocks = (*node.body, *node.orelse, *node.finalbody)
            return all(self._inert_statement(s) for s in blocks) and all(
                self._inert_value(h.type)
                and all(self._inert_statement(s) for s in h.body)
                for h in node.handlers
            )
        return False

    def _inert_value(self, node: ast.AST | None) -> bool:
        if node is None:
            return True
        calls = False
        for child in ast.walk(node):
            if isinstance(child, (ast.Await, ast.Yield, ast.YieldFrom, ast.Lambda)):
                return False
            if isinstance(child, ast.Call):
                if not self._import_rooted(child.func):
                    return False
                # The helpers call nothing back: their arguments are only read.
                calls = calls or not self._helper_callee(child.func)
        if not calls:
            return True
        # A callable of another module may call back what it is handed.
        return not any(
            isinstance(child, ast.Name) and self._own_code(child.id)
            for child in ast.walk(node)
        )

    def _helper_callee(self, func: ast.AST) -> bool:
        """Is ``func`` a helper by an import from the helpers module?"""
        if isinstance(func, ast.Name):
            bound = self._module_bindings().get(func.id, ())
            return bool(bound) and all(b.helper in HELPERS for b in bound)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            bound = self._module_bindings().get(func.value.id, ())
            return func.attr in HELPERS and bool(bound) and all(b.module for b in bound)
        return False

    def _import_rooted(self, node: ast.AST) -> bool:
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and not self._own_code(node.id)

    def _own_code(self, name: str) -> bool:
        """Is ``name`` bound at module level by anything but an import?"""
        return any(not b.imported for b in self._module_bindings().get(name, ()))

    # ---- where code is ------------------------------------------------------------

    def rows_mentioning(self, names: set[str]) -> list[int]:
        if not names:
            return []
        pattern = re.compile(
            r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\b"
        )
        rows: list[int] = []
        row, counted = 1, 0
        for match in pattern.finditer(self._scan):
            row += self._scan.count("\n", counted, match.start())
            counted = match.start()
            if not rows or rows[-1] != row:
                rows.append(row)
        return rows

    def walk(self, rows: list[int]) -> Iterator[tuple[ast.AST, Where]]:
        """Every node on ``rows`` (sorted), with where it is."""
        body = self.tree.body
        if self._starts is None:
            self._starts = [_first_row(s) for s in body]
        indices: list[int] = []
        for row in rows:  # the top-level statements holding the rows, in order
            index = bisect.bisect_right(self._starts, row) - 1
            if (
                index >= 0
                and row <= body[index].end_lineno
                and (not indices or indices[-1] != index)
            ):
                indices.append(index)
        for index in indices:
            statement = body[index]
            pending = [(statement, Where(index, (), False))]
            while pending:
                node, where = pending.pop()
                yield node, where
                for child, inner in _children(node, where):
                    if _spans(rows, child):
                        pending.append((child, inner))

    def where(self, start: tuple[int, int], end: tuple[int, int]) -> Where | None:
        """Where the code from ``start`` to ``end`` (rows, byte columns) is: at the
        innermost node holding all of it."""
        found = None
        for node, where in self.walk(sorted({start[0], end[0]})):
            if not isinstance(node, (ast.expr, ast.stmt)):
                continue
            if (node.lineno, node.col_offset) <= start and end <= (
                node.end_lineno,
                node.end_col_offset,
            ):
                found = where
        return found

    # ---- calls ---------------------------------------------------------------------

    def calls(self) -> dict[int, tuple[str | None, str | None]]:
        """``id(call) -> (helper, None)`` for each call that provably calls a
        helper, ``(None, why not)`` for a call that looks like one but does not."""
        if self._calls is None:
            aliases = {**self.helper_bindings(), **self.assume}
            modules = self.module_names()
            names = {*HELPERS, *aliases, *modules}
            found = []
            for node, where in self.walk(self.rows_mentioning(names)):
                if isinstance(node, ast.Attribute) and not isinstance(
                    node.ctx, ast.Load
                ):
                    self._attribute_stores.setdefault(node.attr, node.lineno)
                if isinstance(node, ast.Call):
                    found.append((node, where))
            self._calls = {}
            for node, where in found:
                func = node.func
                if isinstance(func, ast.Name) and func.id in names:
                    self._calls[id(node)] = self.resolve(func.id, where)
                elif (
                    isinstance(func, ast.Attribute)
                    and func.attr in HELPERS
                    and isinstance(func.value, ast.Name)
                ):
                    self._calls[id(node)] = self.resolve_attribute(
                        func.value.id, func.attr, where
                    )
        return self._calls

    def attribute_stores(self) -> dict[str, int]:
        """Attribute name -> a row assigning (or deleting) an attribute so named,
        for the helpers' names and the names they go by."""
        self.calls()
        return self._attribute_stores

    def resolve(self, name: str, where: Where) -> tuple[str | None, str | None]:
        """``(helper, None)`` when ``name`` called at ``where`` is that helper,
        else ``(None, why not)``."""
        taken = self.taken_in(name, where)
        if taken is not None:
            return None, f"`{name}` is {taken}"
        meaning = self.meaning(name)
        if meaning.why_not is not None:
            return None, f"`{name}` is bound at module level by {meaning.why_not}"
        if meaning.helper is None:
            return None, f"`{name}` is not imported from {self.helpers_module}"
        if meaning.first is None:
            return None, f"`{name}` is only imported inside a block, which may not run"
        if not self.runs_after(meaning.first, where):
            binding = "definition" if self.own and meaning.helper else "import"
            return None, (
                f"`{name}` may be called before its {binding} "
                f"(line {self._row_of(meaning.first)}) runs"
            )
        return meaning.helper, None

    def resolve_attribute(self, module: str, helper: str, where: Where):
        taken = self.taken_in(module, where)
        if taken is not None:
            return None, f"`{module}` is {taken}"
        meaning = self.meaning(module)
        if not meaning.module or meaning.why_not is not None:
            return None, f"`{module}` is not the helpers module there"
        if meaning.first is None or not self.runs_after(meaning.first, where):
            return None, f"`{module}` may be used before its import runs"
        if self._attribute_stores.get(helper) is not None:
            return None, f"`{helper}` is assigned as an attribute"
        return helper, None

    def _row_of(self, index: int) -> int:
        if index < 0:
            return 0
        return self.tree.body[index].lineno


def _defines_helper(node: ast.stmt) -> bool:
    """Is ``node`` a plain ``def`` of a helper, proven to compute its formula?"""
    if not isinstance(node, ast.FunctionDef) or node.name not in HELPERS:
        return False
    if node.decorator_list:
        return False
    from lint_plugin.fix.definitions import prove_definition

    return prove_definition(node) is None


def _kind(table: symtable.SymbolTable) -> str:
    kind = table.get_type()
    return str(getattr(kind, "value", kind))


def _first_row(node: ast.stmt) -> int:
    first = node.lineno
    for decorator in getattr(node, "decorator_list", ()):
        first = min(first, decorator.lineno)
    return first


def _spans(rows: list[int], node: ast.AST) -> bool:
    first = getattr(node, "lineno", None)
    if first is None:
        return True  # no position (an operator, a context): cheap, harmless
    if type(node) in _DECORATED:
        first = _first_row(node)
    if len(rows) == 1:
        return first <= rows[0] <= (node.end_lineno or first)
    index = bisect.bisect_left(rows, first)
    return index < len(rows) and rows[index] <= (node.end_lineno or first)


_DECORATED = {ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef}


def _children(node: ast.AST, where: Where) -> Iterator[tuple[ast.AST, Where]]:
    """``node``'s children, each with where it is: code in a def's, a lambda's or
    a class's body, or in a comprehension (its first iterable aside), is in that
    scope; defaults, decorators, annotations and bases are in the outer one."""
    inner = None
    if isinstance(node, _FUNCTIONS):
        inner = ("body", Scope("function", node.name, node.lineno), True)
    elif isinstance(node, ast.Lambda):
        inner = ("body", Scope("function", "lambda", node.lineno), True)
    elif isinstance(node, ast.ClassDef):
        inner = ("body", Scope("class", node.name, node.lineno), False)
    elif type(node) in _COMPREHENSIONS:
        scope = Scope("function", _COMPREHENSIONS[type(node)], node.lineno)
        deferred = where.deferred or isinstance(node, ast.GeneratorExp)
        inside = Where(where.index, (*where.scopes, scope), deferred)
        for field in ("elt", "key", "value"):
            value = getattr(node, field, None)
            if value is not None:
                yield value, inside
        for number, generator in enumerate(node.generators):
            yield generator.target, inside
            yield generator.iter, (where if number == 0 else inside)
            for condition in generator.ifs:
                yield condition, inside
        return
    for field in node._fields:
        value = getattr(node, field, None)
        here = where
        if inner is not None and field == inner[0]:
            _, scope, deferred = inner
            here = Where(
                where.index, (*where.scopes, scope), where.deferred or deferred
            )
        if isinstance(value, list):
            for item in value:
                if isinstance(item, ast.AST):
                    yield item, here
        elif isinstance(value, ast.AST):
            yield value, here
