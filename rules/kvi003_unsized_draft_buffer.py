from lint_plugin.rules import Example, Rule

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

RULE = Rule(
    code="KVI003",
    name="unsized-draft-kv-indices-buffer",
    message=(
        "draft kv_indices buffer width `{text}` has no topk factor: "
        "size it with draft_kv_indices_buffer_width(num_seqs, topk, max_context_len)"
    ),
    fix_title="Size the row with `draft_kv_indices_buffer_width(...)`",
    fix_safety="unsafe",
    doc="""
## What it does
In a multi-step draft attention backend (a class named like
`...MultiStepDraftBackend`), finds a torch allocation (`torch.empty`, `zeros`,
`ones`, `full`, `empty_strided`, `Tensor.new_*`) of a `kv_indices` buffer shaped
`(num_steps, WIDTH)` whose WIDTH neither comes from
`draft_kv_indices_buffer_width(...)` (directly or through a local name) nor
multiplies by a topk factor.

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
Unsafe, applied only with `--unsafe-fixes`: it changes the allocation. For
`max_bs * max_context_len` the row grows by the topk factor (the bug fix); for a
token count such as `max_num_tokens`, which already counts branches, the rewrite
takes the function's sequence count (`max_bs`) instead, as upstream did, which
keeps the size only while `max_num_tokens == max_bs * topk`. No fix is offered when
the class has no visible topk or the function no sequence count.
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
        Example(
            _TEMPLATE.replace("FooMultiStepDraftBackend", "FooAttnBackend").format(
                width="max_bs * self.max_context_len"
            )
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
    ),
)
