"""Shared pieces of the benchmark scripts: tool lookup, corpus access, timing, table.

Only the standard library is used, so the scripts run wherever the package and its
test extras are installed.
"""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERSION = "0.5.12.post1"  # the last release with the four inline copies
LATEST = "0.5.23"  # the newest release, for the whole-package case


class BenchError(RuntimeError):
    """A precondition is missing (tool, corpus); the message says which."""


def corpus_module():  # type: ignore[no-untyped-def]
    """``tests/corpus.py``, which downloads and unpacks the pinned sglang wheels.

    Imported from the tests folder rather than copied so the benchmark measures
    exactly the files the corpus tests check.
    """
    tests = str(ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    import corpus

    return corpus


def corpus_trees() -> tuple[Path, Path, str, list[str]]:
    """The unpacked ``VERSION`` and ``LATEST`` packages, the attention folder
    and ``VERSION``'s four backends in it (paths relative to a package)."""
    corpus = corpus_module()
    try:
        root = corpus.tree(VERSION, whole=True)
        latest = corpus.tree(LATEST, whole=True)
    except corpus.CorpusUnavailable as exc:
        raise BenchError(f"sglang wheel unavailable: {exc}") from exc
    backends = [f"{corpus.ATTENTION}/{name}" for name in corpus.BACKENDS]
    missing = [p for p in backends if not (root / p).is_file()]
    if missing:
        raise BenchError(f"missing backend files in {root}: {missing}")
    return root, latest, corpus.ATTENTION, backends


def tool(name: str) -> str:
    """The console script ``name``, preferring the one next to ``sys.executable``.

    pyenv and similar put shell-script shims first on PATH; going through a shim
    adds tens of milliseconds to every run and would blur the small-file cases, so
    the interpreter's own bin folder wins.
    """
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    found = found or shutil.which(name)
    if found is None:
        raise BenchError(
            f"console script {name!r} not found next to {sys.executable} nor on PATH"
        )
    return found


def runs_ok(cmd: Sequence[str]) -> bool:
    """Whether ``cmd`` exits 0 (used to probe for a subcommand before timing it)."""
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def time_command(cmd: Sequence[str], cwd: Path) -> tuple[float, int]:
    """Wall seconds and peak resident memory (KiB) of one run, output discarded,
    exit code ignored.

    Linters exit non-zero when they report something; that is the normal case on
    the corpus, so the exit code says nothing about a failed benchmark run (the
    warm-up's ``probe`` checks that instead). The memory is the process's own
    ``ru_maxrss`` (``wait4``), children it forks included only as far as the
    kernel reports them with it.
    """
    start = time.perf_counter()
    child = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd
    )
    _, _, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = 0  # reaped above: keep Popen from waiting again
    return seconds, usage.ru_maxrss


INSTALL = ROOT / ".cache" / "bench-install"
# Regular installs of other revisions (``--against``), one folder per commit.
REVISION_INSTALLS = ROOT / ".cache" / "bench-install-at"


def regular_install(revision: str | None = None, folder: Path | None = None) -> Path:
    """A regular (non-editable) install of this checkout, as a user's ``pip
    install`` makes it (bytecode compiled), in a virtual environment of its
    own under ``.cache/``; rebuilt when the package's sources changed.

    With ``revision`` (a commit of this repository, as git names it), the same
    install of that commit's files (``git archive``), in a folder of its own
    under ``.cache/bench-install-at/`` unless ``folder`` names another.

    An editable install puts an import finder in ``site`` that roughly doubles
    ``python -c pass`` and so halves every small-file ratio: the cases time
    this install, and their ``python -c pass`` is its interpreter.
    """
    import tempfile

    with tempfile.TemporaryDirectory() as tree:
        if revision is None:
            return _install(INSTALL, ROOT, lambda: _clean_copy(Path(tree)))
        commit = resolve_revision(revision)
        source = _archive(commit, Path(tree))
        target = folder or REVISION_INSTALLS / commit[:12]
        return _install(target, source, lambda: source)


def resolve_revision(revision: str) -> str:
    """The full commit name of ``revision`` (read-only: ``git rev-parse``)."""
    done = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise BenchError(f"{revision!r} is not a commit of {ROOT}")
    return done.stdout.strip()


def describe_checkout() -> str:
    """The working tree the default install is built from: HEAD's commit and
    whether the package's sources differ from it (read-only git calls)."""
    head = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    sources = ("lint_plugin", "rules", "pyproject.toml")
    changed = subprocess.run(
        ["git", "--no-optional-locks", "status", "--porcelain", "--", *sources],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if head.returncode != 0 or changed.returncode != 0:
        return "the working tree (git unavailable)"
    files = len(changed.stdout.splitlines())
    state = f"{files} changed source files" if files else "no source changes"
    return f"the working tree: HEAD {head.stdout.strip()}, {state}"


def _archive(commit: str, target: Path) -> Path:
    """The files of ``commit`` (``git archive``), extracted into ``target``."""
    import io
    import tarfile

    done = subprocess.run(
        ["git", "archive", "--format=tar", commit], cwd=ROOT, capture_output=True
    )
    if done.returncode != 0:
        raise BenchError(f"git archive {commit} failed: {done.stderr.decode()[-300:]}")
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
        if hasattr(tarfile, "data_filter"):
            archive.extractall(target, filter="data")
        else:  # Python before 3.11.4: git's own archive, trusted
            archive.extractall(target)
    return target


def _sources_digest(root: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    for folder in ("lint_plugin", "rules"):
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in (".py", ".json", ".toml") and path.is_file():
                digest.update(str(path.relative_to(root)).encode() + b"\0")
                digest.update(path.read_bytes())
    digest.update((root / "pyproject.toml").read_bytes())
    return digest.hexdigest()


def _install(target: Path, sources: Path, copy: Callable[[], Path]) -> Path:
    """A virtual environment at ``target`` holding the wheel of ``sources``
    (``copy()`` gives the clean tree to build it from); kept while the
    sources' digest is the one it was built from."""
    import importlib.metadata
    import tempfile
    import venv

    digest = _sources_digest(sources)
    stamp = target / "sources.sha256"
    python = target / "bin" / "python"
    if stamp.is_file() and stamp.read_text() == digest and python.exists():
        return target
    print(f"building a regular install in {target} ...", flush=True)
    shutil.rmtree(target, ignore_errors=True)
    venv.create(target, with_pip=False)
    # The checkout's wheel, built with this environment's pip and setuptools,
    # installed by this pip into the new environment with the one dependency
    # `check` imports (pathspec); pip compiles the bytecode, as for a user.
    pathspec = f"pathspec=={importlib.metadata.version('pathspec')}"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    with tempfile.TemporaryDirectory() as wheels:
        # Built from a copy of the checkout's own files: setuptools reuses an
        # old build/ folder and ships every module it still holds (the flat
        # layout's 53 modules came along, and the cache's fingerprint walked them).
        source = copy()
        _pip(*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", wheels, source)
        built = [str(p) for p in Path(wheels).glob("*.whl")]
        _pip(*pip, "--python", python, "install", "--no-deps", *built, pathspec)
    stamp.write_text(digest)
    return target


FLAKE8_ALONE = ROOT / ".cache" / "bench-flake8"
FLAKE8 = ("flake8", "pycodestyle", "pyflakes", "mccabe")


def flake8_installs(install: Path) -> tuple[str, str]:
    """flake8 with the plugin and without it: this environment's flake8 (same
    versions of it and of its default plugins) added to the regular install
    ``install``, and alone in a virtual environment of its own; bytecode
    compiled by pip on both sides. Returns the two ``flake8`` scripts."""
    import importlib.metadata
    import venv

    pins = [f"{name}=={importlib.metadata.version(name)}" for name in FLAKE8]
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    for target in (install, FLAKE8_ALONE):
        stamp = target / "flake8.pins"
        if stamp.is_file() and stamp.read_text() == " ".join(pins):
            continue
        if target == FLAKE8_ALONE:
            shutil.rmtree(target, ignore_errors=True)
            venv.create(target, with_pip=False)
        _pip(*pip, "--python", target / "bin" / "python", "install", *pins)
        stamp.write_text(" ".join(pins))
    return str(install / "bin" / "flake8"), str(FLAKE8_ALONE / "bin" / "flake8")


def _clean_copy(target: Path) -> Path:
    """The files a fresh clone would have, with the working tree's changes (git's
    tracked files and the untracked ones it does not ignore), copied to
    ``target``; the checkout itself when git cannot list them."""
    import os

    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
    )
    if listed.returncode != 0:
        return ROOT
    for name in filter(None, listed.stdout.split(b"\0")):
        relative = os.fsdecode(name)
        origin = ROOT / relative
        if origin.is_file():  # a tracked file deleted in the working tree is gone
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, target / relative)
    return target


def _pip(*cmd: str | Path) -> None:
    done = subprocess.run([str(part) for part in cmd], capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"regular install failed: {done.stderr.strip()[-300:]}")


def compile_package() -> None:
    """Compile the installed package's bytecode, as ``pip install`` does."""
    import compileall

    import lint_plugin

    for folder in {Path(lint_plugin.__file__).parent, ROOT / "rules"}:
        compileall.compile_dir(str(folder), quiet=1)


def bytecode_note() -> str | None:
    """A warning when the package's modules have no compiled bytecode."""
    import importlib.util

    import lint_plugin.cli

    cached = importlib.util.cache_from_source(lint_plugin.cli.__file__)
    if not Path(cached).exists():
        return (
            "NOTE: no bytecode for lint_plugin (PYTHONDONTWRITEBYTECODE?): every run "
            "compiles the sources, which a user's install does not."
        )
    return None


@dataclass(frozen=True)
class Probe:
    seconds: float
    returncode: int
    stdout_lines: int
    stderr_tail: str


def probe(cmd: Sequence[str], cwd: Path) -> Probe:
    """The warm-up run, with output kept, so a tool that checked nothing shows up.

    A linter that silently skipped the corpus (config excludes it, wrong path)
    would otherwise win every timing by doing no work.
    """
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    seconds = time.perf_counter() - start
    tail = done.stderr.strip().splitlines()[-1:] if done.stderr.strip() else []
    return Probe(seconds, done.returncode, len(done.stdout.splitlines()), "".join(tail))


def interleaved(
    ours: Callable[[], float], theirs: Callable[[], float], repeat: int
) -> tuple[list[float], list[float]]:
    """``repeat`` timings of each, alternating A B A B so slow drift (thermal,
    other load, page cache) hits both sides alike instead of one block."""
    a: list[float] = []
    b: list[float] = []
    for _ in range(repeat):
        a.append(ours())
        b.append(theirs())
    return a, b


def tree_memory(cmd: Sequence[str], cwd: Path, every: float = 0.002) -> float:
    """Peak proportional set size (MB) of ``cmd`` and every process it forks,
    summed (pages shared between a parent and its forked workers counted
    once), sampled from ``/proc`` every ``every`` seconds. Linux only; 0.0
    elsewhere. Sampling costs CPU, so these runs are not the timed ones."""
    if not Path("/proc/self/smaps_rollup").exists():
        return 0.0
    child = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd
    )
    peak = 0
    while child.poll() is None:
        peak = max(peak, sum(_pss(pid) for pid in _tree(child.pid)))
        time.sleep(every)
    return peak / 1024


def _tree(root: int) -> list[int]:
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        found.append(pid)
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as handle:
                pending += [int(p) for p in handle.read().split()]
        except OSError:
            pass
    return found


def _pss(pid: int) -> int:
    """The process's PSS in KiB (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


@dataclass(frozen=True)
class Row:
    case: str
    ours: list[float]
    theirs: list[float]
    goal: float | None  # the largest acceptable ours/theirs ratio of medians
    memory: tuple[float, float] | None = None  # peak tree PSS (MB), ours and theirs

    @property
    def ratio(self) -> float:
        return statistics.median(self.ours) / statistics.median(self.theirs)

    @property
    def pair_ratios(self) -> list[float]:
        """ours/theirs of each interleaved pair: their spread is the noise."""
        return [a / b for a, b in zip(self.ours, self.theirs, strict=True)]

    @property
    def met(self) -> bool | None:
        return None if self.goal is None else self.ratio <= self.goal


def describe(samples: Sequence[float]) -> str:
    return (
        f"median {statistics.median(samples):.3f}s  min {min(samples):.3f}s  "
        f"max {max(samples):.3f}s"
    )


def print_environment(repeat: int) -> None:
    cpus = os.cpu_count()
    # The usable count is what matters on a container with a CPU mask.
    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    affinity = len(usable) if usable is not None else cpus
    print(f"Python {platform.python_version()} ({sys.executable})")
    print(f"Platform {platform.platform()}; CPUs: {cpus} (usable: {affinity})")
    print(f"{repeat} interleaved repetitions per command after one warm-up run each.")
    print("Ratios compare medians measured in the same run, interleaved; absolute")
    print("seconds depend on the machine and its load, the ratios are the result.")
    print()


def _spread(row: Row) -> str:
    ratios = row.pair_ratios
    return f"{min(ratios):.2f}-{max(ratios):.2f}x"


def _memory(row: Row) -> str:
    if row.memory is None:
        return "-"
    ours, theirs = row.memory
    return f"{ours:.0f} / {theirs:.0f} MB"


def print_table(
    rows: Sequence[Row], sides: tuple[str, str] = ("ours", "baseline")
) -> None:
    headers = (
        "case",
        f"{sides[0]} median s",
        f"{sides[1]} median s",
        "ratio",
        "pairs min-max",
        "goal",
        "met?",
        f"tree PSS {sides[0]} / {sides[1]}",
    )
    body = [
        (
            row.case,
            f"{statistics.median(row.ours):.3f}",
            f"{statistics.median(row.theirs):.3f}",
            f"{row.ratio:.2f}x",
            _spread(row),
            "-" if row.goal is None else f"<= {row.goal:.2f}x",
            {None: "-", True: "yes", False: "NO"}[row.met],
            _memory(row),
        )
        for row in rows
    ]
    widths = [max(len(r[i]) for r in (headers, *body)) for i in range(len(headers))]
    for line in (headers, tuple("-" * w for w in widths), *body):
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)))


def print_markdown(rows: Sequence[Row], titles: dict[str, str]) -> None:
    """docs/benchmarks.md's table, from this run."""
    print("| case | ratio (pairs min-max) | goal | met? | tree PSS ours / theirs |")
    print("|---|---|---|---|---|")
    for row in rows:
        goal = "reported" if row.goal is None else f"<= {row.goal:g}x"
        met = {None: "-", True: "yes", False: "no"}[row.met]
        print(
            f"| {titles[row.case]} | {row.ratio:.2f}x ({_spread(row)}) | {goal} "
            f"| {met} | {_memory(row)} |"
        )
