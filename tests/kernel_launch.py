"""Run upstream's index kernel (interpreted, CPU) on a recording buffer.

The oracle the derived extent is held to: nothing of :mod:`lint_plugin.proof.fit.extent`
or :mod:`~lint_plugin.proof.fit.judge` is used here. The kernel is cut out of the
release's text and jitted (:mod:`lint_plugin.proof.triton_source`), every argument
is bound by its name (each release's signature takes a subset), and ``kv_indices``
is a row far wider than anything the launch could write, filled with a sentinel:
the largest column that no longer holds it is the largest offset really written.
"""

from __future__ import annotations

import inspect
import random
from dataclasses import dataclass

import torch

from lint_plugin.proof.triton_source import jit_kernel, kernel_from_text

UNWRITTEN = -(2**30)


def next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


@dataclass(frozen=True)
class Launch:
    seq_lens: tuple[int, ...]
    topk: int
    num_steps: int
    page_size: int = 1
    window_size: int = 0
    sink_size: int = 0
    num_blocks: int = 0  # 0: NUM_STEPS=0 (the historical launch); n: n token blocks
    seed: int = 0

    @property
    def num_seqs(self) -> int:
        return len(self.seq_lens)

    @property
    def grid(self) -> tuple[int, int, int]:
        rows = self.num_steps * (self.num_blocks or 1)
        return (rows, self.num_seqs, self.topk)


def written_extents(text: str, filename: str, launch: Launch) -> list[int]:
    """One past the largest offset the kernel writes in each row."""
    kernel = jit_kernel(kernel_from_text(text, filename), "cpu")
    n, k, steps = launch.num_seqs, launch.topk, launch.num_steps
    page = launch.page_size
    gen = torch.Generator().manual_seed(launch.seed)
    # Every read the kernel makes (draft slots of every branch, paged) stays inside.
    pool_len = (
        max(launch.seq_lens) + k * (steps + 2 * page) + 2 * next_power_of_2(steps) + 8
    )
    pool_rows = n + 2
    req_to_token = torch.randperm(pool_rows * pool_len, generator=gen) + 1
    req_to_token = req_to_token.to(torch.int32).reshape(pool_rows, pool_len)
    rows = torch.randperm(pool_rows, generator=gen)[:n]
    lens = torch.tensor(launch.seq_lens, dtype=torch.int64)
    wide = 8 * (k * sum(launch.seq_lens) + n * k * (steps + 2)) + 1024
    kv_indices = torch.full((steps, wide), UNWRITTEN, dtype=torch.int32)
    kv_indptr = torch.zeros((steps, n * k + 1), dtype=torch.int32)
    values = {
        "req_pool_indices": rows,
        "req_to_token": req_to_token,
        "paged_kernel_lens": lens,
        "kv_indices": kv_indices,
        "kv_indptr": kv_indptr,
        "positions": lens.repeat_interleave(k),
        "num_seqs": n,
        "topk": k,
        "pool_len": pool_len,
        "row_stride": pool_len,
        "kv_indices_stride": wide,
        "kv_indptr_stride": n * k + 1,
        "bs_upper": next_power_of_2(n),
        "iter_upper": next_power_of_2(steps),
        "num_tokens_upper": next_power_of_2(n * k),
        "page_size": page,
        "window_size": launch.window_size,
        "sink_size": launch.sink_size,
        "NUM_STEPS": steps if launch.num_blocks else 0,
        "ENTRY_PAGE_SIZE": 1,
        "v2p": None,
        "TRANSLATE": False,
    }
    names = list(inspect.signature(kernel.fn).parameters)
    missing = [name for name in names if name not in values]
    assert not missing, f"the launch does not know {missing}"
    kernel[launch.grid](**{name: values[name] for name in names})
    written = kv_indices != UNWRITTEN
    cols = torch.arange(wide).expand_as(written)
    top = torch.where(written, cols, torch.full_like(cols, -1)).max(dim=1).values
    return [int(v) + 1 for v in top]


def random_launches(
    rng: random.Random, count: int, *, windows: bool, blocks: bool
) -> list[Launch]:
    """Random sizes, every other one with page_size > 1; windows and token
    blocks (0.5.23's NUM_STEPS launch) only where the kernel has them."""
    out = []
    for index in range(count):
        steps = rng.randint(1, 6)
        n = rng.randint(1, 4)
        lens = tuple(rng.choice((1, 2, 5, 17, 130, 300)) for _ in range(n))
        window = sink = 0
        if windows and index % 3:
            window, sink = rng.choice((1, 4, 16, 100)), rng.choice((0, 1, 4))
        out.append(
            Launch(
                seq_lens=lens,
                topk=rng.randint(1, 5),
                num_steps=steps,
                page_size=rng.choice((2, 4, 16)) if index % 2 else 1,
                window_size=window,
                sink_size=sink,
                num_blocks=rng.choice((1, 2, 3)) if blocks and index % 4 >= 2 else 0,
                seed=rng.randrange(2**31),
            )
        )
    return out
