from lint_plugin.engine.vocabulary import Needs
from lint_plugin.rules._rule import Example, Rule

_SITE = """\
class FooMultiStepDraftBackend:
    def used_len(self, seq_lens_sum, bs, i):
        return {expression}{comment}
"""
_INLINE = "seq_lens_sum * self.topk + bs * (i + 1)"
_HELPER = "draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)"

# A `# noqa` directive of its own: lint_plugin.noqa.directives finds those.
NEEDS = Needs(())

RULE = Rule(
    code="KVI100",
    name="unused-noqa",
    message="unused `noqa` directive ({kind}: {codes})",
    fix_title="Remove unused `noqa` directive",
    fix_safety="safe",
    doc="""
## What it does
Finds a `# noqa` directive that lists a `KVI` code suppressing no finding of its
statement: the site was fixed or deleted, the code is misspelt (`kvi001`: codes are
case-sensitive, as in flake8), or another directive of the same statement already
covers it (a duplicate, as formatters leave behind when they re-wrap a line).
Only `KVI` codes are judged; other codes and blanket `# noqa` belong to other tools.

## Why is this bad?
A stale directive silently exempts the next inline copy written on that
statement: the gate would let exactly the drift it exists to catch pass.

## Example
```python
n = draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)  # noqa: KVI001
```

## Use instead
```python
n = draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)
```

## Fix safety
Safe: it removes only the unused codes (the whole comment when nothing else is
left in it), so no finding appears or disappears. A directive inside a string is
never touched. Suppress it with `# noqa: KVI100` on the directive's row.
""",
    valid=(
        Example(_SITE.format(expression=_INLINE, comment="  # noqa: KVI001")),
        Example(_SITE.format(expression=_HELPER, comment="  # noqa: E501")),
        Example(_SITE.format(expression=_HELPER, comment="  # noqa")),
        Example(_SITE.format(expression=_HELPER, comment="  # noqa: KVI001, KVI100")),
        Example('s = "# noqa: KVI001"\n'),
    ),
    invalid=(
        Example(
            _SITE.format(expression=_HELPER, comment="  # noqa: KVI001"),
            fixed=_SITE.format(expression=_HELPER, comment=""),
        ),
        Example(
            _SITE.format(expression=_INLINE, comment="  # noqa: KVI001, KVI002"),
            fixed=_SITE.format(expression=_INLINE, comment="  # noqa: KVI001"),
        ),
        Example(
            _SITE.format(expression=_INLINE, comment="  # noqa: kvi001"),
            # The site is not suppressed, so `fix` rewrites it as well.
            fixed=_SITE.format(expression=_HELPER, comment=""),
        ),
        Example(
            _SITE.format(expression=_HELPER, comment="  # noqa: KVI001  # why"),
            fixed=_SITE.format(expression=_HELPER, comment="  # why"),
        ),
    ),
)
