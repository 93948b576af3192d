"""Wrong rewrites of the real backends: the proof must never call one "proven".

Each mutant is a one-site change a person could plausibly make to a real class
of 0.5.12.post1, 0.5.13 or 0.5.23 (or to ``fix --unsafe-fixes``' output of
0.5.12.post1), grouped by where the old proof was blind:

- *undriven code*: ``__init__`` (indptr rows, last-page lengths, q_indptr),
  values written through ``global``, 0.5.13's ``out_graph``/``in_graph``, the
  ``seq_lens_sum is None`` branch, 0.5.23's window rail (which the harness does
  not drive: the proof must refuse, naming the line);
- *grid corners*: the kernel's page size forced to 1, a bound that only bites
  past 4 sequences or past a max_bs of 8, a window and sink swapped, 0.5.23's
  token-block launch at a 32768-token context;
- *widened elsewhere*: an eager buffer or a splits buffer made topk wider, the
  KVI003 site widened twice, a graph-only argument changed where the original
  overran (whose slices and calls the old proof did not compare);
- and what the proof already caught (slices, used lengths, dtype, device,
  allocator), so it stays caught.

Every one runs on its release's own kernel over ``prove``'s default grid and
must come out DIFFERS, or not proven with the never-run line named.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from corpus import LATEST, NEW, OLD, attention_dir
from harness import rewrite_in_class

from lint_plugin.fix.rewrite import Options, rewrite_text
from lint_plugin.proof.grid import proof_grid
from lint_plugin.proof.guarded_launch import GuardedDraftKernel
from lint_plugin.proof.locate import locate_kernel
from lint_plugin.proof.triton_source import jit_kernel
from lint_plugin.proof.verdict import DIFFERS, NOT_COVERED, prove_class

# One xdist worker runs prove's grid on real classes (see test_releases.PROVE_GRID).
pytestmark = [pytest.mark.corpus, pytest.mark.xdist_group("prove-grid")]
CLASSES = {
    "flashinfer": ("flashinfer_backend.py", "FlashInferMultiStepDraftBackend"),
    "mla": ("flashinfer_mla_backend.py", "FlashInferMLAMultiStepDraftBackend"),
    "triton": ("triton_backend.py", "TritonMultiStepDraftBackend"),
    "aiter": ("aiter_backend.py", "AiterMultiStepDraftBackend"),
}


@dataclass(frozen=True)
class Mutant:
    kind: str  # "undriven", "corner", "widened" or "caught"
    version: str
    backend: str
    old: str
    new: str
    base: str = "original"  # or "unsafe": fix --unsafe-fixes' output
    expect: str = DIFFERS


UNSAFE = "unsafe"
WIDTH = "draft_kv_indices_buffer_width(max_bs, self.topk, self.max_context_len)"
MUTANTS = {
    # --- undriven code -------------------------------------------------------
    "init kv_indptr rows": Mutant(
        "undriven", OLD, "flashinfer", "max_bs + 1,", "max_bs,"
    ),
    "init kv_last_page_len": Mutant(
        "undriven", OLD, "flashinfer", "(max_bs,), dtype", "(max_bs + 1,), dtype"
    ),
    "init kv_indptr rows 0.5.13": Mutant(
        "undriven", NEW, "triton", "max_bs + 1,", "max_bs,"
    ),
    "init q_indptr_decode": Mutant(
        "undriven", NEW, "mla", "0, max_bs + 1, dtype", "0, max_bs, dtype"
    ),
    "global written per step": Mutant(
        "undriven",
        OLD,
        "flashinfer",
        "global_override_indptr_cpu = indptr_cpu_whole[i]",
        "global_override_indptr_cpu = indptr_cpu_whole[0]",
    ),
    "global not reset": Mutant(
        "undriven",
        NEW,
        "flashinfer",
        "        global_override_indptr_cpu = None\n",
        "",
    ),
    "global not restored 0.5.23": Mutant(
        "undriven",
        LATEST,
        "flashinfer",
        "global_override_indptr_cpu = previous_override",
        "global_override_indptr_cpu = indptr_cpu_whole[0]",
    ),
    "out_graph forward mode": Mutant(
        "undriven",
        NEW,
        "flashinfer",
        "inner_fb = build_inner_fb_view(fb, bs=bs, forward_mode=ForwardMode.DECODE)",
        "inner_fb = build_inner_fb_view(fb, bs=bs, forward_mode=ForwardMode.EXTEND)",
    ),
    "out_graph batch size": Mutant(
        "undriven",
        NEW,
        "aiter",
        "bs=forward_batch.batch_size,",
        "bs=forward_batch.batch_size * self.topk,",
    ),
    "out_graph replay splits": Mutant(
        "undriven", NEW, "triton", "num_token = bs * self.topk", "num_token = bs"
    ),
    "in_graph skips a step": Mutant(
        "undriven",
        NEW,
        "triton",
        "for attn_backend in self.attn_backends:",
        "for attn_backend in self.attn_backends[:-1]:",
    ),
    "seq_lens_sum is None": Mutant(
        "undriven",
        NEW,
        "triton",
        "seq_lens_sum = num_seqs * self.max_context_len",
        "seq_lens_sum = num_seqs",
    ),
    "window rail (not driven)": Mutant(
        "undriven",
        LATEST,
        "triton",
        "width = bs * self.sliding_window_size\n",
        "width = bs * self.sliding_window_size + 1\n",
        expect=NOT_COVERED,
    ),
    # --- grid corners --------------------------------------------------------
    "page size forced to 1": Mutant(
        "corner", OLD, "flashinfer", "self.page_size,\n        )", "1,\n        )"
    ),
    "bs_upper capped at 4 sequences": Mutant(
        "corner",
        OLD,
        "triton",
        "next_power_of_2(num_seqs),",
        "min(next_power_of_2(num_seqs), 4),",
    ),
    "graph row capped at max_bs 8": Mutant(
        "corner",
        OLD,
        "flashinfer",
        WIDTH,
        WIDTH.replace("(max_bs,", "(min(max_bs, 8),"),
        base=UNSAFE,
    ),
    "window and sink swapped": Mutant(
        "corner",
        LATEST,
        "flashinfer",
        "self.draft_window_size,\n            self.draft_sink_size,\n",
        "self.draft_sink_size,\n            self.draft_window_size,\n",
    ),
    "token blocks without NUM_STEPS": Mutant(
        "corner",
        LATEST,
        "aiter",
        "NUM_STEPS=self.speculative_num_steps if num_token_blocks > 1 else 0,",
        "NUM_STEPS=0,",
    ),
    # --- widened elsewhere ---------------------------------------------------
    "eager buffer widened again": Mutant(
        "widened",
        OLD,
        "flashinfer",
        "forward_batch.batch_size, self.topk, self.max_context_len",
        "forward_batch.batch_size * self.topk, self.topk, self.max_context_len",
        base=UNSAFE,
    ),
    "splits buffer times topk": Mutant(
        "widened",
        OLD,
        "triton",
        "(max_num_tokens,),",
        "(max_num_tokens * self.topk,),",
        base=UNSAFE,
    ),
    "graph row widened twice": Mutant(
        "widened",
        OLD,
        "flashinfer",
        WIDTH,
        WIDTH.replace("(max_bs,", "(max_bs * self.topk,"),
        base=UNSAFE,
    ),
    "capture tokens where it overran": Mutant(
        "widened",
        OLD,
        "flashinfer",
        "                forward_batch.batch_size * self.topk,\n",
        "                forward_batch.batch_size,\n",
        base=UNSAFE,
    ),
    "replay seq_lens_sum where it overran": Mutant(
        "widened", OLD, "flashinfer", "seq_lens_sum=-1,", "seq_lens_sum=0,", base=UNSAFE
    ),
    # --- already caught, must stay so ----------------------------------------
    "used length": Mutant(
        "caught",
        NEW,
        "aiter",
        "draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)",
        "draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 2)",
    ),
    "slice": Mutant("caught", OLD, "triton", "bs * (i + 1)", "bs * (i + 2)"),
    "dtype": Mutant(
        "caught",
        NEW,
        "mla",
        'dtype=torch.int32,\n            device="cuda",\n        )\n\n        for',
        'dtype=torch.int64,\n            device="cuda",\n        )\n\n        for',
    ),
    "device": Mutant(
        "caught",
        OLD,
        "flashinfer",
        'device="cuda",\n        )\n\n        def',
        'device="cpu",\n        )\n\n        def',
    ),
    "allocator": Mutant(
        "caught", OLD, "aiter", "kv_indices = torch.empty(", "kv_indices = torch.zeros("
    ),
}
_KERNELS: dict[str, object] = {}


def _kernel(path):
    source = locate_kernel(path)
    if source.digest not in _KERNELS:
        jitted = jit_kernel(source, "cpu")
        _KERNELS[source.digest] = GuardedDraftKernel.factory(jitted, source.digest)
    return source, _KERNELS[source.digest]


@pytest.mark.parametrize("mutant_id", list(MUTANTS))
def test_wrong_rewrite_is_never_proven(mutant_id):
    mutant = MUTANTS[mutant_id]
    filename, name = CLASSES[mutant.backend]
    path = attention_dir(mutant.version) / filename
    original = path.read_text()
    base = original
    if mutant.base == UNSAFE:
        base = rewrite_text(original, "backend.py", Options(unsafe_fixes=True)).text
    wrong = rewrite_in_class(base, ((mutant.old, mutant.new),), class_name=name)
    assert wrong != base
    source, kernel = _kernel(path)
    grid = proof_grid(windows="window_size" in source.parameters)
    proof = prove_class(
        original, wrong, name, grid, kernel=kernel, names=(str(path), "wrong.py")
    )
    print(f"\n[{mutant.kind}] {mutant_id} ({mutant.version} {name}): {proof.verdict}")
    print(f"  {proof.failure or ''}")
    for line in proof.unran:
        print(f"  never ran: {line.describe()}")
    assert proof.status == mutant.expect, (proof.verdict, proof.failure)
    if mutant.expect == NOT_COVERED:
        # The refusal names the changed line, on the side it is in.
        new_line = mutant.new.strip()
        assert any(u.text.strip() == new_line for u in proof.unran), proof.unran
