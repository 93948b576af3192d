"""What binds a name, and where: one answer for every rule and the fix gate.

Python binds a name by many forms, and a rule that trusts a name (KVI003 and
KVI004 evaluate a call of a helper's name as the helper) must know them all:

* assignment targets: ``=`` (chained, unpacked, starred), augmented ``+=``,
  annotated ``x: T = v`` and a bare annotation ``x: T`` (CPython's ``symtable``
  counts it: in a function it makes the name local);
* ``for``/``async for`` and ``with ... as`` targets;
* the walrus ``(x := v)``, which binds in the function (or module) around it,
  also when written in a comprehension;
* comprehension targets (in the comprehension's own scope);
* ``def``, ``async def`` and ``class`` names; function and lambda parameters
  (positional-only, plain, ``*args``, keyword-only, ``**kwargs``) in the
  function's own scope; type parameters (3.12's ``def f[T]``) and ``type``
  aliases;
* imports: ``import a.b`` binds ``a``, ``import a.b as c`` binds ``c``, ``from
  m import x as y`` binds ``y``; ``from m import *`` may bind any name (its
  name here is ``*``);
* ``except ... as e`` and ``match`` captures (``case x``, ``case ... as x``,
  ``case [*x]``, ``case {**x}``, nested in any pattern);
* ``del x`` (it unbinds; ``symtable`` counts it as a binding of the scope);
* ``global x`` / ``nonlocal x`` bind nothing themselves: they make the
  bindings of ``x`` in their scope bind the module's (the enclosing function's)
  name. They are listed (kinds ``global``, ``nonlocal``) so a reader can place
  those bindings; :func:`all_bindings` applies them.

An attribute or a subscript target (``self.x = v``, ``d[k] = v``) binds no name.

:func:`own` answers for one statement (its targets and the expressions it
evaluates, the lambdas and comprehensions in them included, but not the
statements, handlers and cases in its blocks), an ``except`` handler or a
``match`` case; :func:`statement` adds the handlers and cases of a statement;
:func:`all_bindings` answers for a whole tree, each binding with the scope it
binds in. Stdlib only: the engine's walk and the fix gate both read it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from lint_plugin.records import record
from lint_plugin.statements import BLOCK_FIELDS

# Kinds, and how a message names them.
ASSIGNMENT = "assignment"
AUGMENTED = "augmented assignment"
ANNOTATED = "annotated assignment"
ANNOTATION = "annotation"
FOR = "for target"
WITH = "with target"
WALRUS = "walrus"
COMPREHENSION = "comprehension target"
FUNCTION = "function"
CLASS = "class"
PARAMETER = "parameter"
IMPORT = "import"
STAR_IMPORT = "star import"
EXCEPT = "except target"
MATCH = "match capture"
DELETE = "del"
GLOBAL = "global"
NONLOCAL = "nonlocal"
TYPE_ALIAS = "type alias"
TYPE_PARAMETER = "type parameter"

# Declarations: they bind nothing themselves.
DECLARATIONS = frozenset({GLOBAL, NONLOCAL})

WORDS = {
    ASSIGNMENT: "an assignment",
    AUGMENTED: "an augmented assignment",
    ANNOTATED: "an annotated assignment",
    ANNOTATION: "an annotation",
    FOR: "a `for` target",
    WITH: "a `with` target",
    WALRUS: "an assignment expression (`:=`)",
    COMPREHENSION: "a comprehension target",
    FUNCTION: "a def",
    CLASS: "a class",
    PARAMETER: "a parameter",
    IMPORT: "an import",
    STAR_IMPORT: "a `*` import",
    EXCEPT: "an `except ... as` target",
    MATCH: "a `match` capture",
    DELETE: "a `del`",
    GLOBAL: "a `global` declaration",
    NONLOCAL: "a `nonlocal` declaration",
    TYPE_ALIAS: "a `type` alias",
    TYPE_PARAMETER: "a type parameter",
}

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# The fields of a statement, handler or case that hold statements, handlers or
# cases (the blocks :func:`own` leaves to their own statements).
_BLOCKS = frozenset(BLOCK_FIELDS)
_TYPE_ALIAS = getattr(ast, "TypeAlias", None)  # 3.12
_TYPE_PARAMS = tuple(
    getattr(ast, name) for name in ("TypeVar", "ParamSpec", "TypeVarTuple")
    if hasattr(ast, name)
)  # fmt: skip


@record(frozen=True, eq=False)
class NameBinding:
    """``name`` bound by ``node``.

    ``node``: the node naming it: a ``Name`` target, an ``arg``, an import's
    ``alias``, a ``def``/``class``, an ``ExceptHandler``, a ``MatchAs``,
    ``MatchStar`` or ``MatchMapping`` (its ``**rest``), the ``ImportFrom`` of a
    ``*`` import, a ``Global``/``Nonlocal`` statement, a type parameter.
    ``scope``: the node of the scope it binds in when that is not the one the
    statement is in (a def's or lambda's parameters, a comprehension's
    targets, a walrus in a lambda); None: the statement's own scope. From
    :func:`all_bindings` it is always the scope (``Module``, def, ``Lambda``,
    comprehension, ``ClassDef``), ``global``/``nonlocal`` applied, and
    ``lexical`` is the scope the binding is written in."""

    name: str
    node: ast.AST
    kind: str
    scope: ast.AST | None = None
    lexical: ast.AST | None = None

    @property
    def words(self) -> str:
        """The kind as a message names it ("a parameter")."""
        return WORDS[self.kind]


def own(node: ast.AST) -> Iterator[NameBinding]:
    """The bindings ``node`` (a statement, an ``except`` handler, a ``match``
    case) makes itself: its targets, its name, its parameters, and every
    binding in the expressions it evaluates (walruses, and the lambdas and
    comprehensions there), but none of the statements, handlers or cases in
    its blocks. In the order Python binds them (a def's defaults before its
    name, a value's walruses before the targets)."""
    out: list[NameBinding] = []
    _own(node, out)
    return iter(out)


def statement(node: ast.stmt) -> Iterator[NameBinding]:
    """:func:`own` of a statement and of its ``except`` handlers and ``match``
    cases (not of the statements in their bodies)."""
    yield from own(node)
    for part in (*getattr(node, "handlers", ()), *getattr(node, "cases", ())):
        yield from own(part)


def all_bindings(tree: ast.AST) -> list[NameBinding]:
    """Every binding in ``tree`` (a module, or a statement) and in every scope
    nested in it, statement by statement, each with ``scope`` (where it binds:
    ``global`` and ``nonlocal`` applied) and ``lexical`` (where it is
    written) set: a ``Module``, def, ``Lambda``, comprehension or
    ``ClassDef``; None for the scope around a ``tree`` that is not a module."""
    out: list[NameBinding] = []
    if isinstance(tree, ast.Module):
        _scope_body(tree.body, tree, [tree], out)
    else:
        _scope_body([tree], None, [None], out)
    return out


# ---- one statement -------------------------------------------------------------


def _own(node: ast.AST, out: list[NameBinding]) -> None:
    add = out.append
    if isinstance(node, _FUNCTIONS):
        _decorated(node, out)
        _parameters(node.args, node, out)
        _expressions(node.returns, None, out)
        _type_params(node, out)
        add(NameBinding(node.name, node, FUNCTION))
        return
    if isinstance(node, ast.ClassDef):
        _decorated(node, out)
        for base in (*node.bases, *node.keywords):
            _expressions(base, None, out)
        _type_params(node, out)
        add(NameBinding(node.name, node, CLASS))
        return
    if isinstance(node, ast.Assign):
        _expressions(node.value, None, out)
        for target in node.targets:
            _targets(target, ASSIGNMENT, out)
        return
    if isinstance(node, ast.AugAssign):
        _expressions(node.value, None, out)
        _targets(node.target, AUGMENTED, out)
        return
    if isinstance(node, ast.AnnAssign):
        _expressions(node.annotation, None, out)
        _expressions(node.value, None, out)
        _targets(node.target, ANNOTATED if node.value is not None else ANNOTATION, out)
        return
    if isinstance(node, (ast.For, ast.AsyncFor)):
        _expressions(node.iter, None, out)
        _targets(node.target, FOR, out)
        return
    if isinstance(node, (ast.With, ast.AsyncWith)):
        for item in node.items:
            _expressions(item.context_expr, None, out)
            if item.optional_vars is not None:
                _targets(item.optional_vars, WITH, out)
        return
    if isinstance(node, ast.Import):
        for alias in node.names:
            add(NameBinding(alias.asname or alias.name.split(".")[0], alias, IMPORT))
        return
    if isinstance(node, ast.ImportFrom):
        for alias in node.names:
            if alias.name == "*":
                add(NameBinding("*", node, STAR_IMPORT))
            else:
                add(NameBinding(alias.asname or alias.name, alias, IMPORT))
        return
    if isinstance(node, ast.ExceptHandler):
        _expressions(node.type, None, out)
        if node.name:
            add(NameBinding(node.name, node, EXCEPT))
        return
    if isinstance(node, ast.match_case):
        _pattern(node.pattern, out)
        _expressions(node.guard, None, out)
        return
    if isinstance(node, ast.Delete):
        for target in node.targets:
            _targets(target, DELETE, out)
        return
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        kind = GLOBAL if isinstance(node, ast.Global) else NONLOCAL
        out.extend(NameBinding(name, node, kind) for name in node.names)
        return
    if _TYPE_ALIAS is not None and isinstance(node, _TYPE_ALIAS):
        _type_params(node, out)
        _expressions(node.value, node, out)  # evaluated lazily, in its own scope
        _targets(node.name, TYPE_ALIAS, out)
        return
    # Any other statement: the expressions it evaluates (an `if`'s test, a
    # `match`'s subject, `return`'s value...), not its blocks.
    for name, value in ast.iter_fields(node):
        if name in _BLOCKS:
            continue
        if isinstance(value, list):
            for item in value:
                if isinstance(item, ast.expr):
                    _expressions(item, None, out)
        elif isinstance(value, ast.expr):
            _expressions(value, None, out)


def _decorated(node, out: list[NameBinding]) -> None:
    for decorator in node.decorator_list:
        _expressions(decorator, None, out)


def _parameters(
    args: ast.arguments,
    scope: ast.AST,
    out: list[NameBinding],
    walrus: ast.AST | None = None,
) -> None:
    """Defaults and annotations are evaluated where the def (lambda) is (a
    walrus there binds in ``walrus``: None, the statement's scope); the
    parameters bind in ``scope``, the function's own."""
    for value in (*args.defaults, *args.kw_defaults):
        _expressions(value, walrus, out)
    every = (*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg)
    for arg in every:
        if arg is not None:
            _expressions(arg.annotation, walrus, out)
    for arg in every:
        if arg is not None:
            out.append(NameBinding(arg.arg, arg, PARAMETER, scope))


def _type_params(node, out: list[NameBinding]) -> None:
    for param in getattr(node, "type_params", None) or ():
        if isinstance(param, _TYPE_PARAMS):
            out.append(NameBinding(param.name, param, TYPE_PARAMETER, node))


def _targets(target: ast.AST, kind: str, out: list[NameBinding]) -> None:
    """The names an assignment target binds: a name, the elements of a tuple or
    list, a starred one; an attribute's or subscript's expressions are only
    evaluated (a walrus there still binds)."""
    pending = [target]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Name):
            out.append(NameBinding(node.id, node, kind))
        elif isinstance(node, (ast.Tuple, ast.List)):
            pending.extend(reversed(node.elts))
        elif isinstance(node, ast.Starred):
            pending.append(node.value)
        else:
            _expressions(node, None, out)


def _pattern(pattern: ast.AST, out: list[NameBinding]) -> None:
    """A ``match`` pattern's captures, in source order (a capture's binding is
    queued after its sub-pattern's)."""
    pending: list[ast.AST | NameBinding] = [pattern]
    while pending:
        node = pending.pop()
        if isinstance(node, NameBinding):
            out.append(node)
            continue
        later: list[ast.AST | NameBinding] = []
        if isinstance(node, ast.MatchAs):
            if node.pattern is not None:
                later.append(node.pattern)
            if node.name is not None:
                later.append(NameBinding(node.name, node, MATCH))
        elif isinstance(node, ast.MatchStar):
            if node.name is not None:
                later.append(NameBinding(node.name, node, MATCH))
        elif isinstance(node, ast.MatchMapping):
            later.extend(node.patterns)
            if node.rest is not None:
                later.append(NameBinding(node.rest, node, MATCH))
        elif isinstance(node, (ast.MatchSequence, ast.MatchOr)):
            later.extend(node.patterns)
        elif isinstance(node, ast.MatchClass):
            later.extend((*node.patterns, *node.kwd_patterns))
        # MatchValue, MatchSingleton: a value, nothing bound.
        pending.extend(reversed(later))


def _expressions(node: ast.AST | None, walrus: ast.AST | None, out) -> None:
    """The bindings in an expression: its walruses (binding in ``walrus``, the
    function or lambda around; None: the statement's scope), and the
    parameters and targets of the lambdas and comprehensions in it."""
    if node is None:
        return
    pending: list[tuple[ast.AST, ast.AST | None]] = [(node, walrus)]
    while pending:
        current, where = pending.pop()
        if isinstance(current, ast.NamedExpr):
            pending.append((current.value, where))
            if isinstance(current.target, ast.Name):
                target = current.target
                out.append(NameBinding(target.id, target, WALRUS, where))
            continue
        if isinstance(current, ast.Lambda):
            _parameters(current.args, current, out, where)
            pending.append((current.body, current))
            continue
        if isinstance(current, _COMPREHENSIONS):
            # A comprehension is a scope, but a walrus in it binds in the
            # function around (PEP 572): ``where`` goes on unchanged.
            children: list[tuple[ast.AST, ast.AST | None]] = []
            for generator in current.generators:
                children.append((generator.iter, where))
                found: list[NameBinding] = []
                _targets(generator.target, COMPREHENSION, found)
                for binding in found:
                    scope = current if binding.kind == COMPREHENSION else where
                    out.append(_moved(binding, scope))
                children.extend((c, where) for c in generator.ifs)
            for name in ("elt", "key", "value"):
                child = getattr(current, name, None)
                if child is not None:
                    children.append((child, where))
            pending.extend(reversed(children))
            continue
        pending.extend(
            (child, where) for child in reversed(list(ast.iter_child_nodes(current)))
        )


def _moved(binding: NameBinding, scope: ast.AST | None) -> NameBinding:
    if scope is None or binding.scope is not None:
        return binding
    return NameBinding(binding.name, binding.node, binding.kind, scope)


# ---- a whole tree --------------------------------------------------------------


def _scope_body(
    body: list[ast.stmt],
    scope: ast.AST | None,
    functions: list[ast.AST | None],
    out: list[NameBinding],
) -> None:
    """The bindings of ``scope``'s statements ``body`` (a module's, a def's, a
    class's), and of the scopes nested in them. ``functions``: the module and
    the functions around, outermost first (``nonlocal`` names the innermost
    function that binds the name)."""
    declared: dict[str, str] = {}
    statements: list[ast.AST] = []
    pending: list[ast.AST] = list(reversed(body))
    while pending:
        node = pending.pop()
        statements.append(node)
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            kind = GLOBAL if isinstance(node, ast.Global) else NONLOCAL
            for name in node.names:
                declared.setdefault(name, kind)
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            continue
        inner = []
        for name, value in ast.iter_fields(node):
            if name in _BLOCKS:
                inner.extend(value)
        pending.extend(reversed(inner))
    module = functions[0]
    for node in statements:
        for binding in own(node):
            lexical = binding.scope if binding.scope is not None else scope
            where = lexical
            if binding.scope is None and binding.kind not in DECLARATIONS:
                kind = declared.get(binding.name)
                if kind == GLOBAL:
                    where = module
                elif kind == NONLOCAL:
                    where = _enclosing_binder(binding.name, functions, scope)
            out.append(
                NameBinding(binding.name, binding.node, binding.kind, where, lexical)
            )
        if isinstance(node, _FUNCTIONS):
            _scope_body(node.body, node, [*functions, node], out)
        elif isinstance(node, ast.ClassDef):
            _scope_body(node.body, node, functions, out)


def _enclosing_binder(
    name: str, functions: list[ast.AST | None], scope: ast.AST | None
) -> ast.AST | None:
    """The innermost function around ``scope`` that binds ``name`` (Python
    refuses a ``nonlocal`` with none; then the innermost one)."""
    outer = [f for f in functions[1:] if f is not scope]
    for function in reversed(outer):
        if any(b.name == name and (b.scope is function) for b in _bound_in(function)):
            return function
    return outer[-1] if outer else functions[0]


def _bound_in(function: ast.AST) -> Iterator[NameBinding]:
    """The bindings written directly in ``function``'s scope (its parameters
    and its body's statements, not nested scopes)."""
    yield from (
        _moved(b, function) if b.scope is None else b
        for b in own(function)
        if b.scope is function
    )
    pending = list(reversed(function.body))
    while pending:
        node = pending.pop()
        for binding in own(node):
            if binding.scope is None and binding.kind not in DECLARATIONS:
                yield _moved(binding, function)
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            continue
        for name, value in ast.iter_fields(node):
            if name in _BLOCKS:
                pending.extend(reversed(value))
