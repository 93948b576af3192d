"""``draft-kv-lint prove``: run the numerical proof on the classes a change touched.

For the maintainer who just ran ``fix`` on their branch: every multi-step draft
backend class whose code differs between ``--base REV`` (``git show REV:path``)
and the working tree -- or between two files given as ``OLD NEW`` -- is compiled
alone from both texts (nothing of them is imported), driven through its entry
points on the harness grid with upstream's index kernel (found in the tree's
``sglang/srt/speculative/``; the reference kernel otherwise, and the table says
so), compiled on CUDA when there is one, else interpreted on the CPU.

Exit 0 when every changed class is proven, 1 when one is not (its first differing
record is printed), 2 for a usage error or when the ``[proof]`` extra is missing.
torch and triton are imported only here, and only once arguments are read.
"""

from __future__ import annotations

import argparse
import sys

from lint_plugin.records import record

TYPE_CHECKING = False  # not `typing`: imported by every `check` run through the CLI

if TYPE_CHECKING:
    import subprocess
    from pathlib import Path
    from typing import NoReturn

# Only argparse-level imports up front: cli imports this module on every run,
# check's included, and startup time is pre-commit's.

DRAFT_SUFFIX = "MultiStepDraftBackend"
NEEDS = "draft-kv-lint prove needs torch, triton and numpy (the [proof] extra)"


def install_hint() -> str:
    """What to run, the way this copy was installed (lint_plugin.install_origin):
    no registry serves draft-kv-lint, so a bare ``draft-kv-lint[proof]`` is none."""
    from lint_plugin.install_origin import install_command

    command = install_command("proof")
    return f"{NEEDS}: {command}" if command else f"{NEEDS}."


def add_prove_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "prove",
        help="prove a rewrite changed no number (needs the [proof] extra)",
        description=(
            "Run the differential harness on every *MultiStepDraftBackend class "
            "that differs between --base REV and the working tree (or between two "
            "files OLD NEW). Exit 0 when every changed class is proven, 1 when one "
            "is not, 2 on usage errors or without the [proof] extra."
        ),
    )
    parser.add_argument("paths", nargs="*", metavar="PATH")
    parser.add_argument(
        "--base", metavar="REV", help="git revision to compare the working tree with"
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help="the full grid (128 random cases + long sequences; default on CUDA)",
    )
    parser.add_argument(
        "--kernel",
        metavar="FILE",
        help="file defining generate_draft_decode_kv_indices "
        "(default: found in the tree's sglang/srt/speculative/)",
    )
    parser.set_defaults(handler=run_prove)


@record(frozen=True)
class Pair:
    label: str
    before: str  # text
    after: str
    after_path: Path


def _fail(message: str) -> NoReturn:
    """A usage error: the CLI prints prove's usage, then the message (exit 2)."""
    from lint_plugin.cli import UsageError

    raise UsageError(message)


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    import subprocess

    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False
    )


def _pairs(args: argparse.Namespace) -> list[Pair] | str:
    from pathlib import Path

    if args.base is None:
        if len(args.paths) != 2:
            return "give --base REV [PATHS], or two files OLD NEW"
        old, new = (Path(p) for p in args.paths)
        for path in (old, new):
            if not path.is_file():
                return f"{path}: no such file"
        return [Pair(str(new), old.read_text("utf-8"), new.read_text("utf-8"), new)]
    top = _git(["rev-parse", "--show-toplevel"], Path.cwd())
    if top.returncode:
        return "--base needs a git work tree: " + top.stderr.strip()
    root = Path(top.stdout.strip())
    listed = _git(["diff", "--name-only", args.base, "--", *args.paths], Path.cwd())
    if listed.returncode:
        return f"git diff {args.base}: {listed.stderr.strip()}"
    pairs = []
    for name in listed.stdout.split():
        path = root / name
        if not name.endswith(".py") or not path.is_file():
            continue
        shown = _git(["show", f"{args.base}:{name}"], root)
        if shown.returncode:  # a new file: nothing to compare with
            continue
        pairs.append(Pair(name, shown.stdout, path.read_text("utf-8"), path))
    return pairs


def _classes(text: str) -> dict[str, str]:
    import ast

    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    return {
        node.name: ast.dump(node)
        for node in tree.body
        if isinstance(node, ast.ClassDef) and node.name.endswith(DRAFT_SUFFIX)
    }


def changed_classes(pair: Pair) -> list[str]:
    before, after = _classes(pair.before), _classes(pair.after)
    return sorted(n for n in before.keys() & after.keys() if before[n] != after[n])


def _find_kernel_file(args: argparse.Namespace, paths: list[Path]) -> Path | None:
    from pathlib import Path

    if args.kernel:
        return Path(args.kernel)
    for path in paths:
        for parent in path.resolve().parents:
            folder = parent / "speculative"
            if folder.is_dir():
                for candidate in sorted(folder.glob("*.py")):
                    text = candidate.read_text("utf-8", errors="replace")
                    if "def generate_draft_decode_kv_indices(" in text:
                        return candidate
    return None


def run_prove(args: argparse.Namespace) -> int:
    import importlib.util
    import os

    missing = [
        m for m in ("torch", "triton", "numpy") if importlib.util.find_spec(m) is None
    ]
    if missing:
        print(install_hint(), file=sys.stderr)
        return 2
    pairs = _pairs(args)
    if isinstance(pairs, str):
        return _fail(pairs)
    work = [(pair, name) for pair in pairs for name in changed_classes(pair)]
    if not work:
        print("no multi-step draft backend class differs: nothing to prove")
        return 0

    import torch

    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    if not cuda:
        os.environ.setdefault("TRITON_INTERPRET", "1")

    from lint_plugin.proof import ReferenceDraftKernel, default_grid
    from lint_plugin.proof.errors import HarnessError
    from lint_plugin.proof.guarded_launch import GuardedDraftKernel
    from lint_plugin.proof.triton_source import (
        interpreting,
        jit_kernel,
        kernel_from_text,
    )
    from lint_plugin.proof.verdict import long_sequence_grid, prove_class, small_grid

    kernel_file = _find_kernel_file(args, [pair.after_path for pair in pairs])
    if kernel_file is None:
        kernel = ReferenceDraftKernel
        kernel_label = "the reference kernel (no upstream kernel found; --kernel)"
    else:
        try:
            text = kernel_file.read_text("utf-8")
            source = kernel_from_text(text, str(kernel_file))
            kernel = GuardedDraftKernel.factory(jit_kernel(source, device))
        except (OSError, HarnessError) as exc:
            return _fail(f"{kernel_file}: {exc}")
        mode = "interpreted" if interpreting() else "compiled"
        kernel_label = f"upstream's kernel from {kernel_file} ({mode}, {device})"
    full = args.full or cuda
    grid = default_grid(seed=20260) + long_sequence_grid() if full else small_grid()
    print(f"kernel: {kernel_label}; {len(grid)} cases per class")

    rows, failures = [], []
    for pair, name in work:
        proof = prove_class(pair.before, pair.after, name, grid, device, kernel=kernel)
        rows.append((f"{pair.label}::{name}", proof))
        if not proof.proven:
            failures.append(f"{pair.label}::{name}: {proof.failure}")
    _print_table(rows)
    for failure in failures:
        print(f"NOT PROVEN {failure}")
    return 1 if failures else 0


def _print_table(rows: list) -> None:
    header = (
        "class",
        "cases",
        "allocations",
        "launches",
        "slices",
        "overruns before/after",
        "verdict",
    )
    table = [header] + [
        (
            label,
            str(p.cases),
            str(p.allocations),
            str(p.launches),
            str(p.slices),
            f"{p.overruns_before}/{p.overruns_after}",
            p.verdict,
        )
        for label, p in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print(
            "  ".join(
                cell.ljust(w) for cell, w in zip(row, widths, strict=True)
            ).rstrip()
        )
