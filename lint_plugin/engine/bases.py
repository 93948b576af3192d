"""The topk and step-count attributes a class inherits from its bases.

``class TRTLLMHAAttnMultiStepDraftBackend(FlashInferMultiStepDraftBackend)`` keeps
the topk its base keeps (``super().__init__(..., topk, ...)``): the walk reads the
bases' text, in the file or in a module of the same source tree, to know it.
"""

from __future__ import annotations

import ast

from lint_plugin.engine.draft_backend import role_attributes


def inherited_role_attributes(node: ast.ClassDef, module, path: str) -> set[str]:
    """The topk and step-count attributes that the classes ``node`` names as
    its bases keep, and their bases in turn: a base defined at the top of the
    file (``module``, a ``ModuleScope``; every class of that name, as a class
    statement may be run again), or imported at the top of it from a module of
    the same source tree (``path``: the file's, as KVI007 finds such modules).
    A base named otherwise (``mod.Base``) or living outside the tree is not
    read."""
    found: set[str] = set()
    pending = [(b.id, module, path) for b in node.bases if isinstance(b, ast.Name)]
    seen = {(node.name, path)}
    while pending:
        name, scope, where = pending.pop()
        if (name, where) in seen:
            continue
        seen.add((name, where))
        for statement in scope.statements(name):
            block = scope.block(statement)
            if isinstance(block, ast.ClassDef) and block.name == name:
                found |= role_attributes(_class_text(scope, block))
                pending += [
                    (b.id, scope, where) for b in block.bases if isinstance(b, ast.Name)
                ]
            elif isinstance(block, ast.ImportFrom):
                pending += _imported_classes(block, name, where)
    return found


def _class_text(scope, block: ast.ClassDef) -> str:
    """The rows of ``block``, from the lines of a scope read from text (no
    index of the whole file's offsets), else from its source."""
    lines = getattr(scope, "lines", None)
    if lines is None:
        return scope.source.segment(block)
    return "\n".join(lines[block.lineno - 1 : block.end_lineno])


def _imported_classes(statement: ast.ImportFrom, name: str, path: str) -> list:
    """``(class name, module scope, path)`` of the module of the tree that
    ``statement`` imports ``name`` from, if it does. That module is read as
    ``check`` reads a file: only the blocks asked for are parsed."""
    from lint_plugin.engine import package_tree, scan
    from lint_plugin.engine.module_scope import TextModuleScope
    from lint_plugin.engine.source import normalised

    for alias in statement.names:
        if (alias.asname or alias.name) != name:
            continue
        home = package_tree.module_home(statement.module, statement.level, path)
        text = package_tree.module_text(home.path) if home is not None else None
        if text is not None:
            text = normalised(text)
            lines = text.split("\n")
            layout = scan.Layout(text, lines, scan.StringSpans(text))
            scope = TextModuleScope(text, lines, layout.top_level_blocks)
            return [(alias.name, scope, home.path)]
    return []
