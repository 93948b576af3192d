"""Which draft-backend classes of two texts are compared, and which cannot be.

A class is compared when its own text differs between the sides, or when a
module-level definition it reads does (a top-level function, a constant, an
import, followed through the module functions it calls: the harness compiles
the file's own functions with the class, so a helper redefined without topk is
driven like a changed class). A class present on one side only (removed,
renamed, added, in two unrelated files, in a file deleted or new since
``--base``) is never "nothing to prove": it is reported as not compared.
Nothing is imported or run here: the texts are read with ``ast``.
"""

from __future__ import annotations

import ast

from .loader import DRAFT_SUFFIX


def draft_classes(tree: ast.Module | None) -> dict[str, ast.ClassDef]:
    if tree is None:
        return {}
    return {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.ClassDef) and node.name.endswith(DRAFT_SUFFIX)
    }


def parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def module_definitions(tree: ast.Module | None) -> dict[str, str]:
    """Each name a top-level statement binds, with the statement's dump (all
    the statements binding it, in order)."""
    found: dict[str, list[str]] = {}
    for stmt in tree.body if tree is not None else ():
        if isinstance(stmt, ast.ClassDef) and stmt.name.endswith(DRAFT_SUFFIX):
            continue  # compared as a class
        for name in _binds(stmt):
            found.setdefault(name, []).append(ast.dump(stmt))
    return {name: "\n".join(dumps) for name, dumps in found.items()}


def _binds(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    return {
        node.id
        for node in ast.walk(stmt)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }


def _reads(node: ast.AST) -> set[str]:
    return {
        sub.id
        for sub in ast.walk(node)
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)
    }


def dependencies(tree: ast.Module | None, cls: ast.ClassDef) -> set[str]:
    """The module-level names ``cls`` reads, and those the module functions
    and classes it reads read in turn."""
    if tree is None:
        return set()
    defined = {
        name: stmt
        for stmt in tree.body
        for name in _binds(stmt)
        if not (isinstance(stmt, ast.ClassDef) and stmt.name.endswith(DRAFT_SUFFIX))
    }
    found: set[str] = set()
    pending = [cls]
    while pending:
        for name in _reads(pending.pop()) & defined.keys():
            if name not in found:
                found.add(name)
                pending.append(defined[name])
    return found


def compared(
    before: str, after: str
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``(changed, one_sided)``: each ``(class name, why)``; ``changed`` is
    driven on both sides, ``one_sided`` reported as not compared."""
    old, new = parse(before), parse(after)
    old_classes, new_classes = draft_classes(old), draft_classes(new)
    old_defs, new_defs = module_definitions(old), module_definitions(new)
    changed = []
    for name in sorted(old_classes.keys() & new_classes.keys()):
        if ast.dump(old_classes[name]) != ast.dump(new_classes[name]):
            changed.append((name, "the class differs"))
            continue
        reads = dependencies(old, old_classes[name]) | dependencies(
            new, new_classes[name]
        )
        differing = sorted(n for n in reads if old_defs.get(n) != new_defs.get(n))
        if differing:
            changed.append((name, f"module-level {', '.join(differing)} differs"))
    one_sided = [
        (name, "only in the original (removed or renamed): not compared")
        for name in sorted(old_classes.keys() - new_classes.keys())
    ] + [
        (name, "only in the rewrite (added or renamed): not compared")
        for name in sorted(new_classes.keys() - old_classes.keys())
    ]
    return changed, one_sided
