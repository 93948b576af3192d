"""The plain records that replace dataclasses on check's path behave like them."""

from __future__ import annotations

import pickle

import pytest
from import_probe import imported_by

from lint_plugin.findings import Edit, Finding, Fix
from lint_plugin.records import FrozenInstanceError, field, record, replace


@record
class Mutable:
    name: str
    items: list[int] = field(default_factory=list)
    count: int = 0


@record(frozen=True, eq=False)
class Identity:
    value: int


def test_init_defaults_and_fresh_factories() -> None:
    a, b = Mutable("a"), Mutable("b", count=2)
    a.items.append(1)
    assert (a.items, b.items, b.count) == ([1], [], 2)
    assert repr(b) == "Mutable(name='b', items=[], count=2)"
    with pytest.raises(TypeError):
        Mutable()
    with pytest.raises(TypeError):
        Mutable("a", name="b")


def test_equality_hash_and_frozen() -> None:
    edit = Edit("x", 1, 1, 1, 2)
    assert edit == Edit("x", 1, 1, 1, 2) and hash(edit) == hash(Edit("x", 1, 1, 1, 2))
    assert list(dict.fromkeys([edit, Edit("x", 1, 1, 1, 2)])) == [edit]
    with pytest.raises(FrozenInstanceError):
        edit.row = 3
    assert Mutable("a") == Mutable("a")
    with pytest.raises(TypeError):
        hash(Mutable("a"))  # mutable and compared by value: unhashable
    assert Identity(1) != Identity(1) and len({Identity(1), Identity(1)}) == 2


def test_replace_and_pickle_round_trip() -> None:
    fix = Fix("safe", "m", (Edit("x", 1, 1, 1, 2),))
    finding = Finding("a.py", 1, 1, 1, 2, "KVI001", "msg", fix)
    assert replace(finding, row=5).row == 5 and replace(finding, row=5).fix is fix
    assert pickle.loads(pickle.dumps(finding)) == finding


def test_check_path_does_not_import_dataclasses_or_typing(tmp_path) -> None:
    (tmp_path / "a.py").write_text("n = seq_lens_sum * self.topk + bs * (i + 1)\n")
    body = (
        "from lint_plugin.cli import main\n"
        f"_result = main(['check', '--no-config', {str(tmp_path / 'a.py')!r}])"
    )
    heavy = ("dataclasses", "typing", "shutil", "libcst", "torch")
    assert imported_by(body, heavy) == ([], "1")
