"""KVI005: a helper's name bound outside the helpers module."""

from __future__ import annotations

from lint_plugin.engine.vocabulary import BUFFER_WIDTH, USED_LEN, Needs
from lint_plugin.lazy import lazy
from lint_plugin.rules._rule import Example, Rule

TYPE_CHECKING = False  # not `typing`: the catalogue is read on every run
if TYPE_CHECKING:
    from lint_plugin.engine.checker import Checker

# ast too: a run whose files pass no byte test parses nothing.
ast = lazy("ast")

# A helper's name.
NEEDS = Needs((((USED_LEN, BUFFER_WIDTH),),))

RULE = Rule(
    code="KVI005",
    name="shadowed-draft-kv-indices-helper",
    message=(
        "`{name}` is bound here ({kind}) outside {module}: "
        "a local copy of the helper is trusted by nobody"
    ),
    fix_title=None,
    fix_safety=None,
    doc="""
## What it does
Finds a binding of `draft_kv_indices_buffer_width` or `draft_kv_indices_used_len`
anywhere but the helpers module, by any form Python has, in any scope:

- a `def` or `class` of that name, or a `type` alias;
- an assignment to it: `=` (also unpacked: `a, draft_kv_indices_used_len = ...`),
  an augmented (`+=`) or annotated one, or a bare annotation;
- a `for`, `with ... as` or comprehension target;
- an assignment expression (`(draft_kv_indices_buffer_width := ...)`), also in a
  comprehension;
- a function's or lambda's parameter (`def f(draft_kv_indices_buffer_width=...)`,
  `*args`, keyword-only, `**kwargs` alike), or a type parameter;
- an `except ... as` target, a `match` capture (`case draft_kv_indices_used_len:`,
  `case [*draft_kv_indices_used_len]`, `case {**draft_kv_indices_used_len}`,
  `case ... as draft_kv_indices_used_len`);
- a `del` of it;
- an import of it from another module, or of a module under its name.

A `global` or `nonlocal` declaration binds nothing itself (the binding it
redirects is the finding), and an attribute (`self.draft_kv_indices_buffer_width
= ...`) is not the name. KVI003 and KVI004 trust a call by a helper's name
nowhere in a file that binds the name so (nor in one with a `*` import from a
module other than the helpers module: it may bind any name).

The helpers module is `sglang.srt.speculative.spec_utils` unless the
`helpers-module` setting names another (`[tool.draft-kv-lint]`,
`--helpers-module`, flake8's `--kvi-helpers-module`); draft-kv-lint's own
reference runtime (`lint_plugin.runtime`) is trusted too. Imports from a trusted
module, under any alias, are not findings.

## Why is this bad?
KVI003 trusts a width made by `draft_kv_indices_buffer_width(...)`. A local
function of the same name that forgets the topk factor would pass every check
while allocating the very buffer the helper exists to prevent (upstream #27338).
The helpers are correct because there is exactly one of each.

## Example
```python
def draft_kv_indices_buffer_width(num_seqs, topk, max_context_len):
    return num_seqs * max_context_len
```

## Use instead
```python
from sglang.srt.speculative.spec_utils import draft_kv_indices_buffer_width
```

## Fix safety
No fix: whether the local copy or the call sites are wrong is for a person to
decide.
""",
    valid=(
        Example(
            "from sglang.srt.speculative.spec_utils import draft_kv_indices_buffer_width\n"
        ),
        Example(
            "from sglang.srt.speculative.spec_utils import (\n"
            "    draft_kv_indices_used_len as used_len,\n)\n"
        ),
        Example("from lint_plugin.runtime import draft_kv_indices_used_len\n"),
        Example("import sglang.srt.speculative.spec_utils as spec_utils\n"),
        # An attribute is not the name.
        Example(
            "class Backend:\n"
            "    def __init__(self):\n"
            "        self.draft_kv_indices_buffer_width = len\n"
        ),
    ),
    invalid=(
        Example(
            "def draft_kv_indices_buffer_width(num_seqs, topk, max_context_len):\n"
            "    return num_seqs * max_context_len\n"
        ),
        Example("draft_kv_indices_used_len = lambda s, t, b, n: s + b * n\n"),
        Example("from mylib.sizes import draft_kv_indices_buffer_width\n"),
        Example(
            "class Backend:\n"
            "    def draft_kv_indices_buffer_width(self, n, t, c):\n"
            "        return n * c\n"
        ),
    ),
)


def decide(checker: Checker) -> None:
    from lint_plugin import bindings

    if checker.settings.is_helpers_file(checker.path):
        return  # the helpers' home defines them
    for binding in checker.facts.helper_bindings:
        node = binding.node
        kind = bindings.WORDS[binding.kind]
        if isinstance(binding.statement, ast.ImportFrom):
            kind = f"an import from {_module(binding.statement)}"
        start, end = checker.span(node)
        if binding.kind in _BLOCKS:  # the header line, not the body
            end = start + len(checker.source.text[start:end].split("\n", 1)[0])
        message = RULE.message.format(
            name=binding.name, kind=kind, module=checker.settings.helpers_module
        )
        checker.add("KVI005", (start, end), message)


# Bindings whose node holds a body (lint_plugin.bindings' kinds): the finding
# is its first line.
_BLOCKS = ("function", "class", "except target")


def _module(node: ast.ImportFrom) -> str:
    return "." * node.level + (node.module or "")
