"""Reaching definitions, on demand: where one name of one block of code gets its
value at each statement, and on which branches.

:class:`Flow` runs the statements of a function (or a module) forward for a single
name (``w``, or ``self.w`` for an attribute): the state before each statement is
the set of definitions that can reach it, each with the branch conditions of its
path (``if``/``elif``/``else``, ``while``, a ``for`` loop that may run no time,
``try``/``except``, ``match``, ``assert``, early ``return``/``raise``/``break``/
``continue``), merged where both branches of a test lead to the same definition.
It is built the first time a value asks for that name there and kept
(:func:`flow`), so only the names a width reads are ever followed.

What binds a name: assignments (also annotated, augmented, to tuple and list
targets, starred ones unknown), walrus, ``for``/``with``/``except`` targets,
imports, ``def``/``class``, ``del``; ``global``/``nonlocal`` make it unknown. An
augmented assignment keeps the definitions it updates; a loop that updates a
name from itself gives an unknown value. Conditions are remembered by their test
node, so a test repeated by a loop is never taken for the same condition twice.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Sequence

from lint_plugin import statements
from lint_plugin.engine.nodes import walk_nodes

_MAX_FACTS = 48
_MAX_LOOP_ROUNDS = 4

# A branch taken: ("test", the If/While/Assert statement, outcome), ("loop", the
# For/While statement, whether its body ran), ("case", a match_case, matched).
Literal = tuple[str, ast.AST, bool]


class Def:
    """One way a statement binds the name.

    ``kind``: ``entry`` (the value the block starts with), ``assign`` (``value``,
    through the tuple ``path``), ``aug`` (``op``= ``value`` on top of the
    ``previous`` facts), ``import``, ``function``, ``class``, ``block`` (a
    top-level block not parsed yet, see :mod:`lint_plugin.engine.module_scope`),
    ``unknown`` (a loop target, ``with ... as``, a starred target, a loop
    carrying the name, too many paths), ``deleted``.
    """

    __slots__ = ("alias", "kind", "op", "path", "previous", "stmt", "value")

    def __init__(
        self,
        kind: str,
        stmt: ast.AST | None = None,
        value: ast.expr | None = None,
        path: tuple[int, ...] = (),
        op: ast.operator | None = None,
        previous: tuple[Fact, ...] = (),
        alias: ast.alias | None = None,
    ) -> None:
        self.kind = kind
        self.stmt = stmt
        self.value = value
        self.path = path
        self.op = op
        self.previous = previous
        self.alias = alias

    def __repr__(self) -> str:
        row = getattr(self.stmt, "lineno", "?")
        return f"Def({self.kind}@{row})"


ENTRY = Def("entry")
TOO_MANY = Def("unknown")


def _branch_to(parent: ast.stmt, child: ast.stmt) -> list[Literal]:
    """The branch of ``parent`` that ``child`` is in, as the flow's literals
    say it (none: no test decides it)."""
    if isinstance(parent, ast.If):
        if any(s is child for s in parent.body):
            return [("test", parent, True)]
        if any(s is child for s in parent.orelse):
            return [("test", parent, False)]
    elif isinstance(parent, (ast.For, ast.AsyncFor, ast.While)):
        if any(s is child for s in parent.body):
            return [("loop", parent, True)]
    elif isinstance(parent, ast.Match):
        for index, case in enumerate(parent.cases):
            if any(s is child for s in case.body):
                earlier = parent.cases[:index]
                return [("case", c, False) for c in earlier] + [("case", case, True)]
    return []


class Fact:
    __slots__ = ("_hash", "conds", "defn")

    def __init__(self, defn: Def, conds: frozenset[Literal]) -> None:
        self.defn = defn
        self.conds = conds
        self._hash = hash((id(defn), conds))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Fact)
            and self.defn is other.defn
            and self.conds == other.conds
        )

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"Fact({self.defn!r}, {len(self.conds)} conds)"


class _Exits:
    __slots__ = ("brk", "cont", "normal")

    def __init__(self, normal=(), brk=(), cont=()) -> None:
        self.normal: list[Fact] = list(normal)
        self.brk: list[Fact] = list(brk)
        self.cont: list[Fact] = list(cont)


def _unique(facts: Iterable[Fact]) -> list[Fact]:
    seen: dict[Fact, None] = {}
    for fact in facts:
        seen.setdefault(fact, None)
    found = list(seen)
    if len(found) > _MAX_FACTS:
        return [Fact(TOO_MANY, frozenset())]
    return found


def _with(facts: Iterable[Fact], literal: Literal) -> list[Fact]:
    return [Fact(f.defn, f.conds | {literal}) for f in facts]


def _merge(facts: list[Fact]) -> list[Fact]:
    """Facts of one definition that differ only in the outcome of one test hold
    whatever the outcome: ``(d, {c, x})`` and ``(d, {not c, x})`` are ``(d, {x})``;
    and ``(d, {x})`` holds ``(d, {c, x})``."""
    facts = _unique(facts)
    by_defn: dict[int, list[Fact]] = {}
    for fact in facts:
        by_defn.setdefault(id(fact.defn), []).append(fact)
    if all(len(group) == 1 for group in by_defn.values()):
        return facts
    merged: list[Fact] = []
    for group in by_defn.values():
        # A list, not a set: the order (and so every result) must not depend
        # on the hashes of the nodes.
        conds = list(dict.fromkeys(f.conds for f in group))
        changed = True
        while changed and len(conds) > 1:
            changed = False
            for a in conds:
                for literal in sorted(a, key=literal_order):
                    opposite = (literal[0], literal[1], not literal[2])
                    b = (a - {literal}) | {opposite}
                    if b in conds:
                        index = min(conds.index(a), conds.index(b))
                        conds = [c for c in conds if c != a and c != b]
                        conds.insert(index, a - {literal})
                        conds = list(dict.fromkeys(conds))
                        changed = True
                        break
                if changed:
                    break
        # A path through more tests is one of the paths through fewer: the
        # definition reaches on ``{x}`` already says it reaches on ``{c, x}``.
        conds = [c for c in conds if not any(o < c for o in conds)]
        merged.extend(Fact(group[0].defn, c) for c in conds)
    return _unique(merged)


def literal_order(literal: tuple) -> tuple:
    """A literal's place in the source (a path's literals, in one order
    whatever the nodes' hashes); also a condition's, which is a literal and
    its frame."""
    node = literal[1]
    return (
        getattr(node, "lineno", 0),
        getattr(node, "col_offset", 0),
        literal[0],
        literal[2],
    )


class Flow:
    """The definitions of ``key`` reaching each statement of ``body``."""

    def __init__(
        self,
        body: Sequence[ast.stmt],
        key: str,
        walrus: bool = True,
        self_name: str = "self",
        index: BodyIndex | None = None,
    ):
        self.key = key
        self.self_name = self_name
        self.attr = key.split(".", 1)[1] if "." in key else None
        self.walrus = walrus and self.attr is None
        # What each compound statement binds, shared by the flows of one body:
        # one that binds nothing of ours and cannot leave early is skipped, and
        # the statements inside it see what it starts with.
        self._index = index
        self._skipped: dict[int, list[Fact]] = {}
        self.before: dict[int, list[Fact]] = {}
        self.returns: list[tuple[ast.Return, list[Fact]]] = []
        self._aug: dict[tuple, Def] = {}
        self._defs: dict[tuple, Def] = {}
        self._tries: list[list[Fact]] = []
        self._inner: list[set[int]] = []  # tests seen inside each open loop
        # The branches the walk is inside of: the value a loop updating a name
        # leaves unknown keeps only those of its path's conditions (it stands
        # for every round, whichever branches the earlier rounds took).
        self._open: list[Literal] = []
        self.end = self._block(body, [Fact(ENTRY, frozenset())]).normal

    def at(self, stmt: ast.AST) -> list[Fact]:
        """The facts before ``stmt`` (none: it is never reached)."""
        found = self.before.get(id(stmt))
        if found is not None:
            return found
        if self._index is not None:
            parent = self._index.parents.get(id(stmt))
            while parent is not None:
                skipped = self._skipped.get(id(parent))
                if skipped is not None:
                    return skipped
                if id(parent) in self.before:
                    return []  # walked into, and this statement never reached
                parent = self._index.parents.get(id(parent))
        return []

    def reached(self, stmt: ast.AST) -> list[Fact]:
        """``at``, with the branches taken to ``stmt`` inside the compound
        statements the flow skipped (they bind nothing of the key): an
        ``if``'s test, a loop entered, a ``match``'s case taken (and the cases
        before it not). ``REACH``'s flow binds nothing, so
        without them an allocation under ``if self.topk == 1:`` would hold
        on every path."""
        found = self.before.get(id(stmt))
        if found is not None or self._index is None:
            return found or []
        path: list[Literal] = []
        child, parent = stmt, self._index.parents.get(id(stmt))
        while parent is not None:
            path += _branch_to(parent, child)
            skipped = self._skipped.get(id(parent))
            if skipped is not None:
                extra = frozenset(path)
                return [Fact(f.defn, f.conds | extra) for f in skipped]
            if id(parent) in self.before:
                return []  # walked into, and this statement never reached
            child, parent = parent, self._index.parents.get(id(parent))
        return []

    def defined_by(self, stmt: ast.AST) -> list[Def]:
        """The definitions ``stmt`` makes of the key (where it is reached)."""
        found = [d for d in self._defs.values() if d.stmt is stmt]
        found += [d for d in self._aug.values() if d.stmt is stmt]
        return found

    # ---- statements --------------------------------------------------------

    def _block(self, stmts: Sequence[ast.stmt], facts: list[Fact]) -> _Exits:
        exits = _Exits()
        index = self._index if not self.walrus else None
        inert = index.inert if index is not None else ()
        simple = index.simple if index is not None else {}
        for stmt in stmts:
            if not facts:
                break
            if id(stmt) in inert:
                self._record(stmt, facts)
                continue
            summary = simple.get(id(stmt))
            if summary is not None and not summary.exits and not summary.binds(self):
                self._record(stmt, facts)
                continue
            result = self._stmt(stmt, facts)
            exits.brk += result.brk
            exits.cont += result.cont
            facts = result.normal
        exits.normal = facts
        return exits

    def _record(self, stmt: ast.AST, facts: list[Fact]) -> None:
        seen = self.before.get(id(stmt))
        self.before[id(stmt)] = facts if seen is None else _unique(seen + facts)
        for collector in self._tries:
            collector.extend(facts)

    def _literal(self, kind: str, node: ast.AST, positive: bool) -> Literal:
        for inner in self._inner:
            inner.add(id(node))
        return (kind, node, positive)

    def _stmt(self, stmt: ast.stmt, facts: list[Fact]) -> _Exits:
        self._record(stmt, facts)
        kind = type(stmt)
        if kind in _COMPOUND and not self.walrus and self._index is not None:
            summary = self._index.summaries.get(id(stmt))
            if summary is not None and not summary.exits and not summary.binds(self):
                self._skipped[id(stmt)] = _unique(
                    self._skipped.get(id(stmt), []) + facts
                )
                for collector in self._tries:
                    collector.extend(facts)
                return _Exits(facts)
        if self.walrus:
            facts = self._walruses(stmt, facts)
        if kind is ast.If:
            return self._if(stmt, facts)
        if kind in (ast.For, ast.AsyncFor, ast.While):
            return self._loop(stmt, facts)
        if kind in (ast.Try, getattr(ast, "TryStar", ast.Try)):
            return self._try(stmt, facts)
        if kind in (ast.With, ast.AsyncWith):
            for item in stmt.items:
                if item.optional_vars is not None and self._binds(item.optional_vars):
                    facts = self._rebind(facts, self._def("unknown", stmt))
            return self._block(stmt.body, facts)
        if kind is ast.Match:
            return self._match(stmt, facts)
        if kind is ast.Return:
            self.returns.append((stmt, facts))
            return _Exits()
        if kind is ast.Raise:
            return _Exits()
        if kind is ast.Break:
            return _Exits(brk=facts)
        if kind is ast.Continue:
            return _Exits(cont=facts)
        if kind is ast.Assert:
            return _Exits(_with(facts, self._literal("test", stmt, True)))
        return _Exits(self._simple(stmt, facts))

    def _simple(self, stmt: ast.stmt, facts: list[Fact]) -> list[Fact]:
        kind = type(stmt)
        if kind is ast.Assign:
            for target in stmt.targets:
                for path in self._paths(target):
                    defn = (
                        self._def("unknown", stmt)
                        if path is None
                        else self._def("assign", stmt, stmt.value, path)
                    )
                    facts = self._rebind(facts, defn)
            return facts
        if kind is ast.AnnAssign:
            if stmt.value is not None and self._binds(stmt.target):
                return self._rebind(facts, self._def("assign", stmt, stmt.value, ()))
            return facts
        if kind is ast.AugAssign:
            if self._binds(stmt.target):
                return _unique(self._augmented(stmt, f) for f in facts)
            return facts
        if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            if self.attr is None and stmt.name == self.key:
                word = "class" if kind is ast.ClassDef else "function"
                return self._rebind(facts, self._def(word, stmt))
            return facts
        if kind in (ast.Import, ast.ImportFrom):
            if self.attr is not None:
                return facts
            for alias in stmt.names:
                bound = alias.asname or alias.name.split(".")[0]
                if bound == self.key:
                    facts = self._rebind(facts, self._def("import", stmt, alias=alias))
                elif alias.name == "*":
                    facts = self._rebind(facts, self._def("unknown", stmt))
            return facts
        if kind is ast.Delete:
            if any(self._binds(t) for t in stmt.targets):
                return self._rebind(facts, self._def("deleted", stmt))
            return facts
        if kind in (ast.Global, ast.Nonlocal):
            if self.key in stmt.names:
                return self._rebind(facts, self._def("unknown", stmt))
            return facts
        if getattr(stmt, "lazy_name", None) == self.key:  # a module's unparsed block
            return self._rebind(facts, self._def("block", stmt))
        return facts

    def _augmented(self, stmt: ast.AugAssign, fact: Fact) -> Fact:
        """``w op= value`` on top of one reaching definition of ``w``."""
        conds = fact.conds & set(self._open)
        if _carries(fact, stmt) or self._from_before_the_loop(fact):
            # A loop updating it: what one round adds is no final value (the
            # rounds' count is the loop's, which the values do not follow).
            return Fact(self._def("unknown", stmt), conds)
        key = (id(stmt), fact)
        defn = self._aug.get(key)
        if defn is None:
            defn = self._aug[key] = Def(
                "aug", stmt, stmt.value, op=stmt.op, previous=(fact,)
            )
        return Fact(defn, fact.conds)

    def _from_before_the_loop(self, fact: Fact) -> bool:
        """Is ``fact`` bound outside the innermost loop being walked (so an
        update of it there carries from round to round)?"""
        loop = next((lit[1] for lit in reversed(self._open) if lit[0] == "loop"), None)
        if loop is None:
            return False
        stmt = fact.defn.stmt
        row = getattr(stmt, "lineno", None)
        return row is None or not (loop.lineno <= row <= loop.end_lineno)

    def _if(self, stmt: ast.If, facts: list[Fact]) -> _Exits:
        yes = self._branch(stmt.body, facts, self._literal("test", stmt, True))
        no = self._branch(stmt.orelse, facts, self._literal("test", stmt, False))
        return _Exits(
            _merge(yes.normal + no.normal),
            yes.brk + no.brk,
            yes.cont + no.cont,
        )

    def _branch(self, stmts, facts: list[Fact], literal: Literal) -> _Exits:
        self._open.append(literal)
        try:
            return self._block(stmts, _with(facts, literal))
        finally:
            self._open.pop()

    def _loop(self, stmt, facts: list[Fact]) -> _Exits:
        """A loop runs its body zero or more times (never zero for
        ``while True``); what leaves it is what skipped it, what finished a
        round, and what broke out."""
        is_for = not isinstance(stmt, ast.While)
        forever = (
            not is_for and isinstance(stmt.test, ast.Constant) and bool(stmt.test.value)
        )
        entered = _with(facts, self._literal("loop", stmt, True))
        skipped = [] if forever else _with(facts, self._literal("loop", stmt, False))
        inner: set[int] = set()
        self._inner.append(inner)
        target = (
            self._def("unknown", stmt) if is_for and self._binds(stmt.target) else None
        )
        head, ends, brk = entered, [], []
        for _ in range(_MAX_LOOP_ROUNDS):
            self._open.append(("loop", stmt, True))
            try:
                exits = self._block(
                    stmt.body, head if target is None else self._rebind(head, target)
                )
            finally:
                self._open.pop()
            brk = _unique(brk + exits.brk)
            ends = _unique(ends + _strip(exits.normal + exits.cont, inner))
            again = _unique(entered + ends)
            if set(again) == set(head):
                break
            head = again
        else:
            unknown = Fact(self._def("unknown", stmt), frozenset())
            ends, brk = [unknown], []
        self._inner.pop()
        rest = self._block(stmt.orelse, _unique(skipped + ends))
        normal = _merge(rest.normal + _strip(brk, inner))
        return _Exits(normal, rest.brk, rest.cont)

    def _try(self, stmt, facts: list[Fact]) -> _Exits:
        collector: list[Fact] = list(facts)
        self._tries.append(collector)
        body = self._block(stmt.body, facts)
        self._tries.pop()
        collector += body.normal
        caught = _merge(collector)  # a handler starts from any point of the body
        exits = _Exits([], body.brk, body.cont)
        if stmt.orelse:
            orelse = self._block(stmt.orelse, body.normal)
            exits.normal += orelse.normal
            exits.brk += orelse.brk
            exits.cont += orelse.cont
        else:
            exits.normal += body.normal
        for handler in stmt.handlers:
            start = caught
            if handler.name is not None and handler.name == self.key:
                start = self._rebind(start, self._def("unknown", handler))
            result = self._block(handler.body, start)
            exits.normal += result.normal
            exits.brk += result.brk
            exits.cont += result.cont
        if stmt.finalbody:
            final = self._block(stmt.finalbody, _unique(exits.normal))
            exits.normal = final.normal
        # A handler starts from every point of the body: what it and the body
        # end with are merged, as two branches of a test are.
        exits.normal = _merge(exits.normal)
        return exits

    def _match(self, stmt: ast.Match, facts: list[Fact]) -> _Exits:
        exits = _Exits()
        left = facts
        for case in stmt.cases:
            literal = self._literal("case", case, True)
            start = _with(left, literal)
            self._open.append(literal)
            try:
                if self.attr is None and self.key in _pattern_names(case.pattern):
                    start = self._rebind(start, self._def("unknown", case))
                result = self._block(case.body, start)
            finally:
                self._open.pop()
            exits.normal += result.normal
            exits.brk += result.brk
            exits.cont += result.cont
            if case.guard is None and _irrefutable(case.pattern):
                left = []  # `case _:` (the last case): nothing falls through
                break
            left = _with(left, self._literal("case", case, False))
        # Taken or not, a case's outcome is one test's: merged as an if's are.
        exits.normal = _merge(exits.normal + left)
        return exits

    # ---- bindings ----------------------------------------------------------

    def _def(self, kind, stmt, value=None, path=(), alias=None) -> Def:
        key = (kind, id(stmt), path, id(alias))
        found = self._defs.get(key)
        if found is None:
            found = self._defs[key] = Def(kind, stmt, value, path, alias=alias)
        return found

    def _rebind(self, facts: list[Fact], defn: Def) -> list[Fact]:
        # The definition keeps the tests of every path that reaches it: a
        # branch already closed may still be the only way here (``if b: raise``
        # before it in a ``try``), and a path through it and not here is none.
        return _merge([Fact(defn, f.conds) for f in facts])

    def _binds(self, target: ast.AST) -> bool:
        return any(True for _ in self._paths(target))

    def _paths(self, target: ast.AST, path: tuple[int, ...] = ()) -> Iterator:
        """The index paths (None: a starred part) at which ``target`` binds the
        key: ``a, (b, w) = ...`` binds ``w`` at ``(1, 1)``."""
        if isinstance(target, (ast.Tuple, ast.List)):
            starred = any(isinstance(e, ast.Starred) for e in target.elts)
            for index, element in enumerate(target.elts):
                if starred:
                    inner = (
                        element.value if isinstance(element, ast.Starred) else element
                    )
                    if any(True for _ in self._paths(inner)):
                        yield None
                else:
                    yield from self._paths(element, (*path, index))
            return
        if isinstance(target, ast.Starred):
            if any(True for _ in self._paths(target.value)):
                yield None
            return
        if self.attr is None:
            if isinstance(target, ast.Name) and target.id == self.key:
                yield path
        elif (
            isinstance(target, ast.Attribute)
            and target.attr == self.attr
            and isinstance(target.value, ast.Name)
            and target.value.id == self.self_name
        ):
            yield path

    def _walruses(self, stmt: ast.stmt, facts: list[Fact]) -> list[Fact]:
        """``(w := value)`` in ``stmt``'s own expressions: ``value`` is read as
        the statement starts (its definition is the statement's)."""
        for node in _own_expressions(stmt):
            if (
                isinstance(node, ast.NamedExpr)
                and isinstance(node.target, ast.Name)
                and node.target.id == self.key
            ):
                defn = self._defs.get(("walrus", id(node)))
                if defn is None:
                    defn = self._defs[("walrus", id(node))] = Def(
                        "assign", stmt, node.value, ()
                    )
                facts = self._rebind(facts, defn)
        return facts


_COMPOUND = frozenset(
    {
        ast.If,
        ast.For,
        ast.AsyncFor,
        ast.While,
        ast.Try,
        ast.With,
        ast.AsyncWith,
        ast.Match,
    }
    | ({ast.TryStar} if hasattr(ast, "TryStar") else set())
)
_EXITS = (ast.Return, ast.Raise, ast.Break, ast.Continue, ast.Assert)


class Summary:
    """What a statement can do to a flow: the names and ``self.`` attributes it
    may bind anywhere inside (walruses aside: a flow of a name a walrus binds
    skips nothing), and whether a path may leave it early (``return``,
    ``raise``, ``break``, ``continue``, ``assert``)."""

    __slots__ = ("attrs", "exits", "names", "opaque")

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.attrs: set[str] = set()
        self.exits = False
        self.opaque = False  # a global, a star import: not summarised

    def binds(self, flow: Flow) -> bool:
        if self.opaque:
            return True
        if flow.attr is None:
            return flow.key in self.names
        return flow.attr in self.attrs

    def add(self, other: Summary) -> None:
        self.names |= other.names
        self.attrs |= other.attrs
        self.exits = self.exits or other.exits
        self.opaque = self.opaque or other.opaque

    def targets(self, stmt: ast.stmt) -> None:
        kind = type(stmt)
        if kind is ast.Expr or kind is ast.Pass:
            return  # the most common statements bind nothing
        if kind is ast.Assign:
            for target in stmt.targets:
                self._target(target)
        elif kind is ast.AnnAssign or kind is ast.AugAssign:
            self._target(stmt.target)
        elif kind in _EXITS:
            self.exits = True
        elif kind is ast.For or kind is ast.AsyncFor:
            self._target(stmt.target)
        elif kind is ast.With or kind is ast.AsyncWith:
            for item in stmt.items:
                if item.optional_vars is not None:
                    self._target(item.optional_vars)
        elif kind in _NO_DESCENT:
            self.names.add(stmt.name)
        elif kind is ast.Import or kind is ast.ImportFrom:
            for alias in stmt.names:
                if alias.name == "*":
                    self.opaque = True
                self.names.add(alias.asname or alias.name.split(".")[0])
        elif kind is ast.Global or kind is ast.Nonlocal:
            self.opaque = True
        elif kind is ast.Delete:
            for target in stmt.targets:
                self._target(target)
        elif kind in _TRY:
            for handler in stmt.handlers:
                if handler.name:
                    self.names.add(handler.name)
        elif kind is ast.Match:
            for case in stmt.cases:
                self.names |= _pattern_names(case.pattern)
        else:
            lazy = getattr(stmt, "lazy_name", None)  # a module's unparsed block
            if lazy is not None:
                self.names.add(lazy)

    def _target(self, target: ast.AST) -> None:
        kind = type(target)
        if kind is ast.Name:
            self.names.add(target.id)
        elif kind is ast.Attribute:
            self.attrs.add(target.attr)
        elif kind is ast.Tuple or kind is ast.List:
            for element in target.elts:
                self._target(element)
        elif kind is ast.Starred:
            self._target(target.value)


class BodyIndex:
    """One pass over a block of code, shared by the flows of all its names: a
    :class:`Summary` of each compound statement and of the whole block, and
    each statement's enclosing compound statement."""

    def __init__(self, body: Sequence[ast.stmt]) -> None:
        self.summaries: dict[int, Summary] = {}
        self.parents: dict[int, ast.stmt] = {}
        self.inert: set[int] = set()  # statements that change no flow
        self.simple: dict[int, Summary] = {}  # what the others bind
        self.whole = Summary()
        self._index(body, None, self.whole)

    def _index(self, stmts: Sequence[ast.stmt], parent, into: Summary) -> None:
        parents, summaries, inert = self.parents, self.summaries, self.inert
        for stmt in stmts:
            if parent is not None:
                parents[id(stmt)] = parent
            kind = type(stmt)
            if kind in _COMPOUND:
                own = Summary()
                own.targets(stmt)
                for block in statements.blocks(stmt):
                    self._index(block, stmt, own)
                summaries[id(stmt)] = own
                into.add(own)
            elif kind is ast.Expr or kind is ast.Pass:
                inert.add(id(stmt))  # binds nothing, leaves nothing
            else:
                own = Summary()
                own.targets(stmt)
                if not (own.exits or own.opaque or own.names or own.attrs):
                    inert.add(id(stmt))
                else:
                    self.simple[id(stmt)] = own
                into.add(own)


_NO_DESCENT = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


_TRY = (ast.Try, ast.TryStar) if hasattr(ast, "TryStar") else (ast.Try,)


def _carries(fact: Fact, stmt: ast.AugAssign) -> bool:
    """Does ``fact`` already hold an update by ``stmt`` (a loop around it)?"""
    pending = [fact.defn]
    seen = set()
    while pending:
        defn = pending.pop()
        if id(defn) in seen:
            continue
        seen.add(id(defn))
        if defn.stmt is stmt:
            return True
        pending.extend(f.defn for f in defn.previous)
    return False


def _strip(facts: Iterable[Fact], inner: set[int]) -> list[Fact]:
    """Forget the tests inside a loop body: the next round evaluates them anew."""
    if not inner:
        return _unique(facts)
    return _unique(
        Fact(f.defn, frozenset(c for c in f.conds if id(c[1]) not in inner))
        for f in facts
    )


_BODY_FIELDS = frozenset(statements.BLOCK_FIELDS)


def _own_expressions(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The expressions of ``stmt`` itself, in order, not those of the statements
    it holds, nor of the lambdas and functions it defines."""
    pending: list[ast.AST] = []
    for name, value in ast.iter_fields(stmt):
        if name in _BODY_FIELDS:
            continue
        if isinstance(value, list):
            pending.extend(v for v in value if isinstance(v, ast.AST))
        elif isinstance(value, ast.AST):
            pending.append(value)
    while pending:
        node = pending.pop(0)
        yield node
        if isinstance(node, ast.Lambda):
            continue
        pending[:0] = [c for c in ast.iter_child_nodes(node)]


def _irrefutable(pattern: ast.AST) -> bool:
    """Does ``pattern`` match every subject (``_``, a capture, an ``|`` of
    one)?"""
    if isinstance(pattern, ast.MatchAs):
        return pattern.pattern is None or _irrefutable(pattern.pattern)
    if isinstance(pattern, ast.MatchOr):
        return any(_irrefutable(p) for p in pattern.patterns)
    return False


def _pattern_names(pattern: ast.AST) -> set[str]:
    names = set()
    for node in walk_nodes(pattern):
        for field in ("name", "rest"):
            value = getattr(node, field, None)
            if isinstance(value, str):
                names.add(value)
    return names


def walrus_names(node: ast.AST) -> frozenset[str]:
    """Every name a walrus binds somewhere in ``node``."""
    return frozenset(
        n.target.id
        for n in walk_nodes(node)
        if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name)
    )


class Unbound:
    """The flow of a name no statement of the block binds: its entry value
    everywhere (the paths' conditions come with the names that are bound)."""

    def __init__(self) -> None:
        self.end = [Fact(ENTRY, frozenset())]
        self.returns: list = []

    def at(self, stmt: ast.AST) -> list[Fact]:
        return self.end

    def defined_by(self, stmt: ast.AST) -> list[Def]:
        return []


UNBOUND = Unbound()
