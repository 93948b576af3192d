"""``prove --kernel FILE --kernel-name NAME`` on 0.5.23's flat index kernels.

The derivation (``lint_plugin/proof/fit/flat.py``) learns each kernel's pointers,
outputs, per-program loads, prefix sums and loops from its source, and proves
each store within the size SGLang's launches give its output
(``lint_plugin/proof/fit/callers.py``). The judge of every verdict here is
upstream's own kernel run in Triton's interpreter on CPU tensors, each output
followed by a guard zone: a kernel *proven* never touches the guard on a set of
launches, a planted edit *refuted* touches it on one of them. The kernels are
cut out of the pinned 0.5.23 wheel (never importing sglang); a planted edit is
one textual change of that source.
"""

from __future__ import annotations

import ast
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from corpus import LATEST, tree

from lint_plugin.proof.fit import callers, flat, flat_fit

pytestmark = pytest.mark.corpus
ROOT = Path(__file__).resolve().parents[2]
KV_INDICES = "sglang/kernels/ops/attention/kv_indices.py"
CACHE_LOCS = "sglang/kernels/ops/speculative/cache_locs.py"
GUARD = 64  # entries after each output; a write there is past its stated size
POISON = -7


def source(relative: str) -> str:
    return (tree(LATEST, whole=True) / relative).read_text()


# name, file, planted edits that write past the stated size, one that writes less
KERNELS = {
    "create_flashinfer_kv_indices_triton": (
        KV_INDICES,
        (
            ("mask = offset < kv_end - kv_start", "mask = offset <= kv_end - kv_start"),
            (
                "tl.store(kv_indices_ptr + kv_indices_offset + offset,",
                "tl.store(kv_indices_ptr + kv_indices_offset + offset + 1,",
            ),
        ),
        ("mask = offset < kv_end - kv_start", "mask = offset < kv_end - kv_start - 1"),
    ),
    "assign_extend_cache_locs": (
        CACHE_LOCS,
        (
            ("mask = load_offset < kv_end", "mask = load_offset <= kv_end"),
            (
                "out_offset = tl.sum(end - start, axis=0)",
                "out_offset = tl.sum(end - start, axis=0) + 1",
            ),
        ),
        ("mask = load_offset < kv_end", "mask = load_offset < kv_end - 1"),
    ),
    "assign_draft_cache_locs_contiguous": (
        CACHE_LOCS,
        (
            ("mask = copy_offset < copy_len", "mask = copy_offset <= copy_len"),
            (
                "out_cache_ptr = out_cache_loc + pid * topk * speculative_num_steps",
                "out_cache_ptr = out_cache_loc + pid * topk * speculative_num_steps + 1",
            ),
        ),
        ("mask = copy_offset < copy_len", "mask = copy_offset < copy_len - 1"),
    ),
}


def planted(text: str, name: str, edit: tuple[str, str]) -> str:
    """``text`` with ``edit`` made once inside ``name``'s def (a test fails if
    the edit's text is not there: the release moved on)."""
    tree_ = ast.parse(text)
    node = next(n for n in tree_.body if getattr(n, "name", None) == name)
    lines = text.splitlines(keepends=True)
    body = "".join(lines[node.lineno - 1 : node.end_lineno])
    assert body.count(edit[0]) == 1, edit[0]
    lines[node.lineno - 1 : node.end_lineno] = [body.replace(edit[0], edit[1])]
    return "".join(lines)


def verdicts(text: str, name: str) -> set[str]:
    facts = flat.parse_facts(callers.facts_for(name, (), None, "wall"))
    derivation = flat.derive(text, name, facts)
    return {c.status for c in flat_fit.judge(derivation, facts)}


# -- the interpreter oracle ------------------------------------------------------


def jitted(text: str, name: str):
    """The kernel's def alone, compiled with triton's names, jitted (the tests
    run triton's interpreter: conftest sets TRITON_INTERPRET=1 first)."""
    import triton
    import triton.language as tl

    node = next(n for n in ast.parse(text).body if getattr(n, "name", None) == name)
    node.decorator_list = []
    module = ast.Module([node], [])
    namespace = {"triton": triton, "tl": tl}
    exec(compile(module, f"<{name}>", "exec"), namespace)
    return triton.jit(namespace[name])


def _guarded(size: int) -> torch.Tensor:
    return torch.full((size + GUARD,), POISON, dtype=torch.int64)


def _past(buffer: torch.Tensor, size: int) -> bool:
    return bool((buffer[size:] != POISON).any())


def launches(name: str, rng: random.Random, count: int):
    """``count`` launches as SGLang makes them: ``(grid, args, kwargs, outputs)``,
    each output ``(tensor, stated size)``."""
    for _ in range(count):
        bs = rng.randint(1, 3)
        pool = torch.arange(4 * 64, dtype=torch.int64).reshape(4, 64)
        rows = torch.tensor(rng.sample(range(4), bs), dtype=torch.int64)
        if name == "create_flashinfer_kv_indices_triton":
            lens = torch.tensor(
                [rng.randint(0, 5) for _ in range(bs)], dtype=torch.int32
            )
            indptr = torch.zeros(bs + 1, dtype=torch.int32)
            indptr[1:] = torch.cumsum(lens, 0)
            out = _guarded(int(lens.sum()))
            yield (
                (bs,),
                (pool, rows, lens, indptr, None, out, pool.stride(0)),
                {},
                [(out, int(lens.sum()))],
            )
        elif name == "assign_extend_cache_locs":
            start = torch.tensor(
                [rng.randint(0, 3) for _ in range(bs)], dtype=torch.int64
            )
            end = start + torch.tensor([rng.randint(0, 4) for _ in range(bs)])
            out = _guarded(int((end - start).sum()))
            yield (
                (bs,),
                (rows, pool, start, end, out, 64, 4),
                {},
                [(out, int((end - start).sum()))],
            )
        else:
            topk, steps = rng.randint(1, 3), rng.randint(1, 3)
            seq_lens = torch.tensor([rng.randint(0, 8) for _ in range(bs)])
            out = _guarded(bs * topk * steps)
            yield (
                (bs,),
                (rows, pool, seq_lens, out, 64, topk, steps),
                {},
                [(out, bs * topk * steps)],
            )


def writes_past(text: str, name: str, count: int = 12) -> bool:
    """Does the kernel write past a stated size on one of ``count`` launches?"""
    kernel = jitted(text, name)
    rng = random.Random(name)
    for grid, args, kwargs, outputs in launches(name, rng, count):
        kernel[grid](*args, **kwargs)
        if any(_past(t, size) for t, size in outputs):
            return True
    return False


# -- the tests --------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_release_kernel_is_derived_and_proven(name: str) -> None:
    text = source(KERNELS[name][0])
    assert verdicts(text, name) == {flat_fit.PROVEN}
    assert not writes_past(text, name)


@pytest.mark.parametrize(
    ("name", "edit"),
    [(n, e) for n, (_, edits, _) in sorted(KERNELS.items()) for e in edits],
    ids=lambda v: v if isinstance(v, str) else v[1][:40],
)
def test_a_planted_overrun_is_refuted_and_real(name: str, edit) -> None:
    text = planted(source(KERNELS[name][0]), name, edit)
    assert flat_fit.REFUTED in verdicts(text, name)
    assert writes_past(text, name)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_a_planted_shorter_write_stays_proven(name: str) -> None:
    text = planted(source(KERNELS[name][0]), name, KERNELS[name][2])
    assert verdicts(text, name) == {flat_fit.PROVEN}
    assert not writes_past(text, name)


# An outside review's edits that really write out of bounds (each shown in the
# interpreter then): a verdict of "proven" on any is unsound. Loop-carried
# values, a `!=` mask, a narrowing cast, an atomic write, keyword arguments.
NEVER_PROVEN = [
    (
        "assign_extend_cache_locs",
        (
            "        tl.store(out_cache_ptr + save_offset, data, mask=mask)\n"
            "        load_offset += BLOCK_SIZE\n"
            "        save_offset += BLOCK_SIZE",
            "        save_offset += BLOCK_SIZE\n"
            "        tl.store(out_cache_ptr + save_offset, data, mask=mask)\n"
            "        load_offset += BLOCK_SIZE",
        ),
    ),
    (
        "assign_extend_cache_locs",
        (
            "        save_offset += BLOCK_SIZE",
            "        save_offset = save_offset + 2 * BLOCK_SIZE",
        ),
    ),
    (
        "assign_extend_cache_locs",
        ("        save_offset += BLOCK_SIZE", "        save_offset -= BLOCK_SIZE"),
    ),
    (
        "create_flashinfer_kv_indices_triton",
        (
            "kv_indices_offset + offset, data, mask=mask)",
            "kv_indices_offset + offset, data, mask=kv_end - kv_start - 1 != offset)",
        ),
    ),
    (
        "create_flashinfer_kv_indices_triton",
        (
            "offset = tl.arange(0, BLOCK_SIZE).to(tl.int64) + i * BLOCK_SIZE",
            "offset = tl.arange(0, BLOCK_SIZE).to(tl.int8) + i * BLOCK_SIZE",
        ),
    ),
    (
        "create_flashinfer_kv_indices_triton",
        (
            "offset = tl.arange(0, BLOCK_SIZE).to(tl.int64) + i * BLOCK_SIZE",
            "offset = tl.arange(0, end=BLOCK_SIZE).to(tl.int64) + i * BLOCK_SIZE + 1",
        ),
    ),
    (
        "assign_draft_cache_locs_contiguous",
        (
            "tl.store(out_cache_ptr + copy_offset, data, mask=mask)",
            "tl.atomic_xchg(out_cache_ptr + copy_offset + 1, data, mask=mask)",
        ),
    ),
    (
        "assign_draft_cache_locs_contiguous",
        ("for axis in tl.static_range(3):", "for axis in tl.static_range(1, 4):"),
    ),
]


@pytest.mark.parametrize(("name", "edit"), NEVER_PROVEN, ids=lambda v: str(v)[:40])
def test_an_overrun_not_read_exactly_is_never_proven(name: str, edit) -> None:
    text = planted(source(KERNELS[name][0]), name, edit)
    assert verdicts(text, name) != {flat_fit.PROVEN}  # exit 0 only when all are


def test_a_mask_on_data_narrows_and_a_lower_bound_is_read() -> None:
    """A store masked also by what memory holds, or from below, writes within
    the run: proven, as the interpreter shows (no false refutation)."""
    name = "create_flashinfer_kv_indices_triton"
    text = planted(
        source(KV_INDICES),
        name,
        (
            "kv_indices_offset + offset, data, mask=mask)",
            "kv_indices_offset + offset, data, mask=mask & (data >= 0))",
        ),
    )
    assert verdicts(text, name) == {flat_fit.PROVEN}
    name = "assign_extend_cache_locs"
    text = planted(
        source(CACHE_LOCS),
        name,
        (
            "tl.store(out_cache_ptr + save_offset, data, mask=mask)",
            "tl.store(out_cache_ptr + save_offset - 1, data, "
            "mask=(save_offset >= 1) & mask)",
        ),
    )
    assert verdicts(text, name) == {flat_fit.PROVEN}
    assert not writes_past(text, name)


def test_what_the_derivation_learned_from_the_source() -> None:
    facts = flat.parse_facts(
        callers.facts_for("create_flashinfer_kv_indices_triton", (), None, "wall")
    )
    derivation = flat.derive(
        source(KV_INDICES), "create_flashinfer_kv_indices_triton", facts
    )
    assert derivation.outputs == ("kv_indices_ptr",)
    assert "req_to_token_ptr_stride" not in derivation.pointers
    assert {"kv_indptr", "page_kernel_lens_ptr", "kv_start_idx"} <= set(
        derivation.pointers
    )
    lines = flat_fit.describe(derivation, flat_fit.judge(derivation, facts), facts)
    assert (
        "program b writes [sum(page_kernel_lens_ptr[:b]), "
        "page_kernel_lens_ptr[b] + sum(page_kernel_lens_ptr[:b]))"
    ) in "\n".join(lines)
    assert "needs numel(kv_indices_ptr) >= sum(page_kernel_lens_ptr)" in "\n".join(
        lines
    )
    # What "proven" is measured against is printed with it.
    assert any(
        line.startswith("  assumes: every value a program loads") for line in lines
    )


@pytest.mark.parametrize(
    ("judged", "numel", "status"),
    [
        ("wall", None, 0),  # the contract's own least size
        ("contract", None, 0),
        ("wall", "programs * max_context_len", 1),  # #27485's size
    ],
)
def test_the_target_verify_contract_against_the_kernel(judged, numel, status) -> None:
    """KVI009's writer: its lengths in the envelope, the buffer at the
    contract's least size (or at the size AITER used before 0.5.13)."""
    path = tree(LATEST, whole=True) / KV_INDICES
    command = [
        sys.executable,
        "-m",
        "lint_plugin.cli",
        "prove",
        "--kernel",
        str(path),
        "--kernel-name",
        "create_flashinfer_kv_indices_triton",
        "--envelope",
        judged,
    ]
    if numel is None:
        command += ["--contract", "KVI009"]
    else:
        command += [
            "--fact",
            "page_kernel_lens_ptr <= max_context_len - 1 + num_draft_tokens",
            "--fact",
            f"numel(kv_indices_ptr) = {numel}",
        ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == status, done.stdout + done.stderr
    assert ("refuted" in done.stdout) == (status == 1), done.stdout


@pytest.mark.parametrize(
    "fact", ["numel(x) = ", "x = prefix_sum()", "what", "numel(out) = a / b"]
)
def test_a_fact_of_no_known_form_is_a_usage_error(fact) -> None:
    with pytest.raises(flat.FlatError):
        flat.parse_facts([fact])


def test_every_path_of_a_kernel_is_counted() -> None:
    """8 paths of create_flashinfer: kv_start_idx, token_mapping and the token
    blocks each either way, the page-granular branch split by its test."""
    facts = flat.parse_facts(
        callers.facts_for("create_flashinfer_kv_indices_triton", (), None, "wall")
    )
    derivation = flat.derive(
        source(KV_INDICES), "create_flashinfer_kv_indices_triton", facts
    )
    claims = flat_fit.judge(derivation, facts)
    assert len(derivation.stores) == len(claims) == 16
    assert len({(str(c.extent.lo), str(c.extent.hi)) for c in claims}) == 1
