"""Load one draft-backend class from a source file without importing its module.

Importing ``sglang/srt/layers/attention/flashinfer_backend.py`` would import
sglang, flashinfer, CUDA extensions, ... none of which exist here (and sglang
must never be imported by this project). The class itself only needs a handful
of names, so the loader parses the file, keeps the single ``ClassDef`` asked for,
compiles *only that class* (with its original line numbers, so tracebacks point
into the real file) and executes it in a namespace the harness provides.

Every module-level name the class reads comes from the namespace the harness
builds (:mod:`.names`): its own stand-ins, the standard-library modules the file
imports, the file's own top-level functions (compiled from the same file, so a
helper the class calls runs as written), a stub for names only annotations use,
and a recording :class:`~.standins.Opaque` for anything else, so a rewrite
cannot silently start depending on something the harness fakes: calling it is
recorded, computing with it is "cannot drive".
"""

from __future__ import annotations
import __future__

import ast
import builtins
import functools
import symtable
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import CodeType
from typing import Any

from .errors import HarnessError

DRAFT_SUFFIX = "MultiStepDraftBackend"
ANNOTATION = "<annotation>"


@dataclass(frozen=True)
class ClassSource:
    """One class cut out of a file, ready to compile."""

    name: str
    filename: str
    module: ast.Module  # holds only the ClassDef
    future_annotations: bool
    free_names: tuple[tuple[str, frozenset[str]], ...]  # name -> methods using it
    code: CodeType  # the class statement alone, compiled once per text
    # Top-level functions of the same file the class reads, compiled alone.
    siblings: tuple[tuple[str, CodeType], ...] = ()
    # name -> standard-library module, for the file's own imports of them.
    stdlib: tuple[tuple[str, str], ...] = ()
    declared_global: frozenset[str] = frozenset()  # ``global`` names it writes

    def users(self) -> dict[str, frozenset[str]]:
        return dict(self.free_names)

    @property
    def node(self) -> ast.ClassDef:
        return self.module.body[0]


def read_source(path_or_text: str | Path) -> tuple[str, str]:
    """``(text, filename)``; a ``Path`` or a one-line ``str`` is a path."""
    if isinstance(path_or_text, Path) or "\n" not in path_or_text:
        path = Path(path_or_text)
        return path.read_text(encoding="utf-8"), str(path)
    return path_or_text, "<rewritten source>"


def find_class(tree: ast.Module, class_name: str | None = None) -> ast.ClassDef:
    """The top-level class ``class_name``, or the one ``*MultiStepDraftBackend``."""
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    if class_name is not None:
        found = [c for c in classes if c.name == class_name]
    else:
        found = [c for c in classes if c.name.endswith(DRAFT_SUFFIX)]
    if len(found) != 1:
        wanted = class_name or f"*{DRAFT_SUFFIX}"
        names = [c.name for c in classes]
        raise HarnessError(
            f"expected one class {wanted}, found {len(found)} in {names}"
        )
    return found[0]


def _has_future_annotations(tree: ast.Module) -> bool:
    return any(
        isinstance(n, ast.ImportFrom)
        and n.module == "__future__"
        and any(alias.name == "annotations" for alias in n.names)
        for n in tree.body
    )


def _annotation_names(node: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for sub in ast.walk(node):
        annotations = []
        if isinstance(sub, ast.arg | ast.AnnAssign):
            annotations.append(sub.annotation)
        if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef):
            annotations.append(sub.returns)
        for ann in annotations:
            if ann is not None:
                names.update(n.id for n in ast.walk(ann) if isinstance(n, ast.Name))
    return names


def _free_names(module: ast.Module) -> tuple[dict[str, set[str]], set[str]]:
    """Global names each method reads, attributed to the top-level method, and
    the names it declares ``global`` and assigns.

    symtable does the scoping (locals, closures, comprehensions, ``global``);
    the future import keeps annotations out, they are handled separately.
    """
    source = "from __future__ import annotations\n" + ast.unparse(module)
    table = symtable.symtable(source, "<class>", "exec")
    users: dict[str, set[str]] = {}
    written: set[str] = set()

    def visit(scope: symtable.SymbolTable, method: str) -> None:
        for sym in scope.get_symbols():
            if sym.is_global() and sym.is_referenced():
                users.setdefault(sym.get_name(), set()).add(method)
            if sym.is_declared_global() and sym.is_assigned():
                written.add(sym.get_name())
        for child in scope.get_children():
            visit(child, method if method != "<class body>" else child.get_name())

    for cls in table.get_children():
        visit(cls, "<class body>")
    return users, written


def _stdlib_imports(tree: ast.Module) -> dict[str, str]:
    """Names the file binds to standard-library modules (``import contextlib``)."""
    import sys

    found = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top in sys.stdlib_module_names:
                    found[alias.asname or top] = alias.name if alias.asname else top
    return found


def _siblings(
    tree: ast.Module, wanted: set[str], filename: str, flags: int
) -> tuple[list[tuple[str, CodeType]], dict[str, set[str]]]:
    """The file's own top-level ``def``s among ``wanted`` and those they read,
    compiled; and the other module-level names they read (name -> readers)."""
    defs = {
        n.name: n
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and not n.decorator_list
    }
    order: list[str] = []
    their_reads: dict[str, set[str]] = {}
    todo = [name for name in sorted(wanted) if name in defs]
    while todo:
        name = todo.pop()
        if name in order:
            continue
        order.append(name)
        reads, _ = _free_names(ast.Module(body=[defs[name]], type_ignores=[]))
        for read in reads:
            if read in defs:
                if read not in order:
                    todo.append(read)
            else:
                their_reads.setdefault(read, set()).add(name)
    compiled = [
        (
            name,
            compile(
                ast.Module(body=[defs[name]], type_ignores=[]),
                filename,
                "exec",
                flags=flags,
                dont_inherit=True,
            ),
        )
        for name in order
    ]
    return compiled, their_reads


@functools.lru_cache(maxsize=256)
def _extract(text: str, filename: str, class_name: str | None) -> ClassSource:
    tree = ast.parse(text, filename=filename)
    node = find_class(tree, class_name)
    module = ast.Module(body=[node], type_ignores=[])
    future = _has_future_annotations(tree)
    users, written = _free_names(module)
    if not future:  # annotations are evaluated at def time: they need names too
        for name in _annotation_names(node):
            users.setdefault(name, set()).add(ANNOTATION)
    flags = __future__.annotations.compiler_flag if future else 0
    code = compile(module, filename, "exec", flags=flags, dont_inherit=True)
    siblings, their_reads = _siblings(tree, set(users), filename, flags)
    for name, readers in their_reads.items():
        users.setdefault(name, set()).update(readers)
    free = tuple(sorted((k, frozenset(v)) for k, v in users.items()))
    stdlib = _stdlib_imports(tree)
    return ClassSource(
        node.name,
        filename,
        module,
        future,
        free,
        code,
        tuple(siblings),
        tuple(sorted((k, v) for k, v in stdlib.items() if k in users)),
        frozenset(written),
    )


def extract_class(
    path_or_text: str | Path,
    class_name: str | None = None,
    filename: str | None = None,
) -> ClassSource:
    """The class ``class_name`` of a file or a text; ``filename`` names a text
    (a git revision, a rewrite) so its code, tracebacks and coverage say where
    it came from."""
    text, default = read_source(path_or_text)
    return _extract(text, filename or default, class_name)


class Unreachable:
    """A name only an annotation uses; touching it is a bug."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"<harness stub {self._name}>"

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise HarnessError(
            f"{self._name} is a stub: the harness only expected it in annotations, "
            "but a method it runs used it"
        )

    __call__ = _refuse
    __getitem__ = _refuse

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return self._refuse()


def build_namespace(
    source: ClassSource,
    provided: dict[str, Any],
    unknown: Callable[[str], Any] | None = None,
    importer: Callable[..., Any] | None = None,
) -> dict[str, Any]:
    """Globals for the class: ``provided`` names, the file's stdlib imports and
    own functions, stubs for annotation-only names, ``unknown(name)`` (a
    recording stand-in) for the rest -- or a HarnessError listing them all when
    no ``unknown`` is given."""
    import importlib

    namespace: dict[str, Any] = {
        "__name__": f"draft_kv_harness.{source.name}",
        "__builtins__": {
            **vars(builtins),
            "__import__": importer or _refusing_import,
        },
    }
    stdlib = dict(source.stdlib)
    siblings = dict(source.siblings)
    missing = {}
    for name, methods in source.free_names:
        if name in provided:
            namespace[name] = provided[name]
        elif hasattr(builtins, name):
            continue
        elif name in stdlib:
            namespace[name] = importlib.import_module(stdlib[name])
        elif name in siblings:
            continue  # compiled below, into this namespace
        elif methods <= {ANNOTATION}:
            namespace[name] = Unreachable(name)
        elif unknown is not None:
            namespace[name] = unknown(name)
        else:
            missing[name] = sorted(methods)
    if missing:
        listed = ", ".join(
            f"{n} (in {', '.join(m)})" for n, m in sorted(missing.items())
        )
        raise HarnessError(
            f"{source.name} ({source.filename}) reads module-level names the harness "
            f"does not provide: {listed}. Add a faithful stand-in (extra_names=...)."
        )
    # Globals the class only assigns (flashinfer's ``global
    # global_override_indptr_cpu``) still need their module-level value.
    for name, value in provided.items():
        namespace.setdefault(name, value)
    for _, code in source.siblings:
        exec(code, namespace)
    return namespace


def _refusing_import(name, globals=None, locals=None, fromlist=(), level=0):
    raise HarnessError(f"the class under test imports {name}; no importer given")


def load_class(
    source: ClassSource,
    provided: dict[str, Any],
    unknown: Callable[[str], Any] | None = None,
    importer: Callable[..., Any] | None = None,
) -> tuple[type, dict[str, Any]]:
    """Compile and execute only the class, in the namespace built from
    ``provided``; the class and its module namespace."""
    namespace = build_namespace(source, provided, unknown, importer)
    exec(source.code, namespace)
    return namespace[source.name], namespace
