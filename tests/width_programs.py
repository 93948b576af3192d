"""Generated draft backends, and their row widths by running them.

:func:`programs` draws the source of a small module in the shape of a multi-step
draft backend: module constants and functions, a base class, a class keeping a
topk and a step count, and a method that computes a kv_indices row width through
several statements (branches on flags and on the topk, conditional expressions,
``try``/``except``, loops, early returns, augmented assignments, tuple
unpacking, walrus, local aliases, closures, helper methods, the helpers, and the
operators ``+ - * // % max min`` and rounding up in several spellings) and
allocates the buffer in one of many spellings (allocator aliases and partials,
shapes in every form, flat and viewed buffers, rows made one per step).

:func:`row_widths` runs it (generated code only, in a namespace of its own, with a
stand-in ``torch`` that only records shapes) for a binding of the sizes and
returns the width of one row, so a program's truth comes from executing it, not
from the analysis under test.
"""

from __future__ import annotations

import builtins
import functools
import itertools
import math
from dataclasses import dataclass

from hypothesis import strategies as st

from lint_plugin import runtime

STEPS = "self.speculative_num_steps"


@dataclass
class Program:
    source: str
    spelling: str  # how the buffer is stated (how to read a row from it)
    context: str  # the context attribute the row must be sized by
    may_skip: bool  # holds what the analysis may leave not judged


# ---- the stand-in torch ------------------------------------------------------


class FakeTensor:
    def __init__(self, shape) -> None:
        self.shape = tuple(map(int, shape))

    def numel(self) -> int:
        return math.prod(self.shape)

    def view(self, *dims):
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        known = math.prod(d for d in dims if d != -1)
        dims = tuple(self.numel() // known if d == -1 else d for d in dims)
        return FakeTensor(dims)

    reshape = view

    def repeat(self, *sizes):
        sizes = _dims(sizes)
        padded = (1,) * (len(sizes) - len(self.shape)) + self.shape
        return FakeTensor(tuple(d * r for d, r in zip(padded, sizes, strict=True)))

    def expand(self, *sizes):
        sizes = _dims(sizes)
        padded = (1,) * (len(sizes) - len(self.shape)) + self.shape
        return FakeTensor(
            tuple(d if r == -1 else r for d, r in zip(padded, sizes, strict=True))
        )

    def contiguous(self):
        return self

    def new_zeros(self, *args, **kwargs):
        return FakeTensor(_size(args, kwargs))

    new_empty = new_ones = new_zeros

    def new_full(self, size, fill_value, **kwargs):
        return FakeTensor(tuple(size))


def _dims(sizes: tuple) -> tuple:
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        return tuple(sizes[0])
    return tuple(sizes)


def _size(args, kwargs) -> tuple:
    if "size" in kwargs:
        return tuple(kwargs["size"])
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


class _Torch:
    int32 = "int32"
    int64 = "int64"
    Size = tuple

    def zeros(self, *args, **kwargs):
        return FakeTensor(_size(args, kwargs))

    empty = ones = rand = randn = zeros

    def full(self, size, fill_value, **kwargs):
        return FakeTensor(tuple(size))

    def empty_strided(self, size, stride, **kwargs):
        return FakeTensor(tuple(size))

    def stack(self, tensors):
        return FakeTensor((len(tensors), *tensors[0].shape))


class _Triton:
    @staticmethod
    def cdiv(a, b):
        return -(-a // b)

    @staticmethod
    def next_power_of_2(n):
        return 1 if n <= 1 else 1 << (n - 1).bit_length()


def _import(name, *args, **kwargs):
    if name == "torch":
        return _Torch()
    if name == "triton":
        return _Triton()
    if name in ("functools", "math"):
        return builtins.__import__(name, *args, **kwargs)
    raise ImportError(name)


def lib_width(n):
    """A function of "another module": the analysis cannot read it."""
    return n * 2


# Other bodies "another module" may give it: the analysis reads none of them,
# so a row it calls unsized through a branch on lib_width is confirmed when
# one of them takes that branch.
OTHER_LIB_WIDTHS = (lambda n: 1, lambda n: n * 1000, lambda n: 10**6)


def _namespace(library=lib_width) -> dict:
    names = dict(vars(builtins))
    names["__import__"] = _import
    return {
        "__builtins__": names,
        "draft_kv_indices_buffer_width": runtime.draft_kv_indices_buffer_width,
        "lib_width": library,
    }


def compiled(program: Program, library=lib_width):
    """The program's draft class, defined in a fresh namespace (``library``:
    the body of ``lib_width`` there)."""
    namespace = _namespace(library)
    exec(compile(program.source, "generated.py", "exec"), namespace)  # generated code
    return namespace["GenMultiStepDraftBackend"]


@dataclass(frozen=True)
class Binding:
    topk: int
    steps: int
    context: int
    max_bs: int
    page: int
    flag_a: bool
    flag_b: bool


GRID = [
    Binding(t, s, c, n, p, a, b)
    for t, s, c, n, p, a, b in itertools.product(
        (1, 2, 3), (1, 3), (1, 3), (1, 2, 5), (1, 4), (False, True), (False, True)
    )
]


# Other values of the parts the analysis reads as opaque sizes (`len(self.slots)`,
# `self.table[0]`), which the generator ties to the page size: any value is
# theirs to hold, as any body is lib_width's.
OTHER_OPAQUE_VALUES = (
    {"slots": [0], "table": [1]},
    {"slots": [0] * 1000, "table": [1000]},
)


def row_width(
    cls, program: Program, b: Binding, opaque: dict | None = None
) -> int | None:
    """One row's width of the buffer the program allocates at ``b`` (None:
    it is not allocated there: an early return, an error); ``opaque``: other
    values for the opaque attributes, set after ``__init__``."""
    obj = cls(b.topk, b.steps, b.context, b.page)
    for name, value in (opaque or {}).items():
        setattr(obj, name, value)
    try:
        obj.init_cuda_graph_state(b.max_bs, b.flag_a, b.flag_b)
    except (ZeroDivisionError, ValueError, TypeError, IndexError):
        return None
    buffer = getattr(obj, "cuda_graph_kv_indices", None)
    if buffer is None:
        return None
    if isinstance(buffer, list):
        assert len(buffer) == b.steps, program.source
        return min(t.numel() for t in buffer)
    shape = buffer.shape
    if program.spelling == "flat":
        return buffer.numel() // b.steps
    assert shape[0] == b.steps, (shape, program.source)
    return math.prod(shape[1:])


def needed(b: Binding) -> int:
    return b.max_bs * b.topk * b.context


# ---- the generator -------------------------------------------------------------


# Every strategy below is built once and drawn from many times: a strategy made
# anew at each draw is validated anew, which was half of the oracle's time. The
# draws, and so the programs, are the same either way.
@functools.cache
def _ints(low: int, high: int) -> st.SearchStrategy[int]:
    return st.integers(low, high)


@functools.cache
def _pick(options: tuple) -> st.SearchStrategy:
    return st.sampled_from(options)


@functools.lru_cache(maxsize=1)
def _leaves():
    return {
        "count": ["max_bs", "n", "max(max_bs, 1)", "(max_bs + 1)", "(max_bs - 1)"],
        "topk": ["self.topk", "k", "max(self.topk, 1)", "(self.topk or 1)", "1", "one"],
        "const": ["PAD", "2", "3", "64"],
        "free": ["self.page_size"],
        "opaque": ["len(self.slots)", "lib_width(max_bs)", "self.table[0]"],
    }


@functools.cache
def _leaf(kind: str, context: str) -> st.SearchStrategy[str]:
    if kind == "context":
        return _pick((context, "ctx"))
    return _pick(tuple(_leaves()[kind]))


@functools.cache
def width_expr(context: str, depth: int = 0) -> st.SearchStrategy[tuple[str, bool]]:
    return _width_expr(context, depth)


@st.composite
def _width_expr(draw, context: str, depth: int):
    """An expression of a width, and whether it holds a free or opaque part."""
    leaf = functools.partial(_leaf, context=context)
    # Every width holds a context size: a per-step buffer without one is no
    # kv_indices row (a kv_indptr), which the rule leaves alone by design.
    kinds = [k for k, p in (("count", 9), ("topk", 7)) if draw(_ints(0, 9)) < p]
    kinds.insert(draw(_ints(0, len(kinds))), "context")
    if draw(_ints(0, 5)) == 0:
        kinds.append(draw(_pick(("count", "topk", "context"))))
    form = draw(_ints(0, 16 if depth < 2 else 2))
    factors = [draw(leaf(kind)) for kind in kinds]
    skip = False
    if draw(_ints(0, 9)) == 0:
        extra = draw(_pick(("free", "opaque")))
        factors.append(draw(leaf(extra)))
        skip = True
    base = " * ".join(factors)
    if form <= 2:
        return base, skip
    if form == 3:
        count, topk = draw(leaf("count")), draw(leaf("topk"))
        return f"draft_kv_indices_buffer_width({count}, {topk}, {context})", skip
    inner, inner_skip = draw(width_expr(context, depth + 1))
    skip = skip or inner_skip
    const = draw(leaf("const"))
    if form == 4:
        return f"{base} + {const}", skip
    if form == 5:
        return f"({inner}) - {draw(_pick(('1', 'max_bs', 'k')))}", skip
    if form == 6:
        return f"max({base}, {inner})", skip
    if form == 7:
        return f"min({base}, {inner})", skip
    if form == 8:
        return f"({inner} + {const} - 1) // {const} * {const}", skip
    if form == 9:
        return f"-(-({inner}) // self.page_size) * self.page_size", True
    if form == 10:
        return f"triton.cdiv({inner}, {const}) * {const}", skip
    if form == 11:
        return f"round_up({inner}, {const})", skip
    if form == 12:
        return f"({inner}) // 2", skip
    if form == 13:
        return f"math.prod(({base}, {draw(leaf('count'))}))", skip
    if form == 14:
        return f"self._rows({inner})", skip
    if form == 16:
        return f"max({inner}, 1 << {draw(_pick(('4', '10', 'k')))})", skip
    return f"int(triton.next_power_of_2({inner}))", skip


CONDITIONS = [
    "flag_a",
    "not flag_b",
    "flag_a and flag_b",
    "self.topk > 1",
    "self.topk == 1",
    "max_bs > 2",
    "self.topk in (1, 2)",
    "self.topk not in (1,)",
    "max_bs in (1, k)",
    # Arithmetic is never None; `k` may hold the topk on one path and 1 on
    # another.
    "k * 2 is not None",
    "max_bs + k is None",
    # The topk itself is never None where a draft step runs (SGLang's is None
    # only without speculation): its None tests are false.
    "self.topk is None",
    "k is not None",
    "self.topk is None or self.topk == 1",
    "self.topk is not None and self.topk > 1",
    "k == 1",
    "k > 1",
]


SIZE_CONDITIONS = tuple(c for c in CONDITIONS if "flag" not in c)


@functools.cache
def method_body(context: str) -> st.SearchStrategy[tuple[list[str], bool]]:
    return _method_body(context)


@st.composite
def _method_body(draw, context: str):
    """Statements computing ``width``: returns (lines, may_skip)."""
    expr = functools.partial(width_expr, context)
    skip = False

    def e():
        nonlocal skip
        text, s = draw(expr())
        skip = skip or s
        return text

    lines = [
        "n = max_bs",
        "k = self.topk",
        "one = 1",
        f"ctx = {context}",
    ]
    lines.append(f"width = {e()}")
    for _ in range(draw(_ints(0, 3))):
        shape = draw(_ints(0, 16))
        cond = draw(_pick(tuple(CONDITIONS)))
        if shape == 0:
            lines += [f"if {cond}:", f"    width = {e()}"]
        elif shape == 1:
            other = draw(_pick(tuple(CONDITIONS)))
            lines += [
                f"if {cond}:",
                f"    width = {e()}",
                f"elif {other}:",
                f"    width = {e()}",
                "else:",
                f"    width = {e()}",
            ]
        elif shape == 2:
            lines.append(f"width = {e()} if {cond} else {e()}")
        elif shape == 3:
            lines += [
                "try:",
                "    if flag_b:",
                "        raise ValueError('no')",
                f"    width = {e()}",
                "except ValueError:",
                f"    width = {e()}",
            ]
        elif shape == 4:
            lines += [
                f"for _ in range({STEPS}):",
                f"    width = {e()}",
            ]
        elif shape == 5:
            lines += [f"if {cond}:", "    return"]
        elif shape == 6:
            op = draw(_pick(("*= self.topk", "+= PAD", "-= 1", "//= 2", "*= k")))
            lines.append(f"width {op}")
        elif shape == 7:
            lines.append(f"n, width = max_bs, {e()}")
        elif shape == 8:
            lines += [f"if (width := {e()}) > 100:", f"    width = {e()}"]
        elif shape == 9:
            lines += ["def make():", f"    return {e()}", "width = make()"]
        elif shape == 10:
            lines += ["self.set_row(max_bs)", "width = self.row"]
        elif shape == 11:
            lines.append("width = max(width, 1)")
        elif shape == 12:
            # A case is taken when its value equals the subject and its guard
            # holds; `case _` takes the rest, and without it the rest falls
            # through with the width it had.
            guard = draw(_pick(("", " if flag_a")))
            lines += [
                f"match {draw(_pick(('self.topk', 'k', 'max_bs')))}:",
                f"    case 1{guard}:",
                f"        width = {e()}",
                "    case 2 | 3:",
                f"        width = {e()}",
            ]
            if draw(_ints(0, 1)):
                lines += ["    case _:", f"        width = {e()}"]
        elif shape == 13:
            # Skipped only where the test fails on entry.
            lines += [f"while {cond}:", f"    width = {e()}", "    break"]
        elif shape == 14:
            # A width each round adds to (topk - 1 rounds): what the rounds
            # add is opaque (the rule's doc), so it may be left not judged.
            skip = True
            lines += [
                "j = 1",
                "while j < self.topk:",
                f"    width += {e()}",
                "    j += 1",
            ]
        elif shape == 16:
            # `k` the topk on some paths, 1 on the others (tested later), the
            # paths chosen by sizes: a `k` chosen by a flag is read as opaque
            # where it is tested (a flag is a symbol by its text, which the
            # per-path reading does not trust).
            cond = draw(_pick(SIZE_CONDITIONS))
            lines += draw(
                _pick(
                    (
                        (f"k = self.topk if {cond} else 1",),
                        (f"k = 1 if {cond} else k",),
                        (f"if {cond}:", "    k = 1", "else:", "    k = self.topk"),
                        (f"if {cond}:", "    k = 1"),
                    )
                )
            )
        else:
            lines.append(f"width = self._rows({e()})")
    return lines, skip


SPELLINGS = [
    "tuple", "list", "full", "varargs", "size", "shape", "torch.Size", "starred",
    "concat", "alias", "partial", "new_zeros", "flat", "view", "comprehension",
    "append", "stack", "three-d", "repeat", "expand",
]  # fmt: skip


def allocation(spelling: str) -> tuple[list[str], str]:
    """Lines allocating the buffer, and how a row is read from it."""
    target = "self.cuda_graph_kv_indices"
    steps = "steps"
    rows = {
        "tuple": [f"{target} = torch.zeros(({steps}, width), dtype=torch.int32)"],
        "list": [f"{target} = torch.empty([{steps}, width])"],
        "full": [f"{target} = torch.full(({steps}, width), -1)"],
        "varargs": [f"{target} = torch.zeros({steps}, width)"],
        "size": [f"{target} = torch.zeros(size=({steps}, width))"],
        "shape": [f"shape = ({steps}, width)", f"{target} = torch.zeros(shape)"],
        "torch.Size": [f"{target} = torch.zeros(torch.Size([{steps}, width]))"],
        "starred": [
            f"prefix = ({steps},)",
            f"{target} = torch.zeros((*prefix, width))",
        ],
        "concat": [f"{target} = torch.zeros(({steps},) + (width,))"],
        "alias": ["alloc = torch.empty", f"{target} = alloc(({steps}, width))"],
        "partial": [
            "alloc = functools.partial(torch.zeros, dtype=torch.int64)",
            f"{target} = alloc(({steps}, width))",
        ],
        "new_zeros": [f"{target} = self.kv_indptr.new_zeros(({steps}, width))"],
        "flat": [f"{target} = torch.zeros(({steps} * width,))"],
        "view": [f"{target} = torch.zeros({steps} * width).view({steps}, -1)"],
        "comprehension": [f"{target} = [torch.zeros(width) for _ in range({steps})]"],
        "append": [
            "rows = []",
            f"for _ in range({steps}):",
            "    rows.append(torch.empty((width)))",
            f"{target} = rows",
        ],
        "stack": [
            f"{target} = torch.stack([torch.zeros(width) for _ in range({steps})])"
        ],
        "three-d": [f"{target} = torch.zeros(({steps}, width, 1))"],
        "repeat": [f"{target} = torch.zeros(width).repeat({steps}, 1)"],
        "expand": [
            f"{target} = torch.zeros((1, width)).expand({steps}, -1).contiguous()"
        ],
    }
    if spelling in HELPERS:
        rows[spelling] = [
            line.format(target=target, steps=steps) for line in HELPERS[spelling][2]
        ]
    return [f"steps = {STEPS}", *rows[spelling]], spelling


# Spellings through a function or method of the module that allocates, given
# the width (and the step count) as arguments: (module text, the class's
# methods, the lines of the method that calls it).
HELPERS = {
    "helper-function": (
        "def _alloc_rows(n, w):\n    return torch.zeros((n, w), dtype=torch.int32)\n",
        "",
        ["{target} = _alloc_rows({steps}, width)"],
    ),
    "helper-method": (
        "",
        "    def _alloc_rows(self, w):\n"
        "        return torch.empty((self.speculative_num_steps, w))\n",
        ["{target} = self._alloc_rows(width)"],
    ),
    "helper-assign": (
        "",
        "    def _make_rows(self, n, *, w):\n"
        "        self.cuda_graph_kv_indices = torch.zeros((n, w))\n",
        ["self._make_rows({steps}, w=width)"],
    ),
    "helper-nested": (
        "def _alloc_rows(n, w):\n    return torch.zeros(n, w)\n",
        "    def _rows_for(self, w):\n"
        "        return _alloc_rows(self.speculative_num_steps, w)\n",
        ["{target} = self._rows_for(width)"],
    ),
}
SPELLINGS += list(HELPERS)


@st.composite
def programs(draw) -> Program:
    window = draw(_ints(0, 4)) == 0
    context = "self.sliding_window_size" if window else "self.max_context_len"
    body, skip = draw(method_body(context))
    spelling = draw(_pick(tuple(SPELLINGS)))
    alloc, how = allocation(spelling)
    base_row, base_skip = draw(width_expr(context, 1))
    rows_expr, rows_skip = draw(
        _pick((("x", False), ("x + PAD", False), ("max(x, PAD)", False)))
    )
    pad = draw(_pick(("16", "64", "3")))
    skip = skip or base_skip or rows_skip
    if draw(_ints(0, 4)) == 0:
        # The step count and the width unpacked from a method's tuple.
        alloc = ["steps, width = self._steps_and(width)", *alloc[1:]]
    method = "".join(f"        {line}\n" for line in [*body, *alloc])
    module_helpers, class_helpers, _ = HELPERS.get(spelling, ("", "", ()))
    source = f"""\
import functools
import math

import torch
import triton

PAD = {pad}


def round_up(x, multiple):
    return (x + multiple - 1) // multiple * multiple


{module_helpers}
class Base:
    def set_row(self, max_bs):
        n = max_bs
        k = self.topk
        one = 1
        ctx = {context}
        self.row = {base_row}


class GenMultiStepDraftBackend(Base):
    def __init__(self, topk, speculative_num_steps, context, page_size):
        self.topk = topk
        self.speculative_num_steps = speculative_num_steps
        {context} = context
        self.page_size = page_size
        self.slots = [0] * page_size
        self.table = [page_size]
        self.kv_indptr = torch.zeros(3)

    def _rows(self, x):
        return {rows_expr}

    def _steps_and(self, x):
        return self.speculative_num_steps, x

{class_helpers}
    def init_cuda_graph_state(self, max_bs, flag_a, flag_b):
{method}"""
    return Program(source, how, context, skip)
