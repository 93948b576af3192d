"""What the engine's walk learns about a file, for the rules to decide on.

The walk (:mod:`lint_plugin.analysis`) records facts and judges nothing beyond the
two inline formulas: bindings of locals and ``self.`` attributes, torch allocations,
helper calls and bindings of the helpers' names, launches of the draft index kernel.
Each rule in ``rules/`` reads these and decides on its own.

:func:`expand` is how a rule sees through the names people give a width: it returns
an expression in which each local and ``self.`` attribute is replaced by the value
last assigned to it before the point of use (a copy; the file's own tree is never
changed), so ``w = max_bs * ctx`` with ``ctx = self.max_context_len`` reads as
``max_bs * self.max_context_len`` wherever ``w`` is used.
"""

from __future__ import annotations

import ast
import bisect
import re

from lint_plugin.allocations import KERNEL as KERNEL  # the rules import it here
from lint_plugin.allocations import is_draft_backend_class, may_be_draft_backend
from lint_plugin.records import field, record
from lint_plugin.roles import Role, role_of_name

GUARD = "assert_buffer_fits"

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
    launches: list[Launch] = field(default_factory=list)
    # self.<attr> anywhere in the class, for the attributes that are a topk or a
    # draft step count (the only ones the rules read by name).
    attributes: set[str] = field(default_factory=set)

    @property
    def topk_attr(self) -> str | None:
        """The class's own topk (``self.topk``), if it keeps one."""
        found = sorted(a for a in self.attributes if role_of_name(a) is Role.TOPK)
        return found[0] if found else None

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
        return (
            is_draft_backend_class(self.node.name)
            or self.keeps_steps
            or bool(self.launches)
        )

    def attribute_binding(self, attr: str, function: FunctionFacts, at: Position):
        """``self.attr``'s value at ``at`` in ``function``: the last assignment
        before it there, else the only assignment in the class."""
        found = function.attrs.before(attr, at)
        if found is not None:
            return found
        everywhere = [b for f in self.functions for b in f.attrs.all(attr)]
        return everywhere[0] if len(everywhere) == 1 else None


@record(eq=False)
class HelperBinding:
    """A helper's name bound by ``node`` (a def, an assignment, an import)."""

    name: str
    node: ast.AST
    kind: str  # "function", "class", "assignment", "import"


@record(eq=False)
class ImportedName:
    """``from <module> import <name>`` of a helper or of the guard (KVI007)."""

    name: str
    alias: ast.alias
    statement: ast.ImportFrom
    trusted: bool  # from a module the helpers are trusted from


def helper_names() -> dict[str, str]:
    """The helpers' own names, before any import gives them others."""
    from lint_plugin.formulas import HELPER_SLOTS

    return {name: name for name in HELPER_SLOTS}


# `from <helpers module> import draft_kv_indices_used_len as used_len`: the other
# names a file may call the helpers by, read from its text (any module: a
# superset of the trusted imports the walk records).
_HELPER_ALIAS = re.compile(r"\bdraft_kv_indices_\w+\s+as\s+(\w+)")


def helper_aliases(text: str) -> tuple[str, ...]:
    """Names ``text`` may import a helper under, besides the helpers' own."""
    if "draft_kv_indices_" not in text:
        return ()
    found = set(_HELPER_ALIAS.findall(text))
    return tuple(sorted(a for a in found if "draft_kv_indices_" not in a))


def read_whole(name: str, text: str, aliases: tuple[str, ...] = ()) -> bool:
    """Is the class ``name`` (its source ``text``) read whole by the fast paths
    (check's regions, the flake8 plugin), as by a walk of the whole file? When it
    may be a draft backend (KVI003 reads its allocations through every
    assignment), or may call a helper (KVI004 reads a call's ``self.``
    arguments through the attributes the class assigns); ``aliases``: see
    ``helper_aliases``."""
    return (
        is_draft_backend_class(name)
        or may_be_draft_backend(text)
        or "draft_kv_indices_" in text
        or any(alias in text for alias in aliases)
    )


@record(eq=False)
class ModuleFacts:
    classes: list[ClassFacts] = field(default_factory=list)
    # Names the helpers are called by here: their own, and trusted import aliases.
    helper_names: dict[str, str] = field(default_factory=helper_names)
    helper_calls: list[HelperCall] = field(default_factory=list)
    helper_bindings: list[HelperBinding] = field(default_factory=list)
    # Imports of a helper or of the guard, whatever module they name.
    imports: list[ImportedName] = field(default_factory=list)


# ---- seeing through names ---------------------------------------------------

_NO_OP_WRAPPERS = frozenset({"int", "operator.index"})
_MAX_DEPTH = 24


def self_attribute(node: ast.AST) -> str | None:
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    ):
        return node.attr
    return None


def call_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Name):
            return f"{func.value.id}.{func.attr}"
        return func.attr
    return None


def unwrap(node: ast.expr) -> ast.expr:
    """``int(x)`` and similar no-op wrappers stand for ``x``."""
    while (
        isinstance(node, ast.Call)
        and call_name(node) in _NO_OP_WRAPPERS
        and len(node.args) == 1
        and not node.keywords
    ):
        node = node.args[0]
    return node


def binding_of(
    node: ast.expr, function: FunctionFacts, at: Position
) -> tuple[Binding, FunctionFacts] | None:
    """Where the local or ``self.`` attribute ``node`` got its value at ``at``."""
    if isinstance(node, ast.Name):
        scope: FunctionFacts | None = function
        while scope is not None:
            found = scope.locals.before(node.id, at)
            if found is not None:
                return found, scope
            if node.id in scope.params:
                return None
            at = position(scope.node)
            scope = scope.parent
        return None
    attr = self_attribute(node)
    if attr is not None and function.cls is not None:
        found = function.cls.attribute_binding(attr, function, at)
        if found is not None:
            return found, found.owner or function
    return None


def definition(
    node: ast.expr, function: FunctionFacts, at: Position
) -> tuple[ast.expr, FunctionFacts, Position]:
    """Follow plain assignments and no-op wrappers to where a value is made."""
    for _ in range(_MAX_DEPTH):
        node = unwrap(node)
        found = binding_of(node, function, at)
        if found is None:
            break
        binding, function = found
        if binding.value is None or binding.op is not None:
            break
        node, at = binding.value, binding.at
    return node, function, at


def expand(
    node: ast.expr, function: FunctionFacts, at: Position, depth: int = 0
) -> ast.expr:
    """A copy of ``node`` with locals and ``self.`` attributes replaced by their
    values at ``at`` and no-op wrappers removed (see the module docstring)."""
    if depth > _MAX_DEPTH:
        return node
    node = unwrap(node)
    if isinstance(node, (ast.Name, ast.Attribute)):
        if role_of_name(node.id if isinstance(node, ast.Name) else node.attr):
            # A name that says what it is keeps its role, whatever it was
            # assigned from (`self.speculative_num_steps = steps`).
            return node
        found = binding_of(node, function, at)
        if found is None:
            return node
        binding, owner = found
        if binding.value is None:
            return node
        value = expand(binding.value, owner, binding.at, depth + 1)
        if binding.op is None:
            return value
        previous = ast.Name(id="?", ctx=ast.Load())
        before = binding_of(node, owner, binding.at)
        if before is not None:
            previous = expand(node, owner, binding.at, depth + 1)
        return ast.BinOp(left=previous, op=binding.op, right=value)
    if isinstance(node, ast.BinOp):
        return ast.BinOp(
            left=expand(node.left, function, at, depth + 1),
            op=node.op,
            right=expand(node.right, function, at, depth + 1),
        )
    if isinstance(node, (ast.Tuple, ast.List)):
        return type(node)(
            elts=[expand(e, function, at, depth + 1) for e in node.elts],
            ctx=ast.Load(),
        )
    if isinstance(node, ast.Call):
        return ast.Call(
            func=node.func,
            args=[expand(a, function, at, depth + 1) for a in node.args],
            keywords=[
                ast.keyword(arg=k.arg, value=expand(k.value, function, at, depth + 1))
                for k in node.keywords
            ],
        )
    return node
