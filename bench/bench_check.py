"""Time ``draft-kv-lint check`` and the flake8 plugin against the floors they sit on.

Each case is a pair of subprocesses timed interleaved in one run:

  (a) ``draft-kv-lint check --no-cache`` on sglang 0.5.12.post1's four
      multi-step draft backends vs ``python -c pass``, CPython's own start-up:
      the floor any Python tool pays (goal: <= 5x);
  (e) the same with a warm cache (the files unchanged since the last check;
      goal: <= 2x);
  (b) (a) vs ``ruff check --no-cache --select F401`` on the same four files
      (reported; a native tool's start-up is a few milliseconds);
  (c) ``draft-kv-lint check --no-cache`` vs ruff on the whole sglang 0.5.23
      package (4,719 files; goal: <= 0.5x, and memory below ruff's);
  (f) the same with a warm cache (ruff still without its own; goal: <= 0.2x,
      memory below ruff's);
  (d) ``flake8`` (its default checks) on 0.5.12.post1's four backends with the
      plugin installed vs the same flake8 without it (goal: <= 1.05x: what the
      plugin adds to a flake8 run on the files it has most to say about);
  (i) ``draft-kv-lint fix --check --no-cache`` vs ``check --no-cache`` on the
      whole sglang 0.5.23 package, nothing to fix (goal: <= 1.2x);
  (j) the same with a warm cache (goal: <= 1.2x);
  (g) a floor for (a): ``python -c`` that reads the four backends and runs
      ``symtable`` on each (the whole-file syntax check a file with findings
      needs, so that a file that does not compile gets E999, as in flake8, and
      no findings; half the cost of ``ast.parse``) vs ``python -c pass``;
  (h) a floor for (c): ``python -c`` that finds the package's files, reads each
      and searches it for ``topk``, forking one worker per core as ``check``
      does, vs ruff (the cost of reading, before any analysis).

Cold (``--no-cache``) is what a commit that changed the files pays; warm is a run
over files checked before (a re-run after a failed hook, ``--all-files``). The
warm cases use a cache folder of this run's own, filled by their warm-up run.

The install: ``draft-kv-lint`` is timed from a regular (non-editable) install of
this checkout, made by the script in ``.cache/bench-install`` (rebuilt when the
sources change; pip compiles its bytecode, as for a user), and ``python -c pass``
is that install's interpreter. An editable install's import finder roughly
doubles ``python -c pass`` and so halves every small-file ratio. flake8 (d) is
this environment's flake8 (the same versions of it, pycodestyle, pyflakes and
mccabe) installed into that install, against the same flake8 alone in
``.cache/bench-flake8``; pip compiles the bytecode of both.

Every ratio is the ratio of the medians, with the spread of the ratios of the
interleaved pairs (min-max); (c) and (f) also give the peak memory of the whole
process tree (proportional set size, forked workers included), sampled in runs
of their own.

Instruction counts (``--instructions [CASES]``, default cases a, e, g): each
side of a case also runs once under valgrind's callgrind (``PYTHONHASHSEED=0``),
which gives the instructions of the main process (the critical path) and of the
whole process tree (forked syntax check and workers included); see
``_instructions.py``.

Before/after (``--against REV``): a second regular install, of the commit REV
(``git archive``, in ``.cache/bench-install-at/``), and each case's own command
(``draft-kv-lint``: cases a, b, c, e, f) timed on both installs, interleaved,
with the ratio after/before; instruction counts for both (cases a and e by
default) and for the case's baseline. ``--rev REV`` installs REV in place of the
working tree (``--rev X --against X``: two installs of one commit, the noise).

Usage: python bench/bench_check.py [--repeat N] [--cases aebcfdghij] [--no-compile]
       [--instructions [CASES]] [--against REV [--rev REV]]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import _instructions
from _timing import (
    INSTALL,
    LATEST,
    VERSION,
    BenchError,
    Row,
    bytecode_note,
    compile_package,
    corpus_trees,
    describe,
    describe_checkout,
    flake8_installs,
    interleaved,
    print_environment,
    print_markdown,
    print_table,
    probe,
    regular_install,
    resolve_revision,
    runs_ok,
    time_command,
    tool,
    tree_memory,
)

# (g): what reporting on a file needs at the least, past start-up.
SYNTAX_FLOOR = """\
import sys, symtable
for path in sys.argv[1:]:
    with open(path, "rb") as handle:
        symtable.symtable(handle.read().decode(), path, "exec")
"""

# (h): finding, reading and searching every file, one forked worker per core.
READ_FLOOR = """\
import os, sys
paths, folders = [], [sys.argv[1]]
while folders:
    with os.scandir(folders.pop()) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry.path)
            elif entry.name.endswith(".py"):
                paths.append(entry.path)
workers = len(os.sched_getaffinity(0))
children = []
for index in range(1, workers):
    pid = os.fork()
    if pid == 0:
        for path in paths[index::workers]:
            with open(path, "rb") as handle:
                b"topk" in handle.read()
        os._exit(0)
    children.append(pid)
for path in paths[0::workers]:
    with open(path, "rb") as handle:
        b"topk" in handle.read()
for pid in children:
    os.waitpid(pid, 0)
"""


@dataclass(frozen=True)
class Case:
    key: str
    title: str
    ours: list[str]
    theirs: list[str]
    goal: float | None  # None: reported, no goal
    cwd: Path
    memory: bool = False  # also compare peak resident memory


def build_cases(keys: str, cache_dir: str, install: Path) -> tuple[Path, list[Case]]:
    """The commands of the selected cases, on the regular install ``install``,
    and the folder they run in.

    They run from the folder holding ``sglang/`` with relative paths, as a user
    would from a checkout. ``--no-config``: this repository's own table (found
    above the cache folder) must not exclude anything ruff checks.
    """
    root, latest, _, backends = corpus_trees()

    python = str(install / "bin" / "python")
    ours = [str(install / "bin" / "draft-kv-lint"), "check", "--no-config"]
    ours.append("--no-cache")
    # Warm: the cache folder is this run's own; each case's warm-up run fills it.
    cached = [*ours[:-1], "--cache-dir", cache_dir]
    ruff = [tool("ruff"), "check", "--no-cache", "--select", "F401"]
    flake8, flake8_alone = ("flake8", "flake8")
    if "d" in keys:
        flake8, flake8_alone = flake8_installs(install)
    fixing = [ours[0], "fix", "--check", *ours[2:]]
    if set(keys) & set("abcef") and not runs_ok([*ours, "--help"]):
        raise BenchError(
            "`draft-kv-lint check --help` fails: is the package installed?"
        )
    cases = [
        Case(
            "a",
            "four backends: draft-kv-lint check vs python -c pass",
            [*ours, *backends],
            [python, "-c", "pass"],
            5.0,
            root,
        ),
        Case(
            "e",
            "four backends, warm cache: draft-kv-lint check vs python -c pass",
            [*cached, *backends],
            [python, "-c", "pass"],
            2.0,
            root,
        ),
        Case(
            "b",
            "four backends: draft-kv-lint check vs ruff F401",
            [*ours, *backends],
            [*ruff, *backends],
            None,
            root,
        ),
        Case(
            "c",
            f"whole sglang {LATEST} package: draft-kv-lint check vs ruff F401",
            [*ours, "sglang"],
            [*ruff, "sglang"],
            0.5,
            latest,
            memory=True,
        ),
        Case(
            "f",
            f"whole sglang {LATEST} package, warm cache: draft-kv-lint check vs "
            "ruff F401 (ruff without its cache)",
            [*cached, "sglang"],
            [*ruff, "sglang"],
            0.2,
            latest,
            memory=True,
        ),
        Case(
            "d",
            "four backends: flake8 with the plugin vs the same flake8 without it",
            [flake8, *backends],
            [flake8_alone, *backends],
            1.05,
            root,
        ),
        Case(
            "i",
            f"whole sglang {LATEST} package, nothing to fix: draft-kv-lint fix "
            "--check vs check",
            [*fixing, "sglang"],
            [*ours, "sglang"],
            1.2,
            latest,
        ),
        Case(
            "j",
            f"whole sglang {LATEST} package, warm cache: draft-kv-lint fix --check "
            "vs check",
            [*fixing[:-1], "--cache-dir", cache_dir, "sglang"],
            [*cached, "sglang"],
            1.2,
            latest,
        ),
        Case(
            "g",
            "floor of (a): the four backends' whole-file syntax check (symtable) "
            "vs python -c pass",
            [python, "-c", SYNTAX_FLOOR, *backends],
            [python, "-c", "pass"],
            None,
            root,
        ),
        Case(
            "h",
            f"floor of (c): find, read and search every file of {LATEST} "
            "(one worker per core) vs ruff F401",
            [python, "-c", READ_FLOOR, "sglang"],
            [*ruff, "sglang"],
            None,
            latest,
        ),
    ]
    return root, [case for case in cases if case.key in keys]


MEMORY_RUNS = 3


def run_case(
    case: Case, repeat: int, sides: tuple[str, str] = ("ours", "theirs")
) -> Row:
    print(f"({case.key}) {case.title}")
    for side, cmd in zip(sides, (case.ours, case.theirs), strict=True):
        # Warm-up: fills the page cache so the first timed run is not the cold
        # one; its output is kept to show the tool did real work.
        warm = probe(cmd, case.cwd)
        shown = " ".join(
            Path(a).name if i == 0 else "'<floor script>'" if "\n" in a else a
            for i, a in enumerate(cmd)
        )
        if len(shown) > 110:
            shown = shown[:107] + "..."
        print(f"  {side:6} $ {shown}")
        note = f"; stderr: {warm.stderr_tail[:80]}" if warm.stderr_tail else ""
        print(
            f"         warm-up {warm.seconds:.3f}s, exit {warm.returncode}, "
            f"{warm.stdout_lines} output lines{note}"
        )
    ours, theirs = interleaved(
        lambda: time_command(case.ours, case.cwd),
        lambda: time_command(case.theirs, case.cwd),
        repeat,
    )
    print(f"  {sides[0]:6} {describe([t for t, _ in ours])}")
    print(f"  {sides[1]:6} {describe([t for t, _ in theirs])}")
    memory = None
    if case.memory:
        ours_mb = max(m for _, m in ours) / 1024
        theirs_mb = max(m for _, m in theirs) / 1024
        print(
            f"  peak resident memory (one process): {ours_mb:.0f} / {theirs_mb:.0f} MB"
        )
        # The whole tree, in runs of its own (sampling costs CPU).
        memory = (
            max(tree_memory(case.ours, case.cwd) for _ in range(MEMORY_RUNS)),
            max(tree_memory(case.theirs, case.cwd) for _ in range(MEMORY_RUNS)),
        )
        verdict = "below" if memory[0] < memory[1] else "NOT below"
        print(
            f"  peak tree PSS: {sides[0]} {memory[0]:.1f} MB, {sides[1]} "
            f"{memory[1]:.1f} MB: {verdict}"
        )
    ours_s, theirs_s = [t for t, _ in ours], [t for t, _ in theirs]
    return Row(f"({case.key})", ours_s, theirs_s, case.goal, memory)


CASES = "abcdefghij"
# Cases whose own command is draft-kv-lint's: the ones --against compares.
AGAINST_CASES = "abcefij"


def count_instructions(
    case: Case, sides: tuple[str, str]
) -> tuple[_instructions.Counts, _instructions.Counts]:
    """One callgrind run of each side of ``case``, printed."""
    print("  instructions (callgrind, one run each, PYTHONHASHSEED=0):")
    counts = []
    for side, cmd in zip(sides, (case.ours, case.theirs), strict=True):
        counts.append(_instructions.count(cmd, case.cwd))
        print(f"  {side:8} {_instructions.describe(counts[-1])}")
    ours, theirs = counts
    print(
        f"  {sides[0]}/{sides[1]}: main {ours.main / theirs.main:.3f}x, "
        f"tree {ours.tree / theirs.tree:.3f}x"
    )
    return ours, theirs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--repeat", type=int, default=7, help="timed runs per command (default 7)"
    )
    parser.add_argument(
        "--cases",
        default="aebcfdghij",
        help="which cases to run, e.g. 'ac' (default aebcfdghij: e and f are a and "
        "c with a warm cache, g and h their floors, i and j fix --check)",
    )
    parser.add_argument(
        "--no-compile",
        action="store_true",
        help="do not compile the package's bytecode first (a user's install has it)",
    )
    parser.add_argument(
        "--instructions",
        nargs="?",
        const=_instructions.DEFAULT_CASES,
        metavar="CASES",
        help="also count each side's instructions once under valgrind's callgrind "
        f"for these of the selected cases (alone: "
        f"'{_instructions.DEFAULT_CASES}'; with --against the default is 'ae', "
        "and '' turns the counts off)",
    )
    parser.add_argument(
        "--against",
        metavar="REV",
        help="compare with a regular install of the commit REV: each case's "
        f"draft-kv-lint command (cases '{AGAINST_CASES}') on both installs, "
        "interleaved, ratio after/before",
    )
    parser.add_argument(
        "--rev",
        metavar="REV",
        help="install the commit REV (git archive) in place of the working tree",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1 or not set(args.cases) <= set(CASES) or not args.cases:
        parser.error(f"--repeat must be >= 1 and --cases a subset of '{CASES}'")
    if args.instructions is not None and not set(args.instructions) <= set(CASES):
        parser.error(f"--instructions takes a subset of '{CASES}'")
    if args.against is not None:
        dropped = "".join(k for k in args.cases if k not in AGAINST_CASES)
        args.cases = "".join(k for k in args.cases if k in AGAINST_CASES)
        if dropped:
            print(f"--against: cases '{dropped}' do not run draft-kv-lint: skipped")
        if not args.cases:
            parser.error(f"--against compares cases '{AGAINST_CASES}' only")
        if args.instructions is None:
            args.instructions = "ae"
    counted = set(args.instructions or "") & set(args.cases)
    args.instructions = "".join(k for k in args.cases if k in counted)
    try:
        if args.instructions:
            _instructions.valgrind()
        # --rev: REV's files in the working tree's folder, so that --rev X
        # --against X are two installs of one commit.
        install = regular_install(args.rev, INSTALL if args.rev else None)
        before = None if args.against is None else regular_install(args.against)
    except BenchError as exc:
        print(f"bench_check: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="draft-kv-lint-bench-") as cache_dir:
        try:
            # Each install's warm cases have a cache folder of their own.
            root, cases = build_cases(args.cases, f"{cache_dir}/ours", install)
            if before is not None:
                _, old = build_cases(args.cases, f"{cache_dir}/before", before)
                return _run_against(args, root, cases, old, install, before)
            return _run(args, root, cases, install)
        except BenchError as exc:
            print(f"bench_check: {exc}", file=sys.stderr)
            return 2


def _run(args: argparse.Namespace, root: Path, cases: list[Case], install: Path) -> int:
    if not args.no_compile:
        compile_package()
    print_environment(args.repeat)
    note = bytecode_note()
    if note:
        print(note)
    origin = f"commit {args.rev}" if args.rev else describe_checkout()
    print(f"timed install: {install} (regular, not editable; bytecode by pip)")
    print(f"  built from {origin}")
    print(f"corpus: sglang {VERSION} and {LATEST}, run from {root.parent}")
    print()
    rows, counted = [], []
    for case in cases:
        rows.append(run_case(case, args.repeat))
        if case.key in args.instructions:
            ours, theirs = count_instructions(case, ("ours", "theirs"))
            counted.append(_instructions.InstructionRow(f"({case.key})", ours, theirs))
        print()
    print_table(rows)
    print()
    print_markdown(rows, {f"({case.key})": case.title for case in cases})
    if counted:
        print()
        print("instructions (callgrind): main = the process started (the critical")
        print("path), tree = every process it forked too, summed")
        _instructions.print_table(counted, ("ours", "baseline"))
    return 0


def _run_against(
    args: argparse.Namespace,
    root: Path,
    cases: list[Case],
    old: list[Case],
    install: Path,
    before: Path,
) -> int:
    print_environment(args.repeat)
    origin = f"commit {args.rev}" if args.rev else describe_checkout()
    print(f"after:  {install} (regular install of {origin})")
    commit = resolve_revision(args.against)
    print(f"before: {before} (regular install of commit {commit[:12]})")
    print("Each case: its draft-kv-lint command on both installs, interleaved;")
    print("ratios are after/before.")
    print(f"corpus: sglang {VERSION} and {LATEST}, run from {root.parent}")
    print()
    rows, counted = [], []
    for after, earlier in zip(cases, old, strict=True):
        pair = Case(
            after.key,
            f"{after.title.split(':')[0]}: after vs before",
            after.ours,
            earlier.ours,
            None,
            after.cwd,
            after.memory,
        )
        rows.append(run_case(pair, args.repeat, ("after", "before")))
        if after.key in args.instructions:
            new, base = count_instructions(pair, ("after", "before"))
            floor = _instructions.count(after.theirs, after.cwd)
            shown = " ".join([Path(after.theirs[0]).name, *after.theirs[1:]])
            shown = shown if len(shown) <= 40 else shown[:37] + "..."
            print(f"  baseline ({shown}) {_instructions.describe(floor)}")
            for side, counts in (("after", new), ("before", base)):
                print(
                    f"  {side}/baseline: main {counts.main / floor.main:.2f}x, "
                    f"tree {counts.tree / floor.tree:.2f}x"
                )
            counted.append(_instructions.InstructionRow(f"({after.key})", new, base))
        print()
    print_table(rows, ("after", "before"))
    if counted:
        print()
        print("instructions (callgrind): main = the process started (the critical")
        print("path), tree = every process it forked too, summed")
        _instructions.print_table(counted, ("after", "before"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
