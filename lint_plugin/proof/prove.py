"""``draft-kv-lint prove``: run the numerical proof on the classes a change touched.

For the maintainer who just ran ``fix`` on their branch: every multi-step draft
backend class whose code differs between ``--base REV`` (``git show REV:path``)
and the working tree -- or between two files given as ``OLD NEW`` -- is compiled
alone from both texts (nothing of them is imported), built with a stand-in
model runner and driven through every entry point it has over the proof's grid,
on the index kernel of the tree's own release (found by following the backend's
import; ``--kernel FILE`` names one, ``--reference-kernel`` asks for the torch
reference), compiled on CUDA when there is one, else interpreted on the CPU.

Under each kernel's line, its write extent derived from that same source and
whether the helpers hold it for all sizes (:mod:`lint_plugin.proof.fit.judge`, sympy);
``--kernel FILE`` alone prints only that. The fit is judged in an envelope
(:mod:`lint_plugin.envelope`): by default the context wall SGLang really runs at
(a drafting request's ``seq_len`` up to ``max_context_len - 1``), where upstream's
width helper is overrun; ``--envelope contract`` judges upstream's premise
(``seq_len + num_steps <= max_context_len``) instead. With classes to prove, the
kernel lines say both, and only a refutation under the contract changes the exit
status: overrunning alike at the wall is no difference between the two sides.

Exit 0 when every changed class is proven, 1 when one differs (its first
differing record is printed) or a counterexample refutes a kernel's fit, 3 when
none differs but one cannot be driven or a changed line of it never ran, 2 for
a usage error or when the ``[proof]`` extra is missing. ``--kernel FILE`` alone
exits 0 when the kernel fits for all sizes, 1 on a counterexample, 3 when its
extent is not derived or not proven, in the envelope judged. torch and triton
are imported only here, and only once arguments are read.
"""

from __future__ import annotations

import argparse
import sys

from lint_plugin.records import record

TYPE_CHECKING = False  # not `typing`: imported by every `check` run through the CLI

if TYPE_CHECKING:
    import subprocess
    from pathlib import Path
    from typing import Any, NoReturn

    from lint_plugin.proof.triton_source import KernelSource

# Only argparse-level imports up front: the proof's own modules, torch and triton
# are imported once arguments are read (the parser is ``lint_plugin.cli.prove``).

EXIT_PROVEN, EXIT_DIFFERS, EXIT_USAGE, EXIT_CANNOT_DRIVE = 0, 1, 2, 3
NEEDS = "draft-kv-lint prove needs torch, triton and numpy (the [proof] extra)"


def install_hint() -> str:
    """What to run, the way this copy was installed (lint_plugin.install_origin):
    no registry serves draft-kv-lint, so a bare ``draft-kv-lint[proof]`` is none."""
    from lint_plugin.install_origin import install_command

    command = install_command("proof")
    return f"{NEEDS}: {command}" if command else f"{NEEDS}."


@record(frozen=True)
class Pair:
    label: str
    before: str  # text
    after: str
    before_name: str  # what the old text is compiled as (a path, or REV:path)
    before_path: Path  # where its tree is (the working tree's file for --base)
    after_path: Path


def _fail(message: str) -> NoReturn:
    """A usage error: the CLI prints prove's usage, then the message (exit 2)."""
    from lint_plugin.errors import UsageError

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
        return [
            Pair(
                str(new),
                old.read_text("utf-8"),
                new.read_text("utf-8"),
                str(old),
                old,
                new,
            )
        ]
    for name in args.paths:
        if not Path(name).exists():
            return f"{name}: no such file or directory"
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
        if not name.endswith(".py"):
            continue
        shown = _git(["show", f"{args.base}:{name}"], root)
        # A file new since REV, or deleted: its classes are on one side only.
        before = shown.stdout if not shown.returncode else ""
        text = path.read_text("utf-8") if path.is_file() else ""
        pairs.append(Pair(name, before, text, f"{args.base}:{name}", path, path))
    return pairs


def classes_of(pairs: list[Pair]) -> tuple[list, list]:
    """``(work, unpaired)``: ``(pair, class)`` driven on both sides, and
    ``(pair, class, why)`` on one side only (:func:`.pairing.compared`, each
    pair's texts read once)."""
    from lint_plugin.proof.pairing import compared

    work, unpaired = [], []
    for pair in pairs:
        changed, one_sided = compared(pair.before, pair.after)
        work += [(pair, name) for name, _ in changed]
        unpaired += [(pair, name, why) for name, why in one_sided]
    return work, unpaired


@record
class Side:
    """The kernel one side of a pair runs on, or why there is none."""

    factory: Any = None
    source: Any = None  # KernelSource; None for the reference kernel
    label: str = ""
    problem: str | None = None


def _sides(args: argparse.Namespace, pairs: list[Pair], device: str) -> Any:
    """A function giving each pair's (before, after) kernel sides."""
    from pathlib import Path

    from lint_plugin.proof import ReferenceDraftKernel
    from lint_plugin.proof.errors import HarnessError
    from lint_plugin.proof.guarded_launch import GuardedDraftKernel
    from lint_plugin.proof.kernel import CLASSIC
    from lint_plugin.proof.locate import locate_kernel
    from lint_plugin.proof.triton_source import jit_kernel, kernel_from_text

    cache: dict = {}

    def upstream(source: Any) -> Side:
        try:
            jitted = jit_kernel(source, device)
        except HarnessError as exc:
            return Side(problem=f"{source.path}: {exc}")
        factory = GuardedDraftKernel.factory(jitted, source.digest)
        return Side(factory, source, source.path)

    def located(path: Path, text: str | None = None) -> Side:
        key = (str(path), text)
        if key not in cache:
            try:
                cache[key] = upstream(locate_kernel(path, text))
            except HarnessError as exc:
                cache[key] = Side(problem=str(exc))
        return cache[key]

    def reference(path: Path) -> Side:
        try:
            params = locate_kernel(path).parameters
        except HarnessError:
            params = None
        aliases = {"row_stride": "pool_len"}
        if params is not None and tuple(aliases.get(p, p) for p in params[:13]) != (
            CLASSIC
        ):
            return Side(
                problem=f"the reference kernel does not take this release's "
                f"arguments ({', '.join(params)})"
            )
        return Side(ReferenceDraftKernel, None, "the reference kernel")

    if args.kernel:
        path = Path(args.kernel)
        text = path.read_text("utf-8")
        try:
            source = kernel_from_text(text, str(path), "--kernel")
        except (HarnessError, SyntaxError) as exc:
            raise ValueError(f"{path}: {exc}") from exc
        side = upstream(source)
        return lambda pair: (side, side)
    if args.reference_kernel:
        return lambda pair: (reference(pair.before_path), reference(pair.after_path))
    if args.base is not None:  # one kernel for both sides: the working tree's
        return lambda pair: (located(pair.after_path),) * 2
    return lambda pair: (located(pair.before_path), located(pair.after_path))


def run_prove(args: argparse.Namespace) -> int:
    import importlib.util
    import os
    from pathlib import Path

    if args.kernel and not Path(args.kernel).is_file():
        return _fail(f"{args.kernel}: no such file")
    flat = getattr(args, "kernel_name", None) not in (None, KERNEL_NAME)
    if (flat or args.fact or args.contract) and not (
        args.kernel and args.base is None and not args.paths
    ):
        return _fail("--kernel-name, --fact and --contract need --kernel FILE alone")
    if flat:
        return _flat_kernel_only(Path(args.kernel), args)
    if args.kernel and args.base is None and not args.paths:
        return _kernel_only(Path(args.kernel), args.envelope)
    missing = [
        m for m in ("torch", "triton", "numpy") if importlib.util.find_spec(m) is None
    ]
    if missing:
        print(install_hint(), file=sys.stderr)
        return EXIT_USAGE
    pairs = _pairs(args)
    if isinstance(pairs, str):
        return _fail(pairs)
    work, unpaired = classes_of(pairs)
    if not work and unpaired:
        for pair, name, why in unpaired:
            print(f"{pair.label}::{name}: {why}")
        return EXIT_CANNOT_DRIVE
    if not work:
        print("no multi-step draft backend class differs: nothing to prove")
        if args.kernel:  # the status stays about the rewrite, as with classes
            return _kernel_only(Path(args.kernel), args.envelope, rewrite=True)
        return EXIT_PROVEN

    import torch

    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    if not cuda:
        os.environ.setdefault("TRITON_INTERPRET", "1")

    from lint_plugin.proof.grid import proof_grid, wall_grid
    from lint_plugin.proof.names import ASSUMPTIONS
    from lint_plugin.proof.thresholds import class_grid
    from lint_plugin.proof.triton_source import interpreting
    from lint_plugin.proof.verdict import (
        DIFFERS,
        NO_DIFFERENCE,
        ClassProof,
        prove_class,
    )

    try:
        sides_of = _sides(args, pairs, device)
    except (OSError, ValueError) as exc:
        return _fail(str(exc))
    sides = {pair.label: sides_of(pair) for pair, _ in work}
    kernels = [s.source for pair in sides.values() for s in pair if s.source]
    windows = any("window_size" in k.parameters for k in kernels)
    full = args.full or cuda
    grid = proof_grid(full=full, windows=windows)
    mode = "interpreted" if device == "cpu" and interpreting() else "compiled"
    extents = _Extents(args.envelope)
    for line in _kernel_lines(args, sides, f"{mode}, {device}", extents):
        print(line)
    more = (
        ""
        if full
        else f"; --full for {len(proof_grid(True, windows)) - len(grid)} more"
    )
    print(
        f"grid: {len(grid)} cases per class (page size 1 and > 1, 1-8 sequences, "
        f"max_bs up to 12, topk 1-8, a 32768-token context, "
        f"{len(wall_grid())} at the context wall"
        f"{', draft windows on and off' if windows else ''}{more}), and the "
        "corners each class's code reads: every integer it, its module, its "
        "kernel and the SGLang functions it calls compare a size with, clamp, "
        "divide or round it by, crossed on the axes beside it "
        f"({CORNERS_FULL if full else CORNERS})"
    )
    print("assumptions: " + "; ".join(ASSUMPTIONS))

    rows = []
    for pair, name in work:
        before, after = sides[pair.label]
        problem = before.problem or after.problem
        if problem is not None:
            proof = ClassProof(name, cannot_drive=problem)
        else:
            kernels = [side.source for side in (before, after) if side.source]
            corners = class_grid(
                grid, pair.before, pair.after, name, kernels, windows=windows, full=full
            )
            proof = prove_class(
                pair.before,
                pair.after,
                name,
                corners,
                device,
                kernel=before.factory,
                kernel_after=after.factory,
                graph_entry=args.graph_entry,
                names=(pair.before_name, str(pair.after_path)),
            )
        rows.append((f"{pair.label}::{name}", proof))
    for pair, name, why in unpaired:
        rows.append((f"{pair.label}::{name}", ClassProof(name, cannot_drive=why)))
    _print_table(rows)
    for label, proof in rows:
        _print_details(label, proof)
    for source in extents.refuted:
        print(f"NOT PROVEN {source.path}: the helpers do not hold its writes")
    statuses = {proof.status for _, proof in rows}
    if DIFFERS in statuses or extents.refuted:
        return EXIT_DIFFERS
    return EXIT_PROVEN if statuses == {NO_DIFFERENCE} else EXIT_CANNOT_DRIVE


def _kernel_lines(
    args: argparse.Namespace, sides: dict, mode: str, extents: _Extents
) -> list[str]:
    """One line per kernel the proof runs on (both sides, or each side's), each
    upstream kernel followed by its derived extent the first time it is named."""

    def describe(side: Any) -> str:
        if side.problem is not None:
            return f"none ({side.problem})"
        if side.source is None:
            return "the reference kernel (--reference-kernel; knows no draft window)"
        how = f", {side.source.located_by}" if side.source.located_by else ""
        return f"{side.source.path} (digest {side.source.digest}{how}; {mode})"

    lines = []
    seen = set()
    for label, (before, after) in sides.items():
        one = before is after or (
            before.source is not None
            and after.source is not None
            and before.source.path == after.source.path
        )
        if one or (before.source is None and after.source is None):
            named = [(f"kernel (both sides): {describe(before)}", before)]
        else:
            named = [
                (f"kernel before: {describe(before)}", before),
                (f"kernel after: {describe(after)}", after),
            ]
        if args.base is None and len(sides) > 1:
            named = [(f"{label}: {text}", side) for text, side in named]
        if tuple(text for text, _ in named) in seen:
            continue
        seen.add(tuple(text for text, _ in named))
        for text, side in named:
            lines.append(text)
            if side.source is not None:
                lines += extents.lines(side.source)
    return lines


class _Extents:
    """The extent derived from each distinct kernel (by digest), once."""

    def __init__(self, judged: str) -> None:
        self.judged = judged
        self.shown: set[str] = set()
        self.refuted: list[KernelSource] = []

    def lines(self, source: KernelSource) -> list[str]:
        if source.digest in self.shown:
            return [f"  kernel extent: as above (digest {source.digest})"]
        self.shown.add(source.digest)
        fit, lines = _extent_of(source, self.judged)
        # Both sides overrun alike at the wall: the rewrite's verdict is not
        # about that; a kernel refuted under its own contract is.
        if fit is not None and fit.contract_refuted:
            self.refuted.append(source)
        return ["  " + line for line in lines]


def _extent_of(source: KernelSource, judged: str) -> tuple[Any, list[str]]:
    """The kernel's write extent derived from its source and whether the helpers
    hold it for all sizes (:mod:`lint_plugin.proof.fit.judge`); no fit where it was not
    derived (the grid's overrun check stands)."""
    import importlib.util

    if importlib.util.find_spec("sympy") is None:
        return None, ["kernel extent: not derived (needs sympy: the [proof] extra)"]
    from lint_plugin.proof.fit.extent import DerivationError
    from lint_plugin.proof.fit.judge import describe, prove_kernel

    try:
        fit = prove_kernel(source, judged)
    except DerivationError as exc:
        return None, [f"kernel extent: not derived: {exc}"]
    except Exception as exc:  # a derivation bug must not cost the grid its verdict
        return None, [f"kernel extent: not derived: {type(exc).__name__}: {exc}"]
    return fit, describe(fit)


KERNEL_NAME = "generate_draft_decode_kv_indices"
CORNERS = "those a rewrite changed, then the cheapest within half the grid time more"
CORNERS_FULL = "every crossing, each pair of axes, the longest context with each"


def _kernel_text(path: Path) -> str | int:
    """The kernel file's text, or the exit status of why there is none (the
    proof's extra missing, a file that cannot be read)."""
    import importlib.util

    if any(importlib.util.find_spec(m) is None for m in ("sympy", "numpy")):
        print(install_hint(), file=sys.stderr)
        return EXIT_USAGE
    try:
        return path.read_text("utf-8")
    except OSError as exc:
        return _fail(f"{path}: {exc.strerror or exc}")
    except UnicodeDecodeError:
        return _fail(f"{path}: not UTF-8")


def _flat_kernel_only(path: Path, args) -> int:
    """``prove --kernel FILE --kernel-name NAME``: a flat writer's extent, each
    store proven against its output's stated size or refuted (exit 0 every
    store fits, 1 a counterexample, 3 a store not derived or not proven)."""
    text = _kernel_text(path)
    if isinstance(text, int):
        return text
    from lint_plugin.proof.fit import callers, flat, flat_fit

    try:
        contract = callers.contract_of(args.contract) if args.contract else None
        stated = callers.facts_for(
            args.kernel_name, tuple(args.fact), contract, args.envelope
        )
        facts = flat.parse_facts(stated)
        derivation = flat.derive(text, args.kernel_name, facts, str(path))
        claims = flat_fit.judge(derivation, facts)
    except SyntaxError as exc:
        return _fail(f"{path}: does not parse: {exc.msg}")
    except flat.FlatError as exc:
        return _fail(str(exc))
    except KeyError as exc:
        return _fail(exc.args[0])
    if contract is not None:
        print(
            f"contract {contract.key} ({contract.code}): {contract.buffer}, "
            f"judged at the {args.envelope}"
        )
    for line in flat_fit.describe(derivation, claims, facts):
        print(line)
    statuses = {c.status for c in claims}
    if flat.REFUTED in statuses:
        return EXIT_DIFFERS
    if not claims or statuses != {flat.PROVEN}:
        return EXIT_CANNOT_DRIVE
    return EXIT_PROVEN


def _kernel_only(path: Path, judged: str, rewrite: bool = False) -> int:
    """``prove --kernel FILE`` and no classes: the derived extent alone. With
    ``rewrite`` (a change that touched no class), only a kernel refuted under its
    own contract fails, as in a proof of classes: the wall is reported."""
    text = _kernel_text(path)
    if isinstance(text, int):
        return text
    from lint_plugin.proof.errors import HarnessError
    from lint_plugin.proof.fit.extent import DerivationError
    from lint_plugin.proof.fit.judge import describe, prove_kernel
    from lint_plugin.proof.triton_source import kernel_from_text

    try:
        source = kernel_from_text(text, str(path), "--kernel")
        fit = prove_kernel(source, judged)
    except SyntaxError as exc:
        return _fail(f"{path}: does not parse: {exc.msg}")
    except (HarnessError, DerivationError) as exc:
        hint = " (another kernel of the file: --kernel-name NAME)"
        return _fail(str(exc) + (hint if "no top-level def" in str(exc) else ""))
    for line in describe(fit):
        print(line)
    if rewrite:
        return EXIT_DIFFERS if fit.contract_refuted else EXIT_PROVEN
    if fit.fits:
        return EXIT_PROVEN
    return EXIT_DIFFERS if fit.refuted else EXIT_CANNOT_DRIVE


def _print_table(rows: list) -> None:
    header = (
        "class",
        "cases",
        "allocations",
        "launches",
        "slices",
        "overruns before/after",
        "raised",
        "wall",
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
            str(p.raised),
            f"{p.wall:.1f}s",
            p.headline,
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


def _print_details(label: str, proof: Any) -> None:
    if proof.no_difference:
        print(f"  {label}: {proof.verdict}")
    if proof.failure is not None:
        print(f"NOT PROVEN {label}: {proof.failure}")
    if proof.raised:
        refused = f", {proof.refused} refused by __init__" if proof.refused else ""
        print(
            f"  {label}: {proof.raised} cases raised the same on both sides"
            f"{refused}: {proof.first_raise}"
        )
    for note in proof.notes:
        print(f"  {label}: {note}")
    if proof.unran:
        print(f"NOT PROVEN {label}: changed lines that never ran on the grid:")
        for line in proof.unran:
            print(f"  {line.describe()}")
