from lint_plugin.rules import Example, Rule

RULE = Rule(
    code="KVI004",
    name="misplaced-draft-kv-indices-helper-argument",
    message="`{text}` looks like {role} but is passed to {helper} as `{slot}`",
    fix_title=None,
    fix_safety=None,
    doc="""
## What it does
Finds a call to `draft_kv_indices_used_len(seq_lens_sum, topk, bs, num_steps)` or
`draft_kv_indices_buffer_width(num_seqs, topk, max_context_len)` where an argument
whose name says what it is (a topk, a seq_lens_sum, a max_context_len, a
num_steps, or a token count) sits in another parameter's place, positionally or by
keyword.

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
    ),
)
