"""``lint_plugin.bindings``: every form Python binds a name by, each with the
scope it binds in, held to CPython's own ``symtable`` on fixed snippets, on
generated modules and on the latest pinned release's attention and speculative
folders."""

from __future__ import annotations

import ast
import re
import symtable
import sys
import warnings

import pytest
from generated_modules import generate

from lint_plugin import bindings

_SCOPES = {
    ast.ListComp: "listcomp",
    ast.SetComp: "setcomp",
    ast.DictComp: "dictcomp",
    ast.GeneratorExp: "genexpr",
    ast.Lambda: "lambda",
}


def _scope_name(node: ast.AST | None) -> str:
    if node is None or isinstance(node, ast.Module):
        return "module"
    name = getattr(node, "name", None)  # a `type` alias's is a Name (3.12)
    return (name.id if isinstance(name, ast.Name) else name) or _SCOPES[type(node)]


def found(text: str) -> list[tuple[str, str, str]]:
    """(name, kind, the scope it binds in) of every binding in ``text``."""
    return [
        (b.name, b.kind, _scope_name(b.scope))
        for b in bindings.all_bindings(ast.parse(text))
    ]


# (text, the bindings it makes, in order)
CASES = {
    "assignment": ("a = b = 1", [("a", "assignment", "module"), ("b", "assignment", "module")]),
    "unpacking": (
        "a, [b, *c] = x",
        [("a", "assignment", "module"), ("b", "assignment", "module"), ("c", "assignment", "module")],
    ),
    "augmented": ("a += 1", [("a", "augmented assignment", "module")]),
    "annotated": ("a: int = 1", [("a", "annotated assignment", "module")]),
    "annotation": ("a: int", [("a", "annotation", "module")]),
    "attribute-and-subscript": ("self.a = d[k] = x.y.z = 1", []),
    "walrus-in-a-subscript-target": ("d[(k := 1)] = 2", [("k", "walrus", "module")]),
    "for": ("for i, j in x:\n    pass", [("i", "for target", "module"), ("j", "for target", "module")]),
    "async-for": (
        "async def f():\n    async for i in x:\n        pass",
        [("f", "function", "module"), ("i", "for target", "f")],
    ),
    "with": (
        "with a() as b, c(), d() as (e, f):\n    pass",
        [("b", "with target", "module"), ("e", "with target", "module"), ("f", "with target", "module")],
    ),
    "walrus": ("if (n := 1):\n    pass", [("n", "walrus", "module")]),
    "walrus-in-a-comprehension": (
        "def f():\n    return [(y := x) for x in z]",
        [("f", "function", "module"), ("x", "comprehension target", "listcomp"), ("y", "walrus", "f")],
    ),
    "walrus-in-a-lambda": (
        "g = lambda: (y := 1)",
        [("y", "walrus", "lambda"), ("g", "assignment", "module")],
    ),
    "comprehensions": (
        "a = {k: v for k, v in x if (w := k)}\nb = {s for s in x}\nc = list(g for g in x)",
        [
            ("k", "comprehension target", "dictcomp"),
            ("v", "comprehension target", "dictcomp"),
            ("w", "walrus", "module"),
            ("a", "assignment", "module"),
            ("s", "comprehension target", "setcomp"),
            ("b", "assignment", "module"),
            ("g", "comprehension target", "genexpr"),
            ("c", "assignment", "module"),
        ],
    ),
    "parameters": (
        "def f(a, /, b=(d := 1), *c, e, f=2, **g) -> (h := 3):\n    pass",
        [
            ("d", "walrus", "module"),
            ("a", "parameter", "f"),
            ("b", "parameter", "f"),
            ("c", "parameter", "f"),
            ("e", "parameter", "f"),
            ("f", "parameter", "f"),
            ("g", "parameter", "f"),
            ("h", "walrus", "module"),
            ("f", "function", "module"),
        ],
    ),
    "lambda-parameters": (
        "g = lambda a, *b, c=1, **d: a",
        [
            ("a", "parameter", "lambda"),
            ("b", "parameter", "lambda"),
            ("c", "parameter", "lambda"),
            ("d", "parameter", "lambda"),
            ("g", "assignment", "module"),
        ],
    ),
    "class": (
        "@deco\nclass C(B, metaclass=(m := M)):\n    x = 1\n    def f(self):\n        pass",
        [
            ("m", "walrus", "module"),
            ("C", "class", "module"),
            ("x", "assignment", "C"),
            ("self", "parameter", "f"),
            ("f", "function", "C"),
        ],
    ),
    "imports": (
        "import a.b.c\nimport d.e as f\nfrom g import h, i as j\nfrom k import *",
        [
            ("a", "import", "module"),
            ("f", "import", "module"),
            ("h", "import", "module"),
            ("j", "import", "module"),
            ("*", "star import", "module"),
        ],
    ),
    "except": (
        "try:\n    pass\nexcept E as e:\n    pass\n"
        "try:\n    pass\nexcept* F as f:\n    pass",
        [("e", "except target", "module"), ("f", "except target", "module")],
    ),
    "match": (
        "match x:\n"
        "    case [1, *rest] as whole:\n        pass\n"
        "    case {'k': P(a, b=[c]), **others}:\n        pass\n"
        "    case Q() | R(d) if (g := d):\n        pass\n"
        "    case _:\n        pass",
        [
            ("rest", "match capture", "module"),
            ("whole", "match capture", "module"),
            ("a", "match capture", "module"),
            ("c", "match capture", "module"),
            ("others", "match capture", "module"),
            ("d", "match capture", "module"),
            ("g", "walrus", "module"),
        ],
    ),
    "del": ("del a, (b, c), d.e, f[0]", [("a", "del", "module"), ("b", "del", "module"), ("c", "del", "module")]),
    "global": (
        "def f():\n    global g\n    g = 1\n    global h\n    [(h := 1) for _ in x]",
        [
            ("f", "function", "module"),
            ("g", "global", "f"),
            ("g", "assignment", "module"),
            ("h", "global", "f"),
            ("_", "comprehension target", "listcomp"),
            ("h", "walrus", "module"),
        ],
    ),
    "nonlocal": (
        "def f():\n    v = 1\n    def g():\n        nonlocal v\n        v = 2\n        w = 3",
        [
            ("f", "function", "module"),
            ("v", "assignment", "f"),
            ("g", "function", "f"),
            ("v", "nonlocal", "g"),
            ("v", "assignment", "f"),
            ("w", "assignment", "g"),
        ],
    ),
    "class-scope-global": (
        "class C:\n    global x\n    x = 1",
        [("C", "class", "module"), ("x", "global", "C"), ("x", "assignment", "module")],
    ),
}  # fmt: skip

if sys.version_info >= (3, 12):
    CASES["type-alias-and-parameters"] = (
        "type A[T] = list[T]\ndef f[U](x: U) -> U:\n    return x",
        [
            ("T", "type parameter", "A"),
            ("A", "type alias", "module"),
            ("x", "parameter", "f"),
            ("U", "type parameter", "f"),
            ("f", "function", "module"),
        ],
    )


@pytest.mark.parametrize(("text", "expected"), CASES.values(), ids=CASES.keys())
def test_every_binding_form_with_its_scope(text: str, expected: list) -> None:
    assert found(text) == expected


def test_a_statement_without_its_blocks() -> None:
    """``statement``: a statement's own bindings and its handlers' and cases',
    not the statements in its blocks; a def's parameters bind in the def."""
    tree = ast.parse(
        "try:\n    a = 1\nexcept E as e:\n    b = 2\n"
        "match (m := x):\n    case [c]:\n        d = 1\n"
        "def f(p=(q := 1)):\n    r = 1\n"
    )
    handled, matched, defined = tree.body
    assert [b.name for b in bindings.statement(handled)] == ["e"]
    assert [b.name for b in bindings.statement(matched)] == ["m", "c"]
    own = list(bindings.own(defined))
    assert [(b.name, b.scope is defined) for b in own] == [
        ("q", False),
        ("p", True),
        ("f", False),
    ]


def test_every_kind_has_words() -> None:
    kinds = {
        value
        for name, value in vars(bindings).items()
        if name.isupper() and isinstance(value, str)
    }
    assert kinds == set(bindings.WORDS)


# ---- held to symtable -------------------------------------------------------------

# A private name in a class is mangled by symtable (`__x` -> `_C__x`): not
# compared.
_MANGLED = re.compile(r"_?[A-Za-z0-9]*__\w*")


def _private(name: str) -> bool:
    return _MANGLED.fullmatch(name) is not None and not name.endswith("__")


def _ours(tree: ast.Module) -> dict[tuple, set[str]]:
    scopes: dict[tuple, set[str]] = {}
    for binding in bindings.all_bindings(tree):
        if binding.kind in bindings.DECLARATIONS or binding.kind == "star import":
            continue
        scopes.setdefault(_key(binding.lexical), set()).add(binding.name)
    return scopes


def _key(node: ast.AST) -> tuple:
    if isinstance(node, ast.Module):
        return ("module", 0)
    return (_scope_name(node), node.lineno)


def _theirs(text: str) -> dict[tuple, set[str]]:
    scopes: dict[tuple, set[str]] = {}
    # (a table, the key of the nearest table around it that is no comprehension)
    pending = [(symtable.symtable(text, "m", "exec"), ("module", 0))]
    while pending:
        table, owner = pending.pop()
        module = table.get_type() == "module"
        key = ("module", 0) if module else (table.get_name(), table.get_lineno())
        comprehension = key[0] in ("listcomp", "setcomp", "dictcomp", "genexpr")
        inner = owner if comprehension else key
        pending.extend((child, inner) for child in table.get_children())
        for symbol in table.get_symbols():
            name = symbol.get_name()
            if name == ".0":
                continue  # the iterable handed in
            if symbol.is_assigned() or symbol.is_parameter() or symbol.is_imported():
                # A walrus in a comprehension binds in the scope around it.
                where = owner if comprehension and not symbol.is_local() else key
                scopes.setdefault(where, set()).add(name)
    return scopes


def _agree(text: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return
        theirs = _theirs(text)
    ours = _ours(tree)
    for key in set(ours) | set(theirs):
        mine = {n for n in ours.get(key, ()) if not _private(n)}
        cpython = {n for n in theirs.get(key, ()) if not _private(n)}
        assert mine == cpython, (key, mine ^ cpython, text[:2000])


# symtable gives comprehensions scopes of their own up to 3.11 (PEP 709 inlines
# them from 3.12) and type parameters none before 3.12: compared on 3.11.
symtable_311 = pytest.mark.skipif(
    sys.version_info[:2] != (3, 11), reason="compared with 3.11's symtable"
)


@symtable_311
@pytest.mark.parametrize("text", [text for text, _ in CASES.values()], ids=CASES.keys())
def test_the_snippets_bind_what_symtable_says(text: str) -> None:
    _agree(text)


@symtable_311
@pytest.mark.parametrize("shard", range(4))
def test_generated_modules_bind_what_symtable_says(shard: int) -> None:
    for seed in range(shard, 400, 4):
        _agree(generate(seed).data().decode("utf-8", "replace"))


@symtable_311
def test_the_latest_releases_folders_bind_what_symtable_says(latest_package) -> None:
    root = latest_package / "srt"
    paths = sorted((root / "speculative").glob("*.py"))
    paths += sorted((root / "layers" / "attention").glob("*.py"))
    for path in paths:
        _agree(path.read_text(encoding="utf-8"))
    assert len(paths) > 80
