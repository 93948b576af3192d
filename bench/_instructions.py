"""Instruction counts of a command's process tree under valgrind's callgrind.

A wall time moves by 10-30% with the machine's load; the number of instructions
a run executes does not (``PYTHONHASHSEED=0`` fixes the one source of variation
CPython has between runs), so a change of a few percent shows in one run.

Each command runs once under ``valgrind --tool=callgrind --trace-children=yes``,
one profile file per process (``callgrind.out.%p``). Two figures are kept:

- **main** (the critical path): the instructions of the process started, the
  one the user waits for; ``check`` forks a child for the whole-file syntax
  check and workers for large runs, which run beside it on other cores;
- **tree**: every process of the tree, summed: the CPU the run costs.

callgrind copies its counters into a forked child, so a child's file would hold
its parent's instructions up to the fork too. ``--dump-before`` the C library's
fork functions writes the parent's counts so far to a part file of its own and
zeroes the counters before the fork: the child starts from zero, and a process's
instructions are the sum of its parts (grouped by the ``pid:`` of each file).

One install and command give the same count every run; two installs of one
commit differ by up to about 0.2% (their paths and the environment's length move
the memory layout), so smaller differences are not the code's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from _timing import BenchError

# glibc's fork (``fork`` is ``__libc_fork``, which calls ``_Fork``): a dump
# before each zeroes the counters the child inherits. Several dumps before one
# fork only split the parent's count into more parts.
FORK_FUNCTIONS = ("fork", "__libc_fork", "_Fork")
DEFAULT_CASES = "aeg"  # short runs: 5-20 s each under callgrind here


@dataclass(frozen=True)
class Counts:
    main: int  # instructions (Ir) of the process started: the critical path
    tree: int  # every process of the tree, summed
    processes: int


def valgrind() -> str:
    found = shutil.which("valgrind")
    if found is None:
        raise BenchError("valgrind not found on PATH (instruction counts need it)")
    return found


def count(cmd: Sequence[str], cwd: Path) -> Counts:
    """One run of ``cmd`` under callgrind: its main process's instructions and
    its tree's. Output is discarded and the exit code ignored, as in timing."""
    with tempfile.TemporaryDirectory(prefix="draft-kv-lint-callgrind-") as out:
        full = [
            valgrind(),
            "--tool=callgrind",
            "--trace-children=yes",
            *(f"--dump-before={name}" for name in FORK_FUNCTIONS),
            f"--callgrind-out-file={out}/callgrind.out.%p",
            *cmd,
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        child = subprocess.Popen(
            full,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
        )
        _, stderr = child.communicate()
        per_pid = read_profiles(Path(out))
        # valgrind runs the command in its own process: the pid started is
        # the command's main process.
        if child.pid not in per_pid:
            tail = stderr.decode(errors="replace").strip()[-300:]
            raise BenchError(f"callgrind wrote no profile for {cmd[0]}: {tail}")
    return Counts(per_pid[child.pid], sum(per_pid.values()), len(per_pid))


def read_profiles(folder: Path) -> dict[int, int]:
    """Instructions per process id, summed over each process's part files."""
    per_pid: dict[int, int] = {}
    for path in folder.glob("callgrind.out.*"):
        pid, instructions = _read_profile(path)
        per_pid[pid] = per_pid.get(pid, 0) + instructions
    return per_pid


def _read_profile(path: Path) -> tuple[int, int]:
    """The ``pid:`` and the Ir total (``summary:``, else ``totals:``) of one file."""
    pid = None
    events: list[str] = []
    summary = totals = None
    with path.open(errors="replace") as handle:
        for line in handle:
            if line.startswith("pid:"):
                pid = int(line.split()[1])
            elif line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("summary:"):
                summary = line.split()[1:]
                break  # the header's total: the cost lines follow
            elif line.startswith("totals:"):
                totals = line.split()[1:]
    values = summary or totals
    if pid is None:  # no header: the file's name ends with the pid (and a part)
        pid = int(path.name.split(".")[2])
    if values is None or "Ir" not in events:
        raise BenchError(f"no Ir total in {path.name}")
    return pid, int(values[events.index("Ir")])


@dataclass(frozen=True)
class InstructionRow:
    case: str
    ours: Counts
    theirs: Counts

    @property
    def main_ratio(self) -> float:
        return self.ours.main / self.theirs.main

    @property
    def tree_ratio(self) -> float:
        return self.ours.tree / self.theirs.tree


def millions(n: int) -> str:
    return f"{n / 1e6:,.1f}M"


def describe(counts: Counts) -> str:
    noun = "process" if counts.processes == 1 else "processes"
    return (
        f"main {counts.main:>13,}  tree {counts.tree:>13,} ({counts.processes} {noun})"
    )


def print_table(rows: Sequence[InstructionRow], sides: tuple[str, str]) -> None:
    ours, theirs = sides
    headers = (
        "case",
        f"{ours} main",
        f"{theirs} main",
        "main ratio",
        f"{ours} tree",
        f"{theirs} tree",
        "tree ratio",
    )
    body = [
        (
            row.case,
            millions(row.ours.main),
            millions(row.theirs.main),
            f"{row.main_ratio:.3f}x",
            millions(row.ours.tree),
            millions(row.theirs.tree),
            f"{row.tree_ratio:.3f}x",
        )
        for row in rows
    ]
    widths = [max(len(r[i]) for r in (headers, *body)) for i in range(len(headers))]
    for line in (headers, tuple("-" * w for w in widths), *body):
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)))
