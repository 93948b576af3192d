"""What SGLang's launches of the flat index kernels state, for ``prove --kernel``.

A kernel cannot see what its caller keeps: that ``kv_indptr`` is the prefix sum
of the lengths (``kv_indptr[1 : bs + 1] = torch.cumsum(seq_lens, dim=0)`` at every
launch of ``create_flashinfer_kv_indices_triton``), that ``bs_upper`` covers the
batch (``next_power_of_2(bs)``), how large the output was made. These are the
facts the releases' launch sites keep, stated once per kernel; ``--fact`` adds
to them or replaces them. A sizing contract whose writer is such a kernel
(:mod:`lint_plugin.contracts`) turns into facts too: the lengths each program
writes in the envelope, and the buffer at the contract's least size.
"""

from __future__ import annotations

import re

from lint_plugin import envelope
from lint_plugin.contracts import CONTRACTS, Contract

LAUNCH_FACTS: dict[str, tuple[str, ...]] = {
    "create_flashinfer_kv_indices_triton": (
        "kv_indptr = prefix_sum(page_kernel_lens_ptr)",
        "numel(kv_indices_ptr) = sum(page_kernel_lens_ptr)",
    ),
    "assign_extend_cache_locs": (
        "bs_upper >= programs",
        "end_offset >= start_offset",
        "numel(out_cache_loc) = sum(end_offset) - sum(start_offset)",
    ),
    "assign_draft_cache_locs_contiguous": (
        "numel(out_cache_loc) = programs * topk * speculative_num_steps",
        "numel(positions) = programs * topk",
        "numel(mrope) = 3 * BS * topk",
        "BS = programs",
    ),
}

_NUMEL = re.compile(r"^numel\((\w+)\)")


def contract_of(key: str) -> Contract:
    for contract in CONTRACTS:
        if contract.key == key or contract.code == key.upper():
            return contract
    known = ", ".join(c.key for c in CONTRACTS)
    raise KeyError(f"no sizing contract {key!r} (known: {known})")


def facts_for(
    name: str, given: tuple[str, ...], contract: Contract | None, judged: str
):
    """The facts a run of kernel ``name`` proves against: the launch's own, each
    replaced by a given fact about the same output, and a contract's."""
    stated = list(given)
    if contract is not None:
        stated += contract_facts(contract, judged)
    outputs = {m.group(1) for f in stated if (m := _NUMEL.match(f))}
    launch = [
        f
        for f in LAUNCH_FACTS.get(name, ())
        if not ((m := _NUMEL.match(f)) and m.group(1) in outputs)
    ]
    return tuple(dict.fromkeys([*launch, *stated]))


def contract_facts(contract: Contract, judged: str) -> list[str]:
    """The contract's writer kernel, in the envelope: each program's lengths at
    most what a request writes there (``seq_len`` up to ``max_context_len - 1``
    at the wall; the whole request within ``max_context_len`` under the
    contract), and its buffer of the contract's least size, ``programs``
    requests of context ``max_context_len``."""
    writer = contract.writer
    if writer.kind != "kernel" or not writer.per_request or writer.lengths < 0:
        raise KeyError(f"{contract.key}: its writer is no kernel with known lengths")
    lengths = _argument_name(writer)
    if judged == envelope.WALL:
        bound = writer.per_request.replace("seq_len", "(max_context_len - 1)")
    else:
        bound = "max_context_len"
    size = contract.least.replace("num_seqs", "programs").replace(
        "context", "max_context_len"
    )
    return [f"{lengths} <= {bound}", f"numel({writer.keyword}) = {size}"]


def _argument_name(writer) -> str:
    return writer.lengths_keyword
