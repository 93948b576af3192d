"""Load one draft-backend class from a source file without importing its module.

Importing ``sglang/srt/layers/attention/flashinfer_backend.py`` would import
sglang, flashinfer, CUDA extensions, ... none of which exist here (and sglang
must never be imported by this project). The class itself only needs a handful
of names, so the loader parses the file, keeps the single ``ClassDef`` asked for,
compiles *only that class* (with its original line numbers, so tracebacks point
into the real file) and executes it in a namespace the harness provides.

Every module-level name the class's methods read must be provided. Names used
only in ``__init__`` (which the harness never runs) or only in annotations get a
stub that raises if touched; any other unknown name is an error listing them all,
so a rewrite cannot silently start depending on something the harness fakes.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import functools
import symtable
from dataclasses import dataclass
from pathlib import Path
from types import CodeType
from typing import Any

from .errors import HarnessError

DRAFT_SUFFIX = "MultiStepDraftBackend"
NEVER_RUN = frozenset({"__init__"})  # instances are built with cls.__new__(cls)
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

    def users(self) -> dict[str, frozenset[str]]:
        return dict(self.free_names)


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


def _free_names(module: ast.Module) -> dict[str, set[str]]:
    """Global names each method reads, attributed to the top-level method.

    symtable does the scoping (locals, closures, comprehensions, ``global``);
    the future import keeps annotations out, they are handled separately.
    """
    source = "from __future__ import annotations\n" + ast.unparse(module)
    table = symtable.symtable(source, "<class>", "exec")
    users: dict[str, set[str]] = {}

    def visit(scope: symtable.SymbolTable, method: str) -> None:
        for sym in scope.get_symbols():
            if sym.is_global() and sym.is_referenced():
                users.setdefault(sym.get_name(), set()).add(method)
        for child in scope.get_children():
            visit(child, method if method != "<class body>" else child.get_name())

    for cls in table.get_children():
        visit(cls, "<class body>")
    return users


@functools.lru_cache(maxsize=64)
def _extract(text: str, filename: str, class_name: str | None) -> ClassSource:
    tree = ast.parse(text, filename=filename)
    node = find_class(tree, class_name)
    module = ast.Module(body=[node], type_ignores=[])
    future = _has_future_annotations(tree)
    users = _free_names(module)
    if not future:  # annotations are evaluated at def time: they need names too
        for name in _annotation_names(node):
            users.setdefault(name, set()).add(ANNOTATION)
    free = tuple(sorted((k, frozenset(v)) for k, v in users.items()))
    flags = __future__.annotations.compiler_flag if future else 0
    code = compile(module, filename, "exec", flags=flags, dont_inherit=True)
    return ClassSource(node.name, filename, module, future, free, code)


def extract_class(
    path_or_text: str | Path, class_name: str | None = None
) -> ClassSource:
    text, filename = read_source(path_or_text)
    return _extract(text, filename, class_name)


class Unreachable:
    """A name only ``__init__`` or an annotation uses; touching it is a bug."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"<harness stub {self._name}>"

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise HarnessError(
            f"{self._name} is a stub: the harness only expected it in __init__ or "
            "annotations, but a method it runs used it"
        )

    __call__ = _refuse
    __getitem__ = _refuse

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return self._refuse()


def _guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
    """``__import__`` for the compiled class: never sglang, never relative."""
    if level:
        raise HarnessError(f"relative import of {name!r} from the class under test")
    if name == "sglang" or name.startswith("sglang."):
        raise HarnessError(
            f"the class under test imports {name}; this project never imports "
            "sglang -- the harness only drives methods that do not"
        )
    return builtins.__import__(name, globals, locals, fromlist, level)


def build_namespace(source: ClassSource, provided: dict[str, Any]) -> dict[str, Any]:
    """Globals for the class: ``provided`` names, stubs, and guarded builtins."""
    namespace: dict[str, Any] = {
        "__name__": f"draft_kv_harness.{source.name}",
        "__builtins__": {**vars(builtins), "__import__": _guarded_import},
    }
    unknown = {}
    for name, methods in source.free_names:
        if name in provided:
            namespace[name] = provided[name]
        elif hasattr(builtins, name):
            continue
        elif methods <= NEVER_RUN | {ANNOTATION}:
            namespace[name] = Unreachable(name)
        else:
            unknown[name] = sorted(methods)
    if unknown:
        listed = ", ".join(
            f"{n} (in {', '.join(m)})" for n, m in sorted(unknown.items())
        )
        raise HarnessError(
            f"{source.name} ({source.filename}) reads module-level names the harness "
            f"does not provide: {listed}. Add a faithful stand-in (extra_names=...)."
        )
    # Globals the class only assigns (flashinfer's ``global
    # global_override_indptr_cpu``) still need their module-level value.
    for name, value in provided.items():
        namespace.setdefault(name, value)
    return namespace


def load_class(source: ClassSource, provided: dict[str, Any]) -> type:
    """Compile and execute only the class, in the namespace built from ``provided``."""
    namespace = build_namespace(source, provided)
    exec(source.code, namespace)
    return namespace[source.name]
