"""A file's module-level statements, for the width analysis to read names from.

A width can flow from a module constant (``MAX_PAD = 64``), a function of the
module (``round_up(w, p)``), an import (``import torch as th``) or a base class
defined in the file. The whole-tree walk (flake8, ``fix``, the tests' reference
walk) has the module's tree: :class:`TreeModuleScope`. ``check`` parses only the
regions of a file that can match, so :class:`TextModuleScope` parses, on first
need, only what may bind the name asked for: the top-level code between the
file's top-level ``def``/``class`` blocks that mentions the name, and a block of
that name. Both hand out the same statements (their rows numbered as in the file),
so the analysis gives the same answers either way; a piece that does not parse
alone (a layout the line scan misread) makes it parse the whole file instead.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Callable, Iterable, Sequence

from lint_plugin.engine.source import Source
from lint_plugin.statements import children

_BLOCKS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_WORD = re.compile(r"[A-Za-z_]\w*")
_ANY_NAME = re.compile(r"import\s*\(?\s*\*")


class LazyBlock(ast.stmt):
    """A top-level ``def``/``class`` not parsed yet: it binds ``lazy_name``;
    :meth:`ModuleScope.block` parses it."""

    _fields = ()


class ModuleScope:
    """The statements of one module that may bind a name, in order."""

    source: Source
    allocator_aliases: frozenset[str] | None = None  # the walk's, once per file
    _classes: dict[str, bool] | None = None  # defines_class's answers
    # star_imports' answer: every tree of a file decided (the flake8 plugin's
    # statements, check's regions) asks it of the file's one module scope.
    _star_imports: list[ast.ImportFrom] | None = None

    def statements(self, name: str) -> Sequence[ast.stmt]:
        raise NotImplementedError

    def block(self, stub: ast.stmt) -> ast.stmt | None:
        """The ``def``/``class`` a lazy stub stands for (see ``statements``)."""
        return stub

    def star_imports(self) -> list[ast.ImportFrom]:
        """The file's ``from m import *`` statements: each may bind any name.
        Python allows them at module level only (in any block there), so
        both kinds of scope find the same ones."""
        found = self._star_imports
        if found is not None:
            return found
        found = self._star_imports = []
        if not _ANY_NAME.search(self.source.text):
            return found
        pending = list(reversed(self.statements("*")))
        while pending:
            node = pending.pop()
            if isinstance(node, ast.ImportFrom):
                if any(alias.name == "*" for alias in node.names):
                    found.append(node)
            elif not isinstance(node, (*_BLOCKS, LazyBlock)):
                inner = list(children(node))
                pending.extend(reversed(inner))
        return found

    def defines_class(self, name: str) -> bool:
        """May the file define a class of this name, anywhere? (A superset:
        its text has ``class name``.)"""
        if self._classes is None:
            self._classes = {}
        found = self._classes.get(name)
        if found is None:
            text = self.source.text
            found = False
            # A literal first: a pattern starting with "\\b" is tried at
            # every offset of the file.
            for match in re.finditer(rf"class\s+{re.escape(name)}\b", text):
                start = match.start()
                before = text[start - 1] if start else " "
                if not (before.isalnum() or before == "_"):
                    found = True
                    break
            self._classes[name] = found
        return found


class TreeModuleScope(ModuleScope):
    def __init__(self, module: ast.Module, source: Source) -> None:
        self.module = module
        self.source = source

    def statements(self, name: str) -> Sequence[ast.stmt]:
        return self.module.body


class EmptyModuleScope(ModuleScope):
    """A module nothing is known of (the file does not parse)."""

    def __init__(self, source: Source) -> None:
        self.source = source

    def statements(self, name: str) -> Sequence[ast.stmt]:
        return ()


class TextModuleScope(ModuleScope):
    """Module-level statements parsed from the text, piece by piece.

    ``blocks``: ``(first row, end row, kind, name)`` of each top-level ``def`` or
    ``class`` (0-based rows, ``end`` exclusive; decorators are found here).
    """

    def __init__(
        self,
        text: str,
        lines: list[str],
        blocks: Callable[[], Iterable[tuple[int, int, str, str]]],
    ) -> None:
        self.source = Source(text)
        self.lines = lines
        self._find_blocks = blocks
        self._fallback: ModuleScope | None = None
        self._blocks: list[tuple[int, int, str, str]] | None = None
        self._gaps: list[tuple[int, int]] = []
        self._parsed_gaps: dict[int, list[ast.stmt] | None] = {}
        self._by_word: dict[str, list[int]] = {}  # word -> gaps naming it
        self._blocks_named: dict[str, list[int]] = {}
        self._binds_any: set[int] = set()
        self._parsed_blocks: dict[int, ast.stmt | None] = {}
        self._by_name: dict[str, list[ast.stmt]] = {}

    def _layout(self) -> None:
        """The top-level blocks (found on first need) and the code between."""
        lines = self.lines
        self._blocks = []
        for start, end, kind, name in self._find_blocks():
            while start > 0 and lines[start - 1].startswith("@"):
                start -= 1  # the block's decorators
            self._blocks.append((start, end, kind, name))
        row = 0
        for index, (start, end, _, name) in enumerate(self._blocks):
            if start > row:
                self._gaps.append((row, start))
            row = max(row, end)
            self._blocks_named.setdefault(name, []).append(index)
        if row < len(lines):
            self._gaps.append((row, len(lines)))
        # A gap that binds a name names it (unless it may bind any: a star
        # import, a match statement).
        for index, (start, end) in enumerate(self._gaps):
            text = "\n".join(lines[start:end])
            words = set(_WORD.findall(text))
            for word in words:
                self._by_word.setdefault(word, []).append(index)
            if _ANY_NAME.search(text) or "match" in words:
                self._binds_any.add(index)

    def statements(self, name: str) -> Sequence[ast.stmt]:
        if self._fallback is not None:
            return self._fallback.statements(name)
        found = self._by_name.get(name)
        if found is not None:
            return found
        if self._blocks is None:
            self._layout()
        pieces: list[tuple[int, list[ast.stmt]]] = []
        for index in sorted({*self._by_word.get(name, ()), *self._binds_any}):
            parsed = self._gap(index)
            if parsed is None:
                return self._whole().statements(name)
            pieces.append((self._gaps[index][0], parsed))
        for index in self._blocks_named.get(name, ()):
            start, end, _, block_name = self._blocks[index]
            if block_name == name:
                stub = LazyBlock(lineno=start + 1, col_offset=0)
                stub.end_lineno, stub.end_col_offset = end, 0
                stub.lazy_name = name
                stub.lazy_block = index
                pieces.append((start, [stub]))
        pieces.sort(key=lambda piece: piece[0])
        found = self._by_name[name] = [s for _, stmts in pieces for s in stmts]
        return found

    def block(self, stub: ast.stmt) -> ast.stmt | None:
        if self._fallback is not None or not hasattr(stub, "lazy_block"):
            return stub
        index = stub.lazy_block
        if index not in self._parsed_blocks:
            start, end, _, name = self._blocks[index]
            parsed = self._parse(start, end)
            if not (parsed and isinstance(parsed[-1], _BLOCKS)):
                # Not a block alone: the whole file decides (as a whole walk).
                whole = self._whole()
                parsed = [
                    s
                    for s in whole.statements(name)
                    if isinstance(s, _BLOCKS)
                    and s.name == name
                    and start < s.lineno <= end
                ]
            self._parsed_blocks[index] = parsed[-1] if parsed else None
        return self._parsed_blocks[index]

    def _gap(self, index: int) -> list[ast.stmt] | None:
        if index not in self._parsed_gaps:
            start, end = self._gaps[index]
            self._parsed_gaps[index] = self._parse(start, end)
        return self._parsed_gaps[index]

    def _parse(self, start: int, end: int) -> list[ast.stmt] | None:
        # Blank lines first: the statements get the file's rows as they are
        # parsed (ast.increment_lineno would walk the tree again).
        text = "\n" * start + "\n".join(self.lines[start:end]) + "\n"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        return tree.body

    def _whole(self) -> ModuleScope:
        if self._fallback is None:
            text = self.source.text
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    tree = ast.parse(text)
                self._fallback = TreeModuleScope(tree, self.source)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._fallback = EmptyModuleScope(self.source)
        return self._fallback
