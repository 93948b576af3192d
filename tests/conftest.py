from __future__ import annotations

import os

# The proof's CPU tests run upstream's Triton kernel in triton's interpreter, which
# must be chosen before triton is first imported (lint_plugin/proof/triton_source.py
# says why); the compiled CUDA twins run in a child process without it.
os.environ.setdefault("TRITON_INTERPRET", "1")
# No test reads or writes a findings cache unless it asks for one (tests/check/test_cache.py):
# runs in the corpus or this checkout must not leave cache folders behind, and a
# test's stand-in engine must never answer for the real one.
os.environ["DRAFT_KV_LINT_NO_CACHE"] = "1"

import gc
import subprocess

import pytest
from corpus import attention_dir, available, tree
from project_snapshot import Snapshot
from project_snapshot import snapshot as _snapshot
from shared_results import SharedResults, session_folder
from xdist_groups import pytest_collection_modifyitems  # noqa: F401 (a hook)


@pytest.fixture(autouse=True)
def _regions_however_much_they_cover(monkeypatch: pytest.MonkeyPatch) -> None:
    """In process, check reads a file by its regions however much of it they
    cover: the tests that hold the regions to the whole walk (small programs,
    mostly one class) then still read regions. The share that sends a file to
    one whole parse instead is held by tests/check/test_whole_share.py; runs in
    a child process use it as shipped."""
    from lint_plugin import linter

    monkeypatch.setattr(linter, "WHOLE_SHARE", float("inf"))


def pytest_configure(config: pytest.Config) -> None:
    """Hypothesis's profiles (``HYPOTHESIS_PROFILE``; "ci" unless set).

    "ci" (the README's command and ``.ci/run``) is derandomized: every run draws
    the same examples, so a red run is reproduced by running it again and its
    time is the same every run. Random, hypothesmith's programs made one run's
    four grammar tests take 40 s and another's 200 s. ``--hypothesis-seed=N``
    turns derandomizing off: the seed given decides (Hypothesis would ignore it).
    "explore" draws new examples each run (the same number); "dev" draws fewer,
    for quick runs."""
    from hypothesis import settings

    seeded = config.getoption("--hypothesis-seed", None) is not None
    settings.register_profile(
        "ci", max_examples=2000, deadline=None, derandomize=not seeded
    )
    settings.register_profile("explore", max_examples=2000, deadline=None)
    settings.register_profile("dev", max_examples=200, deadline=None)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


_last_frozen: list[object] = [None]


@pytest.hookimpl(trylast=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """At the first test of each module, once its fixtures are set up: collect,
    then move every live object out of the cyclic collector's sight (gc.freeze).

    A worker ends up holding torch, triton, sympy, libcst, hypothesis and the
    session's fixtures: a few million objects, which every full collection walks
    again, and the tests that parse whole releases trigger hundreds of those.
    Alone, the shortcut test on 0.5.13 spent 18 of its 30 CPU seconds collecting
    after those imports, 3 with them frozen. Frozen objects are still freed by
    reference counting; only cycles among them outlive their test.
    """
    if item.path != _last_frozen[0]:
        _last_frozen[0] = item.path
        gc.collect()
        gc.freeze()


def _corpus(version: str):
    return available(attention_dir, version)


@pytest.fixture(scope="session")
def old_attention():
    """sglang 0.5.12.post1's attention folder (inline copies, unsized buffers)."""
    return _corpus("0.5.12.post1")


@pytest.fixture(scope="session")
def new_attention():
    """sglang 0.5.13's attention folder (the hand refactor)."""
    return _corpus("0.5.13")


def _whole(version: str):
    return available(tree, version, True) / "sglang"


@pytest.fixture(scope="session")
def latest_package():
    """sglang 0.5.23's whole package (the refactored backends, later)."""
    return _whole("0.5.23")


@pytest.fixture(scope="session")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    """This project's working tree, committed into a repository of its own (what
    a git URL to this project would clone): pre-commit's and pip's tests use it."""
    try:
        return _snapshot(tmp_path_factory.mktemp("project") / "draft-kv-lint")
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"this checkout is not a git work tree: {error}")


@pytest.fixture(scope="session")
def shared_results(tmp_path_factory: pytest.TempPathFactory) -> SharedResults:
    """Values computed once per session across pytest-xdist's workers
    (``tests/shared_results.py``): for work several tests or releases share."""
    return SharedResults(session_folder(tmp_path_factory.getbasetemp()))
