"""Where names live, for the width analysis: functions, the module, classes.

A :class:`Scope` is a function (or the module) whose names a value is read in:
it keeps one :class:`~lint_plugin.engine.flow.dataflow.Flow` per name it was asked about
and finds the statement holding a node. A :class:`ClassInfo` knows a class's methods and
every assignment to ``self.<attr>`` in them (its bases are resolved by the analysis,
from the file's own classes).
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Iterator, Sequence

from lint_plugin import statements
from lint_plugin.engine.flow.dataflow import (
    UNBOUND,
    BodyIndex,
    Flow,
    Summary,
    walrus_names,
)
from lint_plugin.engine.lazy_methods import materialize, within
from lint_plugin.engine.module_scope import ModuleScope
from lint_plugin.engine.nodes import walk_nodes
from lint_plugin.engine.source import Source

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (*FUNCTIONS, ast.ClassDef, ast.Lambda)

REACH = "<reach>"  # the pseudo-name no statement binds: a Flow of where code runs


class Scope:
    """``node``: the function (None: the module); ``parent``: the scope around
    it (methods skip their class, as Python does); ``cls``: for a method and
    the functions nested in it, the class."""

    def __init__(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef | None,
        source: Source,
        parent: Scope | None,
        module: ModuleScope,
        cls: ClassInfo | None = None,
        self_name: str | None = None,
    ) -> None:
        self.node = node
        self.source = source
        self.parent = parent
        self.module = module
        self.cls = cls
        self.self_name = self_name
        self.params: list[str] = []
        if node is not None:
            args = node.args
            every = (*args.posonlyargs, *args.args, *args.kwonlyargs)
            self.params = [a.arg for a in every]
            for extra in (args.vararg, args.kwarg):
                if extra is not None:
                    self.params.append(extra.arg)
        self._flows: dict[str, Flow] = {}
        self._index: BodyIndex | None = None  # shared by this scope's flows
        self._module_summaries: dict[int, Summary] = {}  # per module statement
        self._walrus: frozenset[str] | None = None
        self._located: dict[int, list[ast.stmt]] = {}
        self._text: str | None = None

    @property
    def is_module(self) -> bool:
        return self.node is None

    def flow(self, key: str) -> Flow:
        found = self._flows.get(key)
        if found is None:
            if self.node is not None and key != REACH and not self._may_bind(key):
                found = self._flows[key] = UNBOUND
                return found
            if self.node is None:
                found = self._flows[key] = self._module_flow(key)
                return found
            else:
                body = self.node.body
                if self._walrus is None:
                    text = self.source.segment(self.node)
                    self._walrus = (
                        walrus_names(self.node) if ":=" in text else frozenset()
                    )
                walrus = key in self._walrus
            found = self._flows[key] = Flow(
                body,
                key,
                walrus=walrus,
                self_name=self.self_name or "self",
                index=self._body_index(),
            )
        return found

    def _module_flow(self, key: str) -> Flow:
        """The module's statements binding ``key``, in order: its value at the
        end of the module (what a function sees when it runs). The statements
        that bind nothing of it change nothing of that value (the module's
        branches are no condition of a caller's path), so they are left out:
        the same statements whatever hands them out (the whole tree, or the
        pieces ``check`` parses)."""
        walrus = ":=" in self.module.source.text
        binders = []
        summaries = self._module_summaries
        for stmt in self.module.statements(key):
            summary = summaries.get(id(stmt))
            if summary is None:
                summary = summaries[id(stmt)] = BodyIndex([stmt]).whole
            if key in summary.names or summary.opaque or walrus:
                binders.append(stmt)
        return Flow(binders, key, walrus=walrus, index=BodyIndex(binders))

    def _body_index(self) -> BodyIndex | None:
        if self.node is None:
            return None
        if self._index is None:
            self._index = BodyIndex(self.node.body)
        return self._index

    def _may_bind(self, key: str) -> bool:
        """Might a statement of this function bind ``key`` (a name, or
        ``self.<attr>``)? First by its text (a binding names it before an
        ``=``, after ``for``/``as``/``import``/``def``/``class``/``del``/
        ``global``, or in a walrus: no such spelling, no binding), then by the
        statements."""
        if self._text is None:  # the body: the header names the parameters
            first, last = self.node.body[0], self.node.body[-1]
            start = self.source.index(first.lineno, first.col_offset)
            end = self.source.index(last.end_lineno, last.end_col_offset)
            self._text = self.source.text[start:end]
        name = key.split(".", 1)[1] if "." in key else key
        if name not in self._text:
            return False
        if not _may_be_bound(self._text, name):
            return False
        whole = self._body_index().whole
        if whole.opaque:
            return True
        if self._walrus is None:
            text = self._text
            self._walrus = walrus_names(self.node) if ":=" in text else frozenset()
        if "." in key:
            return key.split(".", 1)[1] in whole.attrs
        return key in whole.names or key in self._walrus

    def locate(self, node: ast.AST) -> list[ast.stmt]:
        """The statements of this scope holding ``node``, outermost first (a
        nested function's node is held by its ``def``)."""
        found = self._located.get(id(node))
        if found is None:
            found = self._located[id(node)] = _locate(self._body(), node)
        return found

    def _body(self) -> Sequence[ast.stmt]:
        return self.node.body if self.node is not None else ()


_BINDING_WORDS = ("for ", " as ", "import ", "def ", "class ", "del ", "global ")


def _may_be_bound(text: str, name: str) -> bool:
    """A superset of the lines of ``text`` that bind ``name``: it stands before
    an ``=`` (not ``==``, ``<=``...) or a ``:`` (annotated, walrus), or on a line
    of a ``for``/``with ... as``/``import``/``def``/``class``/``del``/``global``.
    String searches only: a regular expression per name costs more to compile
    than the statements it would spare."""
    size = len(name)
    position = text.find(name)
    while position >= 0:
        before = text[position - 1] if position else " "
        after = text[position + size] if position + size < len(text) else " "
        if not (before.isalnum() or before == "_" or after.isalnum() or after == "_"):
            line_start = text.rfind("\n", 0, position) + 1
            line_end = text.find("\n", position)
            rest = text[position + size : line_end if line_end >= 0 else len(text)]
            head = text[line_start:position]
            stripped = rest.lstrip()
            if stripped.startswith(":"):
                return True
            index = rest.find("=")
            while index >= 0:
                prior = rest[index - 1] if index else " "
                following = rest[index + 1] if index + 1 < len(rest) else " "
                if prior not in "=!<>" and following != "=":
                    return True
                index = rest.find("=", index + 2)
            padded = f" {head.lstrip()}"
            if any(word in padded for word in _BINDING_WORDS) or "," in head:
                return True
        position = text.find(name, position + size)
    return False


def _locate(body: Sequence[ast.stmt], node: ast.AST) -> list[ast.stmt]:
    where = (node.lineno, node.col_offset)
    end = (node.end_lineno, node.end_col_offset)
    chain: list[ast.stmt] = []
    block: Sequence[ast.stmt] = body
    while block:
        # Statements of a block are in order: the last starting at or before
        # the node is the only one that can hold it.
        index = bisect.bisect_right(block, where, key=_start) - 1
        stmt = block[index] if index >= 0 else None
        if stmt is None or end > (stmt.end_lineno, stmt.end_col_offset):
            for stmt in block:  # a handler's or a case's body: no one order
                if _start(stmt) <= where and end <= (
                    stmt.end_lineno,
                    stmt.end_col_offset,
                ):
                    break
            else:
                return chain
        chain.append(stmt)
        if stmt is node or isinstance(stmt, _SCOPES):
            return chain
        block = list(statements.nested_statements(stmt))
    return chain


def _start(stmt: ast.stmt) -> tuple[int, int]:
    return (stmt.lineno, stmt.col_offset)


class ClassInfo:
    """A class of the file: ``outer`` is the scope its statement runs in."""

    def __init__(self, node: ast.ClassDef, source: Source, outer: Scope) -> None:
        self.node = node
        self.source = source
        self.outer = outer
        self.methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        for stmt in node.body:
            if isinstance(stmt, FUNCTIONS):
                self.methods[stmt.name] = stmt
        self._sites: dict[str, list[tuple[ast.stmt, ast.AST]]] | None = None
        self._assignments: dict[str, list[ast.stmt]] | None = None
        self._text = ""
        self._scopes: dict[int, Scope] = {}
        self.bases: list[ClassInfo] | None = None  # resolved by the analysis

    def release(self) -> None:
        """Forget the scopes made for its methods (each points back here)."""
        self._scopes.clear()
        self.bases = None

    def attribute_sites(self, attr: str) -> list[tuple[ast.stmt, ast.AST]]:
        """``(statement, function)`` of every assignment to ``self.<attr>`` in
        the class's methods and the functions nested in them.

        Found from the rows that mention the attribute (a class of thousands of
        lines assigns one attribute on a few of them), each looked up in the
        tree; methods whose first parameter is not ``self`` are read whole."""
        found = self._sites.get(attr) if self._sites is not None else None
        if found is not None:
            return found
        if self._sites is None:
            self._sites = {}
            self._text = self.source.segment(self.node)
        found = []
        for row in attribute_rows(self._text, attr, self.node.lineno):
            chain = _at_row(self.node.body, row)
            if not chain:
                continue
            stmt = chain[-1]
            method = chain[0] if isinstance(chain[0], FUNCTIONS) else None
            if method is None:
                continue
            self_name = _self_name(method)
            function = next(
                (s for s in reversed(chain) if isinstance(s, FUNCTIONS)), method
            )
            if self_name is None or stmt is function:
                continue
            if (
                any(
                    name == attr
                    for target in _targets(stmt)
                    for name in _self_attributes(target, self_name)
                )
                and (stmt, function) not in found
            ):
                found.append((stmt, function))
        self._sites[attr] = found
        return found

    def class_assignments(self, name: str) -> list[ast.stmt]:
        """``name = ...`` statements of the class body itself (indexed once:
        a class of thousands of methods is asked for each of them)."""
        if self._assignments is None:
            self._assignments = {}
            for stmt in self.node.body:
                for target in _targets(stmt):
                    if isinstance(target, ast.Name):
                        self._assignments.setdefault(target.id, []).append(stmt)
        return self._assignments.get(name, [])

    def scope(self, function: ast.AST) -> Scope:
        """The scope of a method of this class, or of a function nested in one."""
        found = self._scopes.get(id(function))
        if found is None:
            method = self._method_holding(function)
            if method is None or method is function:
                found = Scope(
                    function,
                    self.source,
                    self.outer,
                    self.outer.module,
                    self,
                    _self_name(function),
                )
            else:
                parent = self.scope(method)
                for stmt in parent.locate(function):
                    if isinstance(stmt, FUNCTIONS) and stmt is not function:
                        parent = self.scope(stmt)
                found = Scope(
                    function,
                    self.source,
                    parent,
                    self.outer.module,
                    self,
                    parent.self_name,
                )
            self._scopes[id(function)] = found
        return found

    def _method_holding(self, function: ast.AST) -> ast.AST | None:
        if self.methods.get(getattr(function, "name", None)) is function:
            return function  # a method itself, without a look at the others
        for method in self.methods.values():
            if method is function:
                return method
            if not within(method, function.lineno):
                continue  # a method not parsed yet, ending before it
            if (method.lineno, method.col_offset) <= (
                function.lineno,
                function.col_offset,
            ) and (function.end_lineno, function.end_col_offset) <= (
                method.end_lineno,
                method.end_col_offset,
            ):
                return method
        return None


def attribute_rows(text: str, attr: str, first_row: int) -> list[int]:
    """Rows of ``text`` (its first numbered ``first_row``) where ``.attr``
    stands, ascending, each once."""
    rows: list[int] = []
    size = len(attr)
    counted, row = 0, first_row
    # `.attr` by str.find (a pattern starting with `\w+` is tried at every
    # offset: milliseconds on a class of thousands of lines).
    position = text.find(attr)
    while position >= 0:
        after = position + size
        tail = text[after] if after < len(text) else " "
        index = position - 1
        while index >= 0 and text[index] in " \t":
            index -= 1
        if index >= 0 and text[index] == "." and not (tail.isalnum() or tail == "_"):
            row += text.count("\n", counted, position)
            counted = position
            if not rows or rows[-1] != row:
                rows.append(row)
        position = text.find(attr, after)
    return rows


def may_assign_attribute(node: ast.AST, attr: str, text: str) -> bool:
    """May the method ``node`` (or a function inside it), whose source is
    ``text``, assign ``self.<attr>``? For a method not parsed yet, found from
    the rows its text spells ``.attr`` on: only those statements of its tree
    are looked at (a method reading ``self.num_heads`` on every other line is
    parsed, not walked; once parsed for one attribute, it is still not walked
    for the next)."""
    rows = attribute_rows(text, attr, node.lineno)
    if not rows:
        return False
    materialize(node)  # nothing, if an earlier question parsed it
    return binds_self_attribute(node.body, rows, attr)


def binds_self_attribute(
    body: Sequence[ast.stmt], rows: Sequence[int], attr: str
) -> bool:
    """Does a statement of ``body`` holding one of ``rows`` (nested functions
    too) assign ``self.<attr>`` as a target, as the walk's bindings record it?"""
    for row in rows:
        for stmt in _at_row(body, row):
            if any(
                name == attr
                for target in _targets(stmt)
                for name in _self_attributes(target, "self")
            ):
                return True
    return False


def _at_row(body: Sequence[ast.stmt], row: int) -> list[ast.stmt]:
    """The statements holding ``row``, outermost first, through nested
    functions too."""
    chain: list[ast.stmt] = []
    block: Sequence[ast.stmt] = body
    while block:
        for stmt in block:
            # `within` first: a method not parsed yet parses when its end is
            # read, and one whose block ends above the row cannot hold it.
            if stmt.lineno <= row and within(stmt, row) and row <= stmt.end_lineno:
                chain.append(stmt)
                block = list(statements.nested_statements(stmt))
                break
        else:
            break
    return chain


def _self_name(function: ast.AST) -> str | None:
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    if not positional or is_staticmethod(function):
        return None
    return positional[0].arg


def instance_name(class_node: ast.ClassDef, scope) -> str | None:
    """The name code in ``scope`` (with ``node`` and ``parent``, a function
    or the module) reaches the instance of ``class_node`` by: the first
    parameter of the class's own method it is written in, or nested in. None
    where there is none (a module function, a static or class method) or where
    that name is bound anywhere else in the method: text written there must
    not name ``self`` where ``self`` means nothing, or something else."""
    while scope is not None and isinstance(scope.node, FUNCTIONS):
        method = scope.node
        if any(method is s for s in class_node.body):
            name = _self_name(method)
            if name is None or _decorated(method, "classmethod"):
                return None
            first = [*method.args.posonlyargs, *method.args.args][0]
            if any(
                node is not first and node is not method and name in _bound_by(node)
                for node in walk_nodes(method)
            ):
                return None
            return name
        scope = scope.parent
    return None


def _bound_by(node: ast.AST) -> tuple[str, ...]:
    """The names ``node`` binds (or deletes, or declares another scope's)."""
    if isinstance(node, ast.Name):
        return () if isinstance(node.ctx, ast.Load) else (node.id,)
    if isinstance(node, ast.arg):
        return (node.arg,)
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return tuple(node.names)
    if isinstance(node, ast.alias):
        return ((node.asname or node.name).split(".")[0],)
    # A def, a class, `except ... as`, a pattern's capture or `**rest`.
    return tuple(
        value
        for value in (getattr(node, "name", None), getattr(node, "rest", None))
        if isinstance(value, str)
    )


def is_staticmethod(function: ast.AST) -> bool:
    """A ``@staticmethod``: called through an instance, it binds nothing."""
    return _decorated(function, "staticmethod")


def _decorated(function: ast.AST, name: str) -> bool:
    return any(
        isinstance(decorator, ast.Name) and decorator.id == name
        for decorator in function.decorator_list
    )


def _targets(stmt: ast.stmt) -> list[ast.AST]:
    if isinstance(stmt, ast.Assign):
        return stmt.targets
    if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        return [stmt.target]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.target]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [i.optional_vars for i in stmt.items if i.optional_vars is not None]
    return []


def _self_attributes(target: ast.AST, self_name: str) -> Iterator[str]:
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _self_attributes(element, self_name)
    elif isinstance(target, ast.Starred):
        yield from _self_attributes(target.value, self_name)
    elif (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == self_name
    ):
        yield target.attr
