"""``draft-kv-lint prove``: its arguments; the proof itself is
:mod:`lint_plugin.proof.prove`, imported only when the command runs."""

from __future__ import annotations

import argparse


def add_prove_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "prove",
        help="prove a rewrite changed no number (runs the classes' code; needs "
        "the [proof] extra)",
        description=(
            "prove RUNS the code it proves: each changed class is compiled from "
            "its file and executed in this process, driven with stand-ins, and "
            "the index kernel its tree defines is run by triton (unless "
            "--reference-kernel); --kernel FILE alone reads the kernel without "
            "running it. check, fix and the flake8 plugin never import, run or "
            "eval analysed code. Run prove only on code you would run yourself: "
            "never in a CI job on a pull request from a fork, whose code it would "
            "run with the job's token; check is the gate there. "
            "Run the differential harness on every *MultiStepDraftBackend class "
            "that differs between --base REV and the working tree (or between two "
            "files OLD NEW), on a fixed grid and the corners its own code holds "
            "(every integer it compares a size with, clamps, divides or rounds "
            "it by, crossed). Exit 0 when every changed class shows no "
            "difference on its cases (the verdict says their bounds and what "
            "the harness assumed), 1 when one "
            "differs, 3 when one cannot be driven (or a changed line never ran), "
            "2 on usage errors or without the [proof] extra. With --kernel FILE "
            "alone: the kernel's write extent and its fit, judged at the context "
            "wall unless --envelope contract (exit 0 fits, 1 a counterexample, 3 "
            "not derived or not proven)."
        ),
    )
    parser.add_argument("paths", nargs="*", metavar="PATH")
    parser.add_argument(
        "--base", metavar="REV", help="git revision to compare the working tree with"
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help="the full grid (every threshold of the code crossed on every axis "
        "it reaches, each pair of axes at once, every num_seqs <= 4, topk, steps, "
        "and more seeded cases over every axis; default on CUDA)",
    )
    kernels = parser.add_mutually_exclusive_group()
    kernels.add_argument(
        "--kernel",
        metavar="FILE",
        help="file defining generate_draft_decode_kv_indices, used for both sides "
        "(default: the one each backend imports, in its own tree); given alone, "
        "print the write extent derived from it and whether the helpers hold it",
    )
    parser.add_argument(
        "--kernel-name",
        metavar="NAME",
        help="with --kernel FILE alone: the @triton.jit kernel of FILE to derive "
        "(default: generate_draft_decode_kv_indices). Any other kernel is read "
        "as a flat writer: its pointers, outputs, per-program loads, prefix sums "
        "and loops are learned from its source, and each store's extent is "
        "proven against the output sizes its callers state (SGLang's launches "
        "of create_flashinfer_kv_indices_triton, assign_extend_cache_locs and "
        "assign_draft_cache_locs_contiguous are known; --fact adds)",
    )
    parser.add_argument(
        "--fact",
        action="append",
        default=[],
        metavar="TEXT",
        help="a caller's fact for --kernel-name: 'x = prefix_sum(lens)', "
        "'numel(out) = programs * topk', 'end >= start', 'lens <= EXPR', "
        "'n >= programs' (a lane count covering the batch), 'FLAG=False', "
        "'ptr=None' or 'ptr=given'; repeatable",
    )
    parser.add_argument(
        "--contract",
        metavar="KEY",
        help="with --kernel-name: judge the kernel as the writer of a sizing "
        "contract (target-verify-kv-indices, or its code KVI009): each "
        "program's lengths as a request writes them in --envelope, the buffer "
        "at the contract's least size",
    )
    kernels.add_argument(
        "--reference-kernel",
        action="store_true",
        help="use the bundled torch reference of the kernel (knows no draft "
        "window) instead of upstream's",
    )
    parser.add_argument(
        "--envelope",
        # lint_plugin.envelope's names, spelt here: every check builds this parser.
        choices=("wall", "contract"),
        default="wall",
        help="the sizes the kernel's fit is judged in: wall (default), SGLang's "
        "own envelope, where a drafting request's seq_len reaches max_context_len "
        "- 1 (max_req_len = context_len - 1); contract, upstream's premise that "
        "every seq_len + num_steps <= max_context_len. With classes to prove, "
        "the exit status is about the rewrite either way",
    )
    parser.add_argument(
        "--graph-entry",
        choices=("auto", "common_template"),
        default="auto",
        help="how the CUDA-graph capture is driven: each class's own entry "
        "points, mapped across 0.5.13's renames (auto), or common_template "
        "directly for both sides, replay skipped",
    )
    parser.set_defaults(handler=run_prove)


def run_prove(args: argparse.Namespace) -> int:
    # The proof's code is read only when it runs: every `check` builds this parser.
    from lint_plugin.proof.prove import run_prove as run

    return run(args)
