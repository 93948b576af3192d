"""The whole-file syntax check run ahead in a forked child: same answers, or none.

``check`` runs in one process for a few files and checks their syntax on a spare
core while the engine works (``syntax.AheadCheck``). Whatever the child does
(answers, dies, is still working at the end) the findings must be those of the
check done in place.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from lint_plugin.check import pipeline as check
from lint_plugin.config.selection import Layer, build_selection
from lint_plugin.engine import syntax

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="the child is forked on Linux only"
)

SITE = "n = seq_lens_sum * self.topk + bs * (i + 1)\n"

# Files with a finding, each broken (or not) in its own way; the engine parses
# only the site's region, so only the whole-file check sees most of these.
FILES = {
    "valid.py": SITE,
    "unclosed.py": SITE + "x = (\n",
    "crlf.py": (SITE + "def f(:\n").replace("\n", "\r\n"),
    "lone_cr.py": SITE.replace("\n", "\r") + "y = ]\r",
    "nul.py": SITE + "z = 1\0\n",
    "nonlocal.py": SITE + "nonlocal q\n",  # symtable refuses it, ast accepts it
    "deep.py": SITE + "w = " + "(" * 300 + ")" * 300 + "\n",
    "latin1.py": "# -*- coding: latin-1 -*-\n" + SITE + "s = 'caf\xe9'\nt = (\n",
    "no_site.py": "x = (\n",
    "bad_utf8.py": None,  # bytes Python refuses: the engine's own E999
}


@pytest.fixture
def paths(tmp_path: Path) -> list[str]:
    found = []
    for name, text in FILES.items():
        path = tmp_path / name
        if text is None:
            path.write_bytes(SITE.encode() + b"s = '\xff'\n")
        else:
            encoding = "latin-1" if "latin-1" in text else "utf-8"
            path.write_bytes(text.encode(encoding))
        found.append(str(path))
    return found


@pytest.fixture
def selection(tmp_path: Path):
    return build_selection([Layer(None, (), ())], [], str(tmp_path))


@pytest.fixture
def always_ahead(monkeypatch):
    """The child starts whatever the files' size and the machine's cores."""
    monkeypatch.setattr(syntax, "_AHEAD_MIN_BYTES", 0)
    monkeypatch.setattr(syntax, "spare_core", lambda: True)


@pytest.fixture
def checked_here(monkeypatch) -> list[str]:
    """The paths the parent process checks itself (the child's calls are its own)."""
    calls: list[str] = []
    original = syntax.error_of
    parent = os.getpid()

    def counted(text: str, path: str):
        if os.getpid() == parent:
            calls.append(path)
        return original(text, path)

    monkeypatch.setattr(syntax, "error_of", counted)
    return calls


def _in_place(paths, selection):
    return check._check_serially(paths, selection, ahead=False)


def test_answers_from_the_child_are_the_checks_done_in_place(
    paths, selection, always_ahead, checked_here
):
    expected = _in_place(paths, selection)
    del checked_here[:]

    ahead = check._check_serially(paths, selection, ahead=True)

    assert ahead.findings == expected.findings
    assert checked_here == []  # every answer came from the child
    codes = {Path(f.path).name: f.code for f in ahead.findings if f.code == "E999"}
    assert sorted(codes) == [
        "bad_utf8.py",
        "crlf.py",
        "deep.py",
        "latin1.py",
        "lone_cr.py",
        "nul.py",
        "unclosed.py",
    ]


def test_a_child_that_dies_leaves_the_checks_to_the_parent(
    paths, selection, always_ahead, checked_here, monkeypatch
):
    expected = _in_place(paths, selection)
    monkeypatch.setattr(syntax, "_answer", lambda *args: os._exit(3))

    ahead = check._check_serially(paths, selection, ahead=True)

    assert ahead.findings == expected.findings
    # Every file with a finding is checked here instead (the undecodable one
    # is the engine's own E999, and the one without a site has no finding).
    assert sorted(Path(p).name for p in checked_here) == sorted(
        set(FILES) - {"no_site.py", "bad_utf8.py"}
    )


def test_a_child_still_working_at_the_end_is_stopped(always_ahead, monkeypatch):
    monkeypatch.setattr(syntax, "_answer", lambda *args: os.pause())
    ahead = syntax.AheadCheck([SITE.encode()], ["m.py"], lambda data: True)
    pid = ahead._pid

    ahead.close()  # returns: the child is killed, not awaited

    assert ahead._pid == 0
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    # Asked after the end, the check is done here.
    assert ahead.for_file(0)(SITE + "x = (\n", "m.py").code == "E999"


def test_files_the_cache_answers_are_not_checked_ahead(paths, monkeypatch):
    given: list[list[bytes | None]] = []

    class Recorder:
        def __init__(self, datas, paths, could_match):
            given.append(list(datas))

    class Cache:
        def key(self, path: str, data: bytes) -> str:
            return path

        def has(self, key: str) -> bool:
            return key.endswith("valid.py")

    monkeypatch.setattr(syntax, "AheadCheck", Recorder)
    read = [Path(p).read_bytes() for p in paths]
    keys: dict[int, str] = {}

    check._ahead_check(read, paths, Cache(), keys, None)

    (datas,) = given
    cached = [p for p, d in zip(paths, datas, strict=True) if d is None]
    assert [Path(p).name for p in cached] == ["valid.py"]
    # The keys computed for the lookup are handed on, for the candidates only.
    assert sorted(Path(paths[i]).name for i in keys) == sorted(
        set(FILES) - {"no_site.py"}
    )
    assert all(keys[i] == paths[i] for i in keys)


def test_small_runs_and_single_cores_do_not_fork(monkeypatch):
    small = syntax.AheadCheck([SITE.encode()], ["m.py"], lambda data: True)
    assert small._pid == 0  # below the size worth a fork
    monkeypatch.setattr(syntax, "_AHEAD_MIN_BYTES", 0)
    monkeypatch.setattr(syntax, "spare_core", lambda: False)
    single = syntax.AheadCheck([SITE.encode()], ["m.py"], lambda data: True)
    assert single._pid == 0
    assert single.for_file(0) is None  # the engine checks in place
