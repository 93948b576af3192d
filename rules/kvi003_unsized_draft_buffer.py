"""KVI003: the CI gate against the #27338 bug, a draft kv_indices row without topk.

The rule judges a width by its value, not its spelling: each dimension of an
allocation is expanded through locals and ``self.`` attributes (see
:func:`lint_plugin.facts.expand`) before it is read.
"""

from __future__ import annotations

import ast
import re

from lint_plugin.allocations import allocation_shape
from lint_plugin.arith import AST
from lint_plugin.facts import (
    Allocation,
    ClassFacts,
    ModuleFacts,
    definition,
    expand,
    position,
)
from lint_plugin.findings import Fix
from lint_plugin.formulas import BUFFER_WIDTH, render_helper_call
from lint_plugin.records import record
from lint_plugin.roles import SEQUENCE_COUNT_NAMES, Role
from lint_plugin.rules import Example, Rule
from lint_plugin.source import one_line
from lint_plugin.values import argument, factors, is_steps, role_of

_TEMPLATE = """\
import torch


class FooMultiStepDraftBackend:
    def __init__(self, topk):
        self.topk = topk

    def init_cuda_graph_state(self, max_bs: int, max_num_tokens: int):
        self.cuda_graph_kv_indices = torch.zeros(
            (self.speculative_num_steps, {width}),
            dtype=torch.int32,
        )
"""

_FIXED = _TEMPLATE.replace(
    "            (self.speculative_num_steps, {width}),\n",
    "            (\n"
    "                self.speculative_num_steps,\n"
    "                draft_kv_indices_buffer_width(max_bs, self.topk, self.max_context_len),\n"
    "            ),\n",
)

_LOCAL = """\
import torch


class FooMultiStepDraftBackend:
    def __init__(self, topk):
        self.topk = topk

    def init_cuda_graph_state(self, max_bs: int, max_num_tokens: int):
        kv_indices_width = {width}
        self.cuda_graph_kv_indices = torch.zeros(
            (self.speculative_num_steps, kv_indices_width),
            dtype=torch.int32,
        )
"""

RULE = Rule(
    code="KVI003",
    name="unsized-draft-kv-indices-buffer",
    message=(
        "draft kv_indices buffer width {text} has no topk factor: "
        "size it with draft_kv_indices_buffer_width(num_seqs, topk, max_context_len)"
    ),
    fix_title="Size the row with `draft_kv_indices_buffer_width(...)`",
    fix_safety="unsafe",
    doc="""
## What it does
In a multi-step draft attention backend, finds a torch allocation of a per-step
`kv_indices` buffer whose row width has no topk factor and does not come from
`draft_kv_indices_buffer_width(...)` (with a topk as its `topk` argument).

A draft backend is known by what it does: the class keeps a topk (`self.topk`)
and either keeps a draft step count (`self.speculative_num_steps`), launches the
draft index kernel (`generate_draft_decode_kv_indices[...]`) or is named like
`...MultiStepDraftBackend`. A class keeping no topk writes one branch per request,
so its `max_bs * max_context_len` row is right, and it is never a finding.

The width is judged by its value, not its spelling. Locals (also annotated and
chained), `self.` attributes assigned in the class, shapes held in a variable and
no-op wrappers (`int(...)`) are followed to where the value is made; every
allocator is read (`torch.empty/zeros/ones/full/empty_strided`,
`Tensor.new_empty/new_zeros/new_ones/new_full`, shapes as a tuple, a list,
`size=` or varargs), and `(steps, WIDTH)`, flat `(steps * WIDTH,)` and
`(steps, count, max_context_len)` buffers mean the same. The step count may be any
alias of it. A width is context-sized when a `max_context_len` appears in it;
a padded or bounded width (`helper(...) + 64`, `max(a, b)`) is sized when every
context-sized part is. Buffers assigned to another per-step name (`kv_indptr`,
masks) are not kv_indices rows.

Not followed: values passed in as parameters, module-level constants, and
attributes assigned in another class (a base class); such a width is not judged.

## Why is this bad?
The index kernel writes `topk` branches for every sequence, so a row must hold
`num_seqs * topk * max_context_len` entries. `max_bs * self.max_context_len` is the
real bug: with `topk > 1` the kernel writes past the row and corrupts memory
(upstream #27338, #27460). `max_num_tokens * self.max_context_len` is right only
because `max_num_tokens` happens to be `max_bs * topk` today: an invariant nobody
states and any caller can break.

## Example
```python
self.cuda_graph_kv_indices = torch.zeros(
    (self.speculative_num_steps, max_bs * self.max_context_len),
    dtype=torch.int32,
    device="cuda",
)
```

## Use instead
```python
self.cuda_graph_kv_indices = torch.zeros(
    (
        self.speculative_num_steps,
        draft_kv_indices_buffer_width(max_bs, self.topk, self.max_context_len),
    ),
    dtype=torch.int32,
    device="cuda",
)
```

## Fix safety
Unsafe, applied only with `--unsafe-fixes`: it changes the allocation. The width
is sized where it is made (a local's assignment, not the allocation), so a
regression of the refactored backends becomes their text again. For
`max_bs * max_context_len` the row grows by the topk factor (the bug fix); for a
token count such as `max_num_tokens`, which already counts branches, the rewrite
takes the function's sequence count (`max_bs`) instead, as upstream did, which
keeps the size only while `max_num_tokens == max_bs * topk`. No fix is offered when
the width is not `count * max_context_len` where it is made (a flat or 3-D
buffer, a helper given a non-topk) or the function has no sequence count.
""",
    valid=(
        Example(_TEMPLATE.format(width="max_bs * self.topk * self.max_context_len")),
        Example(
            _TEMPLATE.format(
                width="draft_kv_indices_buffer_width(max_bs, self.topk, self.max_context_len)"
            )
        ),
        Example(
            _TEMPLATE.format(width="max_bs * self.topk * self.sliding_window_size")
        ),
        Example(_TEMPLATE.format(width="max_bs + 1")),
        # One branch per request (no topk kept): the row is right, whatever the name.
        Example(
            _TEMPLATE.replace("self.topk = topk", "self.page_size = 1").format(
                width="max_bs * self.max_context_len"
            )
        ),
        # Another multi-step backend: per-step buffers, none context-sized.
        Example(
            _TEMPLATE.replace("FooMultiStepDraftBackend", "FooMultiStepBackend").format(
                width="max_bs + 1"
            )
        ),
        # A padded helper width, the helper through an alias and a module.
        Example(
            _TEMPLATE.format(
                width="draft_kv_indices_buffer_width(max_bs, self.topk, self.max_context_len) + 64"
            )
        ),
        Example(
            "from sglang.srt.speculative.spec_utils import (\n"
            "    draft_kv_indices_buffer_width as width_of,\n)\n"
            + _TEMPLATE.format(
                width="width_of(max_bs, self.topk, self.max_context_len)"
            )
        ),
        Example(
            _TEMPLATE.format(
                width="spec_utils.draft_kv_indices_buffer_width(max_bs, self.topk, self.max_context_len)"
            )
        ),
        # topk through a local, in any position of the product.
        Example(
            _TEMPLATE.replace(
                "        self.cuda_graph_kv_indices",
                "        k = self.topk\n        self.cuda_graph_kv_indices",
            ).format(width="self.max_context_len * k * max_bs")
        ),
    ),
    invalid=(
        Example(
            _TEMPLATE.format(width="max_bs * self.max_context_len"),
            _FIXED,
            unsafe=True,
        ),
        Example(
            _TEMPLATE.format(width="max_num_tokens * self.max_context_len"),
            _FIXED,
            unsafe=True,
        ),
        # Known by what it does, not by its name.
        Example(
            _TEMPLATE.replace("FooMultiStepDraftBackend", "FooAttnBackend").format(
                width="max_bs * self.max_context_len"
            ),
            _FIXED.replace("FooMultiStepDraftBackend", "FooAttnBackend"),
            unsafe=True,
        ),
        # The width made in a local: the fix sizes it where it is made.
        Example(
            _LOCAL.format(width="max_bs * self.max_context_len"),
            _LOCAL.format(
                width="draft_kv_indices_buffer_width(\n"
                "            max_bs, self.topk, self.max_context_len\n"
                "        )"
            ),
            unsafe=True,
        ),
        Example(
            _TEMPLATE.format(
                width="draft_kv_indices_buffer_width(max_bs, 1, self.max_context_len)"
            )
        ),
    ),
)


# Per-step buffers of a draft backend that are not its kv_indices rows.
_OTHER_BUFFER = re.compile(r"indptr|mask|last_page|seq_lens|positions|qo_")


@record(frozen=True)
class Width:
    """What a width expression is: context-sized, sized by topk, a topk itself."""

    context: bool = False
    sized: bool = False
    topk: bool = False


def judge(node: ast.expr, helper_names: dict[str, str]) -> Width:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _product([judge(f, helper_names) for f in factors(node)])
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        return _sum([judge(node.left, helper_names), judge(node.right, helper_names)])
    if isinstance(node, ast.Call):
        callee = AST.name(node.func)
        name = helper_names.get(callee or "")
        if name == BUFFER_WIDTH:
            topk = argument(node, BUFFER_WIDTH, "topk")
            return Width(context=True, sized=_is_topk(topk, helper_names))
        if callee in ("max", "min") and node.args and not node.keywords:
            return _sum([judge(a, helper_names) for a in node.args])
        return Width()
    role = role_of(node)
    return Width(context=role is Role.MAX_CONTEXT_LEN, topk=role is Role.TOPK)


def _product(parts: list[Width]) -> Width:
    return Width(
        context=any(p.context for p in parts),
        sized=any(p.sized or p.topk for p in parts),
        topk=any(p.topk for p in parts),
    )


def _sum(parts: list[Width]) -> Width:
    """A padded or bounded width is sized when every context-sized part is."""
    context = [p for p in parts if p.context]
    return Width(context=bool(context), sized=all(p.sized for p in context))


def _is_topk(node: ast.expr | None, helper_names: dict[str, str]) -> bool:
    return node is not None and judge(node, helper_names).topk


@record(frozen=True)
class _Shape:
    """An allocation read as ``(steps, width...)``: the width's parts (expanded),
    the width as written where the finding points, and that node when the
    width is one dimension an unsafe fix may size."""

    width: list[ast.expr]
    shown: ast.expr
    written: ast.expr | None


def _shape(allocation: Allocation) -> _Shape | None:
    dims = allocation_shape(allocation.call)
    if not dims:
        return None
    function, at = allocation.function, position(allocation.call)
    expanded = [expand(d, function, at) for d in dims]
    shown_dims = dims
    if len(expanded) == 1 and isinstance(expanded[0], (ast.Tuple, ast.List)):
        expanded = list(expanded[0].elts)  # a shape held in a local
        shown_dims = [dims[0]] * len(expanded)
    if len(expanded) >= 2:
        if not is_steps(expanded[0]):
            return None
        written = dims[1] if len(dims) == 2 else None
        return _Shape(expanded[1:], shown_dims[1], written)
    parts = factors(expanded[0])  # a flat (steps * width,) buffer
    steps = [p for p in parts if is_steps(p)]
    if len(steps) != 1:
        return None
    return _Shape([p for p in parts if p is not steps[0]], dims[0], None)


def decide(facts: ModuleFacts, report) -> None:
    """One finding per unsized kv_indices allocation of a draft backend."""
    for cls in facts.classes:
        if not cls.is_draft_backend:
            continue
        for allocation in cls.allocations:
            if allocation.target and _OTHER_BUFFER.search(allocation.target):
                continue
            shape = _shape(allocation)
            if shape is None:
                continue
            width = _product([judge(p, facts.helper_names) for p in shape.width])
            if not width.context or width.sized:
                continue
            _report(cls, allocation, shape, facts, report)


def _report(cls: ClassFacts, allocation, shape: _Shape, facts, report) -> None:
    span = report.span(shape.shown)
    text = f"`{one_line(report.source.segment(shape.shown))}`"
    fix = None
    if shape.written is not None:
        site, owner, _ = definition(
            shape.written, allocation.function, position(allocation.call)
        )
        if site is not shape.written:
            made = one_line(report.source.segment(site))
            text += f" (= `{made}`)"
        fix = _unsafe_fix(cls, site, owner, facts, report)
    report.add("KVI003", span, RULE.message.format(text=text), fix)


def _unsafe_fix(cls: ClassFacts, site, function, facts, report) -> Fix | None:
    """``count * max_context_len`` where the width is made -> the helper with the
    class's topk."""
    parts = factors(site)
    if len(parts) != 2 or cls.topk_attr is None:
        return None
    at = position(site)
    roles = [role_of(expand(p, function, at)) for p in parts]
    if roles.count(Role.MAX_CONTEXT_LEN) != 1:
        return None
    mcl = parts[roles.index(Role.MAX_CONTEXT_LEN)]
    count = parts[1 - roles.index(Role.MAX_CONTEXT_LEN)]
    count_role = roles[1 - roles.index(Role.MAX_CONTEXT_LEN)]
    if not isinstance(count, (ast.Name, ast.Attribute)) or count_role not in (
        None,
        Role.TOKENS,
    ):
        return None
    count_text = report.source.segment(count)
    note = "the row grows by the topk factor"
    if count_role is Role.TOKENS:
        known = _names_in_scope(function)
        seqs = next((n for n in SEQUENCE_COUNT_NAMES if n in known), None)
        if seqs is None:
            return None
        note = f"{count_text} is replaced by the sequence count {seqs} times topk"
        count_text = seqs
    content = render_helper_call(
        report.settings.spell(BUFFER_WIDTH),
        (count_text, f"self.{cls.topk_attr}", report.source.segment(mcl)),
    )
    message = f"Size the row with `{content}` (changes the allocation: {note})"
    return Fix("unsafe", message, (report.edit(report.span(site), content),))


def _names_in_scope(function) -> set[str]:
    """Parameters and locals of ``function`` and the functions around it."""
    names: set[str] = set()
    while function is not None:
        names |= set(function.params) | function.locals.names()
        function = function.parent
    return names
