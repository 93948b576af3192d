"""What the engine's walk learns about a file, for the rules to decide on.

The walk (:mod:`lint_plugin.engine.analysis`) records facts and judges nothing beyond
the two inline formulas: bindings of locals and ``self.`` attributes, torch allocations,
helper calls and bindings of the helpers' names, launches of the draft index kernel.
Each rule in ``rules/`` reads these and decides on its own; what a value can be worth,
on every path, is the width analysis's (:mod:`lint_plugin.engine.flow.widths`).
"""

from __future__ import annotations

import ast
import bisect
import re

from lint_plugin.engine import vocabulary
from lint_plugin.engine.draft_backend import named_draft_backend
from lint_plugin.records import field, record
from lint_plugin.roles import Role, role_of_name

TYPE_CHECKING = False  # not `typing`: its import costs milliseconds every run
if TYPE_CHECKING:
    from lint_plugin.algebra.arith import Expr


Position = tuple[int, int]


def position(node: ast.AST) -> Position:
    return (node.lineno, node.col_offset)


@record(eq=False)
class Binding:
    """``name = value`` (``op`` set for ``name op= value``) at ``at``."""

    at: Position
    value: ast.expr | None  # None: bound to something unknown (a loop target, ...)
    statement: ast.stmt | None = None
    op: ast.operator | None = None
    owner: FunctionFacts | None = None  # the function whose code binds it

    # One per assignment of a class read whole: the generic record __init__
    # (a dict of the arguments, a loop over the fields) was 5% of the engine.
    def __init__(
        self,
        at: Position,
        value: ast.expr | None,
        statement: ast.stmt | None = None,
        op: ast.operator | None = None,
        owner: FunctionFacts | None = None,
    ) -> None:
        self.at = at
        self.value = value
        self.statement = statement
        self.op = op
        self.owner = owner


class Bindings:
    """Every binding of a name in one scope, in source order."""

    def __init__(self) -> None:
        self._by_name: dict[str, list[Binding]] = {}

    def add(self, name: str, binding: Binding) -> None:
        self._by_name.setdefault(name, []).append(binding)

    def before(self, name: str, at: Position) -> Binding | None:
        """The last binding of ``name`` strictly before ``at``."""
        found = self._by_name.get(name)
        if not found:
            return None
        index = bisect.bisect_left([b.at for b in found], at)
        return found[index - 1] if index else None

    def all(self, name: str) -> list[Binding]:
        return self._by_name.get(name, [])

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def names(self) -> set[str]:
        return set(self._by_name)


@record(eq=False)
class FunctionFacts:
    node: ast.FunctionDef | ast.AsyncFunctionDef
    parent: FunctionFacts | None
    cls: ClassFacts | None
    params: list[str] = field(default_factory=list)
    locals: Bindings = field(default_factory=Bindings)
    attrs: Bindings = field(default_factory=Bindings)  # self.<attr> in this function
    # Statements and calls that may check a capacity: `assert ...`, `if ...:
    # raise`, `assert_buffer_fits(...)` (KVI006 reads them).
    guards: list[ast.AST] = field(default_factory=list)


def _deferred(name: str, bindings: bool = False) -> property:
    """A field of :class:`LazyFunctionFacts`: filled by its walk, which a read
    starts (a bindings field answers for names the text lacks without it)."""

    def get(self):
        found = self.__dict__.get(name)
        if found is not None:
            return found
        if bindings:
            return _Unwalked(self, name)
        self.gathered()
        return self.__dict__[name]

    def put(self, value) -> None:
        self._gather = None  # released: nothing left to walk
        self.__dict__[name] = value

    return property(get, put)


class LazyFunctionFacts(FunctionFacts):
    """A method of a class read whole whose walk waits until something reads
    its facts (see :mod:`lint_plugin.engine.lazy_methods`). ``gather`` walks it
    and fills these fields; a name its text never spells has no binding, so
    asking for one does not walk it."""

    def __init__(
        self, node, cls: ClassFacts | None, gather, text: str, assigns
    ) -> None:
        self.__dict__.update(node=node, parent=None, cls=cls)
        self._gather = gather
        self._text = text
        self._assigns = assigns  # assigns(attr): may it assign self.<attr>?

    def gathered(self) -> None:
        """Walk the method now (once)."""
        gather, self._gather = self._gather, None
        if gather is not None:
            gather(self)

    def fill(self) -> None:
        """Empty fields for the walk to fill (it is walking this method)."""
        self._gather = None
        self.__dict__.update(params=[], locals=Bindings(), attrs=Bindings(), guards=[])

    params = _deferred("params")
    guards = _deferred("guards")
    locals = _deferred("locals", bindings=True)
    attrs = _deferred("attrs", bindings=True)


class _Unwalked:
    """The bindings of a method not walked yet: a name its text does not hold
    is bound nowhere in it; any other question walks the method first."""

    def __init__(self, owner: LazyFunctionFacts, kind: str) -> None:
        self.owner = owner
        self.kind = kind

    def _walked(self) -> Bindings:
        self.owner.gathered()
        return self.owner.__dict__[self.kind]

    def _may_bind(self, name: str) -> bool:
        if name not in self.owner._text:
            return False
        return self.kind != "attrs" or self.owner._assigns(name)

    def before(self, name: str, at: Position) -> Binding | None:
        return self._walked().before(name, at) if self._may_bind(name) else None

    def all(self, name: str) -> list[Binding]:
        return self._walked().all(name) if self._may_bind(name) else []

    def __contains__(self, name: str) -> bool:
        return self._may_bind(name) and name in self._walked()

    def names(self) -> set[str]:
        return self._walked().names()


@record(eq=False)
class Allocation:
    """A torch allocation call and the name it is assigned to, if any."""

    call: ast.Call
    function: FunctionFacts
    target: str | None


@record(eq=False)
class HelperCall:
    call: ast.Call
    helper: str
    function: FunctionFacts | None


@record(eq=False)
class Launch:
    """``generate_draft_decode_kv_indices[grid](...)``: ``call`` is the launch."""

    call: ast.Call
    function: FunctionFacts


@record(eq=False)
class ClassFacts:
    node: ast.ClassDef
    functions: list[FunctionFacts] = field(default_factory=list)
    allocations: list[Allocation] = field(default_factory=list)
    # Calls of a function or method of the file that names an allocator
    # (``self._alloc_rows(width)``): KVI003 judges what it makes with the
    # values the call gives (``allocations.allocating_functions``).
    calls: list[Allocation] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    # Read whole (it may be a draft backend): every allocation and call above
    # of its methods' own bodies is here.
    read_whole: bool = False
    # self.<attr> anywhere in the class, for the attributes that are a topk or a
    # draft step count (the only ones the rules read by name).
    attributes: set[str] = field(default_factory=set)

    @property
    def topk_attrs(self) -> list[str]:
        """The attributes it keeps that are a topk, by name."""
        return sorted(a for a in self.attributes if role_of_name(a) is Role.TOPK)

    @property
    def topk_attr(self) -> str | None:
        """The class's own topk (``self.topk``), if it keeps one."""
        found = self.topk_attrs
        return found[0] if found else None

    @property
    def keeps_one_topk(self) -> bool:
        """Does it keep one topk attribute only (``self.topk``, not beside a
        ``self.draft_topk``, either of which may be None)?"""
        return len(self.topk_attrs) == 1

    @property
    def keeps_steps(self) -> bool:
        return any(role_of_name(a) is Role.NUM_STEPS for a in self.attributes)

    @property
    def is_draft_backend(self) -> bool:
        """Known by what it does: keeps a topk, and is named like a multi-step draft
        backend or keeps a draft step count or launches the draft index kernel.

        A class keeping no topk writes one branch per request: a row of
        ``max_bs * max_context_len`` is right there, whatever the name says.
        """
        if self.topk_attr is None:
            return False
        return named_draft_backend(self.node) or self.keeps_steps or bool(self.launches)


@record(eq=False)
class HelperBinding:
    """A name the helpers go by (their own, or a trusted import's alias) bound
    by something else: by any form :mod:`lint_plugin.bindings` knows (a def, an
    assignment, a parameter, a walrus, a ``match`` capture, an import from
    another module...). KVI005 reports it; no rule trusts the name in the file
    (``rebound``)."""

    name: str
    node: ast.AST  # the node naming it (lint_plugin.bindings.NameBinding.node)
    kind: str  # a kind of lint_plugin.bindings ("function", "parameter", ...)
    statement: ast.AST | None = None  # the statement (handler, case) holding it


@record(eq=False)
class ImportedName:
    """``from <module> import <name>`` of a helper or of the guard (KVI007)."""

    name: str
    alias: ast.alias
    statement: ast.ImportFrom
    trusted: bool  # from a module the helpers are trusted from


def helper_names() -> dict[str, str]:
    """The helpers' own names, before any import gives them others."""
    from lint_plugin.engine.formulas import HELPER_SLOTS

    return {name: name for name in HELPER_SLOTS}


# `from <helpers module> import draft_kv_indices_used_len as used_len`: the other
# names a file may call the helpers by, read from its text (any module: a
# superset of the trusted imports the walk records).
_PREFIX = vocabulary.helper_prefix()
_HELPER_ALIAS = re.compile(rf"\b{_PREFIX}\w+\s+as\s+(\w+)")


def helper_aliases(text: str) -> tuple[str, ...]:
    """Names ``text`` may import a helper under, besides the helpers' own."""
    found: set[str] = set()
    # `findall` over the text, tried only where the prefix is: the pattern
    # starts with it, and `re` tries a leading `\b` at every offset (14 ms on a
    # 220 kB backend). `match` at an offset reads the character before it for
    # the `\b`, so the matches are findall's, in order, none overlapping.
    start = text.find(_PREFIX)
    while start >= 0:
        match = _HELPER_ALIAS.match(text, start)
        if match is None:
            start = text.find(_PREFIX, start + 1)
        else:
            found.add(match.group(1))
            start = text.find(_PREFIX, match.end())
    return tuple(sorted(a for a in found if _PREFIX not in a))


@record(eq=False)
class Arithmetic:
    """An arithmetic expression of a statement that names a role, flattened
    (its outermost ``+``/``*``; the sums and products inside it are its
    ``arith.subexpressions``), as the walk met it: KVI001 and KVI002 match
    their formulas in it."""

    expr: Expr
    in_annotation: bool  # its text is kept by the program (no fix)


@record(eq=False)
class ModuleFacts:
    classes: list[ClassFacts] = field(default_factory=list)
    # The arithmetic of the rows a rule reads, in the order of the walk.
    arithmetic: list[Arithmetic] = field(default_factory=list)
    # Names the helpers are called by here: their own, and trusted import aliases.
    helper_names: dict[str, str] = field(default_factory=helper_names)
    helper_calls: list[HelperCall] = field(default_factory=list)
    helper_bindings: list[HelperBinding] = field(default_factory=list)
    # The names of ``helper_bindings`` (and of bindings of the names a file may
    # import a helper under): shared by the regions of one file, as
    # ``helper_names`` is; a name here is trusted nowhere in the file.
    rebound: set[str] = field(default_factory=set)
    # Imports of a helper or of the guard, whatever module they name.
    imports: list[ImportedName] = field(default_factory=list)


# ---- names ------------------------------------------------------------------


def self_attribute(node: ast.AST) -> str | None:
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    ):
        return node.attr
    return None
