"""The configurations a draft backend is driven on.

A case is one draft-decode iteration (:class:`Params`). The grids reach the
corners the backends and the kernel branch on: page size 1 and > 1 (the
kernel's paged extension), 1 to 8 sequences (``bs_upper`` crosses powers of
two), CUDA-graph ``max_bs`` below, at and past those thresholds, topk 1 to 8,
2 to 5 steps, a draft window on and off (0.5.23), and a context of 32768 tokens
or more (where 0.5.23 splits the launch into token blocks). One sequence of
each case sits at the design's length limit (``max_context_len - steps``), but
in the wall cases, where one sits at SGLang's own (``max_context_len - 1``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import HarnessError

LONG_CONTEXT = 32768  # 0.5.23's SPEC_KV_INDEX_BLOCKS_MIN_CONTEXT


@dataclass(frozen=True)
class Params:
    """One configuration of a draft-decode iteration.

    ``cuda_graph_max_bs`` is the batch size the cuda graph is captured for
    (``init_cuda_graph_state(max_bs, ...)``); the capture itself runs this batch.
    ``window_size``/``sink_size`` are the draft window (0.5.23's
    ``--speculative-draft-window-size``; 0 is off).
    """

    num_seqs: int
    topk: int
    speculative_num_steps: int
    seq_lens: tuple[int, ...]
    max_context_len: int
    page_size: int = 1
    cuda_graph_max_bs: int | None = None
    seed: int = 0
    window_size: int = 0
    sink_size: int = 0
    # ``get_cuda_graph_max_batch_size`` rounds max_bs up to it (0.5.23; > 1
    # with two-batch overlap or a gathered buffer).
    graph_alignment: int = 1
    # SGLang's envelope (lint_plugin.envelope): a request at max_context_len - 1,
    # where the helpers' own premise no longer holds and the kernel overruns.
    at_wall: bool = False

    def __post_init__(self) -> None:
        if len(self.seq_lens) != self.num_seqs:
            raise HarnessError(f"{self}: need one seq_len per sequence")
        if self.speculative_num_steps < 2:
            raise HarnessError("speculative_num_steps < 2 leaves no draft backend")
        if min(self.seq_lens) < 1:
            raise HarnessError(f"{self}: a draft sequence has at least one token")
        longest = max(self.seq_lens) + self.speculative_num_steps
        if self.at_wall and max(self.seq_lens) != self.max_context_len - 1:
            raise HarnessError(f"{self}: at the wall, a seq_len is max_context_len - 1")
        if longest > self.max_context_len and not self.at_wall:
            # The design's safety condition; past it even a correct buffer overflows.
            raise HarnessError(f"{self}: seq_len + num_steps > max_context_len")
        if self.max_bs < self.num_seqs:
            raise HarnessError(f"{self}: cuda_graph_max_bs < num_seqs")
        if (
            self.page_size < 1
            or self.window_size < 0
            or self.sink_size < 0
            or self.graph_alignment < 1
        ):
            raise HarnessError(f"{self}: page, window and sink sizes are >= 0")

    @property
    def max_bs(self) -> int:
        return self.cuda_graph_max_bs or self.num_seqs

    @property
    def max_num_tokens(self) -> int:
        return self.max_bs * self.topk

    @property
    def pool_size(self) -> int:
        """Rows of req_to_token (the request pool); a few more than ever used."""
        return self.max_bs + 2

    @property
    def pool_len(self) -> int:
        """Width of req_to_token: room for every branch's draft slots, whole pages
        of them when paged (each branch starts its drafts on pages of its own)."""
        page = self.page_size
        pages = (2 * page - 2 + self.speculative_num_steps) // page
        return self.max_context_len + self.topk * pages * page

    def describe(self) -> str:
        extra = f" page_size={self.page_size}" if self.page_size != 1 else ""
        if self.window_size:
            extra += f" window={self.window_size} sink={self.sink_size}"
        if self.graph_alignment != 1:
            extra += f" graph_alignment={self.graph_alignment}"
        if self.at_wall:
            extra += " at the context wall"
        return (
            f"num_seqs={self.num_seqs} topk={self.topk} "
            f"steps={self.speculative_num_steps} seq_lens={list(self.seq_lens)} "
            f"max_context_len={self.max_context_len} max_bs={self.max_bs}{extra}"
        )


def default_grid(
    seed: int = 0,
    num_seqs: Iterable[int] = range(1, 5),
    topk: Iterable[int] = range(1, 9),
    steps: Iterable[int] = range(2, 6),
    max_context_len: tuple[int, int] = (8, 40),
) -> list[Params]:
    """Every (num_seqs, topk, steps) with seeded random lengths.

    One sequence per case sits exactly at the limit ``max_context_len - steps``
    (the longest the design allows), the rest are random below it; the
    cuda-graph max_bs is num_seqs or one more, so captures below max_bs occur.
    """
    rng = random.Random(seed)
    grid = []
    for n in num_seqs:
        for k in topk:
            for s in steps:
                ctx = rng.randint(max(max_context_len[0], s + 1), max_context_len[1])
                grid.append(
                    _seeded(
                        rng, n, k, s, ctx,
                        lambda n=n: {"cuda_graph_max_bs": n + rng.randint(0, 1)},
                    )
                )  # fmt: skip
    return grid


def _seeded(
    rng: random.Random,
    n: int,
    k: int,
    s: int,
    ctx: int,
    draw: Callable[[], dict[str, Any]],
) -> Params:
    """A case of random lengths, one of them at the limit ``ctx - s``, then the
    other fields ``draw`` takes from the rng, then its seed (in this order, so
    a seed keeps giving the cases it always gave)."""
    longest = ctx - s
    lens = [rng.randint(1, longest) for _ in range(n)]
    lens[rng.randrange(n)] = longest
    fields = draw()
    return Params(n, k, s, tuple(lens), ctx, seed=rng.randrange(2**31), **fields)


def long_sequence_grid(
    topks: Sequence[int] = (2, 4),
    ctx: int = 24,
    batches: Sequence[int] = (1, 2),
    steps_list: Sequence[int] = (2, 3),
) -> list[Params]:
    """Full cuda-graph batches at the design's length limit: an unsized buffer is
    overrun here for every topk > 1 (the shorter random grid may not reach it)."""
    return [
        Params(
            num_seqs=n,
            topk=topk,
            speculative_num_steps=steps,
            seq_lens=tuple([ctx - steps] * n),
            max_context_len=ctx,
            cuda_graph_max_bs=n,
        )
        for topk in topks
        for n in batches
        for steps in steps_list
    ]


def _case(n, k, s, lens, ctx, **kw) -> Params:
    return Params(n, k, s, tuple(lens), ctx, **kw)


def corner_grid(windows: bool = False) -> list[Params]:
    """One case per corner, cheapest first among those that catch most (the
    proof stops at the first difference)."""
    cases = [
        _case(2, 4, 3, (21, 9), 24, cuda_graph_max_bs=2, seed=1),  # overruns
        _case(3, 2, 3, (13, 6, 2), 16, page_size=4, cuda_graph_max_bs=5, seed=2),
        _case(1, 1, 2, (6,), 8, seed=3),
        _case(5, 2, 2, (9, 3, 14, 1, 7), 16, cuda_graph_max_bs=8, seed=4),
        _case(2, 3, 2, (5, 30), 32, page_size=16, cuda_graph_max_bs=2, seed=5),
        _case(8, 1, 2, (5, 1, 9, 2, 7, 3, 6, 4), 11, cuda_graph_max_bs=9, seed=6),
        _case(1, 8, 2, (10,), 12, cuda_graph_max_bs=1, seed=7),
        _case(2, 8, 3, (7, 17), 20, page_size=4, cuda_graph_max_bs=3, seed=8),
        _case(4, 2, 5, (3, 11, 8, 1), 16, cuda_graph_max_bs=12, seed=9),
        # A graph batch rounded up to an alignment (two-batch overlap).
        _case(3, 2, 2, (5, 9, 2), 12, cuda_graph_max_bs=5, graph_alignment=4, seed=10),
        # 0.5.23 splits a launch into token blocks from a 32768-token context.
        _case(1, 2, 2, (8200,), LONG_CONTEXT + 64, cuda_graph_max_bs=1, seed=11),
    ]
    if windows:
        cases += [
            _case(2, 2, 3, (19, 4), 22, window_size=6, sink_size=2, seed=12),
            _case(3, 1, 2, (9, 14, 2), 16, window_size=8, seed=13),
            _case(
                2,
                3,
                2,
                (13, 7),
                16,
                page_size=4,
                window_size=4,
                sink_size=1,
                cuda_graph_max_bs=3,
                seed=14,
            ),
        ]
    return cases


def random_grid(
    seed: int, count: int, windows: bool = False, max_programs: int | None = 64
) -> list[Params]:
    """``count`` seeded cases over every axis; ``max_programs`` caps
    ``steps * num_seqs * topk`` (the interpreted kernel's cost)."""
    rng = random.Random(seed)
    grid: list[Params] = []
    while len(grid) < count:
        n, k, s = rng.randint(1, 8), rng.randint(1, 8), rng.randint(2, 5)
        if max_programs is not None and n * k * s > max_programs:
            continue
        ctx = rng.randint(s + 2, 48)
        max_bs = sorted({n, n + 1, max(n, 4), 5, 8, 9, 16} - set(range(n)))

        def draw(max_bs: list[int] = max_bs) -> dict[str, Any]:
            window = rng.choice((0, 0, 3, 8)) if windows else 0
            return {
                "page_size": rng.choice((1, 1, 4, 16)),
                "cuda_graph_max_bs": rng.choice(max_bs),
                "window_size": window,
                "sink_size": rng.choice((0, 1, 2)) if window else 0,
            }

        grid.append(_seeded(rng, n, k, s, ctx, draw))
    return grid


def wall_grid() -> list[Params]:
    """Requests at the context wall (``seq_len = max_context_len - 1``), where
    SGLang runs and the kernel writes past a helper-sized row: DESIGN.md's one
    request of 63 at context 64, and a paged graph batch."""
    return [
        _case(1, 2, 3, (63,), 64, at_wall=True, seed=21),
        _case(2, 2, 2, (15, 15), 16, page_size=4, cuda_graph_max_bs=2, at_wall=True),
    ]


def proof_grid(full: bool = False, windows: bool = False) -> list[Params]:
    """What ``prove`` runs: the corners, the context wall and a few seeded cases
    (``full``: every (num_seqs <= 4, topk, steps) too, and more seeded cases over
    all axes)."""
    grid = corner_grid(windows) + wall_grid() + random_grid(20261, 4, windows)
    if full:
        # Every fixed axis at its largest at once (8 sequences x topk 8 x 4
        # steps writes rows a buffer sized for fewer would not hold).
        grid.append(
            _case(
                8, 8, 4, (12, 3, 9, 1, 12, 7, 5, 10), 16, cuda_graph_max_bs=9, seed=15
            )
        )
        grid += default_grid(seed=20260) + long_sequence_grid()
        grid += random_grid(20262, 64, windows, max_programs=None)
    return grid


def small_grid(seed: int = 0) -> list[Params]:
    """Few enough cases for the interpreted kernel on a CPU (seconds per class)."""
    return (
        default_grid(seed=seed, num_seqs=(1, 2), topk=(1, 2, 4), steps=(2, 3))
        + long_sequence_grid()
    )
