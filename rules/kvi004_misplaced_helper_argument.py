"""KVI004: a helper call with an argument in another parameter's place."""

from __future__ import annotations

from lint_plugin.engine.vocabulary import BUFFER_WIDTH, USED_LEN, Needs
from lint_plugin.lazy import lazy
from lint_plugin.rules._rule import Example, Rule

TYPE_CHECKING = False  # not `typing`: the catalogue is read on every run
if TYPE_CHECKING:
    from lint_plugin.engine.checker import Checker

alternatives = lazy("lint_plugin.engine.flow.alternatives")
formulas = lazy("lint_plugin.engine.formulas")
text_tools = lazy("lint_plugin.engine.source")
values = lazy("lint_plugin.engine.values")

# A call of either helper.
NEEDS = Needs((((USED_LEN, BUFFER_WIDTH),),))

RULE = Rule(
    code="KVI004",
    name="misplaced-draft-kv-indices-helper-argument",
    message="{helper} called with {problems}",
    fix_title=None,
    fix_safety=None,
    doc="""
## What it does
Finds a call to `draft_kv_indices_used_len(seq_lens_sum, topk, bs, num_steps)` or
`draft_kv_indices_buffer_width(num_seqs, topk, max_context_len)` where an argument
whose name says what it is (a topk, a seq_lens_sum, a max_context_len or a
num_steps) sits in another parameter's place, positionally or by keyword, or a
token count (`max_num_tokens`: sequences times topk already) is passed as
`num_seqs`. A token count is right as `bs`, which is one. An argument is read by the value it holds, on every path (`k = self.topk`
is a topk, `topk = 1` is not), through the width analysis KVI003 uses. One
finding per call names every misplaced argument, so a swapped pair is one finding.

## Why is this bad?
The helpers exist so the formula is written once; passing `self.topk` where `bs`
belongs reintroduces the very miscount they prevent, and the types (all `int`)
cannot catch it.

## Example
```python
draft_kv_indices_used_len(seq_lens_sum, bs, self.topk, i + 1)
```

## Use instead
```python
draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)
```

## Fix safety
No fix: which argument is wrong is for a person to decide.
""",
    valid=(
        Example("n = draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)\n"),
        Example(
            "w = draft_kv_indices_buffer_width(max_bs, topk=self.topk, max_context_len=m)\n"
        ),
    ),
    invalid=(
        Example("n = draft_kv_indices_used_len(seq_lens_sum, bs, self.topk, i + 1)\n"),
        Example(
            "w = draft_kv_indices_buffer_width(self.max_context_len, self.topk, bs)\n"
        ),
        Example(
            "w = draft_kv_indices_buffer_width(max_num_tokens, self.topk, self.max_context_len)\n"
        ),
        Example(
            "n = spec_utils.draft_kv_indices_used_len(topk=seq_lens_sum, seq_lens_sum=k, bs=1, num_steps=1)\n"
        ),
        # A swapped pair is one finding naming both arguments.
        Example("n = draft_kv_indices_used_len(self.topk, seq_lens_sum, bs, n)\n"),
        Example(
            "n = draft_kv_indices_used_len(\n"
            "    seq_lens_sum=bs, topk=self.topk, bs=forward_batch.seq_lens_sum, num_steps=1\n"
            ")\n"
        ),
        # A local is read by the value it holds.
        Example(
            "def f(self, seq_lens_sum, bs):\n"
            "    k = self.topk\n"
            "    return draft_kv_indices_used_len(seq_lens_sum, bs, k, 1)\n"
        ),
    ),
)


def decide(checker: Checker) -> None:
    for helper_call in checker.helper_calls:  # by a name nothing rebinds
        call, helper = helper_call.call, helper_call.helper
        given = values.arguments(call, helper)
        roles = [
            (
                slot,
                alternatives.role_of_value(
                    checker.values(node, helper_call.function, at=call)
                ),
            )
            for slot, node in given
        ]
        problems = formulas.misplaced_arguments(helper, roles)
        if not problems:
            continue
        nodes = dict(given)
        described = ", ".join(
            f"`{text_tools.one_line(checker.source.segment(nodes[slot]))}` (a {role.value}) "
            f"as `{slot}`"
            for slot, role in problems
        )
        first = nodes[problems[0][0]]
        message = RULE.message.format(helper=helper, problems=described)
        checker.add("KVI004", checker.span(first), message)
