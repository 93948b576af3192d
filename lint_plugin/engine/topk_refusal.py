"""Does a draft backend refuse ``topk > 1`` whenever it is built?

SGLang's FlashInfer MLA draft backend raises in ``__init__`` when ``topk > 1``,
so its ``max_bs * max_context_len`` row fits every instance that exists: a
counterexample with ``topk = 2`` would describe an object that cannot be made.
KVI003 still reports the row (upstream sized it with the helper anyway) but says
what is true of it; this module decides when that is so.

A refusal counts only where it dominates the rest of ``__init__``: a statement of
the class's own ``__init__`` that raises for every ``topk > 1`` (an
``if``/``elif``/``else`` whose branch taken for that topk raises; not an
``assert``, which ``python -O`` drops), with no statement before it that may
return early, in a class nothing else can give another topk (``_open_to_change``:
no base, metaclass or decorator, an instance that never escapes its methods, the
class named elsewhere in the file only in calls making instances). What it tests
must be the value the class keeps as its topk: the ``__init__`` parameter that is
the class's only assignment of ``self.<topk>`` (and is never rebound), or
``self.<topk>`` after that single assignment. Not a refusal: one in a branch of
something else (``if flag:``), in another method, under ``try``/``with`` (a
handler or a context manager may swallow it), of another name, or a warning that
does not raise.
"""

from __future__ import annotations

import ast
import re

from lint_plugin.engine.nodes import walk_nodes
from lint_plugin.records import record

_MAX_STEPS = 64  # a refusal's branches followed at most this deep


@record(frozen=True)
class Refusal:
    """``statement``: the ``assert``/``if`` of ``__init__`` that refuses."""

    statement: ast.stmt
    class_name: str

    @property
    def row(self) -> int:
        return self.statement.lineno


def refusal_of(
    node: ast.ClassDef, topk_attr: str | None, file_text: str = ""
) -> Refusal | None:
    """The statement of the class's ``__init__`` that raises for every topk
    above one, or None. ``file_text``: the whole file, where a subclass or a
    patch of the class would be written."""
    if topk_attr is None:
        return None
    init = _own_init(node)
    if init is None:
        return None
    stores = [n for n in walk_nodes(node) if _stores_attribute(n, topk_attr)]
    # One assignment, a statement of `__init__` itself: then every instance's
    # topk is that one value.
    if len(stores) != 1:
        return None
    kept = next((s for s in init.body if _keeps(s, stores[0])), None)
    if kept is None:
        return None
    instance = _params(init)[0] if _params(init) else None
    store = stores[0]
    if instance is None or getattr(store, "value", None) is None:
        return None
    if store.value.id != instance:
        return None  # `other.topk = ...`: not the instance's own
    if any(_runs_a_base(s) for s in init.body[init.body.index(kept) + 1 :]):
        return None  # a base's __init__ (or method) may keep another topk
    param = _kept_parameter(init, kept, stores[0])
    at = init.body.index(kept)
    for index, stmt in enumerate(init.body):
        names = {param} if param else set()
        if index > at:
            names.add(f"{instance}.{topk_attr}")
        if names and _refuses_above_one(stmt, names):
            # Asked last: most classes refuse nothing, and this reads the file.
            if _open_to_change(node, init, file_text):
                return None
            return Refusal(stmt, node.name)
        if _may_leave(stmt) or (index < at and _rebinds(stmt, names)):
            return None  # what follows may never run, or tests another value
    return None


def _open_to_change(node: ast.ClassDef, init: ast.FunctionDef, text: str) -> bool:
    """May an instance get another topk than the one ``__init__`` refused,
    by a way the statements of ``__init__`` do not show? A base or a
    metaclass (their methods and ``__call__`` are not read), a decorator (of
    the class or of ``__init__``), a bare instance handed to a call (which may
    set its topk), a write through ``setattr``/``__dict__``/``vars``, the
    instance's name rebound, or, in the file, a subclass of the class or a
    patch of its attributes. (A subclass in another module is not seen: the
    message names the premise, ``__init__``'s refusal, for that reason.)"""
    if node.keywords or node.decorator_list or init.decorator_list:
        return True
    if any(not (isinstance(b, ast.Name) and b.id == "object") for b in node.bases):
        return True
    if _instance_escapes(node):
        return True
    for child in walk_nodes(node):
        if isinstance(child, ast.Name) and child.id in ("setattr", "vars"):
            return True
        if isinstance(child, ast.Attribute) and child.attr in _DYNAMIC_ATTRIBUTES:
            return True
    return _named_elsewhere(node.name, text)


def _named_elsewhere(name: str, text: str) -> bool:
    """Does the file name the class anywhere but its own ``class`` line and
    calls of it (instances made)? A base of another class (on any line of its
    header), an attribute assigned (``X.__init__ = f``), ``setattr(X, ...)``,
    a mention it cannot read: any may change what an instance gets, so only
    those two uses are let through; and the definition must carry no decorator
    (a region read alone may start at the ``class`` line). The name is found
    literally first: a pattern starting with ``\\b`` is tried at every offset
    of the file."""
    for match in re.finditer(re.escape(name), text):
        start, end = match.span()
        if (start and _WORD.match(text, start - 1)) or _WORD.match(text, end):
            continue  # part of a longer name
        line_start = text.rfind("\n", 0, start) + 1
        if _DEFINITION.fullmatch(text, line_start, start):
            if _DECORATED.search(text, 0, line_start):
                return True
            continue
        if not _CALLED.match(text, end):
            return True
    return False


_WORD = re.compile(r"\w")
_DEFINITION = re.compile(r"[ \t]*class\s+")
# The lines right above a definition: a decorator, then blank or comment lines.
_DECORATED = re.compile(r"(?m)^[ \t]*@.*\n(?:[ \t]*(?:#.*)?\n)*\Z")
_CALLED = re.compile(r"[ \t]*\(")


_DYNAMIC_ATTRIBUTES = frozenset({"__dict__", "__setattr__", "__class__"})


def _instance_escapes(node: ast.ClassDef) -> bool:
    """Is a method's instance used other than as ``self.attr`` (handed to a
    call, returned, kept elsewhere, rebound)? Then code this module does not
    read may set its topk."""
    for function in node.body:
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if any(
            isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")
            for d in function.decorator_list
        ):
            continue  # no instance is its first parameter
        params = _params(function)
        if not params:
            continue
        instance = params[0]
        uses, owners = [], set()
        for n in walk_nodes(function):
            if isinstance(n, ast.Name) and n.id == instance:
                uses.append(n)
            elif isinstance(n, ast.Attribute):
                owners.add(id(n.value))
        if any(id(n) not in owners for n in uses):
            return True
    return False


def _runs_a_base(stmt: ast.stmt) -> bool:
    """A ``super()...`` call or an explicit ``Base.__init__(self, ...)``."""
    for node in walk_nodes(stmt):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "__init__":
                return True
            if isinstance(func, ast.Name) and func.id == "super":
                return True
    return False


def _own_init(node: ast.ClassDef) -> ast.FunctionDef | None:
    found = None
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if stmt.name == "__init__":
                found = stmt if isinstance(stmt, ast.FunctionDef) else None
        elif _binds(stmt, "__init__"):
            found = None  # `__init__ = other`: not the def read here
    return found


def _binds(stmt: ast.stmt, name: str) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for n in walk_nodes(stmt)
    )


def _params(function: ast.FunctionDef) -> list[str]:
    args = function.args
    return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]


def _stores_attribute(node: ast.AST, attr: str) -> bool:
    """A binding of ``name.attr`` (assignment, augmented, annotated, a
    ``for``/``with`` target, ``del``) or a ``setattr``/``delattr`` that may
    name it."""
    if isinstance(node, ast.Attribute) and node.attr == attr:
        return isinstance(node.value, ast.Name) and isinstance(
            node.ctx, (ast.Store, ast.Del)
        )
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("setattr", "delattr")
        and len(node.args) >= 2
    ):
        name = node.args[1]
        return not (isinstance(name, ast.Constant) and name.value != attr)
    return False


def _keeps(stmt: ast.stmt, store: ast.AST) -> bool:
    """Is ``stmt`` a plain assignment whose target is ``store`` (alone, or in
    a tuple matched by a tuple of values)?"""
    return _assigned(stmt, store) is not None


def _assigned(stmt: ast.stmt, store: ast.AST) -> ast.expr | None:
    """The value ``stmt`` gives ``store``: ``self.topk = v``, ``x: int = v``,
    ``self.topk, self.n = v, n``."""
    if isinstance(stmt, ast.AnnAssign) and stmt.target is store:
        return stmt.value
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return None
    target = stmt.targets[0]
    if target is store:
        return stmt.value
    if (
        isinstance(target, ast.Tuple)
        and isinstance(stmt.value, ast.Tuple)
        and len(target.elts) == len(stmt.value.elts)
        and store in target.elts
    ):
        return stmt.value.elts[target.elts.index(store)]
    return None


def _kept_parameter(init: ast.FunctionDef, kept: ast.stmt, store) -> str | None:
    """The parameter ``self.<topk> = param`` keeps, when nothing in
    ``__init__`` rebinds it."""
    value = _assigned(kept, store)
    if not isinstance(value, ast.Name):
        return None
    name = value.id
    if name not in _params(init)[1:]:
        return None
    # One walk for both: a `global`/`nonlocal` is a statement, so the only
    # ones in `__init__` are in its body.
    if any(
        (isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load))
        or (isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names)
        for stmt in init.body
        for n in walk_nodes(stmt)
    ):
        return None
    return name


def _refuses_above_one(stmt: ast.stmt, names: set[str]) -> bool:
    """Does ``stmt`` raise for every topk above one (the topk spelt as one of
    ``names``)? A comparison with integers changes truth only at them, so 2
    and each integer of the statement, one below and one above, decide them
    all."""
    if not isinstance(stmt, (ast.Raise, ast.Assert, ast.If)):
        # `_raises` of any other statement is False at every topk: not worth
        # gathering its integers first.
        return False
    points = {2}
    for node in walk_nodes(stmt):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            for value in (abs(node.value) - 1, abs(node.value), abs(node.value) + 1):
                if value >= 2:
                    points.add(value)
    return all(_raises([stmt], names, k, 0) for k in sorted(points))


def _raises(stmts: list[ast.stmt], names: set[str], k: int, depth: int) -> bool:
    """Does running ``stmts`` with the topk ``k`` raise before it can end or
    leave?"""
    if depth > _MAX_STEPS:
        return False
    for stmt in stmts:
        if isinstance(stmt, ast.Raise):
            return True
        if isinstance(stmt, ast.Assert):
            continue  # `python -O` drops it: no refusal every run makes
        if isinstance(stmt, ast.If):
            truth = _truth(stmt.test, names, k)
            taken = [stmt.body] if truth is True else [stmt.orelse]
            if truth is None:
                taken = [stmt.body, stmt.orelse]
            if all(_raises(branch, names, k, depth + 1) for branch in taken):
                return True
            if any(_may_leave(s) for branch in taken for s in branch):
                return False
            continue
        if _may_leave(stmt) or _rebinds(stmt, names):
            return False
    return False


def _may_leave(stmt: ast.stmt) -> bool:
    """May ``stmt`` end ``__init__`` early (a ``return``, outside a nested
    function)? A raise under ``try`` or ``with`` is never followed (a handler
    or a context manager may swallow it): ``_raises`` reads only ``raise``,
    ``assert`` and ``if``."""
    stack = [stmt]
    push = stack.append
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.ClassDef):
            continue
        # `ast.iter_child_nodes` inlined (two generators a node); the order
        # the children are looked at does not change the answer.
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                push(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        push(item)
    return False


def _rebinds(stmt: ast.stmt, names: set[str]) -> bool:
    return any(
        (isinstance(n, ast.Name) and n.id in names and not isinstance(n.ctx, ast.Load))
        or (
            isinstance(n, ast.Attribute)
            and _dotted(n) in names
            and not isinstance(n.ctx, ast.Load)
        )
        for n in walk_nodes(stmt)
    )


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None


def _truth(test: ast.expr, names: set[str], k: int) -> bool | None:
    """The test's truth with the topk ``k``: True, False, or None when it
    depends on anything else (three-valued ``and``/``or``/``not``)."""
    if isinstance(test, ast.BoolOp):
        parts = [_truth(v, names, k) for v in test.values]
        stop = isinstance(test.op, ast.Or)
        if stop in parts:
            return stop
        return None if None in parts else not stop
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _truth(test.operand, names, k)
        return None if inner is None else not inner
    if isinstance(test, ast.Compare):
        left = _value(test.left, names, k)
        result: bool | None = True
        for op, right_node in zip(test.ops, test.comparators, strict=True):
            right = _value(right_node, names, k)
            truth = _compare(op, left, right)
            if truth is False:
                return False
            if truth is None:
                result = None
            left = right
        return result
    return None


def _value(node: ast.expr, names: set[str], k: int):
    if _dotted(node) in names:
        return k
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _value(node.operand, names, k)
        return -inner if isinstance(inner, int) else None
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [_value(e, names, k) for e in node.elts]
        return tuple(items) if all(isinstance(i, int) for i in items) else None
    return None


def _compare(op: ast.cmpop, left, right) -> bool | None:
    if isinstance(op, (ast.In, ast.NotIn)):
        if not isinstance(left, int) or not isinstance(right, tuple):
            return None
        return (left in right) == isinstance(op, ast.In)
    if not isinstance(left, int) or not isinstance(right, int):
        return None
    return {
        ast.Eq: left == right,
        ast.NotEq: left != right,
        ast.Lt: left < right,
        ast.LtE: left <= right,
        ast.Gt: left > right,
        ast.GtE: left >= right,
    }.get(type(op))
