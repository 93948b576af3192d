"""Where KVI006's inserted ``assert_buffer_fits`` is imported from, read from the
tree when ``guard-module`` is not configured.

In order: the module the file already imports the guard from (absolutely); the
module of the tree that defines it in a release's layout (0.5.23's
``sglang.kernels.ops.attention.utils``, 0.5.13's
``sglang.srt.layers.attention.utils``); any other module of the file's own
top-level package that defines it (a fork's); else the default, 0.5.13's module,
which ``fix`` then gives the guard's definition when it is in the tree and lacks
it. Nothing is imported: modules are found and read as :mod:`.package_tree` does.
"""

from __future__ import annotations

import ast
import os

from lint_plugin.engine.package_tree import defines, module_home, source_roots
from lint_plugin.engine.settings import DEFAULT_GUARD_MODULE
from lint_plugin.engine.vocabulary import GUARD

# The releases' own homes of the guard, newest first.
RELEASE_GUARD_MODULES = (
    "sglang.kernels.ops.attention.utils",
    DEFAULT_GUARD_MODULE,
)
# Folders a package's source never sits in (what ``check`` skips too).
_SKIPPED = frozenset({"__pycache__", "build", "dist", "node_modules", ".git"})
_DEFINITION = b"def " + GUARD.encode() + b"("


def guard_module_for(tree: ast.Module, path: str) -> str:
    """The module the guard inserted into ``path`` (parsed as ``tree``) comes from."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and any(alias.name == GUARD and not alias.asname for alias in node.names)
        ):
            return node.module
    for module in RELEASE_GUARD_MODULES:
        home = module_home(module, 0, path)
        if home is not None and defines(home.path, GUARD):
            return module
    found = _defined_in_package(path)
    return found or DEFAULT_GUARD_MODULE


_SCANNED: dict[str, str | None] = {}


def _defined_in_package(path: str) -> str | None:
    """A module of ``path``'s top-level package defining the guard at module
    level (the first in path order), or None. One search of the package's bytes
    per run: only a guard being inserted asks."""
    root = source_roots(path)[0]
    relative = os.path.relpath(os.path.abspath(path), root).split(os.sep)
    if len(relative) < 2:
        return None  # a script in no package
    package = os.path.join(root, relative[0])
    if package not in _SCANNED:
        _SCANNED[package] = _scan(root, package)
    return _SCANNED[package]


def _scan(root: str, package: str) -> str | None:
    for folder, folders, files in os.walk(package):
        folders[:] = sorted(
            f for f in folders if f not in _SKIPPED and not f.startswith(".")
        )
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            candidate = os.path.join(folder, name)
            try:
                with open(candidate, "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            if _DEFINITION not in data or not defines(candidate, GUARD):
                continue
            parts = os.path.relpath(candidate, root)[: -len(".py")].split(os.sep)
            if parts[-1] == "__init__":
                parts.pop()
            return ".".join(parts)
    return None
