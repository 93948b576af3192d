from __future__ import annotations

from lint_plugin.engine.vocabulary import BUFFER_WIDTH, Needs
from lint_plugin.lazy import lazy
from lint_plugin.roles import Role
from lint_plugin.rules._rule import Example, Rule

TYPE_CHECKING = False  # not `typing`: the catalogue is read on every run
if TYPE_CHECKING:
    from lint_plugin.engine.checker import Checker

arith = lazy("lint_plugin.algebra.arith")
formulas = lazy("lint_plugin.engine.formulas")
inline = lazy("lint_plugin.rules._inline_formulas")

# A topk beside a max_context_len, or a call of the helper.
NEEDS = Needs((((Role.TOPK,), (Role.MAX_CONTEXT_LEN,)), ((BUFFER_WIDTH,),)))

RULE = Rule(
    code="KVI002",
    name="inline-draft-kv-indices-buffer-width",
    message=(
        "inline draft kv_indices row width `{text}`: "
        "use draft_kv_indices_buffer_width({args})"
    ),
    fix_title="Replace with `draft_kv_indices_buffer_width(...)`",
    fix_safety="safe",
    doc="""
## What it does
Finds an inline copy of the EAGLE draft-decode row-width formula
`num_seqs * topk * max_context_len`: a product of exactly a count, a topk and a
max-context-length, in any order and grouping.

## Why is this bad?
Every branch of every sequence may attend `max_context_len` KV slots, so a row
needs `num_seqs * topk * max_context_len` entries. Copies of this product are how
the `topk` factor went missing in the CUDA-graph buffers (upstream #27338,
#27460). `draft_kv_indices_buffer_width` is the single definition, and it also
refuses widths that overflow int32 flat offsets.

## Example
```python
kv_indices = torch.empty(
    (
        self.speculative_num_steps,
        forward_batch.batch_size * self.topk * self.max_context_len,
    ),
    dtype=torch.int32,
    device="cuda",
)
```

## Use instead
```python
kv_indices = torch.empty(
    (
        self.speculative_num_steps,
        draft_kv_indices_buffer_width(
            forward_batch.batch_size, self.topk, self.max_context_len
        ),
    ),
    dtype=torch.int32,
    device="cuda",
)
```

## Fix safety
Safe for what SGLang passes (Python integers): the helper returns the same
product, and `fix` proves each rewritten file the same program over integers.
What is not the same, outside that: the helper raises `AssertionError` for a
width of 2**31 or more (upstream's refusal: the index kernel's int32 flat offsets
would wrap), where the inline product returned it; and operands that are not
integers (floats, tensors) are multiplied in the helper's order, which may round
differently. As for KVI001, the call is spelled so that it calls the helper where
it stands, keeps the order of evaluation where a factor may have an effect, and a
formula in an annotation has no fix.
""",
    valid=(
        Example("w = max_bs * self.max_context_len\n"),
        Example("w = max_bs * self.topk + 1\n"),
        Example("w = batch_size * self.topk * self.sliding_window_size\n"),
        Example("w = 2 * self.topk * self.max_context_len\n"),
        Example("w = bs * self.topk * self.max_context_len * 2\n"),
        Example(
            "w = draft_kv_indices_buffer_width(bs, self.topk, self.max_context_len)\n"
        ),
    ),
    invalid=(
        Example(
            "w = forward_batch.batch_size * self.topk * self.max_context_len\n",
            "w = draft_kv_indices_buffer_width(\n"
            "    forward_batch.batch_size, self.topk, self.max_context_len\n"
            ")\n",
        ),
        Example(
            "w = self.max_context_len * (num_seqs * topk)\n",
            "w = draft_kv_indices_buffer_width(num_seqs, topk, self.max_context_len)\n",
        ),
    ),
)


def decide(checker: Checker) -> None:
    """A finding for each product of the file's arithmetic that is the formula."""
    for match, in_annotation in inline.matches(
        checker, arith.Product, formulas.match_buffer_width
    ):
        inline.report(match, in_annotation, checker, RULE)
