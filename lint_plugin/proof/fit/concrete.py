"""The derived write model evaluated exactly for one launch (numpy, no triton).

:func:`row_extents` takes a :class:`~.extent.Derivation` and concrete sizes and
returns, for each row, one past the largest offset the derived stores write:
every program of the grid, every lane, every loop iteration, every path condition
and mask evaluated as integers. It is what the counterexample search of
:mod:`.fit` measures (a counterexample is a launch, not a symbolic point), and the
tests hold it and the symbolic extent equal to what the kernel really writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy
import sympy as sp

from lint_plugin.runtime import draft_kv_indices_buffer_width, draft_kv_indices_used_len

from . import extent as ex
from .numeric import NotEvaluable, evaluate


def next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


# What every backend's launch passes for the scalars the sizes do not fix.
DEFAULTS = {
    "page_size": 1,
    "window_size": 0,
    "sink_size": 0,
    "NUM_STEPS": 0,
    "ENTRY_PAGE_SIZE": 1,
    "TRANSLATE": 0,
}


# A kernel argument so named is the launch's context length.
CONTEXT_ARGS = frozenset({"max_context_len", "context_len"})


@dataclass(frozen=True)
class Sizes:
    """One launch: the sequences, topk, steps, context and scalar arguments."""

    seq_lens: tuple[int, ...]
    topk: int
    num_steps: int
    max_context_len: int
    params: tuple[tuple[str, int], ...] = ()
    num_blk: int = 1

    @property
    def num_seqs(self) -> int:
        return len(self.seq_lens)

    def param(self, name: str) -> int | None:
        return dict(self.params).get(name)

    def used_len(self, row: int) -> int:
        """What the helper gives row ``row`` (the bundled runtime's helpers)."""
        bs = self.num_seqs * self.topk
        return draft_kv_indices_used_len(sum(self.seq_lens), self.topk, bs, row + 1)

    @property
    def width(self) -> int:
        return draft_kv_indices_buffer_width(
            self.num_seqs, self.topk, self.max_context_len
        )

    def describe(self) -> str:
        extra = "".join(f" {k}={v}" for k, v in self.params)
        blocks = f" num_blk={self.num_blk}" if self.num_blk != 1 else ""
        return (
            f"num_seqs={self.num_seqs} topk={self.topk} num_steps={self.num_steps} "
            f"seq_lens={list(self.seq_lens)} max_context_len={self.max_context_len}"
            f"{extra}{blocks}"
        )


@dataclass
class Launch:
    """The scalar values of every launch-level symbol of a derivation."""

    values: dict[sp.Symbol, int] = field(default_factory=dict)
    programs0: int = 0


def launch_values(derivation: ex.Derivation, sizes: Sizes) -> Launch:
    n, k, steps = sizes.num_seqs, sizes.topk, sizes.num_steps
    derived = {
        "bs_upper": next_power_of_2(n),
        "iter_upper": next_power_of_2(steps),
        "num_tokens_upper": next_power_of_2(n * k),
    }
    values: dict[sp.Symbol, int] = {}
    for name, sym in derivation.params.items():
        given = sizes.param(name)
        if given is None and name in CONTEXT_ARGS:
            given = sizes.max_context_len  # the launch's own context, not a free one
        if given is None:
            given = derived.get(name, DEFAULTS.get(name))
        if given is None:
            given = 1 << 20  # strides and row widths: never in an in-row offset
        values[sym] = given
    programs0 = steps
    if derivation.split is not None:
        # Bound on every launch, so a path condition naming it evaluates on the
        # launches that take the other paths too (0.5.23: NUM_STEPS == 0).
        values[ex.NUM_BLK] = sizes.num_blk
        split = values.get(derivation.split, 0)
        if split not in (0, steps):
            raise NotEvaluable(f"{derivation.split} must be 0 or num_steps")
        if split:
            programs0 = split * sizes.num_blk
            values[ex.NUM_BLK] = sizes.num_blk
    values.update({ex.PROGRAMS0: programs0, ex.NUM_SEQS: n, ex.TOPK: k})
    return Launch(values, programs0)


def program_env(derivation: ex.Derivation, sizes: Sizes) -> tuple[dict, Launch]:
    """Every symbol of a derivation, per program (flat arrays) or per launch."""
    launch = launch_values(derivation, sizes)
    n, k = sizes.num_seqs, sizes.topk
    pid0, b, t = numpy.meshgrid(
        numpy.arange(launch.programs0), numpy.arange(n), numpy.arange(k), indexing="ij"
    )
    pid0, b, t = pid0.ravel(), b.ravel(), t.ravel()
    lens = numpy.asarray(sizes.seq_lens, dtype=numpy.int64)
    env: dict = dict(launch.values)
    env.update({ex.PID0: pid0, ex.B: b, ex.T: t, ex.SEQ_LEN: lens[b]})
    if derivation.split is not None:
        # With the split's count 0 no path that reads these runs; any value does.
        split = launch.values.get(derivation.split) or launch.programs0
        env[ex.PID0_MOD], env[ex.BLK] = pid0 % split, pid0 // split
        env.setdefault(ex.NUM_BLK, launch.programs0 // split)
    for sym, f in derivation.prefix_sums.items():
        per_seq = numpy.broadcast_to(
            evaluate(f, {**launch.values, ex.SEQ_LEN_J: lens}), lens.shape
        )
        before = numpy.concatenate([[0], numpy.cumsum(per_seq)[:-1]])
        env[sym] = before[b]
    return env, launch


def row_extents(derivation: ex.Derivation, sizes: Sizes) -> list[int]:
    """One past the largest offset written into each row (0: nothing written); a
    write to a row past the last counts for the last, at its offset in a buffer
    of ``num_steps`` rows of ``sizes.width``."""
    env, _ = program_env(derivation, sizes)
    lanes = list(derivation.lanes)
    shape_axes = len(lanes)
    programs = len(env[ex.PID0])
    lane_env = {}
    for axis, lane in enumerate(lanes):
        length = int(evaluate(derivation.lanes[lane], env))
        shape = [1] * (shape_axes + 1)
        shape[axis + 1] = max(length, 0)
        lane_env[lane] = numpy.arange(max(length, 0)).reshape(shape)
    for key in (ex.PID0, ex.B, ex.T, ex.SEQ_LEN, ex.PID0_MOD, ex.BLK):
        if key in env:
            env[key] = env[key].reshape((programs,) + (1,) * shape_axes)
    for sym in derivation.prefix_sums:
        env[sym] = env[sym].reshape((programs,) + (1,) * shape_axes)
    env.update(lane_env)
    stride = derivation.params.get(ex.ROW_STRIDE)
    top = [0] * sizes.num_steps
    for store in derivation.stores():
        if store.offset is None or store.mask is None:
            raise NotEvaluable(f"line {store.line}: {store.why or 'mask not followed'}")
        offset = sp.expand(store.offset)
        row_expr = offset.coeff(stride) if stride is not None else sp.Integer(0)
        in_row = sp.expand(offset - row_expr * stride) if stride is not None else offset
        active = numpy.ones((programs,) + (1,) * shape_axes, dtype=bool)
        for cond in store.conds:
            active = active & evaluate(cond, env)
        _collect(store, env, active, row_expr, in_row, top, sizes)
    return top


def _collect(store, env, active, row_expr, in_row, top, sizes: Sizes) -> None:
    loops = store.loops
    if not loops:
        _write(env, active, store.mask, row_expr, in_row, top, sizes)
        return
    # Iterate every loop's counter as far as any program runs it.
    counters = [loop.counter for loop in loops]
    limit = 1 << 16

    def walk(depth: int, env: dict, active) -> None:
        if depth == len(loops):
            _write(env, active, store.mask, row_expr, in_row, top, sizes)
            return
        loop = loops[depth]
        for m in range(limit):
            inner = {**env, counters[depth]: m}
            running = active & (evaluate(loop.fact, inner) >= 0)
            if not numpy.any(running):
                return
            walk(depth + 1, inner, running)
        raise NotEvaluable(f"line {loop.line}: the loop runs past {limit} iterations")

    walk(0, env, active)


def _write(env, active, mask, row_expr, in_row, top, sizes: Sizes) -> None:
    written = active & evaluate(mask, env)
    if not numpy.any(written):
        return
    offset = evaluate(in_row, env)
    row = evaluate(row_expr, env)
    offset, row, written = numpy.broadcast_arrays(offset, row, written)
    rows = sizes.num_steps
    if numpy.any(written & (row < 0)):
        raise NotEvaluable("a store writes a row before the buffer's first")
    # Past the last row, a (num_steps, width) buffer is overrun: count it as the
    # last row's, at its flat offset.
    past = written & (row >= rows)
    if numpy.any(past):
        flat = (row[past] - (rows - 1)) * sizes.width + offset[past]
        top[rows - 1] = max(top[rows - 1], int(flat.max()) + 1)
    for r in range(rows):
        hit = written & (row == r)
        if numpy.any(hit):
            top[r] = max(top[r], int(offset[hit].max()) + 1)
