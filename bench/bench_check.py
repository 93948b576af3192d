"""Time ``draft-kv-lint check`` and the flake8 plugin against ruff and flake8.

Cases, all on the sglang 0.5.12.post1 wheel (the last release with the inline
copies), each a pair of subprocesses timed interleaved in one run:

  (a) ``draft-kv-lint check`` vs ``ruff check --no-cache --select F401`` on the
      four multi-step draft backends (goal: <= 2x ruff);
  (b) the same two on the whole ``sglang`` package (goal: <= 1x ruff);
  (c) ``flake8 --select KVI`` vs ``flake8 --select F401`` on the attention folder
      (goal: <= 1.05x).

Usage: python bench/bench_check.py [--repeat N] [--cases abc]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from _timing import (
    VERSION,
    BenchError,
    Row,
    corpus_module,
    describe,
    interleaved,
    print_environment,
    print_table,
    probe,
    runs_ok,
    time_command,
    tool,
)


@dataclass(frozen=True)
class Case:
    key: str
    title: str
    ours: list[str]
    theirs: list[str]
    goal: float


def build_cases(keys: str) -> tuple[Path, list[Case]]:
    """The commands of the selected cases and the folder they run in.

    They run from the folder holding ``sglang/`` with relative paths, as a user
    would from a checkout: output paths stay short and no configuration of this
    repository is picked up through the working directory (ruff still finds this
    repo's pyproject.toml above the cache; it only selects rules and F401 is
    passed explicitly).
    """
    corpus = corpus_module()
    try:
        # The whole-package extraction also holds the attention folder and the
        # backends (same wheel, same bytes), so every case runs from one folder.
        root = corpus.tree(VERSION, whole=True)
    except corpus.CorpusUnavailable as exc:
        raise BenchError(f"sglang {VERSION} wheel unavailable: {exc}") from exc
    attention = corpus.ATTENTION
    backends = [f"{attention}/{name}" for name in corpus.BACKENDS]
    missing = [p for p in backends if not (root / p).is_file()]
    if missing:
        raise BenchError(f"missing backend files in {root}: {missing}")

    # --no-config: this repository's own [tool.draft-kv-lint] (found above the
    # cache folder) would skip tests/ folders that ruff checks.
    ours = [tool("draft-kv-lint"), "check", "--no-config"]
    ruff = [tool("ruff"), "check", "--no-cache", "--select", "F401"]
    flake8 = tool("flake8")
    # The CLI is written separately from the engine; say so plainly rather than
    # timing a traceback.
    if ("a" in keys or "b" in keys) and not runs_ok([*ours, "--help"]):
        raise BenchError(
            "`draft-kv-lint check --help` fails: the CLI (lint_plugin.cli) is not "
            "ready; cases a and b need it"
        )
    cases = [
        Case(
            "a",
            "four backends: draft-kv-lint check vs ruff F401",
            [*ours, *backends],
            [*ruff, *backends],
            2.0,
        ),
        Case(
            "b",
            "whole sglang package: draft-kv-lint check vs ruff F401",
            [*ours, "sglang"],
            [*ruff, "sglang"],
            1.0,
        ),
        Case(
            "c",
            "attention folder: flake8 --select KVI vs --select F401",
            [flake8, "--select", "KVI", attention],
            [flake8, "--select", "F401", attention],
            1.05,
        ),
    ]
    return root, [case for case in cases if case.key in keys]


def run_case(case: Case, root: Path, repeat: int) -> Row:
    print(f"({case.key}) {case.title}")
    for side, cmd in (("ours", case.ours), ("theirs", case.theirs)):
        # Warm-up: fills the page cache and the .pyc caches so the first timed run
        # is not the cold one; its output is kept to show the tool did real work.
        warm = probe(cmd, root)
        shown = " ".join(Path(cmd[0]).name if i == 0 else a for i, a in enumerate(cmd))
        if len(shown) > 110:
            shown = shown[:107] + "..."
        print(f"  {side:6} $ {shown}")
        note = f"; stderr: {warm.stderr_tail[:80]}" if warm.stderr_tail else ""
        print(
            f"         warm-up {warm.seconds:.3f}s, exit {warm.returncode}, "
            f"{warm.stdout_lines} output lines{note}"
        )
    ours, theirs = interleaved(
        lambda: time_command(case.ours, root),
        lambda: time_command(case.theirs, root),
        repeat,
    )
    print(f"  ours   {describe(ours)}")
    print(f"  theirs {describe(theirs)}")
    print()
    return Row(f"({case.key})", ours, theirs, case.goal)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--repeat", type=int, default=7, help="timed runs per command (default 7)"
    )
    parser.add_argument(
        "--cases", default="abc", help="which cases to run, e.g. 'ab' (default abc)"
    )
    args = parser.parse_args(argv)
    if args.repeat < 1 or not set(args.cases) <= set("abc") or not args.cases:
        parser.error("--repeat must be >= 1 and --cases a subset of 'abc'")
    try:
        root, cases = build_cases(args.cases)
    except BenchError as exc:
        print(f"bench_check: {exc}", file=sys.stderr)
        return 2
    print_environment(args.repeat)
    print(f"corpus: sglang {VERSION}, run from {root}")
    print()
    rows = [run_case(case, root, args.repeat) for case in cases]
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
