"""The statuses of the files that held nothing: a warm run does not read them.

Every run here has the cache on, in a folder of its own. The oracle is a run
with ``--no-cache``, which never reads or writes the states: a warm run must
say what it says, byte for byte, whatever happened to the files in between.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lint_plugin.check import file_states, pipeline
from lint_plugin.check.file_states import FileStates

pytest_plugins = ("cli_helpers",)

KVI001 = "n = seq_lens_sum * self.topk + bs * (i + 1)\n"
CLEAN = "x = 1\n"
# Could match (names a topk), holds nothing: the cache's entries answer it.
CANDIDATE_CLEAN = "n = seq_lens_sum * self.topk + 1\n"
UNUSED = "x = 1  # noqa: KVI002\n"  # cannot match; its directive is KVI100


@pytest.fixture(autouse=True)
def cache_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DRAFT_KV_LINT_NO_CACHE", raising=False)
    monkeypatch.delenv("DRAFT_KV_LINT_CACHE_DIR", raising=False)


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file counts as written long before the run (no waiting here)."""
    monkeypatch.setattr(file_states, "SETTLED_NS", -(10**12))


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files ``check`` reads, in order."""
    seen: list[str] = []
    real = pipeline.read_with_status

    def recording(path: str):
        seen.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(pipeline, "read_with_status", recording)
    return seen


def states_of(folder: Path) -> dict[bytes, bytes]:
    (path,) = folder.glob(f"*/{file_states.NAME}-*")
    return file_states._read(str(path))


def check(run, *paths: str, cache: str | None = "c"):
    flags = ["--cache-dir", cache] if cache else ["--no-cache"]
    return run("check", "--no-config", *flags, *paths)


def test_a_warm_run_reads_only_what_could_hold_something(
    tmp_path, run, monkeypatch, settled, reads
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "clean.py").write_text(CLEAN)
    (tmp_path / "found.py").write_text(KVI001)
    (tmp_path / "maybe.py").write_text(CANDIDATE_CLEAN)
    (tmp_path / "directive.py").write_text("x = 1  # noqa: KVI001\n")
    cold = check(run, ".", cache=None)
    reads.clear()
    first = check(run, ".")
    assert sorted(reads) == ["clean.py", "directive.py", "found.py", "maybe.py"]
    reads.clear()
    warm = check(run, ".")
    # Only the file that cannot match and holds no directive of ours is skipped.
    assert sorted(reads) == ["directive.py", "found.py", "maybe.py"]
    assert cold == first == warm
    assert warm.codes == ["KVI100", "KVI001"]
    assert list(states_of(tmp_path / "c")) == [os.fsencode(tmp_path / "clean.py")]


def test_what_a_selection_hides_is_not_recorded_as_nothing(
    tmp_path, run, monkeypatch, settled, reads
) -> None:
    """A directive nothing uses is KVI100 whatever ``--select`` reports: a run
    that does not report it must not record the file as holding nothing."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text("x = 1  # noqa: KVI001\n")
    assert check(run, "--select", "KVI003", "a.py").status == 0
    reads.clear()
    assert check(run, "a.py").codes == ["KVI100"]
    assert reads == ["a.py"]


def test_the_same_size_and_times_after_a_write_are_read_again(
    tmp_path, run, monkeypatch, settled, reads
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "a.py"
    path.write_text("x = 1" + " " * (len(KVI001) - 6) + "\n")
    assert check(run, "a.py").status == 0
    before = os.stat(path)
    path.write_text(KVI001)  # the same size, and its times put back
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    if after.st_ctime_ns == before.st_ctime_ns:
        pytest.skip("this file system's change times are too coarse to tell")
    reads.clear()
    assert check(run, "a.py").codes == ["KVI001"]
    assert reads == ["a.py"]


def test_a_file_moved_over_another_is_read_again(
    tmp_path, run, monkeypatch, settled, reads
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(CLEAN)
    (tmp_path / "b.py").write_text(KVI001.replace("n =", "m ="))
    check(run, "a.py")
    os.replace(tmp_path / "b.py", tmp_path / "a.py")  # another inode
    reads.clear()
    assert check(run, "a.py").codes == ["KVI001"]
    assert reads == ["a.py"]


def test_a_file_changed_just_before_the_run_is_not_recorded(
    tmp_path, run, monkeypatch, reads
) -> None:
    """Git's racily clean files: a write in the same timestamp tick as the
    recorded status would leave every field of it as it was."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(CLEAN)
    check(run, "a.py")
    assert not list((tmp_path / "c").glob(f"*/{file_states.NAME}-*"))
    # The same file, its change seen as settled: recorded now, then skipped.
    monkeypatch.setattr(file_states, "SETTLED_NS", -(10**12))
    check(run, "a.py")
    reads.clear()
    check(run, "a.py")
    assert reads == []


def test_the_margin_is_two_seconds_of_the_run_that_records() -> None:
    states = FileStates("unused", now_ns=10 * file_states.SETTLED_NS)

    def changed_at(ctime_ns: int) -> os.stat_result:
        return os.stat_result(
            (0o100644, 1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, ctime_ns)
        )

    states.record("old.py", changed_at(8 * file_states.SETTLED_NS))
    states.record("new.py", changed_at(9 * file_states.SETTLED_NS))
    assert [Path(os.fsdecode(k)).name for k in states._recorded] == ["old.py"]


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-3] + b"9" + data[-2:],  # a flipped byte in a status
        lambda data: data[: len(data) // 2],  # cut short
        lambda data: b"draft-kv-lint states 0" + data[22:],  # another format
        lambda data: b"",
    ],
    ids=["flipped", "cut", "format", "empty"],
)
def test_damaged_states_are_ignored_and_written_again(
    tmp_path, run, monkeypatch, settled, reads, damage
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(CLEAN)
    (tmp_path / "b.py").write_text(CLEAN.replace("x", "y"))
    check(run, ".")
    (path,) = (tmp_path / "c").glob(f"*/{file_states.NAME}-*")
    good = path.read_bytes()
    path.write_bytes(damage(good))
    reads.clear()
    assert check(run, ".").status == 0
    assert sorted(reads) == ["a.py", "b.py"]
    assert path.read_bytes() == good


def test_a_parallel_run_records_what_its_workers_found(
    tmp_path, run, monkeypatch, settled, reads
) -> None:
    monkeypatch.chdir(tmp_path)
    for index in range(300):  # enough files for check to fork a second worker
        text = KVI001 if index % 100 == 0 else f"x{index} = {index}\n"
        (tmp_path / f"m{index:03}.py").write_text(text)
    cold = check(run, ".")
    assert len(states_of(tmp_path / "c")) == 297
    reads.clear()
    warm = check(run, ".")
    assert sorted(reads) == ["m000.py", "m100.py", "m200.py"]
    assert warm == cold and warm.codes == ["KVI001"] * 3


def test_files_of_other_runs_are_kept_and_forgotten_only_when_read(
    tmp_path, run, monkeypatch, settled, reads
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(CLEAN)
    (tmp_path / "b.py").write_text(CLEAN)
    check(run, "a.py")
    check(run, "b.py")  # a run over another file keeps a.py's status
    reads.clear()
    check(run, "a.py", "b.py")
    assert reads == []
    (tmp_path / "b.py").write_text(KVI001)
    assert check(run, "a.py", "b.py").codes == ["KVI001"]
    assert [Path(os.fsdecode(k)).name for k in states_of(tmp_path / "c")] == ["a.py"]


def test_past_the_bound_only_the_run_s_own_files_are_kept(
    tmp_path, run, monkeypatch, settled, reads
) -> None:
    """Paths of files long gone are never forgotten one by one: past the
    bound, the states keep this run's files, recorded or unchanged."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(file_states, "MAX_STATES", 3)
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(CLEAN)
    check(run, ".")
    for name in ("a.py", "b.py"):
        (tmp_path / name).unlink()
    (tmp_path / "d.py").write_text(CLEAN)
    check(run, "c.py", "d.py")  # four known: over the bound
    names = sorted(Path(os.fsdecode(k)).name for k in states_of(tmp_path / "c"))
    assert names == ["c.py", "d.py"]
    reads.clear()
    check(run, "c.py", "d.py")
    assert reads == []


def test_the_states_are_one_file_in_the_build_folder(tmp_path, run, settled) -> None:
    (tmp_path / "a.py").write_text(CLEAN)
    check(run, str(tmp_path / "a.py"), cache=str(tmp_path / "c"))
    (build,) = [p for p in (tmp_path / "c").iterdir() if p.is_dir()]
    marker, states = sorted(p.name for p in build.iterdir())
    assert marker == ".draft-kv-lint-build"
    assert states.startswith(f"{file_states.NAME}-")


def test_each_reader_has_states_of_its_own(tmp_path, monkeypatch) -> None:
    """Another user (or the same one in other groups) may not be allowed to
    read a file whose status is unchanged: it must read it and say why."""
    mine = FileStates(str(tmp_path), 0).path
    groups, user = os.getgroups(), os.geteuid()
    monkeypatch.setattr(os, "getgroups", lambda: [*groups, 4242])
    in_another_group = FileStates(str(tmp_path), 0).path
    monkeypatch.setattr(os, "getgroups", lambda: groups)
    monkeypatch.setattr(os, "geteuid", lambda: user + 1)
    another_user = FileStates(str(tmp_path), 0).path
    assert len({mine, in_another_group, another_user}) == 3


# ---- the oracle: whatever happens between runs, a warm run says what a fresh one
# does ---------------------------------------------------------------------------


def _padded(text: str) -> str:
    """Every text one size: a rewrite to another keeps the file's size."""
    return text.rstrip("\n").ljust(64) + "\n"


_TEXTS = st.sampled_from(
    [
        _padded(text)
        for text in (
            CLEAN,
            "y = 2\n",
            KVI001,
            CANDIDATE_CLEAN,
            UNUSED,
            "s = '\xe9'\n",
            "def (:\n",
        )
    ]
)
_NAMES = st.sampled_from(["a.py", "b.py", "sub/c.py", "sub/d.pyi"])
_RUN = ("run", "", "")
_STEPS = st.one_of(
    st.tuples(st.just("write"), _NAMES, _TEXTS),
    st.tuples(st.just("same size"), _NAMES, _TEXTS),
    st.tuples(st.just("delete"), _NAMES, st.just("")),
    st.tuples(st.just("move"), _NAMES, _NAMES),
    st.just(_RUN),
    # A run reporting less: what it hides must not be recorded as nothing.
    st.tuples(
        st.just("run"), st.sampled_from(["KVI003", "KVI001,KVI002"]), st.just("")
    ),
)


def _apply(root: Path, step: tuple[str, str, str]) -> None:
    kind, name, value = step
    path = root / name
    path.parent.mkdir(exist_ok=True)
    if kind == "write":
        path.write_text(value, encoding="latin-1")
    elif kind == "same size" and path.exists():
        # Another text of the old size, its times put back: only the change
        # time and the bytes tell.
        before = path.stat()
        path.write_text(value, encoding="latin-1")
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    elif kind == "delete" and path.exists():
        path.unlink()
    elif kind == "move" and path.exists():
        target = root / value
        target.parent.mkdir(exist_ok=True)
        os.replace(path, target)


@settings(
    max_examples=60,  # each example is a few whole runs of the command
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.lists(_STEPS, min_size=1, max_size=12))
@example([("same size", "a.py", _padded(KVI001))])
def test_warm_runs_answer_as_fresh_ones_whatever_changes(
    tmp_path_factory, run, monkeypatch, steps
) -> None:
    monkeypatch.setattr(file_states, "SETTLED_NS", -(10**12))
    root = tmp_path_factory.mktemp("tree")
    cache = str(tmp_path_factory.mktemp("states-cache"))
    monkeypatch.chdir(root)
    for name, text in (("a.py", CLEAN), ("b.py", UNUSED), ("sub/c.py", KVI001)):
        _apply(root, ("write", name, _padded(text)))
    for step in [_RUN, *steps, _RUN]:
        if step[0] != "run":
            _apply(root, step)
            continue
        selected = ("--select", step[1]) if step[1] else ()
        fresh = check(run, *selected, ".", cache=None)
        assert check(run, *selected, ".", cache=cache) == fresh
        assert check(run, *selected, ".", cache=cache) == fresh


def test_the_margin_is_measured_from_the_run_s_start(tmp_path, monkeypatch) -> None:
    """A file written while the run reads others is never recorded: the margin
    counts from when the run made its states, not from when it records."""
    monkeypatch.setattr(time, "time_ns", lambda: 7 * file_states.SETTLED_NS)
    states = file_states.FileStates.for_run(str(tmp_path))
    assert states._settled_before == 6 * file_states.SETTLED_NS
