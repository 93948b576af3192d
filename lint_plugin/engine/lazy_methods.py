"""The methods of a class read whole, parsed on first need.

A class that may be a draft backend is read whole, because KVI003 follows a
width through any assignment the class makes. Yet about half of such a class's
lines sit in methods holding nothing a rule starts from (no allocation, launch
or guard call, no helper, no clause of a formula): 14,374 of the 32,645 lines of
0.5.23's classes read whole, of which widths asked for 85. ``check`` parses such
a method as a one-line stub (:func:`skeleton`); :func:`attach` puts in the
stub's place a node that parses the method's own text the first time any field
but its name, decorators and rows is read (:class:`LazyFunctionDef`). The values
analysis, the walk's bindings and every other reader therefore see the tree a
whole parse gives, only later, and only of what they read.

The walk defers such a method's own facts the same way
(:class:`lint_plugin.engine.facts.LazyFunctionFacts`). A method whose text does
not parse back into the stub's place, or whose walk finds what no deferred
method may hold, raises :class:`Misread`, a ``SyntaxError``: the whole file
decides, as for a region the line scan misread.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from lint_plugin.engine import syntax, vocabulary
from lint_plugin.engine.allocations import allocating_functions
from lint_plugin.records import record
from lint_plugin.roles import role_of_name

TYPE_CHECKING = False  # not `typing`: its import costs milliseconds every run
if TYPE_CHECKING:
    from lint_plugin.engine.scan import Layout


class Misread(SyntaxError):
    """A deferred method is not what the line scan took it for."""


@record(frozen=True)
class Deferred:
    """A method of a class read whole left unparsed: file rows (0-based)."""

    row: int  # the ``def`` line
    end: int  # the first row after its block
    name: str
    is_async: bool
    is_class: bool = False  # a class stubbed the same way (package_tree)


# What any rule's walk starts from, besides the fact rows: a helper (or a name
# it is imported under), the guard, the kernel.
_ALWAYS_READ = (vocabulary.helper_prefix(), vocabulary.GUARD, vocabulary.KERNEL)


def may_defer(text: str, aliases: Sequence[str], allocators: frozenset[str]) -> bool:
    """May the method ``text`` (with its decorators, when it has some) be left
    unparsed until something reads it? Only when the line scan reads it as
    Python does and it holds nothing a rule starts from (``deferrable``)."""
    return not _misread(text) and deferrable(text, aliases, allocators)


def deferrable(text: str, aliases: Sequence[str], allocators: frozenset[str]) -> bool:
    """Does the method ``text`` hold nothing a rule starts from? No fact row
    (an allocator, the kernel or the guard as a whole word, by any name the
    file gives them: every call the walk records is one), no helper and no
    alias of one, and not both words of a statement rule's clause (as a region
    must, to be parsed at all; a role's anchor, such as ``topk``, counts only in
    a name of some role). Substring tests: a superset of what the walk
    matches."""
    # Cheapest first: most methods of a draft backend name a clause.
    seeds = [w for w in vocabulary.region_seed_words() if w in text]
    if (
        seeds
        and any(w in text for w in vocabulary.second_word_list())
        and any(_seeds_a_clause(text, w) for w in seeds)
    ):
        return False
    if any(word in text for word in _ALWAYS_READ) or any(a in text for a in aliases):
        return False
    return not vocabulary.fact_rows(text, allocators)


def _seeds_a_clause(text: str, word: str) -> bool:
    """Can ``word`` in ``text`` start a clause? A role's anchor (``topk``) only
    in a name of some role: a formula's leaf is a name of its role, and an alias
    (``k = self.topk``) is assigned from one; ``_ensure_spec_v2_topk_supported``
    or ``topk_p`` is neither. Any other seed (a helper, the guard), anywhere."""
    if word not in vocabulary.role_anchor_words():
        return True
    start = text.find(word)
    while start >= 0:
        first, last = vocabulary.identifier_around(text, start, start + len(word))
        if role_of_name(text[first:last]) is not None:
            return True
        start = text.find(word, last)
    return False


def plan(
    layout: Layout,
    class_row: int,
    aliases: Sequence[str],
    allocators: frozenset[str],
) -> list[Deferred]:
    """The methods of the class at ``row`` to leave unparsed. The one ending
    the class is always parsed: the class's own end is its end."""
    lines, text = layout.lines, layout.text
    class_end = layout.block_end(class_row)
    # A method that calls a function that allocates: KVI003 judges the call.
    calls_allocator = allocating_functions(text, allocators).callers
    found = []
    for row, kind, name in layout.children(class_row):
        if kind != "def" or name in calls_allocator:
            continue
        end = layout.block_end(row)
        if end >= class_end:
            continue
        method = text[layout.offset(row) : layout.offset(end)]
        if not may_defer(method, aliases, allocators):
            continue
        found.append(Deferred(row, end, name, is_async_def(lines[row])))
    return found


def is_async_def(line: str) -> bool:
    return line.lstrip().startswith("async")


def skeleton(lines: list[str], start: int, end: int, deferred: list[Deferred]) -> str:
    """The text of rows ``[start, end)`` with each deferred method a stub on its
    ``def`` row and blank rows below it: every other row, and so every other
    node's position, is unchanged."""
    kept = lines[start:end]
    for method in deferred:
        line = lines[method.row]
        indent = line[: len(line) - len(line.lstrip())]
        if method.is_class:
            stub = f"class {method.name}: pass"
        else:
            keyword = "async def " if method.is_async else "def "
            stub = f"{keyword}{method.name}(): pass"
        at = method.row - start
        kept[at] = indent + stub
        kept[at + 1 : method.end - start] = [""] * (method.end - method.row - 1)
    return "\n".join(kept) + "\n"


# Every field a stub lacks: what the method's own parse gives. Its name, its
# decorators (parsed with the stub) and where it starts are known without it;
# where it ends is the parser's to say (readers of a class body look at the
# end of the one statement that can hold a row: engine/flow/scopes).
def _misread(text: str) -> bool:
    """Could the line scan misjudge where this method ends, or what its words
    are? A backslash can continue a line onto one the scan takes for the next
    statement; a form feed resets the column Python counts indentation from;
    identifiers are read NFKC-normalised (a fullwidth `t` reads as `t`)."""
    return "\\\n" in text or "\x0c" in text or not text.isascii()


def _lazy_fields(base: type) -> tuple[str, ...]:
    return (
        *(f for f in base._fields if f not in ("name", "decorator_list")),
        "end_lineno",
        "end_col_offset",
    )


def _field(name: str) -> property:
    def get(self):
        found = self.__dict__
        if name not in found:
            materialize(self)
        return found[name]

    def put(self, value) -> None:
        self.__dict__[name] = value

    return property(get, put)


def _lazy_type(base: type) -> type:
    # Named as its base: `ast.NodeVisitor` dispatches on the class's name.
    fields = _lazy_fields(base)
    namespace = {"__slots__": (), "__module__": "ast", "_lazy": fields}
    namespace.update((f, _field(f)) for f in fields)
    made = type(base.__name__, (base,), namespace)
    made.__qualname__ = base.__name__
    return made


LazyFunctionDef = _lazy_type(ast.FunctionDef)
LazyAsyncFunctionDef = _lazy_type(ast.AsyncFunctionDef)
_LAZY = (LazyFunctionDef, LazyAsyncFunctionDef)


def is_pending(node: ast.AST) -> bool:
    """Is ``node`` a method not parsed yet?"""
    return type(node) in _LAZY and "_pending" in node.__dict__


def pending_text(node: ast.AST) -> str:
    """The rows of a method not parsed yet (its ``def`` line to its block's
    end)."""
    return node.__dict__["_pending"].text


@record(frozen=True)
class _Pending:
    text: str  # the method's rows, from its ``def`` line
    path: str
    last: int  # the last row of its block: it ends there or above


def within(node: ast.AST, row: int) -> bool:
    """False when ``node`` is a method not parsed yet whose block ends above
    ``row`` (so it cannot hold it); True otherwise: its end is then read."""
    pending = node.__dict__.get("_pending")
    return pending is None or row <= pending.last


def parse_region(
    snippet: str,
    path: str,
    layout: Layout,
    start: int,
    end: int,
    indent: bool,
    aliases: Sequence[str],
    allocators: frozenset[str],
) -> ast.Module:
    """The tree of ``snippet``, check's region of rows ``[start, end)``
    (``indent``: it is wrapped in an ``if``); a class read whole with the
    methods it may defer left as stubs, lazy nodes in their place."""
    deferred = _region_plan(layout, start, end, aliases, allocators)
    lines, wrap = layout.lines, "if 1:\n" if indent else ""
    offset = start - 1 if indent else start  # the tree's first row, in the file
    while deferred:
        tree = syntax.parse(wrap + skeleton(lines, start, end, deferred), path)
        misplaced = attach(tree, deferred, offset, lines, path, aliases, allocators)
        if not misplaced:
            return tree
        deferred = [m for m in deferred if m not in misplaced]
    return syntax.parse(snippet, path)


def _region_plan(
    layout: Layout,
    start: int,
    end: int,
    aliases: Sequence[str],
    allocators: frozenset[str],
) -> list[Deferred]:
    """``plan`` for a region that is a class read whole, else nothing."""
    if layout.whole_class(start) is None or layout.block_end(start) != end:
        return []
    if "\x0c" in layout.text[layout.offset(start) : layout.offset(end)]:
        # Python counts indentation from a form feed: the class may end before
        # the line scan says, and its last method is then not the one it says.
        return []
    return plan(layout, start, aliases, allocators)


def attach(
    tree: ast.Module,
    deferred: list[Deferred],
    row_offset: int,
    lines: list[str],
    path: str,
    aliases: Sequence[str],
    allocators: frozenset[str],
) -> list[Deferred]:
    """Put a lazy node in place of each stub of ``tree`` (parsed from
    ``skeleton``; its rows are the file's less ``row_offset``) that stands in
    the class's own body and whose decorators, with the method, still pass
    ``may_defer`` (the walk reads a decorator with its method). The others
    are returned (a method under an ``if`` of the class body: the ``if``
    would end where its stub ends), and the caller parses again without
    them."""
    by_line = {m.row - row_offset + 1: m for m in deferred}
    placed = set()
    cls = tree.body[0]
    while isinstance(cls, ast.If):  # an indented region
        cls = cls.body[0]
    for index, stmt in enumerate(cls.body):
        method = by_line.get(stmt.lineno)
        if method is None or not isinstance(stmt, _FUNCTIONS):
            continue
        if stmt.decorator_list:
            first = stmt.decorator_list[0].lineno - 1 + row_offset
            if not may_defer("\n".join(lines[first : method.end]), aliases, allocators):
                continue
        cls.body[index] = _lazy_node(stmt, method, lines, path)
        placed.add(method)
    return [m for m in deferred if m not in placed]


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _lazy_node(stub, method: Deferred, lines: list[str], path: str) -> ast.stmt:
    kind = LazyAsyncFunctionDef if method.is_async else LazyFunctionDef
    node = kind(
        name=stub.name,
        decorator_list=stub.decorator_list,
        lineno=stub.lineno,
        col_offset=stub.col_offset,
    )
    node.__dict__["_pending"] = _Pending(
        "\n".join(lines[method.row : method.end]) + "\n",
        path,
        stub.lineno + method.end - method.row - 1,
    )
    return node


def materialize(node: ast.AST) -> None:
    """Parse a deferred method's own text into ``node``, in place."""
    found = node.__dict__
    pending = found.pop("_pending", None)
    if pending is None:
        return
    # Rows above it as blank lines and an `if` for its indentation: the
    # method's nodes get the rows and columns a whole parse gives them.
    text = "\n" * (node.lineno - 2) + "if 1:\n" + pending.text
    tree = syntax.parse(text, pending.path)
    inner = tree.body[0].body if tree.body else []
    method = inner[0] if len(inner) == 1 else None
    base = type(node).__mro__[1]
    if (
        type(method) is not base
        or method.name != node.name
        or (method.lineno, method.col_offset) != (node.lineno, node.col_offset)
    ):
        found["_pending"] = pending  # still unparsed: the file decides
        raise Misread(
            f"method {node.name} does not parse where the line scan put it",
            (pending.path, node.lineno, node.col_offset + 1, ""),
        )
    for name in type(node)._lazy:
        found[name] = getattr(method, name)
