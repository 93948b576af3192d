"""``check``'s cache: the same answers as a fresh check, for less, and never stale.

Every test here switches the cache on (the session switches it off for all other
tests) and gives it a folder of its own.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from formula_variants import buffer_width, near_miss, used_len
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from import_probe import imported_by

import lint_plugin
from lint_plugin import linter
from lint_plugin.check import cache as cache_module
from lint_plugin.check import file_states
from lint_plugin.check.cache import _BUILD_MARKER, Cache, _decode, _encode, _hasher
from lint_plugin.engine.settings import Settings
from lint_plugin.findings import Edit, Finding, Fix

pytest_plugins = ("cli_helpers",)

KVI001 = "n = seq_lens_sum * self.topk + bs * (i + 1)\n"


@pytest.fixture(autouse=True)
def cache_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DRAFT_KV_LINT_NO_CACHE", raising=False)
    monkeypatch.delenv("DRAFT_KV_LINT_CACHE_DIR", raising=False)


def entries(folder: Path) -> list[Path]:
    """The answers stored (not the build's marker, nor the files' states, nor
    the configurations' parsed tables)."""
    return [
        p
        for p in folder.glob("*/*")
        if p.is_file()
        and p.parent.name != "config"
        and p.name != _BUILD_MARKER
        and not p.name.startswith(file_states.NAME)
    ]


def one_entry(tmp_path: Path, run):
    """A file with one finding, checked once: its path, the cache folder, the
    run's result and the one entry stored."""
    path = tmp_path / "a.py"
    path.write_text(KVI001)
    folder = tmp_path / "c"
    first = run("check", "--cache-dir", str(folder), str(path))
    (entry,) = entries(folder)
    return path, folder, first, entry


def signed(key: str, body: bytes) -> bytes:
    """An entry with a correct digest around ``body``: damage the digest misses."""
    digest = _hasher()
    digest.update(body)
    return f"draft-kv-lint cache 2 {key} {digest.hexdigest()}\n".encode() + body


def engine_forbidden(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("the engine ran although the cache had the answer")

    monkeypatch.setattr(linter, "lint_text", refuse)


def test_a_file_that_cannot_match_is_dismissed_like_the_engine_does(
    tmp_path, run, monkeypatch
) -> None:
    (tmp_path / "plain.py").write_text("x = 1  # noqa: KVI001\n")
    (tmp_path / "latin.py").write_bytes(b"s = '\xe9'\n")
    paths = [str(tmp_path / "plain.py"), str(tmp_path / "latin.py")]
    engine = run("check", "--no-cache", *paths)
    engine_forbidden(monkeypatch)
    cached = run("check", "--cache-dir", str(tmp_path / "c"), *paths)
    assert (cached.status, cached.out, cached.err) == (
        engine.status,
        engine.out,
        engine.err,
    )
    assert "KVI100" in engine.out and "E999 SyntaxError: not valid UTF-8" in engine.out
    assert entries(tmp_path / "c") == []


def test_warm_run_answers_like_a_cold_run_without_the_engine(
    old_attention, tmp_path, run, monkeypatch
) -> None:
    monkeypatch.chdir(old_attention)
    files = sorted(p.name for p in Path(".").glob("*.py"))
    folder = str(tmp_path / "c")
    cold = run("check", "--no-config", "--no-cache", *files)
    first = run("check", "--no-config", "--cache-dir", folder, *files)
    engine_forbidden(monkeypatch)
    warm = run("check", "--no-config", "--cache-dir", folder, *files)
    assert cold.status == first.status == warm.status == 1
    assert cold.out == first.out == warm.out and len(cold.codes) >= 12
    # Only files that could match are stored: the others cost one byte search.
    stored = len(entries(tmp_path / "c"))
    assert 4 <= stored < len(files)


def test_warm_run_imports_no_parser(tmp_path, monkeypatch) -> None:
    """Nor the byte test's vocabulary: the cache answers for the file (whose
    region is a small part of it)."""
    (tmp_path / "a.py").write_text(KVI001 + "".join(f"x{i} = {i}\n" for i in range(40)))
    monkeypatch.chdir(tmp_path)
    body = "from lint_plugin.cli import main\n_result = main(['check', 'a.py'])"
    watch = (
        "ast",
        "lint_plugin.linter",
        "lint_plugin.engine.scan",
        "lint_plugin.engine.analysis",
        "lint_plugin.engine.vocabulary",
        "lint_plugin.roles",
    )
    cold, status = imported_by(body, watch, cwd=tmp_path)
    assert (sorted(cold), status) == (sorted(watch), "1")
    assert imported_by(body, watch, cwd=tmp_path) == ([], "1")


def test_a_changed_file_is_checked_again(tmp_path, run) -> None:
    path = tmp_path / "a.py"
    path.write_text(KVI001)
    folder = str(tmp_path / "c")
    assert run("check", "--cache-dir", folder, str(path)).codes == ["KVI001"]
    path.write_text(KVI001.replace("self.topk", "self.topk * 1 + 0 * self.topk"))
    again = run("check", "--cache-dir", folder, str(path))
    assert again.codes == [] and again.status == 0


def test_a_changed_base_class_module_is_read_again(tmp_path, run) -> None:
    """A draft backend keeps the topk of a base imported from its tree (KVI003):
    the entry depends on that module, so a base that stops keeping one ends
    the finding on the next run, the subclass's bytes unchanged."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    base = package / "base.py"
    base.write_text(
        "class FooMultiStepDraftBackend:\n"
        "    def __init__(self, topk):\n        self.topk = topk\n"
    )
    sub = package / "sub.py"
    sub.write_text(
        "import torch\nfrom pkg.base import FooMultiStepDraftBackend\n\n\n"
        "class BarMultiStepDraftBackend(FooMultiStepDraftBackend):\n"
        "    def init_cuda_graph_state(self, max_bs):\n"
        "        self.cuda_graph_kv_indices = torch.zeros(\n"
        "            (self.speculative_num_steps, max_bs * self.max_context_len)\n"
        "        )\n"
    )
    folder = str(tmp_path / "c")
    assert run("check", "--cache-dir", folder, str(sub)).codes == ["KVI003"]
    assert run("check", "--cache-dir", folder, str(sub)).codes == ["KVI003"]
    base.write_text(base.read_text().replace("self.topk", "self.k"))
    again = run("check", "--cache-dir", folder, str(sub))
    assert again.codes == [] and again.status == 0


def test_other_settings_are_other_entries(tmp_path, run, monkeypatch) -> None:
    """The same bytes judged under another helpers module: KVI005 depends on it."""
    helpers = tmp_path / "mypkg" / "helpers.py"
    helpers.parent.mkdir()
    helpers.write_text(
        "def draft_kv_indices_used_len(seq_lens_sum, topk, bs, num_steps):\n"
        "    return seq_lens_sum * topk + bs * num_steps\n"
    )
    monkeypatch.chdir(tmp_path)
    args = ("check", "--no-config", "--cache-dir", "c", "mypkg/helpers.py")
    default = run(*args)
    trusted = run(*args, "--helpers-module", "mypkg.helpers")
    assert "KVI005" in default.codes
    assert trusted.codes == [] and trusted.status == 0
    assert run(*args).out == default.out


def test_the_same_bytes_at_two_paths_report_their_own_path(tmp_path, run) -> None:
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(KVI001)
    folder = str(tmp_path / "c")
    paths = [str(tmp_path / "a.py"), str(tmp_path / "b.py")]
    run("check", "--cache-dir", folder, *paths)
    warm = run("check", "--cache-dir", folder, *paths)
    assert [line.split(":")[0] for line in warm.out.splitlines()[:2]] == paths
    assert len(entries(tmp_path / "c")) == 2


@pytest.mark.parametrize(
    "damage",
    [
        b"",
        b"not an entry at all",
        "key",  # the right body under another key
        "short",  # a valid entry cut short
        "flipped",  # one character of the body changed
        "shape",  # a well-signed body of the wrong shape
        "order",  # an edit before its fix
    ],
)
def test_a_damaged_entry_is_a_miss_and_is_rewritten(tmp_path, run, damage) -> None:
    path, folder, first, entry = one_entry(tmp_path, run)
    good = entry.read_bytes()
    key = entry.name
    header, _, body = good.partition(b"\n")
    if damage == "key":
        data = good.replace(key.encode(), b"0" * 40, 1)
    elif damage == "short":
        data = good[: len(good) // 2]
    elif damage == "flipped":
        data = header + b"\n" + body.replace(b"\t1\t", b"\t7\t", 1)
    elif damage == "shape":
        data = signed(key, b"F\t1\t2\n")
    elif damage == "order":
        lines = body.split(b"\n")
        data = signed(key, b"\n".join([lines[0], lines[2], lines[1], *lines[3:]]))
    else:
        data = damage
    assert data != good
    entry.write_bytes(data)
    again = run("check", "--cache-dir", str(folder), str(path))
    assert (again.status, again.out, again.err) == (first.status, first.out, "")
    assert entry.read_bytes() == good


@settings(max_examples=300)
@given(st.binary(max_size=8), st.integers(min_value=0))
def test_any_damage_to_an_entry_is_a_miss(patch: bytes, where: int) -> None:
    """Random bytes written over an entry: never another answer, never a crash."""
    finding = Finding(
        "p.py",
        1,
        5,
        1,
        40,
        "KVI001",
        "msg \t\n\\ é",
        Fix("safe", "m", (Edit("x\ny", 1, 5, 1, 40),)),
    )
    good = _encode("k" * 40, [finding])
    at = where % (len(good) + 1)
    damaged = good[:at] + patch + good[at + len(patch) :]
    try:
        decoded = _decode(damaged, "k" * 40, "p.py")
    except Exception:
        decoded = None  # what Cache.get turns into a miss
    assert decoded is None or (damaged == good and decoded == [finding])


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "folder"])
def test_an_entry_that_is_no_file_is_a_miss(tmp_path, run, kind) -> None:
    """Something else at an entry's name costs a check, not a hang or memory."""
    path, folder, first, entry = one_entry(tmp_path, run)
    entry.unlink()
    if kind == "fifo":
        os.mkfifo(entry)
    elif kind == "dev-zero":
        entry.symlink_to("/dev/zero")
    else:
        entry.mkdir()
    again = run("check", "--cache-dir", str(folder), str(path))
    assert (again.status, again.out, again.err) == (first.status, first.out, "")


def test_a_link_left_at_a_temporary_name_is_not_followed(tmp_path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    cache = Cache(str(tmp_path / "c"), Settings())
    key = cache.key("a.py", b"x")
    cache.prepare()
    partial = Path(cache.folder) / f"{key}.{os.getpid()}.tmp"
    partial.symlink_to(target)
    cache.put(key, [])
    assert target.read_text() == "keep me\n"


def test_a_new_build_removes_only_its_own_old_folders(tmp_path, monkeypatch) -> None:
    root = tmp_path / "c"
    monkeypatch.setattr(cache_module, "_code_fingerprint", lambda: "0" * 40)
    old = Cache(str(root), Settings())
    old.put(old.key("a.py", b"x"), [])
    foreign = root / ("1" * 40)  # looks like a build, carries no marker
    foreign.mkdir()
    (foreign / "data").write_text("keep\n")
    monkeypatch.undo()
    cache = Cache(str(root), Settings())
    cache.put(cache.key("a.py", b"x"), [])
    names = sorted(p.name for p in root.iterdir() if p.is_dir())
    assert names == sorted([Path(cache.folder).name, "1" * 40])


def test_an_existing_folder_gains_no_markers_and_loses_nothing(tmp_path) -> None:
    """`--cache-dir .` in a project: no `.gitignore` of `*` (git would ignore the
    project), no CACHEDIR.TAG, and no folder of the user's removed."""
    project = tmp_path / "project"
    mine = project / ("2" * 40)
    mine.mkdir(parents=True)
    (mine / ".draft-kv-lint-build").write_text("not made by the tool\n")
    cache = Cache(str(project), Settings())
    cache.put(cache.key("a.py", b"x"), [])
    assert not (project / ".gitignore").exists()
    assert not (project / "CACHEDIR.TAG").exists()
    assert mine.is_dir() and len(entries(project)) == 1


def test_markers_are_never_written_through_links_or_over_files(tmp_path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    dangling = tmp_path / "link"
    dangling.symlink_to(outside / "pwned")
    kept = tmp_path / "kept"
    kept.write_text("the user's\n")
    for path in (dangling, kept):
        cache_module._write_new(str(path), "*\n")
    assert list(outside.iterdir()) == []
    assert kept.read_text() == "the user's\n"
    fresh = tmp_path / "fresh"
    cache_module._write_new(str(fresh), "*\n")
    assert fresh.read_text() == "*\n"


def test_an_unwritable_cache_folder_changes_nothing(tmp_path, run) -> None:
    (tmp_path / "a.py").write_text(KVI001)
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = run("check", "--cache-dir", str(blocker / "c"), str(tmp_path / "a.py"))
    plain = run("check", "--no-cache", str(tmp_path / "a.py"))
    assert (result.status, result.out, result.err) == (plain.status, plain.out, "")


def test_no_cache_reads_and_writes_nothing(tmp_path, run, monkeypatch) -> None:
    (tmp_path / "a.py").write_text(KVI001)
    monkeypatch.chdir(tmp_path)
    run("check", "--no-cache", "a.py")
    monkeypatch.setenv("DRAFT_KV_LINT_NO_CACHE", "1")
    run("check", "a.py")
    assert not (tmp_path / ".draft_kv_lint_cache").exists()


def test_where_the_cache_lives(tmp_path, run, monkeypatch) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.draft-kv-lint]\n")
    sub = tmp_path / "pkg"
    sub.mkdir()
    (sub / "a.py").write_text(KVI001)
    monkeypatch.chdir(sub)
    run("check", "a.py")  # the project root: the configuration's folder
    root_cache = tmp_path / ".draft_kv_lint_cache"
    assert len(entries(root_cache)) == 1
    assert (root_cache / ".gitignore").read_text() == "*\n"
    assert (root_cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f")
    monkeypatch.setenv("DRAFT_KV_LINT_CACHE_DIR", str(tmp_path / "env"))
    run("check", "a.py")
    assert len(entries(tmp_path / "env")) == 1
    run("check", "--cache-dir", str(tmp_path / "option"), "a.py")  # beats the env
    assert len(entries(tmp_path / "option")) == 1


def test_clean_removes_the_projects_cache(tmp_path, run, monkeypatch) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.draft-kv-lint]\n")
    sub = tmp_path / "pkg"
    sub.mkdir()
    (sub / "a.py").write_text(KVI001)
    monkeypatch.chdir(sub)
    run("check", "a.py")
    assert (tmp_path / ".draft_kv_lint_cache").is_dir()
    result = run("clean")
    assert (result.status, result.out) == (0, "")
    assert "removed" in result.err
    assert not (tmp_path / ".draft_kv_lint_cache").exists()
    again = run("clean")
    assert again.status == 0 and "no cache at" in again.err


def test_clean_in_a_folder_it_did_not_make_removes_only_its_builds(
    tmp_path, run
) -> None:
    """`--cache-dir .`: the project's own files and unmarked folders stay."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.py").write_text(KVI001)
    lookalike = project / ("3" * 40)  # a build's name, without the marker
    lookalike.mkdir()
    run("check", "--cache-dir", str(project), str(project / "a.py"))
    assert len(entries(project)) == 1
    result = run("clean", "--cache-dir", str(project))
    assert result.status == 0 and "removed 1 cache build folder" in result.err
    assert sorted(p.name for p in project.iterdir()) == ["3" * 40, "a.py"]


def test_clean_leaves_a_link_alone(tmp_path, run) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep").write_text("x\n")
    link = tmp_path / "link"
    link.symlink_to(target)
    result = run("clean", "--cache-dir", str(link))
    assert result.status == 0 and "left alone" in result.err
    assert (target / "keep").exists() and link.is_symlink()


def test_a_parallel_run_fills_and_reads_the_cache(tmp_path, run, monkeypatch) -> None:
    for index in range(300):  # enough files for check to fork a second worker
        (tmp_path / f"m{index:03}.py").write_text(KVI001)
    monkeypatch.chdir(tmp_path)
    cold = run("check", "--no-config", "--cache-dir", "c", ".")
    assert len(entries(tmp_path / "c")) == 300
    engine_forbidden(monkeypatch)
    warm = run("check", "--no-config", "--cache-dir", "c", ".")
    assert warm.out == cold.out and warm.codes == ["KVI001"] * 300


def test_another_build_of_the_tool_or_python_is_another_folder(
    tmp_path, monkeypatch
) -> None:
    package = tmp_path / "lint_plugin"
    (package / "rules").mkdir(parents=True)
    module = package / "scan.py"
    module.write_text("x = 1\n")
    (package / "rules" / "kvi001.py").write_text("y = 1\n")
    monkeypatch.setattr(lint_plugin, "__path__", [str(package)])
    before = cache_module._code_fingerprint()
    assert cache_module._code_fingerprint() == before
    module.write_text("x = 22\n")  # another size
    edited = cache_module._code_fingerprint()
    os.utime(package / "rules" / "kvi001.py", ns=(1, 1))  # another rule's time
    touched = cache_module._code_fingerprint()
    monkeypatch.setattr(sys, "version", sys.version + " (another build)")
    assert len({before, edited, touched, cache_module._code_fingerprint()}) == 4


def test_a_module_of_any_subpackage_is_part_of_the_build(tmp_path, monkeypatch):
    package = tmp_path / "lint_plugin"
    (package / "rules").mkdir(parents=True)
    (package / "engine" / "flow").mkdir(parents=True)
    (package / "engine" / "__pycache__").mkdir()
    deep = package / "engine" / "flow" / "widths.py"
    deep.write_text("x = 1\n")
    monkeypatch.setattr(lint_plugin, "__path__", [str(package)])
    before = cache_module._code_fingerprint()
    (package / "engine" / "__pycache__" / "w.cpython-311.pyc").write_bytes(b"")
    assert cache_module._code_fingerprint() == before  # bytecode is no source
    deep.write_text("x = 22\n")
    assert cache_module._code_fingerprint() != before


def test_every_module_of_the_installed_tool_is_part_of_the_build(monkeypatch):
    """Each module, whatever its folder, changes the build's name when edited."""
    root = Path(lint_plugin.__path__[0])
    modules = [p for p in root.rglob("*.py") if "__pycache__" not in p.parts]
    assert any(len(p.relative_to(root).parts) > 2 for p in modules)  # engine/flow
    before = cache_module._code_fingerprint()
    real_stat = os.DirEntry.stat
    for module in modules:
        status = module.stat()

        def edited(entry, *, follow_symlinks=True, target=str(module)):
            found = real_stat(entry, follow_symlinks=follow_symlinks)
            if entry.path != target:
                return found
            return os.stat_result((*found[:6], found[6] + 1, *found[7:]))

        monkeypatch.setattr(os.DirEntry, "stat", edited, raising=False)
        assert cache_module._code_fingerprint() != before, module
        monkeypatch.undo()
        assert module.stat().st_size == status.st_size


def test_keys_cover_path_settings_and_bytes(tmp_path) -> None:
    cache = Cache(str(tmp_path), Settings())
    other = Cache(str(tmp_path), Settings(helpers_module="x.y"))
    key = cache.key("a.py", b"x")
    assert (
        len(
            {
                key,
                cache.key("b.py", b"x"),
                cache.key("a.py", b"y"),
            }
        )
        == 3
    )
    assert other.key("a.py", b"x") != key
    # Not the selection: an entry holds every rule's findings, before selection.
    assert Cache(str(tmp_path), Settings()).key("a.py", b"x") == key


_text = st.text(max_size=20)
_int = st.integers(min_value=0, max_value=10**6)
_edits = st.tuples(_text, _int, _int, _int, _int).map(lambda t: Edit(*t))
_fixes = st.none() | st.builds(
    Fix,
    st.sampled_from(["safe", "unsafe"]),
    _text,
    st.lists(_edits, max_size=3).map(tuple),
)
_findings = st.builds(
    Finding, st.just("p.py"), _int, _int, _int, _int, _text, _text, _fixes
)


# A pure function of a few small records, where generating them is nine tenths
# of the time: 500 lists draw about 1,000 findings and thousands of texts, every
# kind of fix and each separator, quote and control character many times over.
@settings(max_examples=500)
@given(st.lists(_findings, max_size=4))
def test_findings_survive_the_round_trip(findings: list[Finding]) -> None:
    assert _decode(_encode("k" * 40, findings), "k" * 40, "p.py") == findings


@pytest.fixture(scope="module")
def shared_folder(tmp_path_factory) -> Path:
    """One cache folder for every generated file: entries must never mix."""
    return tmp_path_factory.mktemp("shared-cache")


_DIRECTIVES = st.sampled_from(["", "  # noqa", "  # noqa: KVI001", "  # noqa: KVI002"])


@st.composite
def generated_file(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        expr = draw(st.one_of(used_len(), buffer_width(), near_miss()))
        lines.append(f"n = (\n{expr}\n){draw(_DIRECTIVES)}\n")
    return "".join(lines)


@settings(
    max_examples=300,  # each example is nine whole runs of the command
    suppress_health_check=[HealthCheck.function_scoped_fixture],  # reset per run
)
@given(st.lists(generated_file(), min_size=1, max_size=3))
def test_generated_files_answer_the_same_from_the_cache(
    shared_folder, capsys, monkeypatch, versions
) -> None:
    """Versions of one file, checked in turn: every run from the cache says what a
    fresh check says, whatever was stored for the file's earlier versions."""
    from lint_plugin.cli import main

    monkeypatch.delenv("DRAFT_KV_LINT_NO_CACHE", raising=False)
    path = shared_folder / "g.py"
    for text in versions:
        path.write_text(text)
        answers = []
        for flag in ("--no-cache", None, None):
            args = ["check", "--no-config", str(path)]
            args += [flag] if flag else ["--cache-dir", str(shared_folder / "c")]
            status = main(args)
            answers.append((status, capsys.readouterr()))
        assert answers[0] == answers[1] == answers[2]


def test_a_worker_starting_late_keeps_the_build_another_worker_made(
    tmp_path, monkeypatch
) -> None:
    """Two workers of one run both see no build folder; the first makes it and
    stores an entry before the second prepares: the entry stays."""
    first = Cache(str(tmp_path / "c"), Settings())
    first.put(first.key("a.py", b"x"), [])
    (stored,) = entries(tmp_path / "c")
    second = Cache(str(tmp_path / "c"), Settings())
    real_isdir, asked = os.path.isdir, []

    def isdir(path: str) -> bool:  # the check that ran before the first worker's
        if path == second.folder and not asked:
            asked.append(path)
            return False
        return real_isdir(path)

    monkeypatch.setattr(cache_module.os.path, "isdir", isdir)
    assert second.prepare() and asked
    monkeypatch.undo()
    assert entries(tmp_path / "c") == [stored]
