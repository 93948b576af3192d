from __future__ import annotations

from lint_plugin.engine.vocabulary import USED_LEN, Needs
from lint_plugin.lazy import lazy
from lint_plugin.roles import Role
from lint_plugin.rules._rule import Example, Rule

TYPE_CHECKING = False  # not `typing`: the catalogue is read on every run
if TYPE_CHECKING:
    from lint_plugin.engine.checker import Checker

arith = lazy("lint_plugin.algebra.arith")
formulas = lazy("lint_plugin.engine.formulas")
inline = lazy("lint_plugin.rules._inline_formulas")

_BACKEND = """\
class FooMultiStepDraftBackend:
    def common_template(self, forward_batch, kv_indices_buffer):
        num_seqs = forward_batch.batch_size
        bs = self.topk * num_seqs
        seq_lens_sum = forward_batch.seq_lens_sum
        for i in range(self.speculative_num_steps - 1):
            kv = kv_indices_buffer[i][
                {slice}
            ]
"""

_FIXED_SLICE = ": draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)"

# A topk beside a seq_lens_sum, or a call of the helper.
NEEDS = Needs((((Role.TOPK,), (Role.SEQ_LENS_SUM,)), ((USED_LEN,),)))

RULE = Rule(
    code="KVI001",
    name="inline-draft-kv-indices-used-len",
    message=(
        "inline draft kv_indices used length `{text}`: "
        "use draft_kv_indices_used_len({args})"
    ),
    fix_title="Replace with `draft_kv_indices_used_len(...)`",
    fix_safety="safe",
    doc="""
## What it does
Finds an inline copy of the EAGLE draft-decode used-length formula
`seq_lens_sum * topk + bs * num_steps`, in any operand order, grouping or line
layout, also when it is part of a longer sum.

## Why is this bad?
The length of the `kv_indices` row that draft step `i` reads is
`draft_kv_indices_used_len(seq_lens_sum, topk, bs, i + 1)`. Four backends used to
spell it out by hand; every copy is one more place where a forgotten `topk`
factor slices the wrong part of the buffer (upstream #27338, #27460). The helper in
`sglang.srt.speculative.spec_utils` is the single definition.

What the helper's value means depends on the release's kernel. Without a draft
window it is exact: row `i` holds exactly
`draft_kv_indices_used_len(seq_lens_sum, topk, bs, i + 1)` entries. With 0.5.23's
windowed draft decode (`window_size`/`sink_size`) a row holds
`topk * sum(min(seq_len, window + sink)) + bs * (i + 1)` entries, and the helper
is an upper bound of that. In both cases a row of
`draft_kv_indices_buffer_width(max_bs, topk, max_context_len)` is wide enough
(whenever every `seq_len + num_steps <= max_context_len`).

## Example
```python
forward_batch.spec_info.kv_indices = kv_indices_buffer[i][
    : seq_lens_sum * self.topk + bs * (i + 1)
]
```

## Use instead
```python
forward_batch.spec_info.kv_indices = kv_indices_buffer[i][
    : draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)
]
```

## Fix safety
Safe for what SGLang passes (Python integers): the helper returns exactly
`seq_lens_sum * topk + bs * num_steps`, and `fix` proves each rewritten file the
same program over integers before writing it (operands that are not integers,
floats or tensors, are combined in the helper's order, which may round
differently). Arguments keep
their source text; other terms of a longer sum are kept. The call is spelled so
that it calls the helper where it stands (an alias or the module's attribute
where the name is taken there). Where an operand or a term between the two may
have an effect (a call, a walrus), the order of evaluation is kept (keyword
arguments in the order written) or there is no fix; a formula in an annotation
has none.
""",
    valid=(
        Example(_BACKEND.format(slice=_FIXED_SLICE)),
        Example("n = batch_size * self.topk + 1\n"),
        Example("n = seq_lens_sum * self.topk + bs\n"),
        Example("n = seq_lens_sum + bs * (i + 1)\n"),
        Example("n = seq_lens_sum * self.topk - bs * (i + 1)\n"),
        Example("n = seq_lens_sum * self.topk + bs * (i + 2)\n"),
        Example("n = seq_lens_sum * self.topk * 2 + bs * (i + 1)\n"),
    ),
    invalid=(
        Example(
            _BACKEND.format(slice=": seq_lens_sum * self.topk + bs * (i + 1)"),
            _BACKEND.format(slice=_FIXED_SLICE),
        ),
        Example(
            "n = (i + 1) * bs + self.topk * forward_batch.seq_lens_sum\n",
            "n = draft_kv_indices_used_len(forward_batch.seq_lens_sum, self.topk, bs, i + 1)\n",
        ),
        Example(
            "n = seq_lens_sum * topk + bs * self.speculative_num_steps + 1\n",
            "n = draft_kv_indices_used_len(seq_lens_sum, topk, bs, self.speculative_num_steps) + 1\n",
        ),
        # Subtracted whole, as a capacity check spells it, grouped or not.
        Example(
            "room = buf.shape[1] - (seq_lens_sum * topk + bs * num_steps)\n",
            "room = buf.shape[1] - draft_kv_indices_used_len(seq_lens_sum, topk, bs, num_steps)\n",
        ),
        Example(
            "room = buf.shape[1] - seq_lens_sum * topk - bs * num_steps\n",
            "room = buf.shape[1] - draft_kv_indices_used_len(seq_lens_sum, topk, bs, num_steps)\n",
        ),
    ),
)


def decide(checker: Checker) -> None:
    """A finding for each sum of the file's arithmetic that is the formula."""
    for match, in_annotation in inline.matches(
        checker, arith.Sum, formulas.match_used_len
    ):
        inline.report(match, in_annotation, checker, RULE)
