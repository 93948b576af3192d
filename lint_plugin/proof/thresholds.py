"""The grid's corners, read from the code under proof.

A fixed grid reaches only the sizes someone thought of: a rewrite that caps a
width at 65,536 tokens, ``bs_upper`` at 16 or a slice end after step 4 is
identical on every smaller case. So the integers the code itself compares a
size with, clamps it by, divides it by or rounds it to -- in the class, its
module, the kernel it launches and the harness's copies of SGLang's functions
it calls -- are thresholds, and each is crossed (``n - 1``, ``n``, ``n + 1``)
on every size axis the names beside it reach (every axis when none is known).

``corner_cases`` turns thresholds into cases: by default every threshold on
one side only (what the rewrite changed), then the others cheapest first,
within half the fixed grid's estimated time (each case's cost estimated from
its programs and its longest sequence); ``full`` takes every crossing, each
pair of axes at their largest crossings and the largest context with every
crossing of every other axis. What was reached is said with the verdict
(:func:`bounds`), never implied.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lint_plugin.engine.flow.known_values import dotted, last_name, literal_int
from lint_plugin.statements import assignment

from .errors import HarnessError
from .grid import Params
from .names import BACKEND_CLASSES

NUM_SEQS, MAX_BS, TOPK, STEPS, PAGE, CONTEXT, LENGTH, WINDOW = (
    "num_seqs",
    "max_bs",
    "topk",
    "steps",
    "page_size",
    "context",
    "seq_len",
    "window",
)
AXES = (NUM_SEQS, MAX_BS, TOPK, STEPS, PAGE, CONTEXT, LENGTH, WINDOW)
# How far each axis is driven: past these a case costs more than a proof run
# can spend (the interpreted kernel), and the verdict's bounds say so.
CAPS = {
    NUM_SEQS: 64,
    MAX_BS: 1024,
    TOPK: 32,
    STEPS: 16,
    PAGE: 256,
    CONTEXT: 140_000,
    LENGTH: 140_000,
    WINDOW: 4096,
}
# Words of a name beside a threshold, and the axes they reach.
_WORDS = (
    (re.compile(r"topk"), (TOPK,)),
    (re.compile(r"max_bs|graph_bs|capture_bs"), (MAX_BS,)),
    (re.compile(r"step|iter|^i$"), (STEPS,)),
    (re.compile(r"page"), (PAGE,)),
    (re.compile(r"window|sink"), (WINDOW,)),
    (re.compile(r"(^|_)bs|batch|seqs|req|program"), (NUM_SEQS, MAX_BS)),
    (re.compile(r"context|ctx|len|kv|width|token|sum|block|stride"), (CONTEXT, LENGTH)),
)
_ROUNDING = re.compile(r"cdiv|ceil|align|round|div_up|next_power")


@dataclass(frozen=True)
class Threshold:
    value: int
    axes: tuple[str, ...]
    where: str  # "file:line"


def _axes_of(nodes: Iterable[ast.AST]) -> tuple[str, ...]:
    found: list[str] = []
    for node in nodes:
        for sub in ast.walk(node):
            word = last_name(sub)
            if word is None:
                continue
            for pattern, axes in _WORDS:
                if pattern.search(word.lower()):
                    found += [a for a in axes if a not in found]
                    break
    return tuple(found) or AXES


def _module_ints(tree: ast.Module) -> dict[str, int]:
    """Module-level ``NAME = <int>`` (and annotated) bindings."""
    ints: dict[str, int] = {}
    for node in tree.body:
        targets, value = assignment(node)
        for target in targets:
            if isinstance(target, ast.Name):
                number = _int(value, {})
                if number is not None:
                    ints[target.id] = number
    return ints


def _int(node: ast.AST | None, names: dict[str, int]) -> int | None:
    """The integer ``node`` is: a literal, a name bound once to one (``LIMIT``,
    ``self.lim``), or shifts, masks, sums and products of them."""
    if node is None:
        return None
    number = literal_int(node)
    if number is not None:
        return number
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int(node.operand, names)
        return None if inner is None else -inner
    name = dotted(node)
    if name is not None:
        return names.get(name)
    if isinstance(node, ast.BinOp) and type(node.op) in _FOLDED:
        left, right = _int(node.left, names), _int(node.right, names)
        if left is None or right is None:
            return None
        if isinstance(node.op, (ast.Pow, ast.LShift)) and not 0 <= right < 64:
            return None
        if isinstance(node.op, ast.RShift) and right < 0:
            return None
        return _FOLDED[type(node.op)](left, right)
    return None


_FOLDED = {
    ast.Mult: lambda a, b: a * b,
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Pow: lambda a, b: a**b,
    ast.LShift: lambda a, b: a << b,
    ast.RShift: lambda a, b: a >> b,
    ast.BitAnd: lambda a, b: a & b,
    ast.BitOr: lambda a, b: a | b,
}


def _call_name(node: ast.Call) -> str:
    func = node.func
    while isinstance(func, ast.Subscript):  # kernel[grid](...)
        func = func.value
    return last_name(func) or ""


def _found(scope: ast.AST, names: dict[str, int], filename: str) -> Iterable[Threshold]:
    def at(node: ast.AST) -> str:
        return f"{filename}:{getattr(node, 'lineno', 0)}"

    for node in ast.walk(scope):
        pairs: list[tuple[ast.AST, list[ast.AST]]] = []
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for n, operand in enumerate(operands):
                pairs.append((operand, operands[:n] + operands[n + 1 :]))
        elif isinstance(node, ast.BinOp) and isinstance(
            node.op, (ast.FloorDiv, ast.Mod, ast.Div)
        ):
            pairs.append((node.right, [node.left]))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
            # x & 0x1F changes at 32: the mask and one past it.
            for mask, other in ((node.right, node.left), (node.left, node.right)):
                value = _int(mask, names)
                if value is not None:
                    pairs += [(mask, [other]), (_constant(value + 1, mask), [other])]
        elif isinstance(node, ast.Subscript):
            index = node.slice
            if isinstance(index, ast.Slice):  # backends[:4]: a count cut short
                for bound in (index.lower, index.upper, index.step):
                    if bound is not None:
                        pairs.append((bound, [node.value]))
            elif isinstance(node.value, (ast.Tuple, ast.List)):
                # (1, 2, 3, 4, 4, ...)[i]: a table read by a size ends somewhere.
                pairs.append((_constant(len(node.value.elts), node), [index]))
            elif isinstance(node.value, ast.Dict):
                pairs += [(key, [index]) for key in node.value.keys if key]
        elif isinstance(node, ast.Call):
            name = _call_name(node)
            args = list(node.args)
            if name in ("min", "max") or _ROUNDING.search(name.lower()):
                for n, arg in enumerate(args):
                    pairs.append((arg, args[:n] + args[n + 1 :]))
            # {32: 16}.get(size, size): each key is a size treated apart.
            func = node.func
            if (
                name == "get"
                and isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Dict)
                and args
            ):
                pairs += [(key, args[:1]) for key in func.value.keys if key]
            # A launch's constexpr (BLOCK=128) sizes the blocks a row is cut in.
            if isinstance(node.func, ast.Subscript) or name.isupper():
                for keyword in node.keywords:
                    if keyword.arg and keyword.arg.isupper():
                        pairs.append((keyword.value, [ast.Name(keyword.arg)]))
        elif assignment(node)[1] is not None:
            # A constexpr-like NAME (``BLOCK_SIZE = 128 if NUM_STEPS == 0 else
            # 512``, ``..._MIN_CONTEXT = 32768``): every integer it may hold.
            targets, value = assignment(node)
            for target in targets:
                # Only a name that says what it sizes (BLOCK, CONTEXT, ...):
                # another constant is a threshold where it is compared.
                if (
                    isinstance(target, ast.Name)
                    and target.id.isupper()
                    and _axes_of([target]) != AXES
                ):
                    pairs += [
                        (sub, [target])
                        for sub in ast.walk(value)
                        if isinstance(sub, ast.Constant)
                    ]
        elif isinstance(node, ast.FunctionDef):
            # Kernel parameters' constexpr defaults (``BLOCK: tl.constexpr = 128``).
            params = node.args.args[len(node.args.args) - len(node.args.defaults) :]
            for param, default in zip(params, node.args.defaults, strict=True):
                if param.arg.isupper():
                    pairs.append((default, [ast.Name(param.arg)]))
        for candidate, beside in pairs:
            value = _int(candidate, names)
            if value is None:
                continue
            values = [value]
            # min(x.bit_length() - 1, 4) caps x at 2**4: a power of two apart.
            if 0 <= value < 31 and any(
                isinstance(sub, ast.Attribute) and sub.attr == "bit_length"
                for node_ in beside
                for sub in ast.walk(node_)
            ):
                values += [1 << value, 1 << (value + 1)]
            for number in values:
                if number > 2:
                    yield Threshold(number, _axes_of(beside), at(candidate))


def _constant(value: int, like: ast.AST) -> ast.Constant:
    return ast.copy_location(ast.Constant(value), like)


def _local_ints(scope: ast.AST, names: dict[str, int]) -> dict[str, int]:
    """``names`` and the scope's own ``NAME = <int>`` (``BLOCK_SIZE:
    tl.constexpr = 128`` in a kernel), each bound once."""
    bound: dict[str, list[int | None]] = {}
    for node in ast.walk(scope):
        targets, value = assignment(node)
        for target in targets:
            if isinstance(target, ast.Name):
                bound.setdefault(target.id, []).append(_int(value, names))
            elif isinstance(target, ast.Attribute) and isinstance(
                target.value, ast.Name
            ):
                bound.setdefault(dotted(target), []).append(_int(value, names))
    own = {k: v[0] for k, v in bound.items() if len(v) == 1 and v[0] is not None}
    return {**names, **own}


def thresholds(
    classes: Sequence[tuple[str, str, str]],
    kernel_functions: Sequence[tuple[str, str, Sequence[str]]] = (),
    extra: Sequence[tuple[str, str]] = (),
) -> list[Threshold]:
    """Thresholds of draft classes ``(module text, class name, filename)`` --
    the class and the module-level definitions it reads -- of the named
    functions of kernel files ``(text, filename, functions)`` and of whole
    texts ``extra`` ``(text, filename)``; unparsable text contributes none
    (the proof itself reports it)."""
    from .pairing import dependencies, draft_classes

    found: dict[tuple[int, tuple[str, ...]], Threshold] = {}

    def add(scopes: Iterable[ast.AST], names: dict[str, int], filename: str) -> None:
        for scope in scopes:
            for item in _found(scope, _local_ints(scope, names), filename):
                found.setdefault((item.value, item.axes), item)

    for text, name, filename in classes:
        tree = _parse(text)
        cls = draft_classes(tree).get(name) if tree is not None else None
        if cls is None:
            continue
        reads = dependencies(tree, cls)
        # The per-step backend classes are the harness's stand-ins, not run.
        scopes = [cls] + [
            stmt
            for stmt in tree.body
            if _binds_one_of(stmt, reads)
            and not (isinstance(stmt, ast.ClassDef) and stmt.name in BACKEND_CLASSES)
        ]
        add(scopes, _module_ints(tree), filename)
    for text, filename, functions in kernel_functions:
        tree = _parse(text)
        if tree is not None:
            scopes = [
                node
                for node in tree.body
                if isinstance(node, ast.FunctionDef) and node.name in functions
            ]
            add(scopes, _module_ints(tree), filename)
    for text, filename in extra:
        tree = _parse(text)
        if tree is not None:
            add([tree], _module_ints(tree), filename)
    return sorted(found.values(), key=lambda t: (t.value, t.axes))


def _binds_one_of(stmt: ast.stmt, names: set[str]) -> bool:
    if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
        return stmt.name in names
    targets, _ = assignment(stmt)
    return any(isinstance(t, ast.Name) and t.id in names for t in targets)


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def harness_sources(class_text: str) -> list[tuple[str, str]]:
    """The harness's copies of SGLang's functions (:mod:`.names`) a class
    names, as a source each: their constants are SGLang's, so they are the
    class's thresholds too."""
    defined, consts = _harness()
    wanted = [name for name in defined if re.search(rf"\b{name}\b", class_text)]
    # One level of their callees (spec_kv_index_token_blocks -> ..._num_token_blocks).
    for name in list(wanted):
        for sub in ast.walk(defined[name]):
            if isinstance(sub, ast.Name) and sub.id in defined and sub.id not in wanted:
                wanted.append(sub.id)
    if not wanted:
        return []
    bodies = "\n".join(ast.unparse(defined[name]) for name in wanted)
    return [
        (f"{consts}\n{bodies}", "the harness's copy of SGLang's " + ", ".join(wanted))
    ]


@functools.cache
def _harness() -> tuple[dict[str, ast.FunctionDef], str]:
    """:mod:`.names`' functions, and its integer constants as source: read
    once (both sides of every class ask)."""
    from . import names

    tree = ast.parse(inspect.getsource(names))
    defined = {
        node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)
    }
    consts = "\n".join(
        ast.unparse(node)
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        and _module_ints(ast.Module([node], []))
    )
    return defined, consts


def estimated_cost(params: Params) -> float:
    """Seconds one side of a case takes on the interpreted kernel, roughly:
    its programs, and the blocks of its longest sequence."""
    programs = params.num_seqs * params.topk * params.speculative_num_steps
    return 0.03 + 0.0025 * programs + 5e-6 * max(params.seq_lens) * params.topk


def _case(axis: str, value: int, seed: int) -> Params | None:
    """A small case with ``axis`` at ``value`` (None: out of the axis's range):
    one sequence where the axis is per sequence, two otherwise."""
    if value > CAPS[axis]:
        return None
    values = {axis: value}
    if axis in (TOPK, STEPS, CONTEXT, LENGTH):
        values[NUM_SEQS] = 1
    if axis == NUM_SEQS and value > 32:
        values[TOPK] = 1
    if axis == WINDOW:
        values[STEPS] = 3
    return _combined(values, seed)


def _value(params: Params, axis: str) -> int:
    return {
        NUM_SEQS: params.num_seqs,
        MAX_BS: params.max_bs,
        TOPK: params.topk,
        STEPS: params.speculative_num_steps,
        PAGE: params.page_size,
        CONTEXT: params.max_context_len,
        LENGTH: max(params.seq_lens),
        WINDOW: params.window_size,
    }[axis]


def _crossings(threshold: Threshold, axis: str) -> tuple[int, ...]:
    n = threshold.value
    # A step count reaches step *index* n only at n + 2 (``range(steps - 1)``).
    return (n - 1, n, n + 1, n + 2) if axis == STEPS else (n - 1, n, n + 1)


def corner_cases(
    found: Sequence[Threshold],
    base: Sequence[Params],
    *,
    windows: bool,
    full: bool = False,
    budget: float = 0.5,
    changed: Iterable[Threshold] = (),
) -> list[Params]:
    """Cases crossing each threshold on each axis it reaches that ``base``
    does not already hold. ``changed`` (thresholds on one side only: what the
    rewrite introduced or removed) are always crossed; the others within what
    they leave of ``budget``, the share of ``base``'s estimated cost the
    default may add, cheapest first; ``full``: all of them, and each pair of two axes'
    crossings (the cross product of the largest)."""
    held = {axis: {_value(p, axis) for p in base} for axis in AXES}
    must = set(changed)
    wanted: dict[tuple[str, int], bool] = {}
    for threshold in [*must, *found]:
        for axis in threshold.axes:
            if axis == WINDOW and not windows:
                continue
            for value in _crossings(threshold, axis):
                if value not in held[axis]:
                    wanted[(axis, value)] = wanted.get((axis, value), False) or (
                        threshold in must
                    )
    singles, required = [], []
    for seed, ((axis, value), needed) in enumerate(wanted.items(), start=31):
        case = _case(axis, value, seed)
        if case is not None:
            (required if needed else singles).append((axis, value, case))
    if full:
        every = required + singles
        return [case for _, _, case in every] + _pairs(every)
    chosen = [case for _, _, case in required]
    # What the rewrite's own thresholds cost comes out of the same budget.
    spend = budget * sum(estimated_cost(p) for p in base)
    spend -= sum(estimated_cost(p) for p in chosen)
    for _, _, case in sorted(singles, key=lambda c: estimated_cost(c[2])):
        cost = estimated_cost(case)
        if cost > spend:
            break
        spend -= cost
        chosen.append(case)
    return chosen


def class_grid(
    base: Sequence[Params],
    before: str,
    after: str,
    class_name: str,
    kernels: Sequence[object] = (),
    *,
    windows: bool,
    full: bool = False,
) -> list[Params]:
    """``base`` and the corners read from both sides of one class: its text,
    the module-level definitions it reads, the kernels it runs on (each a
    :class:`~.triton_source.KernelSource`) and the harness's copies of the
    SGLang functions it names."""

    def side(text: str) -> set[Threshold]:
        return set(thresholds([(text, class_name, "")], (), harness_sources(text)))

    def keys(found: set[Threshold]) -> set[tuple[int, tuple[str, ...]]]:
        return {(t.value, t.axes) for t in found}

    # The kernels run both sides: read once, and never what a rewrite changed.
    shared = set(thresholds([], [(k.text, k.filename, k.functions) for k in kernels]))
    old, new = side(before), side(after)
    one_sided = (keys(old) ^ keys(new)) - keys(shared)

    def order(t: Threshold) -> tuple:
        return (t.value, t.axes, t.where)

    changed = sorted(
        (t for t in old | new if (t.value, t.axes) in one_sided), key=order
    )
    found = sorted(old | new | shared, key=order)
    corners = corner_cases(found, base, windows=windows, full=full, changed=changed)
    return [*base, *corners]


def _pairs(singles: Sequence[tuple[str, int, Params]]) -> list[Params]:
    """Two axes past their thresholds at once: each pair of axes at their
    largest crossings, and the largest context with every crossing of every
    other axis (a window, one or two token blocks, a page size at a long
    context)."""
    crossings: dict[str, list[int]] = {}
    for axis, value, _ in singles:
        crossings.setdefault(axis, []).append(value)
    past = {axis: max(values) for axis, values in crossings.items()}
    wanted: list[dict[str, int]] = []
    axes = sorted(past)
    for i, first in enumerate(axes):
        for second in axes[i + 1 :]:
            wanted.append({first: past[first], second: past[second]})
    if CONTEXT in past:
        for axis, values in crossings.items():
            if axis != CONTEXT:
                wanted += [{CONTEXT: past[CONTEXT], axis: v} for v in sorted(values)]
    cases, seen = [], set()
    for n, values in enumerate(wanted):
        case = _combined(values, seed=97 + n)
        if case is not None and case not in seen:
            seen.add(case)
            cases.append(case)
    return cases


def _combined(values: dict[str, int], seed: int) -> Params | None:
    """A case with each axis of ``values`` at its value, the rest small: one
    sequence at the design's limit (or at ``LENGTH``), the others shorter and
    distinct; None where the values admit no case."""
    n = values.get(NUM_SEQS, 2)
    k = values.get(TOPK, 2)
    s = values.get(STEPS, 2)
    page = values.get(PAGE, 1)
    window = values.get(WINDOW, 0)
    length = values.get(LENGTH)
    ctx = values.get(CONTEXT)
    if ctx is None:  # room for the length, the pages and the window
        ctx = max(length + s if length else 16, 2 * page + 8, 2 * window + 8, s + 8)
    max_bs = values.get(MAX_BS, n)
    longest = ctx - s if length is None else min(length, ctx - s)
    if longest < 1 or max_bs < n:
        return None
    lens = tuple(max(1, longest - 3 * i) for i in range(n))
    try:
        return Params(
            n, k, s, lens, ctx, page_size=page, cuda_graph_max_bs=max_bs,
            seed=seed, window_size=window, sink_size=1 if window else 0,
        )  # fmt: skip
    except HarnessError:
        return None


def bounds(cases: Sequence[Params]) -> str:
    """What a run of ``cases`` reached, axis by axis."""
    if not cases:
        return "no case"

    def span(axis: str) -> str:
        values = sorted({_value(p, axis) for p in cases})
        return f"{values[0]}-{values[-1]}" if len(values) > 1 else str(values[0])

    pages = sorted({p.page_size for p in cases})
    windows = sorted({p.window_size for p in cases if p.window_size})
    walls = sum(p.at_wall for p in cases)
    parts = [
        f"num_seqs {span(NUM_SEQS)}",
        f"topk {span(TOPK)}",
        f"steps {span(STEPS)}",
        "page sizes " + ", ".join(map(str, pages)),
        f"max_bs {span(MAX_BS)}",
        f"context {span(CONTEXT)}",
        f"seq_len {span(LENGTH)}",
    ]
    if windows:
        parts.append("windows " + ", ".join(map(str, windows)))
    if walls:
        parts.append(f"{walls} at the context wall")
    return ", ".join(parts)
