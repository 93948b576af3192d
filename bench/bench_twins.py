"""Each twin against its obvious version, measured in one run.

A twin is a fast hand-written component kept beside an obvious one (a shortcut
over the whole-file walk, a cache, a hand-written reader in place of argparse,
plain records in place of dataclasses...). For each one this script runs one
command on the bench's regular install (``_timing.regular_install``) twice:

  twin:    the command as shipped;
  obvious: the same command with the twin switched off by a monkeypatch in the
           child process, before the command line runs (``TWINS``).

Both run as ``<install>/bin/python -c <launcher> ARGS``: the console script's
own lines (``import re, sys``, then ``lint_plugin.cli.run()``), the patch
(if any) placed before the import of ``lint_plugin.cli``, the other side's code
padded with spaces to the same length (an argument's length moves the memory
layout, and about 0.2% of a count with it). Per case:

- the two variants' standard output (and exit status) must be identical: the
  script stops with an error when they are not;
- instructions under valgrind's callgrind (``PYTHONHASHSEED=0``), of the main
  process (the critical path) and of the whole process tree (``_instructions``);
- wall times, in interleaved pairs after a warm-up run each (the order in a
  pair alternates: twin first, then obvious first), reported as the ratio
  twin / obvious of each pair: the median and the pairs' min-max.

The cases: 1 and 2 on 0.5.12.post1's four backends (cold ``check``) and on
0.5.23's attention folder, 1 also on the compiled copies of 8; 3 on the four
backends and the whole 0.5.23 package; 4 on the whole package (warm); 5 on the
four backends (warm); 6 on them (cold); 7 ``fix --diff`` on copies of them (with
libcst and ruff linked in on both sides, as a user's install has them); 8 cold
``check`` on copies compiled by the install's interpreter.

Verdict: a twin **pays** when its critical path (main-process instructions) is
at least 2% below the obvious version's (ten times the 0.2% that the memory
layout moves a count) and the median of its wall pairs is below 1.00x; else it
**does not pay**, in that case.

Usage: python bench/bench_twins.py [--repeat N] [--twins 12345678]
       [--no-instructions] [--skip-slow-counts]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import _instructions
from _timing import (
    LATEST,
    VERSION,
    BenchError,
    corpus_trees,
    describe_checkout,
    print_environment,
    regular_install,
    time_command,
)

# The console script pip writes (``bin/draft-kv-lint``), with the patch that
# switches the twin off before ``lint_plugin.cli`` is imported.
LAUNCHER = """\
import re
import sys
{patch}
from lint_plugin.cli import run
sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
sys.exit(run())
"""


@dataclass(frozen=True)
class Twin:
    key: str
    name: str  # the twin, as bench/README.md names it
    switch: str  # how the obvious version is made, in words
    patch: str  # Python run in the child before ``lint_plugin.cli`` is imported


# 6: the records module's own names, replaced before any module that uses
# them is imported (``from lint_plugin.records import record`` copies them).
DATACLASS_RECORDS = """\
import dataclasses
import lint_plugin.records as records
def record(cls=None, /, *, frozen=False, eq=True):
    def wrap(cls):
        return dataclasses.dataclass(cls, frozen=frozen, eq=eq)
    return wrap if cls is None else wrap(cls)
records.record = record
records.field = dataclasses.field
records.replace = dataclasses.replace
records.FrozenInstanceError = dataclasses.FrozenInstanceError"""

TWINS = {
    twin.key: twin
    for twin in (
        Twin(
            "1",
            "region shortcut (`engine/scan.regions`)",
            "`lint_plugin.engine.scan.regions` returns None: `linter.lint_text` "
            "parses and walks the whole file",
            "import lint_plugin.engine.scan as scan\n"
            "scan.regions = lambda *args, **kwargs: None",
        ),
        Twin(
            "2",
            "methods left unparsed (`engine/lazy_methods`)",
            "`lint_plugin.engine.lazy_methods.may_defer` returns False: every "
            "method of a class read whole is parsed with it",
            "import lint_plugin.engine.lazy_methods as lazy_methods\n"
            "lazy_methods.may_defer = lambda *args, **kwargs: False",
        ),
        Twin(
            "3",
            "status cache (`check/cache.py`)",
            "`--no-cache` in place of a warm `--cache-dir` (filled by the warm-up "
            "run); the file states come with the cache and go with it",
            "",
        ),
        Twin(
            "4",
            "file states (`check/file_states.py`)",
            "`FileStates.changed` returns every path: a warm run reads and "
            "byte-tests every file again (candidates still answered by the cache)",
            "from lint_plugin.check.file_states import FileStates\n"
            "FileStates.changed = lambda self, paths: list(paths)",
        ),
        Twin(
            "5",
            "command line without argparse (`cli/quick.py`)",
            "`lint_plugin.cli.quick.parse` returns None: `cli.main` builds the "
            "subcommand's argparse parser and reads the line with it",
            "import lint_plugin.cli.quick as quick\nquick.parse = lambda argv: None",
        ),
        Twin(
            "6",
            "plain records (`records.py`)",
            "`lint_plugin.records.record`/`field`/`replace`/`FrozenInstanceError` "
            "replaced by `dataclasses`' (`record(frozen=, eq=)` -> "
            "`dataclass(frozen=, eq=)`) before any other `lint_plugin` import",
            DATACLASS_RECORDS,
        ),
        Twin(
            "7",
            "helpers' import added by text (`fix/imports/by_text.py`)",
            "`lint_plugin.fix.rewrite.add_import` returns None: every header goes "
            "to `by_libcst.ensure_imported` (libcst imported)",
            "import lint_plugin.fix.rewrite as rewrite\n"
            "rewrite.add_import = lambda *args, **kwargs: None",
        ),
        Twin(
            "8",
            "bytecode cache as syntax check (`check/compiled.py`)",
            "`lint_plugin.check.compiled.compiled` returns False: a file with "
            "findings is parsed whole (`syntax.error_of`) before it is reported",
            "import lint_plugin.check.compiled as compiled\n"
            "compiled.compiled = lambda *args, **kwargs: False",
        ),
    )
}


@dataclass
class Case:
    twin: Twin
    title: str
    cwd: Path
    twin_cmd: list[str]
    obvious_cmd: list[str]
    slow_counts: bool = False  # minutes under callgrind (--skip-slow-counts)


@dataclass
class Result:
    case: Case
    output_lines: int
    returncode: int
    stderr_same: bool
    twin_s: list[float] = field(default_factory=list)
    obvious_s: list[float] = field(default_factory=list)
    twin_counts: _instructions.Counts | None = None
    obvious_counts: _instructions.Counts | None = None

    @property
    def pair_ratios(self) -> list[float]:
        return [a / b for a, b in zip(self.twin_s, self.obvious_s, strict=True)]

    @property
    def wall(self) -> float:
        return statistics.median(self.pair_ratios)

    @property
    def main_ratio(self) -> float | None:
        if self.twin_counts is None or self.obvious_counts is None:
            return None
        return self.twin_counts.main / self.obvious_counts.main

    @property
    def tree_ratio(self) -> float | None:
        if self.twin_counts is None or self.obvious_counts is None:
            return None
        return self.twin_counts.tree / self.obvious_counts.tree

    @property
    def verdict(self) -> str:
        main = self.main_ratio
        if main is None:  # wall alone: the pairs' median and their worst
            pays = self.wall < 0.98 and max(self.pair_ratios) < 1.0
        else:
            pays = main <= 0.98 and self.wall < 1.0
        return "pays" if pays else "does not pay"


def launcher(python: Path, patch: str, *, path: str | None = None) -> list[str]:
    """``python -c`` running the console script's lines, ``patch`` first
    (``path``: a folder appended to ``sys.path`` before anything runs)."""
    lines = []
    if path is not None:
        lines.append(f"sys.path.append({path!r})")
    if patch:
        lines.append(patch)
    return [str(python), "-c", LAUNCHER.format(patch="\n".join(lines))]


def same_length(twin: list[str], obvious: list[str]) -> tuple[list[str], list[str]]:
    """The two ``python -c`` commands with code of one length: the shorter
    gets spaces at its end (a blank last line). The arguments' length moves
    the memory layout, and with it about 0.2% of an instruction count
    (``_instructions``); so only the patch differs."""
    a, b = twin[2], obvious[2]
    width = max(len(a), len(b))
    pad = [code + " " * (width - len(code)) for code in (a, b)]
    return [*twin[:2], pad[0], *twin[3:]], [*obvious[:2], pad[1], *obvious[3:]]


def compiled_copies(
    root: Path, backends: Sequence[str], folder: Path, python: Path
) -> Path:
    """Copies of the backends in ``folder`` with timestamp pycs in
    ``__pycache__``, as an import by the install's interpreter leaves them
    (``py_compile`` writes them whatever PYTHONDONTWRITEBYTECODE says)."""
    if folder.is_dir():
        return folder
    copy_backends(root, backends, folder)
    done = subprocess.run(
        [str(python), "-m", "py_compile", *backends],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise BenchError(f"py_compile failed: {done.stderr[-300:]}")
    return folder


def fix_dependencies(folder: Path) -> str:
    """A folder holding only links to libcst and ruff (the two packages a
    user's install of draft-kv-lint brings besides pathspec), taken from this
    environment: the bench's install has pathspec alone, and the obvious
    version of twin 7 imports libcst. Both variants of twin 7 get it."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("libcst", "ruff"):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise BenchError(f"{name} is not installed in {sys.executable}")
        (folder / name).symlink_to(next(iter(spec.submodule_search_locations)))
    return str(folder)


def copy_backends(root: Path, backends: Sequence[str], target: Path) -> None:
    for rel in backends:
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, target / rel)


def digest(folder: Path, paths: Sequence[str]) -> str:
    sha = hashlib.sha256()
    for path in paths:
        sha.update((folder / path).read_bytes())
    return sha.hexdigest()


def build_cases(keys: str, install: Path, scratch: Path) -> list[Case]:
    """The cases of the selected twins: the corpus as ``bench_check`` reads it
    (0.5.12.post1's four backends, 0.5.23's attention folder and package)."""
    root, latest, folder, backends = corpus_trees()
    python = install / "bin" / "python"
    cold = ["check", "--no-config", "--no-cache"]

    def warm(name: str) -> list[str]:
        return ["check", "--no-config", "--cache-dir", str(scratch / f"cache-{name}")]

    def pair(twin: Twin, title: str, cwd: Path, args: list[str], **kw) -> Case:
        shipped, switched = same_length(
            [*launcher(python, ""), *args], [*launcher(python, twin.patch), *args]
        )
        return Case(twin, title, cwd, shipped, switched, **kw)

    four = f"{VERSION}'s four backends"
    attention = f"{LATEST}'s attention folder"
    cases: list[Case] = []
    for key in keys:
        twin = TWINS[key]
        if key in "12":
            cases.append(
                pair(twin, f"`check --no-cache`, {four}", root, cold + backends)
            )
            cases.append(
                pair(
                    twin,
                    f"`check --no-cache`, {attention}",
                    latest,
                    [*cold, folder],
                )
            )
            if key == "1":  # beside twin 8: no whole-file check to add
                cases.append(
                    pair(
                        twin,
                        f"`check --no-cache`, compiled copies of {four} (as 8)",
                        compiled_copies(root, backends, scratch / "compiled", python),
                        cold + backends,
                    )
                )
        elif key == "3":
            for title, cwd, paths, slow in (
                (four, root, backends, False),
                (f"the whole {LATEST} package", latest, ["sglang"], True),
            ):
                cache = warm(f"3-{len(cases)}")
                cases.append(
                    Case(
                        twin,
                        f"warm `check` vs `--no-cache`, {title}",
                        cwd,
                        [*launcher(python, ""), *cache, *paths],
                        [*launcher(python, ""), *cold, *paths],
                        slow_counts=slow,
                    )
                )
        elif key == "4":
            cases.append(
                pair(
                    twin,
                    f"warm `check`, the whole {LATEST} package",
                    latest,
                    [*warm("4"), "sglang"],
                )
            )
        elif key == "5":
            cases.append(
                pair(twin, f"warm `check`, {four}", root, [*warm("5"), *backends])
            )
        elif key == "6":
            cases.append(
                pair(twin, f"`check --no-cache`, {four}", root, cold + backends)
            )
        elif key == "7":
            folder = scratch / "fix"
            copy_backends(root, backends, folder)
            deps = fix_dependencies(scratch / "fix-deps")
            args = ["fix", "--diff", "--no-config", *backends]
            shipped, switched = same_length(
                [*launcher(python, "", path=deps), *args],
                [*launcher(python, twin.patch, path=deps), *args],
            )
            cases.append(
                Case(twin, f"`fix --diff`, copies of {four}", folder, shipped, switched)
            )
        elif key == "8":
            cases.append(
                pair(
                    twin,
                    f"`check --no-cache`, compiled copies of {four}",
                    compiled_copies(root, backends, scratch / "compiled", python),
                    cold + backends,
                )
            )
    return cases


def run_once(cmd: Sequence[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)


def run_case(case: Case, repeat: int, count: bool) -> Result:
    print(f"twin {case.twin.key}: {case.twin.name}")
    print(f"  case: {case.title} (in {case.cwd})")
    # Warm-up (fills the page cache and, for the warm cases, the cache folder),
    # then one run of each kept for the comparison of their outputs.
    for cmd in (case.twin_cmd, case.obvious_cmd):
        run_once(cmd, case.cwd)
    start = time.perf_counter()
    twin = run_once(case.twin_cmd, case.cwd)
    middle = time.perf_counter()
    obvious = run_once(case.obvious_cmd, case.cwd)
    end = time.perf_counter()
    if twin.stdout != obvious.stdout or twin.returncode != obvious.returncode:
        raise BenchError(
            f"twin {case.twin.key}, {case.title}: the outputs differ "
            f"(exit {twin.returncode} vs {obvious.returncode}, "
            f"{len(twin.stdout.splitlines())} vs "
            f"{len(obvious.stdout.splitlines())} lines; obvious stderr: "
            f"{obvious.stderr.strip()[-300:]!r})"
        )
    result = Result(
        case,
        len(twin.stdout.splitlines()),
        twin.returncode,
        twin.stderr == obvious.stderr,
    )
    same_err = "same stderr" if result.stderr_same else "stderr differs"
    print(
        f"  identical stdout: {result.output_lines} lines, exit {twin.returncode}, "
        f"{same_err} (one run: twin {middle - start:.3f}s, "
        f"obvious {end - middle:.3f}s)"
    )
    for index in range(repeat):
        first, second = (
            ((case.twin_cmd, result.twin_s), (case.obvious_cmd, result.obvious_s))
            if index % 2 == 0
            else ((case.obvious_cmd, result.obvious_s), (case.twin_cmd, result.twin_s))
        )
        for cmd, samples in (first, second):
            samples.append(time_command(cmd, case.cwd)[0])
    ratios = result.pair_ratios
    print(
        f"  wall: twin {statistics.median(result.twin_s):.3f}s, obvious "
        f"{statistics.median(result.obvious_s):.3f}s (medians); twin/obvious "
        f"{result.wall:.2f}x (pairs {min(ratios):.2f}-{max(ratios):.2f}x)"
    )
    if count:
        result.twin_counts = _instructions.count(case.twin_cmd, case.cwd)
        result.obvious_counts = _instructions.count(case.obvious_cmd, case.cwd)
        print(f"  twin     {_instructions.describe(result.twin_counts)}")
        print(f"  obvious  {_instructions.describe(result.obvious_counts)}")
        print(
            f"  instructions twin/obvious: main {result.main_ratio:.3f}x, "
            f"tree {result.tree_ratio:.3f}x"
        )
        if abs(result.main_ratio - 1) < 0.001 and abs(result.tree_ratio - 1) < 0.001:
            print("  NOTE: the same count on both sides: did the switch take hold?")
    print(f"  verdict: {result.verdict}")
    print()
    return result


def _counts(counts: _instructions.Counts | None, which: str) -> str:
    if counts is None:
        return "-"
    return _instructions.millions(getattr(counts, which))


def print_markdown(results: Sequence[Result]) -> None:
    """bench/README.md's table of the twins, from this run."""
    print(
        "| twin | case | main: twin / obvious (ratio) | tree: twin / obvious "
        "(ratio) | wall twin/obvious (pairs) | verdict |"
    )
    print("|---|---|---|---|---|---|")
    for r in results:
        main = tree = "not counted"
        if r.main_ratio is not None:
            main = (
                f"{_counts(r.twin_counts, 'main')} / "
                f"{_counts(r.obvious_counts, 'main')} ({r.main_ratio:.3f}x)"
            )
            tree = (
                f"{_counts(r.twin_counts, 'tree')} / "
                f"{_counts(r.obvious_counts, 'tree')} ({r.tree_ratio:.3f}x)"
            )
        ratios = r.pair_ratios
        wall = f"{r.wall:.2f}x ({min(ratios):.2f}-{max(ratios):.2f}x)"
        print(
            f"| {r.case.twin.key}. {r.case.twin.name} | {r.case.title} | {main} "
            f"| {tree} | {wall} | {r.verdict} |"
        )
    print()
    print("Switches (the obvious version of each twin):")
    seen = set()
    for r in results:
        if r.case.twin.key not in seen:
            seen.add(r.case.twin.key)
            print(f"- {r.case.twin.key}: {r.case.twin.switch}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--repeat", type=int, default=5, help="interleaved pairs per case (default 5)"
    )
    parser.add_argument(
        "--twins", default="".join(TWINS), help="which twins, e.g. '15' (default all)"
    )
    parser.add_argument(
        "--no-instructions",
        action="store_true",
        help="wall pairs only, no callgrind counts",
    )
    parser.add_argument(
        "--skip-slow-counts",
        action="store_true",
        help="no callgrind counts for the whole-package cold run (minutes)",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1 or not args.twins or not set(args.twins) <= set(TWINS):
        parser.error(f"--repeat must be >= 1 and --twins a subset of {''.join(TWINS)}")
    keys = "".join(k for k in TWINS if k in args.twins)
    started = time.perf_counter()
    try:
        if not args.no_instructions:
            _instructions.valgrind()
        install = regular_install()
        with tempfile.TemporaryDirectory(prefix="draft-kv-lint-twins-") as scratch:
            cases = build_cases(keys, install, Path(scratch))
            print_environment(args.repeat)
            print(f"install: {install} (regular, bytecode by pip)")
            print(f"  built from {describe_checkout()}")
            print("each case: the command as shipped (twin) and with the twin")
            print("switched off in the child (obvious); ratios are twin/obvious")
            print()
            results = []
            fix_case, before = None, ""
            for case in cases:
                if case.twin.key == "7":
                    fix_case = case
                    before = digest(case.cwd, _backend_args(case))
                count = not args.no_instructions and not (
                    case.slow_counts and args.skip_slow_counts
                )
                results.append(run_case(case, args.repeat, count))
            if fix_case is not None and before != digest(
                fix_case.cwd, _backend_args(fix_case)
            ):
                raise BenchError("fix --diff changed the copies it was given")
    except BenchError as exc:
        print(f"bench_twins: {exc}", file=sys.stderr)
        return 2
    print_markdown(results)
    print()
    print(f"whole run: {time.perf_counter() - started:.0f} s")
    return 0


def _backend_args(case: Case) -> list[str]:
    return [a for a in case.twin_cmd if a.endswith(".py")]


if __name__ == "__main__":
    sys.exit(main())
