"""Upstream's ``generate_draft_decode_kv_indices``, cut out of its file and jitted.

The kernel lives in ``sglang/srt/speculative/spec_utils.py`` (``eagle_utils.py``
before 0.5.3), ``sglang/srt/speculative/triton_ops/cache_locs.py`` in 0.5.13 and
``sglang/kernels/ops/speculative/cache_locs.py`` in 0.5.23; :mod:`.locate` finds
the file a backend's own import names. Importing that module would import
sglang; instead the file is parsed, the one ``def`` is compiled alone (with its
original line numbers) in a namespace holding only what the kernel reads --
``triton`` and ``triton.language`` under the names the file imports them as, and
any ``@triton.jit`` helper of the same file it calls -- and the function is handed
to ``triton.jit``. Any other module-level name is an error, as in :mod:`.loader`.

One mode per process. Triton reads ``TRITON_INTERPRET`` whenever ``triton.jit``
wraps a function, and ``import triton`` wraps ``triton.language``'s own jit
functions (``tl.sum`` ...), which the kernel calls. An interpreted kernel calling a
compiled ``tl.sum`` fails, so the mode is the process's, fixed before triton is
imported: :func:`import_triton` sets the variable when it imports triton first
(``prove`` and the tests' conftest do so before anything else), and
:func:`jit_kernel` refuses a CPU kernel in a process whose triton compiles. The
tests run the compiled CUDA twin in a child process.
"""

from __future__ import annotations

import ast
import builtins
import functools
import hashlib
import linecache
import os
import symtable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import HarnessError

KERNEL = "generate_draft_decode_kv_indices"
TRITON_MODULES = ("triton", "triton.language")


@dataclass(frozen=True)
class KernelSource:
    """The kernel's ``def`` (and the jit helpers it calls) from one file.

    This is the located kernel every consumer reads (the harness jits it, the
    symbolic extent reads its ``node``): ``path``, ``digest``, ``source`` (the
    whole file's text), ``name`` and ``node``/``helper_nodes`` (fresh ``ast``
    nodes, with the file's line numbers).
    """

    filename: str
    text: str
    functions: tuple[str, ...]  # helpers first, the kernel last
    aliases: tuple[tuple[str, str], ...]  # local name -> triton module
    # How it was found ("--kernel", "imported by ...", "known location"): shown in
    # prove's table, never part of the kernel's identity.
    located_by: str = field(default="", compare=False)

    name = KERNEL

    @property
    def path(self) -> str:
        return self.filename

    @property
    def source(self) -> str:
        return self.text

    def _nodes(self) -> dict[str, ast.FunctionDef]:
        tree = ast.parse(self.text, filename=self.filename)
        return {n.name: n for n in tree.body if _is_def(n) and n.name in self.functions}

    @property
    def node(self) -> ast.FunctionDef:
        """The kernel's ``def`` (decorators included)."""
        return self._nodes()[KERNEL]

    @property
    def helper_nodes(self) -> tuple[ast.FunctionDef, ...]:
        """The ``@triton.jit`` helpers of the same file the kernel calls."""
        nodes = self._nodes()
        return tuple(nodes[name] for name in self.functions if name != KERNEL)

    @property
    def parameters(self) -> tuple[str, ...]:
        """The kernel's parameter names, in order (what a launch binds to)."""
        return tuple(a.arg for a in self.node.args.args)

    @property
    def digest(self) -> str:
        """Of the kernel's own code: releases with equal digests run equal code."""
        nodes = self._nodes()
        dumped = "".join(ast.dump(nodes[name]) for name in sorted(nodes))
        return hashlib.sha256(dumped.encode()).hexdigest()[:12]


def _is_def(node: ast.AST) -> bool:
    return isinstance(node, ast.FunctionDef)


def _triton_aliases(tree: ast.Module) -> dict[str, str]:
    aliases = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in TRITON_MODULES:
                    local = alias.asname or alias.name.split(".")[0]
                    aliases[local] = alias.name if alias.asname else "triton"
        elif isinstance(node, ast.ImportFrom) and node.module == "triton":
            for alias in node.names:
                if alias.name == "language":
                    aliases[alias.asname or "language"] = "triton.language"
    return aliases


def _global_reads(node: ast.FunctionDef) -> set[str]:
    table = symtable.symtable(ast.unparse(node), "<kernel>", "exec")
    (fn,) = table.get_children()
    names = set()

    def visit(scope: symtable.SymbolTable) -> None:
        for sym in scope.get_symbols():
            if sym.is_global() and sym.is_referenced():
                names.add(sym.get_name())
        for child in scope.get_children():
            visit(child)

    visit(fn)
    return names


def kernel_from_text(text: str, filename: str, located_by: str = "") -> KernelSource:
    """The kernel of one file's text; HarnessError when it is absent or reads an
    unknown module-level name."""
    tree = ast.parse(text, filename=filename)
    defs = {n.name: n for n in tree.body if _is_def(n)}
    if KERNEL not in defs:
        raise HarnessError(f"{filename}: no top-level def {KERNEL}")
    aliases = _triton_aliases(tree)
    order: list[str] = []
    unknown: set[str] = set()

    def need(name: str) -> None:
        if name in order:
            return
        for read in sorted(_global_reads(defs[name])):
            if read in aliases or hasattr(builtins, read) or read == name:
                continue
            if read in defs and _is_triton_jit(defs[read], aliases):
                need(read)
            else:
                unknown.add(read)
        order.append(name)

    need(KERNEL)
    if unknown:
        raise HarnessError(
            f"{filename}: {KERNEL} reads module-level names the loader does not "
            f"provide: {', '.join(sorted(unknown))}"
        )
    return KernelSource(
        filename, text, tuple(order), tuple(sorted(aliases.items())), located_by
    )


def _is_triton_jit(node: ast.FunctionDef, aliases: dict[str, str]) -> bool:
    for deco in node.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if (
            isinstance(target, ast.Attribute)
            and target.attr == "jit"
            and isinstance(target.value, ast.Name)
            and aliases.get(target.value.id) == "triton"
        ):
            return True
    return False


def find_kernel(folder: Path) -> KernelSource:
    """The kernel from the one ``*.py`` under ``folder`` (at any depth) that
    defines it; :func:`.locate.locate_kernel` follows a backend's import instead."""
    needle = f"def {KERNEL}("
    found = [
        path
        for path in sorted(Path(folder).rglob("*.py"))
        if needle in path.read_text(encoding="utf-8")
    ]
    if len(found) != 1:
        raise HarnessError(
            f"{folder}: expected one file defining {KERNEL}, found "
            f"{[p.name for p in found]}"
        )
    text = found[0].read_text(encoding="utf-8")
    return kernel_from_text(text, str(found[0]), f"the one file under {folder}")


def import_triton(interpret: bool) -> Any:
    """``triton``, imported in the given mode unless it already is imported."""
    import sys

    if "triton" not in sys.modules:
        os.environ["TRITON_INTERPRET"] = "1" if interpret else "0"
    import triton

    return triton


def interpreting() -> bool:
    """Whether this process's triton runs jit functions in its interpreter."""
    import sys

    if "triton" not in sys.modules:
        return os.environ.get("TRITON_INTERPRET", "0") == "1"
    from triton.language import standard
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(standard._sum_combine, InterpretedFunction)


@functools.lru_cache(maxsize=32)
def jit_kernel(source: KernelSource, device_type: str) -> Any:
    """``triton.jit`` of the kernel in the process's mode (see the module doc)."""
    import importlib

    triton = import_triton(interpret=device_type == "cpu")
    if device_type == "cpu" and not interpreting():
        raise HarnessError(
            "the CPU kernel needs triton's interpreter: set TRITON_INTERPRET=1 "
            "before triton is imported"
        )
    tree = ast.parse(source.text, filename=source.filename)
    nodes = {n.name: n for n in tree.body if _is_def(n)}
    # inspect.getsource (which triton.jit uses) must find the very text parsed
    # here, even when it never was a file (a git revision): register it.
    lines = source.text.splitlines(keepends=True)
    linecache.cache[source.filename] = (len(source.text), None, lines, source.filename)
    namespace: dict[str, Any] = {"__name__": f"draft_kv_harness.{KERNEL}"}
    for local, module in source.aliases:
        namespace[local] = importlib.import_module(module)
    for name in source.functions:
        node = nodes[name]
        node.decorator_list = []
        code = compile(
            ast.Module(body=[node], type_ignores=[]),
            source.filename,
            "exec",
            dont_inherit=True,
        )
        exec(code, namespace)
        namespace[name] = triton.jit(namespace[name])
    return namespace[KERNEL]
