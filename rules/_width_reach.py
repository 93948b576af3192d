"""Where the value made at a width's site goes, for KVI003's unsafe fix.

The fix sizes a row where its width is made (a local's assignment, a method's
``return``), not in the allocation. That rewrite changes every use of the value
made there: a second buffer sized from the same local, a call given it, a later
test. So the fix is offered only when the value reaches nothing but the rows
reported with the same site. The value is followed forward, one binding at a
time (a local, a ``self.`` attribute, a function's return), and every mention
of a binding's name must be one the walk parsed: the name is counted as a word
in the text that could hold another use (the function's, or the whole file's for
an attribute or a function), and any mention the trees do not account for (a
string, ``getattr``, a module the regions left unparsed) refuses the fix.
"""

from __future__ import annotations

import ast
import re

from lint_plugin.engine.facts import ModuleFacts, self_attribute
from lint_plugin.engine.nodes import walk_nodes

# A value followed through more bindings than this is not followed: no fix.
_MAX_NODES = 64


def reaches_only(
    site, ends: list[ast.Call], facts: ModuleFacts, analysis, text: str
) -> bool:
    """Does the value made at ``site`` (``(node, scope)``) reach nothing but
    the allocation calls ``ends`` (those reported with it)? ``text``: the
    whole file's."""
    pending = [(*site, True)]
    seen: set[int] = set()
    while pending:
        node, scope, made = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if len(seen) > _MAX_NODES:
            return False
        chain = scope.locate(node)
        if not chain:
            return False  # made at module level: any module may import it
        statement = chain[-1]
        if any(isinstance(n, ast.NamedExpr) for n in _path(statement, node) or ()):
            return False  # `(w := ...)` binds it on the way: not followed
        if any(_path(call, node) is not None for call in ends):
            continue
        value = getattr(statement, "value", None)
        # Where the width is made, the analysis came down the statement's value
        # to it; at a read, only arithmetic may stand between the two, else the
        # value is used there (`torch.zeros(w)`, `log(w)`).
        path = _path(value, node) if value is not None else None
        if path is None or not (made or all(map(_passes_on, path, [*path[1:], node]))):
            return False
        readers = _readers(statement, scope, facts, analysis, text)
        if readers is None:
            return False
        pending += [(inner, outer, False) for inner, outer in readers]
    return True


def _path(root: ast.AST, node: ast.AST) -> list[ast.AST] | None:
    """The nodes from ``root`` down to ``node``'s parent, if ``root`` holds it."""
    if root is node:
        return []
    for child in ast.iter_child_nodes(root):
        below = _path(child, node)
        if below is not None:
            return [root, *below]
    return None


# The arithmetic the width analysis evaluates, by the callee's last name.
_ARITHMETIC_CALLS = frozenset(
    ("abs", "cdiv", "ceil", "ceil_div", "int", "max", "min", "next_power_of_2")
)


def _passes_on(node: ast.AST, child: ast.AST) -> bool:
    """Is ``node``'s value ``child``'s, through arithmetic with no other effect?"""
    if isinstance(node, ast.IfExp):
        return child is not node.test
    if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp)):
        return True
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        return name in _ARITHMETIC_CALLS
    return False


def _readers(statement, scope, facts, analysis, text):
    """The nodes the value bound by ``statement`` is read at, each with its
    scope; None when they cannot all be known."""
    if isinstance(statement, ast.Return):
        return _calls(scope, facts, analysis, text)
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
    elif isinstance(statement, ast.AnnAssign):
        target = statement.target
    else:
        return None  # several targets, augmented: not followed
    if isinstance(target, ast.Name):
        return _local_reads(target, scope)
    attr = self_attribute(target)
    if attr is not None:
        return _attribute_reads(target, attr, facts, analysis, text)
    return None


def _local_reads(target: ast.Name, scope):
    function = scope.node
    name = target.id
    names, accounted = [], 0
    for inner in walk_nodes(function):
        if isinstance(inner, ast.Name) and inner.id == name:
            names.append(inner)
        elif _names(inner, name) or (
            isinstance(inner, ast.Attribute) and inner.attr == name
        ):
            accounted += 1
    if _words(scope.source.segment(function), name) != len(names) + accounted:
        return None  # `global`, `nonlocal`, a decorator, a string: not followed
    return [(inner, scope) for inner in names if inner is not target]


def _attribute_reads(target, attr: str, facts, analysis, text: str):
    mentions, others = [], 0
    for cls, inner in _class_nodes(facts):
        if isinstance(inner, ast.Attribute) and inner.attr == attr:
            mentions.append((inner, cls))
        elif _names(inner, attr):
            others += 1  # a local of the same name, a parameter: no read of it
    if _words(text, attr) != len(mentions) + others:
        return None  # mentioned where no class the walk read holds it
    found = []
    for inner, cls in mentions:
        if inner is target:
            continue
        scope = _scope_of(inner, cls, analysis)
        if scope is None:
            return None
        found.append((inner, scope))
    return found


def _calls(scope, facts, analysis, text: str):
    """The calls of the function ``scope`` is, by its name."""
    function = scope.node
    name = function.name
    mentions, calls = 0, []
    for cls, inner in _class_nodes(facts):
        if _names(inner, name) or (
            isinstance(inner, ast.Attribute) and inner.attr == name
        ):
            mentions += 1
        if isinstance(inner, ast.Call) and (
            (isinstance(inner.func, ast.Name) and inner.func.id == name)
            or (isinstance(inner.func, ast.Attribute) and inner.func.attr == name)
        ):
            calls.append((inner, cls))
    if _words(text, name) != mentions or mentions != len(calls) + 1:
        return None  # a module function, a reference passed on: not followed
    found = []
    for call, cls in calls:
        outer = _scope_of(call, cls, analysis)
        if outer is None:
            return None
        found.append((call, outer))
    return found


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _names(node: ast.AST, name: str) -> bool:
    """Does ``node`` spell ``name`` as something other than an attribute or a
    read of a local (a local, a parameter, a keyword, a definition)?"""
    return (
        (isinstance(node, ast.Name) and node.id == name)
        or (isinstance(node, ast.arg) and node.arg == name)
        or (isinstance(node, ast.keyword) and node.arg == name)
        or (isinstance(node, _DEFS) and node.name == name)
    )


def _class_nodes(facts: ModuleFacts):
    """Every node of the classes the walk read, with its class, once."""
    seen: set[int] = set()
    for cls in facts.classes:
        if id(cls.node) in seen:
            continue
        for inner in walk_nodes(cls.node):
            seen.add(id(inner))
            yield cls, inner


def _scope_of(node, cls, analysis):
    """The scope of the innermost walked function of ``cls`` holding ``node``."""
    best = None
    for function in cls.functions:
        candidate = function.node
        if (
            candidate.lineno <= node.lineno
            and node.end_lineno <= candidate.end_lineno
            and (best is None or candidate.lineno >= best.node.lineno)
        ):
            best = function
    return analysis.frame_of(best).scope if best is not None else None


def _words(text: str, name: str) -> int:
    return len(re.findall(rf"(?<!\w){re.escape(name)}(?!\w)", text))
