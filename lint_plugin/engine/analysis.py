"""The facts of one parsed ``ast`` tree: the engine's walk, shared by every front end.

``check`` hands it the small regions of a file that can match; the flake8 plugin
hands it flake8's own tree. It decides nothing: it records the facts the rules
read (:mod:`lint_plugin.engine.facts`), each arithmetic expression flattened once
into :mod:`lint_plugin.algebra.arith` for KVI001 and KVI002 to match.
"""

from __future__ import annotations

import ast
import bisect
import itertools
from collections import deque
from collections.abc import Sequence

from lint_plugin import bindings, statements
from lint_plugin.algebra.arith import AST, AST_OPERATORS, build, name_role
from lint_plugin.contracts import class_may_write
from lint_plugin.engine import vocabulary
from lint_plugin.engine.allocations import (
    file_allocating_functions,
    file_allocator_aliases,
    is_allocation,
    may_call_allocating,
)
from lint_plugin.engine.bases import inherited_role_attributes
from lint_plugin.engine.checker import Checker
from lint_plugin.engine.draft_backend import (
    may_be_draft_backend,
    named_draft_backend,
    role_attributes,
)
from lint_plugin.engine.facts import (
    Allocation,
    Arithmetic,
    Binding,
    Bindings,
    ClassFacts,
    FunctionFacts,
    HelperBinding,
    HelperCall,
    ImportedName,
    Launch,
    LazyFunctionFacts,
    ModuleFacts,
    helper_aliases,
    position,
    self_attribute,
)
from lint_plugin.engine.flow.scopes import may_assign_attribute
from lint_plugin.engine.formulas import (
    HELPER_SLOTS,
    find_formula_matches,
)
from lint_plugin.engine.lazy_methods import (
    Misread,
    is_pending,
    materialize,
    pending_text,
)
from lint_plugin.engine.module_scope import (
    EmptyModuleScope,
    ModuleScope,
    TreeModuleScope,
)
from lint_plugin.engine.settings import DEFAULT_SETTINGS, Settings, resolve_module
from lint_plugin.engine.source import Source
from lint_plugin.engine.vocabulary import GUARD, KERNEL
from lint_plugin.records import field, record
from lint_plugin.roles import Role, role_of_name

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.ClassDef, *_FUNCTIONS)
# Rows of a possible draft backend whose expressions hold facts: allocations (by
# any name the file gives an allocator), the kernel's launches, guards; the words
# are the rules' own (lint_plugin.engine.vocabulary).

# Fields that never lead to anything the walk looks at: names and flags, and the
# context and operator nodes (a third of all nodes in a typical statement).
_SKIPPED_FIELDS = frozenset(
    {"ctx", "op", "ops", "id", "attr", "arg", "name", "names", "kind", "level"}
    | {"type_comment", "conversion", "is_async", "simple", "module"}
)
_LEAVES = (ast.Name, ast.Constant)


# What the walk does at a node, by its type (subclasses included: check's
# unparsed methods are ``FunctionDef`` subclasses).
_OTHER, _STATEMENT, _CLASS, _FUNCTION, _CALL, _BINOP = (
    "other", "statement", "class", "function", "call", "binop"
)  # fmt: skip


@record(frozen=True)
class _Kind:
    role: str
    # The fields that may hold a node the walk visits, in ``_fields`` order.
    fields: tuple[str, ...]
    # An annotation, a return annotation or an f-string: some children's text
    # is kept by the program (``_text_kept``).
    keeps_text: bool


_KINDS: dict[type, _Kind] = {}
# Does the walk visit a node of this type (a node, not a leaf)? By type.
_WALKED: dict[type, bool] = {}


def _kind_of(kind: type) -> _Kind:
    if issubclass(kind, ast.ClassDef):
        role = _CLASS
    elif issubclass(kind, _FUNCTIONS):
        role = _FUNCTION
    elif issubclass(kind, ast.stmt):
        role = _STATEMENT
    elif issubclass(kind, ast.Call):
        role = _CALL
    elif issubclass(kind, ast.BinOp):
        role = _BINOP
    else:
        role = _OTHER
    fields = (
        ()
        if issubclass(kind, _LEAVES)
        else tuple(f for f in kind._fields if f not in _SKIPPED_FIELDS)
    )
    keeps = issubclass(kind, (ast.arg, ast.AnnAssign, *_FUNCTIONS, ast.JoinedStr))
    found = _KINDS[kind] = _Kind(role, fields, keeps)
    return found


def _walked(kind: type) -> bool:
    found = _WALKED[kind] = issubclass(kind, ast.AST) and not issubclass(kind, _LEAVES)
    return found


def _text_kept(node: ast.AST, source: Source) -> list[ast.AST]:
    """The children of ``node`` whose text a program keeps: an annotation, and
    an f-string's ``{expr=}`` (its text is printed beside its value)."""
    if isinstance(node, (ast.arg, ast.AnnAssign)):
        return [node.annotation] if node.annotation else []
    if isinstance(node, _FUNCTIONS):
        return [node.returns] if node.returns else []
    if isinstance(node, ast.JoinedStr):
        kept = []
        for before, value in itertools.pairwise(node.values):
            if (
                isinstance(value, ast.FormattedValue)
                and isinstance(before, ast.Constant)
                and isinstance(before.value, str)
                and before.value.rstrip().endswith("=")
                and _squeezed(before.value.rstrip()[:-1]).endswith(
                    _squeezed(source.segment(value.value))
                )
            ):
                kept.append(value)
        return kept
    return []


def _squeezed(text: str) -> str:
    return "".join(text.split())


def _mentions(rows: Sequence[int] | None, node: ast.AST) -> bool:
    """Does ``node`` span a row of ``rows`` (None: every row counts)?"""
    if rows is None:
        return True
    index = bisect.bisect_left(rows, node.lineno)
    return index < len(rows) and rows[index] <= node.end_lineno


@record
class _Scope:
    """What a function (and the functions nested in it) says about its names."""

    aliases: dict[str, Role] = field(default_factory=dict)


@record(frozen=True)
class _Context:
    scope: _Scope | None = None
    function: FunctionFacts | None = None
    cls: ClassFacts | None = None
    # Inside a class that may be a draft backend every statement is looked at;
    # these are its rows (sorted, the tree's numbering) whose expressions are
    # walked too. None elsewhere.
    whole: Sequence[int] | None = None
    # Inside an annotation or an f-string's `{expr=}`: its text is kept.
    annotation: bool = False


def walk(
    tree: ast.Module, source: Source, path: str, settings: Settings = DEFAULT_SETTINGS
) -> Checker:
    """The whole tree's facts in a checker, nothing decided (``--explain``)."""
    module = module_of(tree, source, None)
    walker = Walker(source, path, None, settings, module)
    walker.walk(tree)
    return Checker(tree, source, path, settings, module, walker.facts)


def module_of(tree, source: Source, module: ModuleScope | None) -> ModuleScope:
    """What a width can flow from at module level: ``module`` when the caller
    has it (check's regions share one), else ``tree`` itself when whole."""
    if module is not None:
        return module
    if isinstance(tree, ast.Module):
        return TreeModuleScope(tree, source)
    return EmptyModuleScope(source)


class Walker:
    """Walks one tree and gathers facts for the rules (the inline formulas it
    matches among them); it decides and reports nothing."""

    def __init__(
        self,
        source: Source,
        path: str,
        rows: Sequence[int] | None,
        settings: Settings = DEFAULT_SETTINGS,
        module: ModuleScope | None = None,
        aliases: tuple[str, ...] | None = None,
    ) -> None:
        """``aliases``: the names the file may import a helper under
        (``facts.helper_aliases`` of its whole text; None: of ``source``'s)."""
        self.source = source
        self.path = path
        self.rows = rows
        self.settings = settings
        self.module = module or EmptyModuleScope(source)
        self.facts = ModuleFacts()
        self.targets: dict[int, str] = {}  # id(call) -> name it is assigned to
        self._functions: list[FunctionFacts] = []  # every one made (release)
        self._filling: LazyFunctionFacts | None = None  # a deferred method walked
        self._aliases: frozenset[str] | None = None
        self._allocating: frozenset[str] | None = None
        self._helper_aliases = aliases
        # The names whose bindings are recorded, and the rows naming one.
        self._watched: frozenset[str] | None = None
        self._watched_rows: list[int] = []

    @property
    def allocator_aliases(self) -> frozenset[str]:
        """Other names the file calls an allocator by (its whole text's)."""
        found = self._aliases
        if found is None:
            found = self._aliases = file_allocator_aliases(self.module)
        return found

    @property
    def allocating_functions(self) -> frozenset[str]:
        """The file's functions and methods that may allocate (by its text)."""
        found = self._allocating
        if found is None:
            found = self._allocating = file_allocating_functions(self.module).names
        return found

    def release(self) -> None:
        """Cut the references that point back (a binding to its function, a
        function to its class) once everything is decided, so the tree is
        freed as soon as the findings are returned, not left to the cycle
        collector to scan later (the last file's at exit)."""
        for function in self._functions:
            function.locals = function.attrs = Bindings()
            function.cls = function.parent = None
        self._functions.clear()

    # ---- traversal -------------------------------------------------------

    def walk(self, tree: ast.AST) -> None:
        """Gather the facts of ``tree`` (a module, or a region check parsed)."""
        self.visit(tree, _Context(), False)

    def visit(self, node: ast.AST, ctx: _Context, parent_arith: bool) -> None:
        kind = _KINDS.get(type(node)) or _kind_of(type(node))
        role = kind.role
        if (
            role is _STATEMENT
            and not (ctx.scope and ctx.scope.aliases)
            and not _mentions(self.rows, node)
            and (ctx.whole is None or not _mentions(ctx.whole, node))
        ):
            if ctx.whole is not None:
                # A class that may be a draft backend: a width's chain of
                # locals names no role word on most rows, so every binding
                # is recorded, but expressions are only walked where a row
                # names a role, an allocator, the kernel or the guard.
                self._remember_statement(node, ctx)
                for child in statements.children(node):
                    self.visit(child, ctx, False)
            return  # the common case: a statement that names nothing we match
        if (
            role is _STATEMENT or role is _FUNCTION or role is _CLASS
        ) and self._may_bind_watched(node):
            self._remember_bindings(node, ctx)
        if role is _CLASS:
            ctx = self._enter_class(node, ctx)
        elif role is _FUNCTION:
            if node.name in HELPER_SLOTS:
                # The helpers' own definitions spell out the formulas; whether
                # this one is trusted is KVI005's business (recorded above).
                return
            if is_pending(node):
                self._defer(node, ctx)
                return
            ctx = self._enter_function(node, ctx)
        elif role is _STATEMENT:
            self._remember_statement(node, ctx)
        elif role is _CALL:
            self._remember_call(node, ctx)
        is_arith = role is _BINOP and type(node.op) in AST_OPERATORS
        if is_arith and not parent_arith:
            self._check_arith(node, ctx)
        kept = _text_kept(node, self.source) if kind.keeps_text else ()
        visit = self.visit
        for name in kind.fields:
            value = getattr(node, name, None)
            if type(value) is list:
                children = value
            elif value is None:
                continue
            else:
                children = (value,)
            for child in children:
                walked = _WALKED.get(type(child))
                if walked is None:
                    walked = _walked(type(child))
                if not walked:
                    continue
                if kept and child in kept and not ctx.annotation:
                    inner = _Context(ctx.scope, ctx.function, ctx.cls, ctx.whole, True)
                    visit(child, inner, is_arith)
                    continue
                visit(child, ctx, is_arith)

    def _remember_statement(self, node: ast.stmt, ctx: _Context) -> None:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            self._remember_assignment(node, ctx)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
            self._remember_unknown_targets(node, ctx)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            self._remember_import(node)
        elif isinstance(node, (ast.Assert, ast.If)) and ctx.function is not None:
            ctx.function.guards.append(node)

    def _enter_class(self, node: ast.ClassDef, ctx: _Context) -> _Context:
        facts = ClassFacts(node)
        self.facts.classes.append(facts)
        text = self.source.segment(node)
        attributes = role_attributes(text)
        named = named_draft_backend(node)
        if named and not any(role_of_name(a) is Role.TOPK for a in attributes):
            # `class TRTLLMHAAttnMultiStepDraftBackend(FlashInferMultiStepDraftBackend)`
            # keeps the topk its base keeps (``super().__init__(..., topk, ...)``),
            # as does `class EagleDraftRunner(TritonMultiStepDraftBackend)`. By
            # the names only: such a class is read whole by every path, so the
            # fast paths lose nothing.
            attributes |= inherited_role_attributes(node, self.module, self.path)
        if not (
            named or may_be_draft_backend(text, attributes) or class_may_write(text)
        ):
            return _Context(None, None, facts, None)
        facts.attributes.update(attributes)
        facts.read_whole = True
        rows = vocabulary.fact_rows(
            text, self.allocator_aliases | self.allocating_functions, node.lineno
        )
        return _Context(None, None, facts, rows)

    def _defer(self, node, ctx: _Context) -> None:
        """A method check left unparsed: its facts wait for a reader."""
        text = pending_text(node)
        function = LazyFunctionFacts(
            node,
            ctx.cls,
            lambda f: self._gather(f, ctx),
            text,
            lambda attr: may_assign_attribute(node, attr, text),
        )
        self._functions.append(function)
        ctx.cls.functions.append(function)

    def _gather(self, function: LazyFunctionFacts, ctx: _Context) -> None:
        """Walk a deferred method as the walk would have, into facts of its
        own: a method that may be deferred holds no allocation, launch, helper
        or formula, and one that does is a misread (the whole file decides)."""
        real, cls = self.facts, ctx.cls
        self.facts = own = ModuleFacts(helper_names=dict(real.helper_names))
        own_class = ClassFacts(cls.node)
        self._filling = function
        try:
            materialize(function.node)
            self.visit(function.node, _Context(None, None, own_class, ctx.whole), False)
        finally:
            self.facts, self._filling = real, None
        if (
            any(c.allocations or c.launches for c in (own_class, *own.classes))
            or any(next(find_formula_matches(a.expr), None) for a in own.arithmetic)
            or own.helper_calls
            or own.helper_bindings
            or own.rebound
            or own.imports
            or own.helper_names != real.helper_names
        ):
            raise Misread(
                f"method {function.node.name} holds facts",
                (self.path, function.node.lineno, 1, ""),
            )
        # Its nested functions right after it, in the walk's order, and of
        # the class as the walk would have made them.
        nested = own_class.functions[1:]
        for inner in nested:
            inner.cls = cls
        at = next(i for i, f in enumerate(cls.functions) if f is function)
        cls.functions[at + 1 : at + 1] = nested

    def _enter_function(self, node, ctx: _Context) -> _Context:
        scope = _scope(node, ctx.scope, self.rows)
        filling = self._filling
        if filling is not None and filling.node is node:
            function = filling
            function.fill()
        else:
            function = FunctionFacts(node, ctx.function, ctx.cls)
            self._functions.append(function)
        args = node.args
        every = (
            *args.posonlyargs,
            *args.args,
            *args.kwonlyargs,
            args.vararg,
            args.kwarg,
        )
        function.params = [a.arg for a in every if a is not None]
        if ctx.cls is not None:
            ctx.cls.functions.append(function)
        return _Context(scope, function, ctx.cls, ctx.whole)

    def _remember_assignment(self, node, ctx: _Context) -> None:
        if isinstance(node, ast.Assign):
            targets, value, op = node.targets, node.value, None
        else:
            targets, value = [node.target], node.value
            op = node.op if isinstance(node, ast.AugAssign) else None
        if isinstance(value, ast.Call):
            name = " ".join(AST.name(t) or "" for t in targets)
            self.targets[id(value)] = name
            # `torch.zeros(n).view(steps, -1)`: the allocation is the chain's
            # receiver, and what the chain makes of it is assigned to the name.
            while isinstance(value.func, ast.Attribute) and isinstance(
                value.func.value, ast.Call
            ):
                value = value.func.value
                self.targets.setdefault(id(value), name)
        for target in targets:
            self._bind(target, value, node, op, ctx)

    def _bind(self, target, value, statement, op, ctx: _Context) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            values = (
                value.elts
                if isinstance(value, (ast.Tuple, ast.List))
                and len(value.elts) == len(target.elts)
                else [None] * len(target.elts)
            )
            for element, element_value in zip(target.elts, values, strict=True):
                self._bind(element, element_value, statement, op, ctx)
            return
        if isinstance(target, ast.Starred):
            self._bind(target.value, None, statement, None, ctx)
            return
        name = target.id if isinstance(target, ast.Name) else None
        attr = self_attribute(target)
        function = ctx.function
        if function is None:
            return
        binding = Binding(position(statement), value, statement, op, function)
        if name is not None:
            function.locals.add(name, binding)
        elif attr is not None:
            function.attrs.add(attr, binding)

    def _remember_unknown_targets(self, node, ctx: _Context) -> None:
        if isinstance(node, (ast.For, ast.AsyncFor)):
            targets = [node.target]
        else:
            targets = [i.optional_vars for i in node.items if i.optional_vars]
        for target in targets:
            self._bind(target, None, node, None, ctx)

    def _remember_import(self, node: ast.Import | ast.ImportFrom) -> None:
        trusted = False
        if isinstance(node, ast.ImportFrom):
            trusted = self.settings.trusts(
                resolve_module(node.module, node.level, self.path)
            )
        for alias in node.names:
            bound = alias.asname or alias.name.split(".")[0]
            if isinstance(node, ast.ImportFrom) and (
                alias.name in HELPER_SLOTS or alias.name == GUARD
            ):
                self.facts.imports.append(
                    ImportedName(alias.name, alias, node, trusted)
                )
            if trusted and alias.name in HELPER_SLOTS:
                self.facts.helper_names[bound] = alias.name

    # ---- bindings of the names the helpers go by (KVI005; trust) ---------------

    def _may_bind_watched(self, node: ast.AST) -> bool:
        """Does ``node`` (a statement) span a row naming a helper or a name the
        file may import one under? Only such a statement can bind one."""
        if self._watched is None:
            text = self.source.text
            aliases = self._helper_aliases
            if aliases is None:
                aliases = helper_aliases(text)
            self._watched = frozenset((*HELPER_SLOTS, *aliases))
            words = (vocabulary.helper_prefix(), *aliases)
            self._watched_rows = self.source.rows_naming(words)
        rows = self._watched_rows
        if not rows:
            return False
        first = node.lineno
        for decorator in getattr(node, "decorator_list", ()):
            first = min(first, decorator.lineno)
        index = bisect.bisect_left(rows, first)
        return index < len(rows) and rows[index] <= node.end_lineno

    def _remember_bindings(self, node: ast.stmt, ctx: _Context) -> None:
        """Each binding ``node`` makes (its handlers' and cases' too; any form,
        :mod:`lint_plugin.bindings`) of a name the helpers may go by: the name
        is then trusted nowhere in the file (``facts.rebound``), and a binding
        of a helper's own name is KVI005's (``facts.helper_bindings``). Not
        bindings: an import of a helper from a trusted module (under its own
        name or an alias), and a helper's top-level ``def`` in the helpers
        module itself. ``global``/``nonlocal`` bind nothing themselves."""
        watched = self._watched
        facts = self.facts
        trusted: bool | None = None
        for found in bindings.statement(node):
            name = found.name
            if name not in watched or found.kind in bindings.DECLARATIONS:
                continue
            if found.kind == bindings.IMPORT and isinstance(node, ast.ImportFrom):
                if trusted is None:
                    trusted = self._trusted_import(node)
                imported = found.node.name
                if trusted and imported in HELPER_SLOTS:
                    # The helper, by this name. Under the other helper's name
                    # it is still KVI005's (a name that says the other one).
                    if name != imported and name in HELPER_SLOTS:
                        facts.helper_bindings.append(
                            HelperBinding(name, found.node, found.kind, node)
                        )
                    continue
            if (
                found.kind == bindings.FUNCTION
                and name in HELPER_SLOTS
                and ctx.function is None
                and ctx.cls is None
                and self.settings.is_helpers_file(self.path)
            ):
                continue  # the helper itself, in its home
            facts.rebound.add(name)
            if name in HELPER_SLOTS:
                facts.helper_bindings.append(
                    HelperBinding(name, found.node, found.kind, node)
                )

    def _trusted_import(self, node: ast.ImportFrom) -> bool:
        return self.settings.trusts(resolve_module(node.module, node.level, self.path))

    def _remember_call(self, call: ast.Call, ctx: _Context) -> None:
        for keyword in call.keywords:
            if keyword.arg and isinstance(keyword.value, ast.Call):
                self.targets[id(keyword.value)] = keyword.arg
        helper = self.facts.helper_names.get(AST.name(call.func) or "")
        if helper is not None:
            self.facts.helper_calls.append(HelperCall(call, helper, ctx.function))
            return
        function, cls = ctx.function, ctx.cls
        if function is None or cls is None:
            return
        if AST.name(call.func) == GUARD:
            function.guards.append(call)
        elif is_allocation(call, self.allocator_aliases):
            target = self.targets.get(id(call))
            cls.allocations.append(Allocation(call, function, target))
        elif (
            isinstance(call.func, ast.Subscript) and AST.name(call.func.value) == KERNEL
        ):
            cls.launches.append(Launch(call, function))
        elif ctx.whole is not None and may_call_allocating(
            call.func, self.allocating_functions
        ):
            cls.calls.append(Allocation(call, function, self.targets.get(id(call))))

    # ---- arithmetic (KVI001 / KVI002 match their formulas in it) ------------

    def _check_arith(self, node: ast.AST, ctx: _Context) -> None:
        aliases = ctx.scope.aliases if ctx.scope else {}
        self.facts.arithmetic.append(
            Arithmetic(build(node, AST, aliases), ctx.annotation)
        )


def _scope(
    node: ast.FunctionDef | ast.AsyncFunctionDef,
    outer: _Scope | None,
    rows: Sequence[int] | None,
) -> _Scope:
    scope = _Scope()
    if outer is not None:
        scope.aliases = dict(outer.aliases)
    # An alias is assigned on a row naming its role or helper, so
    # statements that mention nothing are not looked into.
    pending = deque(s for s in node.body if _mentions(rows, s))
    while pending:
        statement = pending.popleft()
        # Its statements and handlers, in ``iter_child_nodes``' order; a
        # ``match``'s cases are not looked into.
        for child in statements.children(statement):
            if not isinstance(child, ast.match_case) and _mentions(rows, child):
                pending.append(child)
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            continue
        target = statement.targets[0]
        if not isinstance(target, ast.Name):
            continue
        # `k = self.topk` makes `k` a topk; a name with its own role keeps it.
        role = name_role(AST.name(statement.value), scope.aliases)
        if role is not None and role_of_name(target.id) is None:
            scope.aliases[target.id] = role
    return scope
