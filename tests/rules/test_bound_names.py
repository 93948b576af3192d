"""What a module binds is read from its top-level statements, its defs and
classes as one-line stubs, where nothing inside them can bind a module name (no
``global``, ``globals()`` or ``sys.modules[__name__]``) and the whole text
parses. Held to the names read from the module's whole tree, on fixed layouts, on
generated modules (encodings, line ends, indentation, ``global``) and on the
attention and speculative folders of the latest pinned release."""

from __future__ import annotations

import pytest
from generated_modules import generate

from lint_plugin.engine import package_tree


@pytest.fixture
def skeleton_reads(monkeypatch) -> list[bool]:
    """One entry per module: was it read from its stubs?"""
    read: list[bool] = []
    real = package_tree._names_without_bodies

    def counted(data: bytes):
        found = real(data)
        read.append(found is not package_tree._UNREAD)
        return found

    monkeypatch.setattr(package_tree, "_names_without_bodies", counted)
    return read


def _same(data: bytes) -> None:
    assert package_tree._bound_names(data) == package_tree._names_of_tree(data)


@pytest.mark.parametrize(
    ("text", "by_stubs"),
    [
        ("def f():\n    return 1\n\nx = 1\n", True),
        ("@deco(\n    1,\n)\ndef f():\n    pass\n", True),
        ("async def f():\n    await g()\n", True),
        (
            "class A(B, metaclass=M):\n    x = 1\n\n    def m(self):\n        y = 2\n",
            True,
        ),
        ("if X:\n    def f():\n        pass\nelse:\n    f = 1\n", True),
        ("def __getattr__(name):\n    return 1\n", True),
        ("def f():\n    pass\n\ndel f\n", True),
        ('def f():\n    return """\ndef g():\n"""\n\n"""text"""\n', True),
        ("def f():\n    return dict(\na=1,\n)\n", False),  # the scan misreads it
        ("def f():\n    return (\n", False),  # does not parse
        ("def f():\n    global g\n    g = 1\n", None),
        ("x = globals()\n", None),
        ("import sys\nsys.modules[__name__].y = 1\n", None),
        # The line after a backslash is the def's, not a module-level statement.
        ("def f():\n    x = \\\ny = 2\n", None),
        ("def f():\r\n    x = \\\r\ny = 2\r\n", None),
        # Python counts the indentation from a form feed: `y` is module-level.
        ("def f():\n    pass\n  \x0cy = 1\n", None),
        # Identifiers are read NFKC-normalised: these are globals and modules.
        ("def f():\n    return \uff47lobals()\n", None),
        ("import sys\ndef f():\n    sys.\uff4dodules[__name__].y = 1\n", None),
        ("# -*- coding: latin-1 -*-\ncaf\xe9 = 1\ndef f():\n    pass\n", True),
        ("def f():\r\n    pass\r\nx = 1\r\n", True),
        ("def f():\r    pass\rx = 1\r", True),
        ("from m import *\ndef f():\n    pass\n", True),
    ],
)
def test_names_read_from_stubs_are_the_trees(
    text: str, by_stubs: bool | None, skeleton_reads: list[bool]
) -> None:
    """``by_stubs``: read from the stubs (True), tried and left to the tree
    (False), not tried (None: something inside a def may bind a name)."""
    encoding = "latin-1" if "latin-1" in text else "utf-8"
    _same(text.encode(encoding))
    assert skeleton_reads == ([] if by_stubs is None else [by_stubs])


@pytest.mark.parametrize("shard", range(4))
def test_generated_modules_bind_what_their_trees_bind(shard: int) -> None:
    for seed in range(shard, 400, 4):
        _same(generate(seed).data())


def test_the_latest_releases_folders_bind_what_their_trees_bind(
    latest_package, skeleton_reads: list[bool]
) -> None:
    root = latest_package / "srt"
    paths = sorted((root / "speculative").glob("*.py"))
    paths += sorted((root / "layers" / "attention").glob("*.py"))
    for path in paths:
        _same(path.read_bytes())
    assert len(paths) > 80
    assert sum(skeleton_reads) > len(paths) // 2
