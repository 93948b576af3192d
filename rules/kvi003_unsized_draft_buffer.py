"""KVI003: the CI gate against the #27338 bug, a draft kv_indices row too small.

The rule judges a row by its value on every path, the bug's own definition: the
width analysis reads each allocation as rows, one per path, and
:mod:`lint_plugin.engine.flow.row_sizing` calls a row sized when it is at least
``num_seqs * topk * context`` for all positive sizes, unsized when a binding shows
it smaller, not judged otherwise. This module decides what is reported, and the
unsafe fix.
"""

from __future__ import annotations

from lint_plugin.engine.vocabulary import (
    ALLOCATOR_WORDS,
    BUFFER_WIDTH,
    CONTEXT,
    DRAFT_CLASS,
    Needs,
)
from lint_plugin.findings import Fix
from lint_plugin.lazy import lazy
from lint_plugin.roles import (
    CONTEXT_ROLES,
    SEQUENCE_COUNT_NAMES,
    Role,
)
from lint_plugin.rules._rule import Example, Rule

TYPE_CHECKING = False  # not `typing`: the catalogue is read on every run
if TYPE_CHECKING:
    from lint_plugin.engine.checker import Checker
    from lint_plugin.engine.facts import ClassFacts
    from lint_plugin.engine.flow.row_sizing import Judgement

# ast too: a run whose files pass no byte test parses nothing.
ast = lazy("ast")
alternatives = lazy("lint_plugin.engine.flow.alternatives")
formulas = lazy("lint_plugin.engine.formulas")
row_sizing = lazy("lint_plugin.engine.flow.row_sizing")
scopes = lazy("lint_plugin.engine.flow.scopes")
symbolic = lazy("lint_plugin.algebra.symbolic")
topk_refusal = lazy("lint_plugin.engine.topk_refusal")
values = lazy("lint_plugin.engine.values")
nodes = lazy("lint_plugin.engine.nodes")

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

# The buffer made by a method of the class: judged at the call, with its argument.
_HELPER = """\
import torch


class FooMultiStepDraftBackend:
    def __init__(self, topk):
        self.topk = topk

    def _alloc_rows(self, width):
        return torch.zeros((self.speculative_num_steps, width), dtype=torch.int32)

    def init_cuda_graph_state(self, max_bs: int, max_num_tokens: int):
        self.cuda_graph_kv_indices = self._alloc_rows({width})
"""

_BODY = """\
import functools

import torch

PAD = 64


def round_up(x, multiple):
    return (x + multiple - 1) // multiple * multiple


def row_width(count, context):
    return count * context


class Base:
    def __init__(self, max_bs):
        self.row = max_bs * self.max_context_len


class FooMultiStepDraftBackend(Base):
    def __init__(self, topk, speculative_num_steps):
        self.topk = topk
        self.speculative_num_steps = speculative_num_steps

    def init_cuda_graph_state(self, max_bs: int, max_num_tokens: int, flag: bool):
{body}"""


def _method(*lines: str) -> str:
    """A method body of ``_BODY`` (each line indented once more per 4 spaces)."""
    return _BODY.format(body="".join(f"        {line}\n" for line in lines))


_STEPS = "self.speculative_num_steps"
_REFUSE = (
    "        self.topk = topk\n",
    "        if topk > 1:\n"
    '            raise ValueError("only topk=1 is supported")\n'
    "        self.topk = topk\n",
)
_ALLOC = f"self.cuda_graph_kv_indices = torch.zeros(({_STEPS}, width))"

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

# A topk beside a draft step count (or the kernel, or a multi-step class name)
# and any context size (every context-sized role), or a multi-step class name
# and a context size (its topk may be a base's), or the width helper; only in a
# class read whole, from its allocation calls.
NEEDS = Needs(
    (
        ((Role.TOPK,), DRAFT_CLASS, CONTEXT),
        (("MultiStep",), CONTEXT),
        ((BUFFER_WIDTH,),),
    ),
    where="class",
    facts=ALLOCATOR_WORDS,
)

# Where no reachable counterexample exists the message says what the fit rests
# on: every instance is sized today, and still upstream sizes it with the helper.
_FITS_ONLY = (
    "draft kv_indices buffer width {text} fits num_seqs * topk * {context} "
    "only {clauses}: size it with "
    "draft_kv_indices_buffer_width(num_seqs, topk, max_context_len)"
)
_UNDECIDED = (
    "draft kv_indices buffer width {text} is not proven to fit "
    "num_seqs * topk * {context}, and no counterexample is found given that "
    "{clauses}: size it with "
    "draft_kv_indices_buffer_width(num_seqs, topk, max_context_len)"
)

RULE = Rule(
    code="KVI003",
    name="unsized-draft-kv-indices-buffer",
    message=(
        "draft kv_indices buffer width {text} can be less than "
        "num_seqs * topk * {context} ({witness}): size it with "
        "draft_kv_indices_buffer_width(num_seqs, topk, max_context_len)"
    ),
    fix_title="Size the row with `draft_kv_indices_buffer_width(...)`",
    fix_safety="unsafe",
    doc="""
## What it does
Checks every per-step `kv_indices` buffer a multi-step draft attention backend
allocates with torch, and reports one whose row can hold fewer than
`num_seqs * topk * context` entries on some path through the code: what the
draft index kernel writes into a row, and what
`draft_kv_indices_buffer_width(num_seqs, topk, max_context_len)` returns. The
width is judged by its value, not its spelling: `max_bs * self.max_context_len`
is reported, a helper call padded or rounded up is not, and a width made in a
local, a base class or a function of the file is followed to where it is made.

The message gives sizes that make the row too small, where an instance can have
them. Where none can, the row is still reported (it is sized by something its
allocation does not state, and upstream sizes it with the helper) and the
message says what its fit rests on instead: the class's `__init__` refuses
`topk > 1` (FlashInfer MLA's draft backend: the row fits only while topk <= 1,
which `__init__` enforces; a subclass or a change that lifts it would overflow
the row), or the width is a token count, `max_num_tokens * max_context_len`, which
fits only while `max_num_tokens` is at least `num_seqs * topk` (SGLang's draft
graph runner passes `max_bs * topk`), a premise the class does not check.

A draft backend is known by what it does: the class keeps a topk (`self.topk`)
and either keeps a draft step count (`self.speculative_num_steps`), launches the
draft index kernel (`generate_draft_decode_kv_indices[...]`) or is named like
`...MultiStepDraftBackend`. A class so named, or naming such a class as a base
(`class EagleDraftRunner(TritonMultiStepDraftBackend)`), also keeps the topk its
bases keep (SGLang's TRT-LLM draft backends pass theirs to FlashInfer's), and
their bases in turn: a base defined in the file, or imported by name from a module of
the same source tree (found as KVI007 finds one; `check`'s cache then depends
on that module too). A base outside the tree, or named through a module
(`mod.Base`), is not read. A class keeping no topk writes one branch per
request, so its `max_bs * max_context_len` row is right, and it is never a
finding.

A row is judged by its value on every path, which is the bug's own definition:
it is *sized* on a path when it is at least `num_seqs * topk * context` for all
positive values of the sizes (context: `max_context_len`, `context_len`, a
sliding window size), *unsized* when some values make it smaller (the message
names the path's defining row, and such values or what the row's fit rests on),
and *not judged* when it holds something the analysis cannot evaluate. A finding
when any path is unsized, at that path's width;
`draft-kv-lint check --explain FILE:ROW` prints every path of the allocation at
that row (headed with the row and column `check` reports), its width and its
verdict, and `--statistics` counts those not judged.

What a message may take as given, so that no counterexample names an instance
that cannot exist: a refusal of `topk > 1` that every instance runs, a statement
of the class's own `__init__` that raises for every topk above one (`if topk >
1: raise ...`, `if self.topk not in (0, 1): raise ...`, an `else:` or `elif`
branch that raises) with no statement before it that may return. What it tests
must be the value the class keeps: the parameter that the class's only
assignment of its topk (`self.topk = topk`, a statement of `__init__` itself)
keeps, never rebound, or `self.topk` after that assignment. And nothing else may
give an instance another topk: no base class, metaclass or decorator, the
instance never handed out of its methods (`widen(self)`, `return self`), no
`setattr`/`__dict__`/`vars` write, and the class named nowhere else in the file
but in calls making instances (so no subclass or patch of it there; one in another
module is not seen: that is why the message names the premise).
Not a refusal: an `assert` (`python -O` drops it), one in a branch of another
test (`if flag:`), in another method, under `try` or `with`, of another name or
of a bound it allows (`if topk > 2: raise`), a test another condition may pass
(`if not (topk == 1 or flag): raise`), a warning that does not raise, or any
where the class assigns its topk elsewhere too. Where the row is too small even with topk 1, the message
gives such values, topk 1 among them. A token count (`max_num_tokens`) is taken
as `max_bs * topk` only for the message, never for the verdict.

What is evaluated: integer literals and arithmetic (`+ - * // % ** << >>`), `max`,
`min`, `abs`, `int(...)`, `x or y`, `sum`/`math.prod` of a tuple, rounding up
(`cdiv`, `-(-x // b)`, `(x + b - 1) // b`, `math.ceil(x / b)`),
`next_power_of_2`, conditional expressions, and the two helpers (as their
formulas, of their arguments' values: `topk = 1` passed as the topk is 1, not a
topk; `max(self.topk, 1)` and `self.topk or 1` are at least one). Names are
followed through every definition that reaches them (`if`/`elif`/`else`,
`try`/`except`, loops, early returns, augmented assignment, tuple unpacking,
walrus; a step count too where it is unpacked from a call's value, `steps, w
= self._dims(max_bs)`), `self.` attributes through every assignment in the class and in the
file's base classes, module constants, and the returns of the module's functions
and methods called with the arguments' values (no recursion). A parameter, an
attribute of another object, or a `self.` attribute naming a topk, a step count
or a context size is that size (and SGLang's `req_to_token_pool.size`, a
slot per request, a sequence count); a name of no known role is a size of its
own, free to be any positive value. Branch conditions on known sizes
(`if self.topk == 1:`, `if self.topk in (1, 2):`, `match self.topk:` with
`case 1:` or `case 1 | 2:` and their guards) hold on their paths, the
allocation's own enclosing tests among them, with `and`, `or` and `not`.
Arithmetic is never None. The backend's topk is None only without speculation
(SGLang's `speculative_eagle_topk`), where no draft step runs: a path that takes
it to be None (`if self.topk is None:`, `!= None`, `k = 1 if self.topk is None
else self.topk`, a helper's `if topk is not None:` given `self.topk`) is not
judged; `self.topk or 1` is never None.
Any other size may be None (a topk parameter defaulting to None, a second topk
attribute beside `self.topk`), so its `is not None` test goes either way. A
test (or a `match` subject) of a name that holds a different size
on paths that exclude one another (`k = self.topk if self.topk > 1 else 1`,
then `if k == 1:`) holds where some path's tests and its value do, when those
tests read only sizes and literals, each size spelt one way, in code holding no
`nonlocal` or `global`. A test of anything else may go either way, the same way
each time it is tested.

What is opaque (not judged): a call the analysis cannot read (a function of
another module, a method of another object), what a loop adds to a width it had
before the loop (`w += ...` in a loop: the rounds' count is the loop's; the path
that skips the loop is judged, with the loop's test on entry, so `while
self.topk > 1:` is skipped only where topk is 1), a subscript of something that
is no tuple, a width with no sequence
count in it but a name that may be one. A token count (`max_num_tokens`) is at
least the sequence count, and never assumed to hold the topk: a row of
`max_num_tokens * max_context_len` is right only by an unstated invariant, and
it is a finding (whose message names that invariant; a row too small even under
it gets values where the token count is `max_bs * topk`).

Every way to state the buffer is read: shapes as a tuple, a list,
`torch.Size(...)`, starred parts and concatenation, a shape variable, `size=`,
varargs; every torch allocator (`empty`, `zeros`, `ones`, `full`,
`empty_strided`, `rand*`), `Tensor.new_*`, and the names a file gives them
(`alloc = torch.zeros`, `functools.partial(torch.empty, ...)`,
`from torch import zeros as z`); `(steps, WIDTH)`, flat `(steps * WIDTH,)` (also
viewed as `.view(steps, -1)`), `(steps, count, context)`, a row repeated per step
(`.repeat(steps, 1)`, `.expand(steps, -1)`; a view or a repeat only where
nothing but a shape-keeping method such as `.contiguous()` follows it), and rows
allocated one per step (a comprehension, or a loop appending them, over
`range(steps)`).
Buffers assigned to another per-step name (`kv_indptr`, masks, also through a
view or a repeat of the allocation) are not kv_indices rows.

A buffer made by a function or method of the file (`_alloc_rows(steps, width)`,
`self._make_rows(max_bs * self.max_context_len)`) is judged at the call (`f(...)`
or `self.f(...)`), with the values the call gives the parameters: what the
function returns (alone, or a local it returns) or assigns to an attribute not
named as another per-step buffer; a scratch local, or an element of a returned
tuple (which buffer it becomes is the caller's unpacking), is not. The finding
points at the argument that is the row's width, else at the call, naming the
width's value and the function (no fix there). A function calling such a
function is read the same way, four calls deep. A method of the class is also
judged where it allocates, its parameters read as sizes of their roles
(`max_bs`), so its call adds only the rows the call changes. Not read (no
finding, and not counted as not judged): a function of more than 50 rows (a
method building a whole metadata set, not an allocation helper),
one with a decorator other than `staticmethod`/`classmethod`, or with
`*args`/`**kwargs`, a call with starred
arguments, a lambda, a `functools.partial` of a function, a bound method kept in
an attribute, a method of another object, a function of another module.

## Why is this bad?
The index kernel writes `topk` branches for every sequence, so a row must hold
`num_seqs * topk * max_context_len` entries. `max_bs * self.max_context_len` is the
real bug: with `topk > 1` the kernel writes past the row and corrupts memory
(upstream #27338, #27460). `max_num_tokens * self.max_context_len` is right only
because `max_num_tokens` happens to be `max_bs * topk` today: an invariant nobody
states and any caller can break. A class that refuses `topk > 1` (FlashInfer
MLA's) holds its row today, and overruns it the day that refusal is lifted.

What "sized" is measured against: upstream's helper, `num_seqs * topk *
max_context_len`, whose premise is that every request's `seq_len + num_steps <=
max_context_len`. SGLang does not keep that premise: a running request may reach
`max_req_len = context_len - 1` (`srt/managers/tp_worker.py`), and the draft steps
write `num_steps` slots beyond it, so at the context wall the kernel writes up to
`topk * (num_steps - 1)` entries per request past a row this rule calls sized
(upstream's own kernel: 132 entries into the 128-wide row of
`draft_kv_indices_buffer_width(1, 2, 64)`, one request of `seq_len` 63, topk 2, 3
steps). A sized row is necessary, not sufficient: only a capacity guard before
the launch (KVI006) turns that overrun into an error; `draft-kv-lint prove
--kernel` derives the condition and shows the overrun.

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
the width is not `count * context` where it is made (a flat or 3-D buffer, a
helper given a non-topk), when another path is unsized too or not judged, when
the function has no sequence count, or when the value made there reaches
anything but the rows reported with it: another buffer sized from the same
local, attribute or method, a test or a call given it, or a mention the walk
cannot follow (`getattr(self, "w")`, a reference to the method), since the
rewrite would change those too. The topk is the class's, spelt through the name
the method reaches the instance by (`backend.topk` in
`def init_cuda_graph_state(backend, ...)`); no fix where no name does (a width
made in a module function, a static or class method, a method that rebinds
that name).
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
        # By value on every path: where topk is 1 the row needs no topk factor.
        Example(
            _method(
                "if self.topk > 1:",
                "    width = draft_kv_indices_buffer_width(max_bs, self.topk, self.max_context_len)",
                "else:",
                "    width = max_bs * self.max_context_len",
                _ALLOC,
            )
        ),
        # Rounded up to a multiple, bounded below, at least a topk.
        Example(
            _method(
                "width = round_up(max_bs * self.topk * self.max_context_len, PAD)",
                _ALLOC,
            )
        ),
        Example(
            _method(
                "width = max(max_bs * max(self.topk, 1), 1) * self.max_context_len",
                _ALLOC,
            )
        ),
        Example(
            _method(
                "width = max_bs * (self.topk or 1) * self.max_context_len + PAD",
                _ALLOC,
            )
        ),
        # Rows allocated one per step, through an allocator's partial.
        Example(
            _method(
                "alloc = functools.partial(torch.empty, dtype=torch.int32)",
                "self.rows = [",
                "    alloc(draft_kv_indices_buffer_width(max_bs, self.topk, self.max_context_len))",
                f"    for _ in range({_STEPS})",
                "]",
            )
        ),
        # A path that cannot be taken: the body of the try raises whenever the
        # early return let the method go on.
        Example(
            _method(
                "if not flag:",
                "    return",
                "try:",
                "    if flag:",
                "        raise ValueError",
                "    width = max_bs * self.max_context_len",
                "except ValueError:",
                "    width = draft_kv_indices_buffer_width(max_bs, self.topk, self.max_context_len)",
                _ALLOC,
            )
        ),
        # Not judged: a width of another module's function.
        Example(_method("width = compute_width(max_bs)", _ALLOC)),
        Example(
            _HELPER.format(
                width="draft_kv_indices_buffer_width(max_bs, self.topk, self.max_context_len)"
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
        # Refusing topk > 1 in __init__ keeps it sized today, not by its width:
        # still a finding, whose message names the refusal.
        Example(
            _TEMPLATE.replace(_REFUSE[0], _REFUSE[1]).format(
                width="max_bs * self.max_context_len"
            ),
            _FIXED.replace(_REFUSE[0], _REFUSE[1]),
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
        # One path is enough: a branch, a default a branch keeps, a conditional.
        Example(
            _method(
                "width = draft_kv_indices_buffer_width(max_bs, self.topk, self.max_context_len)",
                "if flag:",
                "    width = max_bs * self.max_context_len",
                _ALLOC,
            )
        ),
        Example(
            _method(
                "width = (max_bs * self.topk if flag else max_bs) * self.max_context_len",
                _ALLOC,
            )
        ),
        # Operators read soundly: `- 1` and `max(max_bs, 1)` lose the bound.
        Example(
            _method("width = (max_bs - 1) * self.topk * self.max_context_len", _ALLOC)
        ),
        Example(_method("width = max(max_bs, 1) * self.max_context_len", _ALLOC)),
        # A local holding 1 is no topk; a sliding window is a context size.
        Example(
            _method(
                "topk = 1",
                "width = draft_kv_indices_buffer_width(max_bs, topk, self.max_context_len)",
                _ALLOC,
            )
        ),
        Example(_method("width = max_bs * self.sliding_window_size", _ALLOC)),
        # Every way to state the buffer.
        Example(
            _method(
                "alloc = torch.empty",
                f"self.buf = alloc({_STEPS}, max_bs * self.max_context_len)",
            )
        ),
        Example(
            _method(
                f"shape = ({_STEPS},) + (max_bs * self.max_context_len,)",
                "self.buf = torch.zeros(torch.Size([*shape]))",
            )
        ),
        Example(
            _method(
                "self.rows = []",
                f"for _ in range({_STEPS}):",
                "    self.rows.append(torch.zeros(max_bs * self.max_context_len))",
            )
        ),
        Example(
            _method(
                f"self.buf = torch.zeros({_STEPS} * max_bs * self.max_context_len).view(",
                f"    {_STEPS}, -1",
                ")",
            )
        ),
        # Flowing from a base class of the file and a function of the module.
        Example(_method(f"self.buf = torch.zeros(({_STEPS}, self.row))")),
        Example(_method("width = row_width(max_bs, self.max_context_len)", _ALLOC)),
        # A handler starts from any point of its try: each name still has one
        # value there, and one argument of the min has no topk.
        Example(
            _method(
                "n, k, ctx = max_bs, self.topk, self.max_context_len",
                "try:",
                "    if flag:",
                "        raise ValueError",
                "    width = draft_kv_indices_buffer_width(n, k, ctx)",
                "except ValueError:",
                "    width = min(n * k * ctx, k * n * ctx, ctx * n * k, n * ctx)",
                _ALLOC,
            )
        ),
        # Made by a method of the class: found at the call's argument, no fix.
        Example(_HELPER.format(width="max_bs * self.max_context_len")),
    ),
)


def decide(checker: Checker) -> None:
    """One finding per kv_indices allocation that can be unsized on a path; a
    note for each one not judged."""
    facts = checker.facts
    found = row_sizing.judgements(facts, checker.analysis)
    owners = {
        id(allocation): cls
        for cls in facts.classes
        for allocation in (*cls.allocations, *cls.calls)
    }
    reported = _reported_sites(found)
    for judgement in found:
        verdict = judgement.verdict
        if verdict == row_sizing.SIZED:
            continue
        if verdict == row_sizing.NOT_JUDGED:
            first = judgement.paths[0].row
            reasons = "; ".join(
                dict.fromkeys(p.reason for p in judgement.paths if p.reason)
            )
            checker.note(
                "KVI003",
                checker.span(first.shown),
                f"draft kv_indices buffer width not judged: {reasons}",
            )
            continue
        cls = owners[id(judgement.allocation)]
        _report(judgement, facts, checker, reported, cls)


def _reported_sites(found: list[Judgement]) -> dict[int, list[ast.Call]]:
    """The allocation calls reported with each site (by the id of the node
    their width is made at): the fix there sizes them all."""
    sites: dict[int, list[ast.Call]] = {}
    for judgement in found:
        if judgement.verdict in (row_sizing.SIZED, row_sizing.NOT_JUDGED):
            continue
        for path in judgement.unsized:
            if path.row.site is not None:
                calls = sites.setdefault(id(path.row.site[0]), [])
                calls.append(judgement.allocation.call)
    return sites


def _report(judgement: Judgement, facts, checker: Checker, reported, cls) -> None:
    path = judgement.unsized[0]
    row = path.row
    context = next(
        (
            s.text.split(".")[-1]
            for s in symbolic.symbols(path.goal)
            if s.role in CONTEXT_ROLES
        ),
        "max_context_len",
    )
    message = _message(judgement, path, cls, checker, context)
    fix = None
    others_sized = all(
        p.verdict == row_sizing.SIZED for p in judgement.paths if p is not path
    )
    if (
        row.written is not None
        and row.site is not None
        and others_sized
        and judgement.allocation in cls.allocations
    ):
        fix = _unsafe_fix(cls, row.site, judgement.allocation, facts, checker, reported)
    checker.add("KVI003", checker.span(row.shown), message, fix)


def _message(judgement: Judgement, path, cls, checker: Checker, context: str) -> str:
    """The counterexample, where one can happen; else what the row's fit
    rests on (a refusal of ``topk > 1``, the token-count premise). A path
    that fits under those does not hide another unsized path that does not:
    the message then names that one (the finding stays where it was)."""
    reading, clauses = read_unsized(path, cls, judgement.allocation, checker)
    for other in judgement.unsized if reading.fits else ():
        if other is not path:
            found = read_unsized(other, cls, judgement.allocation, checker)
            if not found[0].fits:
                reading, clauses = found
                break
    text = row_sizing.describe_path(reading.path, checker.source)
    if not reading.fits and reading.witness is not None:
        return RULE.message.format(
            text=text,
            context=context,
            witness=row_sizing.describe_witness(reading.path, reading.witness),
        )
    template = _FITS_ONLY if reading.fits else _UNDECIDED
    return template.format(text=text, context=context, clauses=clauses)


def read_unsized(path, cls, allocation, checker: Checker):
    """``(reading, clauses)``: the unsized ``path`` of an allocation of
    ``cls`` read under what the class allows and its callers pass
    (:func:`lint_plugin.engine.flow.row_sizing.read_unsized`), and what that
    reading rests on, as the message and ``check --explain`` say it."""
    refusal = topk_refusal.refusal_of(
        cls.node, cls.topk_attr, checker.analysis.module.source.text
    )
    reading = row_sizing.read_unsized(
        path,
        checker.analysis,
        f"self.{cls.topk_attr}" if cls.topk_attr else "topk",
        refusal is not None,
        f"self.{cls.topk_attr}" if cls.keeps_one_topk else None,
    )
    seqs = _sequence_count(allocation)
    passed = " and ".join(f"{t} = {seqs} * topk" for t in reading.tokens)
    where = f"row {refusal.row + checker.source.row_offset}" if refusal else ""
    if not reading.fits:
        given = [f"callers pass {passed}"] if reading.tokens else []
        if reading.refused:
            given.append(f"{refusal.class_name}.__init__ refuses topk > 1 ({where})")
        return reading, " and ".join(given)
    clauses = []
    if reading.tokens:
        least = " and ".join(f"{t} is at least num_seqs * topk" for t in reading.tokens)
        clauses.append(
            f"while {least} (SGLang's draft graph runner passes max_bs * topk; "
            "the class does not check it)"
        )
    if reading.refused:
        clauses.append(
            f"while topk <= 1, which {refusal.class_name}.__init__ enforces "
            f"({where}; a subclass or a change that lifts it would overflow the row)"
        )
    return reading, " and ".join(clauses)


def _sequence_count(allocation) -> str:
    """How the allocating function names the callers' batch size."""
    node = getattr(allocation.function, "node", None)
    params = []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = node.args
        params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    return next((n for n in SEQUENCE_COUNT_NAMES if n in params), "max_bs")


def _unsafe_fix(
    cls: ClassFacts, site, allocation, facts, checker: Checker, reported
) -> Fix | None:
    """``count * context`` where the width is made -> the helper with the
    class's topk; only where that value reaches nothing but the rows reported
    with it (``reported``: see ``_reported_sites``)."""
    node, scope = site
    if scope.source is not checker.source or cls.topk_attr is None:
        return None
    parts = values.factors(node)
    if len(parts) != 2:
        return None
    analysis = checker.analysis
    function = _function_of(cls, scope, allocation)
    roles = [
        alternatives.role_of_value(checker.values(p, function, at=node)) for p in parts
    ]
    contexts = [r in CONTEXT_ROLES for r in roles]
    if contexts.count(True) != 1:
        return None
    index = contexts.index(True)
    mcl, count, count_role = parts[index], parts[1 - index], roles[1 - index]
    if not isinstance(count, (ast.Name, ast.Attribute)) or count_role not in (
        None,
        Role.NUM_SEQS,
        Role.TOKENS,
    ):
        return None
    instance = scopes.instance_name(cls.node, scope)
    if instance is None:
        return None  # no name here reaches the class's topk
    # Only a fix needs it: a check with no finding of this rule never does.
    from lint_plugin.rules._width_reach import reaches_only

    ends = reported.get(id(node), [])
    if not reaches_only(site, ends, facts, analysis, analysis.module.source.text):
        return None
    count_text = checker.source.segment(count)
    note = "the row grows by the topk factor"
    if count_role is Role.TOKENS:
        known = set(scope.params) | _locals_of(scope)
        seqs = next((n for n in SEQUENCE_COUNT_NAMES if n in known), None)
        if seqs is None:
            return None
        note = f"{count_text} is replaced by the sequence count {seqs} times topk"
        count_text = seqs
    content = formulas.render_helper_call(
        checker.settings.spell(BUFFER_WIDTH),
        (count_text, f"{instance}.{cls.topk_attr}", checker.source.segment(mcl)),
    )
    message = f"Size the row with `{content}` (changes the allocation: {note})"
    return Fix("unsafe", message, (checker.edit(checker.span(node), content),))


def _function_of(cls: ClassFacts, scope, allocation):
    for function in cls.functions:
        if function.node is scope.node:
            return function
    return allocation.function


def _locals_of(scope) -> set[str]:
    """Names assigned in the scope and the scopes around it."""
    names: set[str] = set()
    while scope is not None and not scope.is_module:
        for node in nodes.walk_nodes(scope.node):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
        names |= set(scope.params)
        scope = scope.parent
    return names
