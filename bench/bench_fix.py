"""Time ``draft-kv-lint fix --diff`` against a libcst parse-and-regenerate floor.

On the four multi-step draft backends of sglang 0.5.12.post1 (the last release
with the inline copies), interleaved in one run:

  ours:  ``draft-kv-lint fix --diff`` on the four files (a subprocess);
  floor: ``python -c`` that imports libcst and runs ``cst.parse_module(text).code``
         on each of the four files (a subprocess too, so both sides pay for the
         interpreter start-up and the libcst import).

Goal: ours <= 0.6x the floor (issue 13). When ``draft-kv-lint fix`` is not
available yet, both sides are timed in-process instead (``rewrite_text`` vs
``parse_module().code``), which leaves out start-up and imports, and the output
says so.

Usage: python bench/bench_fix.py [--repeat N]
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
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

GOAL = 0.6  # issue 13: fix stays well under libcst's own parse + regenerate

# The floor: what any libcst codemod must at least do to these files.
FLOOR_CODE = """\
import sys
import libcst as cst
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as handle:
        cst.parse_module(handle.read()).code
"""


def copy_backends(workdir: Path) -> list[str]:
    """Copy the four backends into ``workdir`` and return their relative paths.

    ``fix --diff`` must not write, but a benchmark is not the place to find out it
    does: working on copies keeps the corpus cache the tests verify untouched.
    """
    corpus = corpus_module()
    try:
        sources = corpus.backend_paths(VERSION)
    except corpus.CorpusUnavailable as exc:
        raise BenchError(f"sglang {VERSION} wheel unavailable: {exc}") from exc
    relative = []
    for source in sources:
        rel = f"{corpus.ATTENTION}/{source.name}"
        target = workdir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        relative.append(rel)
    return relative


def digest(workdir: Path, paths: Sequence[str]) -> str:
    sha = hashlib.sha256()
    for path in paths:
        sha.update((workdir / path).read_bytes())
    return sha.hexdigest()


def cli_row(workdir: Path, paths: list[str], repeat: int) -> Row:
    ours = [tool("draft-kv-lint"), "fix", "--diff", *paths]
    floor = [sys.executable, "-c", FLOOR_CODE, *paths]
    print("mode: subprocesses (CLI vs python -c floor), both incl. interpreter")
    print("      start-up and the libcst import")
    for side, cmd, label in (
        ("ours", ours, "draft-kv-lint fix --diff <4 backends>"),
        ("floor", floor, "python -c '<libcst parse_module(text).code>' <4 backends>"),
    ):
        # Warm-up also checks the command did something: a diff that is empty
        # would mean the fix found nothing and the timing measures no rewriting.
        warm = probe(cmd, workdir)
        note = f"; stderr: {warm.stderr_tail[:80]}" if warm.stderr_tail else ""
        print(f"  {side:5} $ {label}")
        print(
            f"        warm-up {warm.seconds:.3f}s, exit {warm.returncode}, "
            f"{warm.stdout_lines} output lines{note}"
        )
    a, b = interleaved(
        lambda: time_command(ours, workdir)[0],
        lambda: time_command(floor, workdir)[0],
        repeat,
    )
    return Row("fix --diff (4 backends)", a, b, GOAL)


def in_process_row(workdir: Path, paths: list[str], repeat: int) -> Row:
    """Fallback while the CLI is missing: the library call against the floor.

    Both sides read the files each time (the CLI will too) but share one
    interpreter with everything already imported, so this ratio is only a proxy.
    """
    import libcst as cst

    from lint_plugin.fix.rewrite import Options, rewrite_text

    print("mode: IN-PROCESS FALLBACK (`draft-kv-lint fix` not available):")
    print("      rewrite_text() vs cst.parse_module(text).code, imports excluded;")
    print("      rerun when the CLI exists, the goal is about the subprocess.")
    files = [workdir / p for p in paths]
    options = Options()

    def ours() -> float:
        start = time.perf_counter()
        for file in files:
            rewrite_text(file.read_text(encoding="utf-8"), str(file), options)
        return time.perf_counter() - start

    def floor() -> float:
        start = time.perf_counter()
        for file in files:
            cst.parse_module(file.read_text(encoding="utf-8")).code  # noqa: B018
        return time.perf_counter() - start

    changed = sum(
        rewrite_text(f.read_text(encoding="utf-8"), str(f), options).changed
        for f in files
    )
    print(f"  warm-up: rewrite_text changed {changed} of {len(files)} files")
    ours()
    floor()
    a, b = interleaved(ours, floor, repeat)
    return Row("rewrite_text (in-process)", a, b, GOAL)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--repeat", type=int, default=7, help="timed runs per side (default 7)"
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="force the in-process comparison even when the CLI exists",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")
    with tempfile.TemporaryDirectory(prefix="bench-fix-") as tmp:
        workdir = Path(tmp)
        try:
            paths = copy_backends(workdir)
            use_cli = not args.in_process and runs_ok(
                [tool("draft-kv-lint"), "fix", "--help"]
            )
        except BenchError as exc:
            print(f"bench_fix: {exc}", file=sys.stderr)
            return 2
        before = digest(workdir, paths)
        print_environment(args.repeat)
        print(f"corpus: sglang {VERSION}, four backends copied to {workdir}")
        run: Callable[[Path, list[str], int], Row]
        run = cli_row if use_cli else in_process_row
        row = run(workdir, paths, args.repeat)
        print(f"  ours   {describe(row.ours)}")
        print(f"  floor  {describe(row.theirs)}")
        print()
        print_table([row])
        if digest(workdir, paths) != before:
            # --diff wrote to the files: the timings are of the wrong behaviour.
            print("WARNING: the backend copies changed during the run", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
