"""The package's layers run one way: no import cycle, no import from a layer above.

The imports are read from the source with ``ast``: every ``import`` statement
(at module level, in a function, under ``TYPE_CHECKING``: a type is a dependency
too) and every module a rule names for ``lint_plugin.lazy.lazy``. ``from pkg
import sub`` of a submodule is an import of the submodule (its package runs
first anyway, as the parent of every module in it).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Lowest first. A module may import its own layer (no cycle) and the ones below.
LAYERS = (
    (
        "lint_plugin",
        "records",
        "findings",
        "printable",
        "codes",
        "runtime",
        "source_files",
        "held_signals",
        "lazy",
        "errors",
        "statements",
        "digests",
        "allocators",
        "roles",
        "bindings",
        "install_origin",
        "envelope",
        "contracts",
        "namespaces",
    ),
    ("algebra",),
    ("engine",),
    ("rules",),
    ("linter", "prefilter", "noqa", "explain", "config"),
    ("check", "fix", "flake8_plugin", "codemod"),
    ("proof", "output"),
    ("cli",),
)


def _modules() -> dict[str, Path]:
    """Every module of the installed package, by its dotted name (``rules/`` is
    ``lint_plugin.rules``, as pyproject maps it)."""
    found = {}
    for folder, package in (
        ("lint_plugin", "lint_plugin"),
        ("rules", "lint_plugin.rules"),
    ):
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(p for p in (*parts, node.module) if p)
            subs = [
                f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules
            ]
            targets = subs if len(subs) == len(node.names) else [base, *subs]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "lazy"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            targets = [node.args[0].value]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", None) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.JoinedStr)
            and isinstance(node.args[0].values[0], ast.Constant)
        ):
            # `importlib.import_module(f"lint_plugin.rules.{name}")`: every
            # module its constant prefix may name.
            prefix = node.args[0].values[0].value
            targets = [m for m in modules if m.startswith(prefix) and m != prefix]
        found.update(t for t in targets if t in modules and t != name)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _layer(name: str) -> int:
    room = name.split(".")[1] if "." in name else "lint_plugin"
    for index, rooms in enumerate(LAYERS):
        if room in rooms:
            return index
    raise AssertionError(f"{name}: its folder {room!r} is in no layer of LAYERS")


GRAPH = _graph()


def test_the_package_was_read() -> None:
    assert len(GRAPH) > 100
    assert "lint_plugin.rules.kvi003_unsized_draft_buffer" in GRAPH
    # A lazy import is read as one.
    assert (
        "lint_plugin.engine.flow.row_sizing"
        in GRAPH["lint_plugin.rules.kvi003_unsized_draft_buffer"]
    )


def test_every_package_is_installed() -> None:
    """A regular install ships the packages pyproject lists: every folder of
    the package is one of them (a new one left out imports nowhere but here)."""
    import tomllib

    table = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(table["tool"]["setuptools"]["packages"])
    folders = {name for name, path in _modules().items() if path.name == "__init__.py"}
    assert folders == listed


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle() -> None:
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_one() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        ["a", "b", "c"]
    ]


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_no_import_from_a_layer_above(name: str) -> None:
    above = sorted(t for t in GRAPH[name] if _layer(t) > _layer(name))
    assert above == [], f"{name} imports from a layer above it"
