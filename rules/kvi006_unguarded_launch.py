"""KVI006: a draft index-kernel launch with no capacity check before it."""

from __future__ import annotations

from lint_plugin.engine.vocabulary import GUARD, KERNEL, USED_LEN, Needs
from lint_plugin.findings import Fix
from lint_plugin.lazy import lazy
from lint_plugin.roles import Role, role_of_name
from lint_plugin.rules._rule import Example, Rule

TYPE_CHECKING = False  # not `typing`: the catalogue is read on every run
if TYPE_CHECKING:
    from lint_plugin.engine.checker import Checker
    from lint_plugin.engine.facts import ClassFacts, FunctionFacts, Launch

# ast too: a run whose files pass no byte test parses nothing.
ast = lazy("ast")
arith = lazy("lint_plugin.algebra.arith")
facts = lazy("lint_plugin.engine.facts")
formulas = lazy("lint_plugin.engine.formulas")
scopes = lazy("lint_plugin.engine.flow.scopes")
symbolic = lazy("lint_plugin.algebra.symbolic")
nodes = lazy("lint_plugin.engine.nodes")

# A launch of the index kernel, in a class read whole; guards are facts too.
NEEDS = Needs((((KERNEL,),),), where="class", facts=(KERNEL, GUARD))

_BACKEND = """\
import torch


class FooMultiStepDraftBackend:
    def __init__(self, topk, speculative_num_steps):
        self.topk = topk
        self.speculative_num_steps = speculative_num_steps

    def common_template(self, forward_batch, kv_indices_buffer, call_fn):
        num_seqs = forward_batch.batch_size
        bs = self.topk * num_seqs
        seq_lens_sum = forward_batch.seq_lens_sum

{guard}        generate_draft_decode_kv_indices[
            (self.speculative_num_steps, num_seqs, self.topk)
        ](
            forward_batch.req_pool_indices,
            self.req_to_token,
            forward_batch.seq_lens,
            kv_indices_buffer,
            self.kv_indptr,
            forward_batch.positions,
            self.pool_len,
            kv_indices_buffer.shape[1],
            self.kv_indptr.shape[1],
            num_seqs,
            self.speculative_num_steps,
            bs,
            self.page_size,
        )
"""

_UPSTREAM_GUARD = """\
        required_kv_indices_len = draft_kv_indices_used_len(
            seq_lens_sum, self.topk, bs, self.speculative_num_steps
        )
        assert_buffer_fits(
            required_kv_indices_len,
            kv_indices_buffer.shape[1],
            "EAGLE draft kv_indices row (size max_bs * topk * max_context_len)",
            bs=bs,
            seq_lens_sum=seq_lens_sum,
        )

"""

_BOUND = """\
        if seq_lens_sum is None:
            # Only clamps slices: an upper bound saves a device sync.
            seq_lens_sum = num_seqs * self.max_context_len

"""

_BOUND_GUARDED = (
    _BOUND.rstrip("\n")
    + "\n        else:\n"
    + "\n".join(
        "    " + line if line else line for line in _UPSTREAM_GUARD.split("\n")
    ).rstrip("\n")
    + "\n\n"
)

RULE = Rule(
    code="KVI006",
    name="unguarded-draft-kv-indices-launch",
    message=(
        "{kernel} writes `{buffer}` with no capacity check before it in this "
        "function: check draft_kv_indices_used_len(..., num_steps) against "
        "`{buffer}.shape[1]` first{why}"
    ),
    fix_title="Insert upstream's `assert_buffer_fits(...)` guard before the launch",
    fix_safety="unsafe",
    doc="""
## What it does
In a multi-step draft backend, finds a launch of the draft index kernel
(`generate_draft_decode_kv_indices[grid](...)`, called directly or through
`self.`) whose `kv_indices` buffer is not checked for capacity earlier in the
same function. A check is `assert_buffer_fits(used, buffer.shape[1], ...)`,
`assert used <= buffer.shape[1]` or `if used > buffer.shape[1]: raise ...`, where
`used` is the length used over all draft steps:
`draft_kv_indices_used_len(seq_lens_sum, topk, bs, num_steps)` with the step
count, or its inline formula (itself KVI001), directly or through a local. A check
of another buffer, or of one step's length (`i + 1`), does not count; nor does one
of a buffer name (or `self.` attribute) assigned again between the check and the
launch, or one in a lambda's body (it runs only if the lambda is called; a check
in a nested `def` is that function's). Where the check stands is not otherwise
judged: one under an `if` or in a `try` counts, as the fix's own guard on the
branch where `seq_lens_sum` is real does.

The rule is on by default (in `check`, the flake8 plugin and `fix`, and in
`--select KVI`): even a row sized by upstream's helper can be overrun at the
context wall, and only this check stops it (see below). A team that sizes its
rows to SGLang's envelope instead of guarding says so in its configuration
(`ignore = ["KVI006"]` or a `per-file-ignores` entry in
`[tool.draft-kv-lint]`), or with `# noqa: KVI006` and the reason on the launch.

## Why is this bad?
The kernel bounds its writes per row, not against the buffer: an undersized
buffer is silent memory corruption of the neighbouring rows (upstream #27338,
#27460). A host-side check right before the launch costs no device sync and turns
the corruption into an error naming the sizes.

A row sized by the helper is not enough by itself.
`draft_kv_indices_buffer_width(num_seqs, topk, max_context_len)` holds row `i`
only while every request keeps `seq_len + num_steps <= max_context_len`, and
SGLang does not keep that: a running request may reach
`max_req_len = context_len - 1` (`sglang/srt/managers/tp_worker.py`:
`max_req_len = min(context_len - 1, ...)`, lines 304-305 in 0.5.12.post1 and 0.5.13,
568-569 in 0.5.23), and the draft steps add `num_steps` slots beyond it. SGLang's
`req_to_token` rows carry `4 + num_draft_tokens` slots of headroom for exactly
this (0.5.23 `sglang/srt/mem_cache/allocation_sizing.py:104`: "FIXME(lsyin):
temporary fix for the context length issue under spec decoding"; 0.5.13
`sglang/srt/mem_cache/common.py:201`); the kv_indices rows have none.
Upstream's own kernel writes 132 entries into the 128-wide row of
`draft_kv_indices_buffer_width(1, 2, 64)` with one request of `seq_len` 63,
topk 2 and 3 steps. Upstream hit the same wall in FA3's draft page table
(#29516, #29665) and proposed sizing these rows from `req_to_token.shape[1]`
(#29695, #29696, not merged). Until the rows are sized to the envelope, the
guard before the launch (`assert_buffer_fits`) is what turns that overrun into
a clean error instead of a silent write.

## Example
```python
generate_draft_decode_kv_indices[(self.speculative_num_steps, num_seqs, self.topk)](
    ..., kv_indices_buffer, ...
)
```

## Use instead
```python
required_kv_indices_len = draft_kv_indices_used_len(
    seq_lens_sum, self.topk, bs, self.speculative_num_steps
)
assert_buffer_fits(
    required_kv_indices_len,
    kv_indices_buffer.shape[1],
    "EAGLE draft kv_indices row (size max_bs * topk * max_context_len)",
    bs=bs,
    seq_lens_sum=seq_lens_sum,
)
generate_draft_decode_kv_indices[...](..., kv_indices_buffer, ...)
```

What the guard checks holds in both of 0.5.23's draft-decode modes: without a
draft window the used length is exact (the kernel writes exactly
`seq_lens_sum * topk + bs * num_steps` entries of the row); with one
(`window_size`/`sink_size`) a row holds
`topk * sum(min(seq_len, window + sink)) + bs * num_steps` entries and the
used length is an upper bound of it. Either way a row of
`draft_kv_indices_buffer_width(max_bs, topk, max_context_len)` suffices while
every request keeps `seq_len + num_steps <= max_context_len`, so the guard
never fires on such a row below the context wall; at the wall (or on a row
sized smaller) it fires before the kernel can write past the row.

## Fix safety
Unsafe, applied only with `--unsafe-fixes`: it adds a run-time check that raises
where the program used to run on (into corrupted memory). It inserts upstream's
guard before the launch with the function's own names for the buffer,
`seq_lens_sum`, `bs`, the class's topk and step count (through the name the
method reaches the instance by: `me.topk` in `def common_template(me, ...)`;
no fix where that name is rebound in the method), and imports
`assert_buffer_fits` from the guard module and the helper from the helpers
module. The guard module is `guard-module` when configured; else where the file
already imports `assert_buffer_fits` from, else where the tree defines it
(0.5.23's `sglang.kernels.ops.attention.utils`, 0.5.13's
`sglang.srt.layers.attention.utils`, or another module of the package), else
`sglang.srt.layers.attention.utils`; `fix` adds the guard's definition to that
module when it is in the tree and lacks it (KVI007).

The guard is only inserted where the length it checks is the real one. Where
the function replaces a missing `seq_lens_sum` by an upper bound before the
launch (Triton's `if seq_lens_sum is None: seq_lens_sum = num_seqs *
self.max_context_len`, which only clamps slices), a guard after that line would
exceed the row by construction and fire on every valid eager step: the guard
goes into an `else:` of that `if`, where `seq_lens_sum` is the real sum, or, when
the code has another shape, no fix is offered and the message says why. No fix
is offered either when one of the guard's names is not bound before the launch;
the message says which.
""",
    valid=(
        Example(_BACKEND.format(guard=_UPSTREAM_GUARD)),
        Example(
            _BACKEND.format(
                guard="        used = seq_lens_sum * self.topk + bs * self.speculative_num_steps\n"
                "        assert used <= kv_indices_buffer.shape[1], used\n"
            )
        ),
        Example(
            _BACKEND.format(
                guard="        if draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, self.speculative_num_steps) > kv_indices_buffer.shape[1]:\n"
                "            raise RuntimeError('kv_indices too small')\n"
            )
        ),
        # The buffer rebound before the guard: the guard checks the launched one.
        Example(
            _BACKEND.format(
                guard="        kv_indices_buffer = self.cuda_graph_kv_indices\n"
                + _UPSTREAM_GUARD
            )
        ),
        # Not a draft backend: no topk kept.
        Example(
            _BACKEND.format(guard="")
            .replace("self.topk = topk", "self.page_size = 1")
            .replace("self.topk", "1")
        ),
    ),
    invalid=(
        Example(
            _BACKEND.format(guard=""),
            _BACKEND.format(guard=_UPSTREAM_GUARD),
            unsafe=True,
        ),
        # A missing sum replaced by an upper bound: the guard goes where the
        # sum is real.
        Example(
            _BACKEND.format(guard=_BOUND),
            _BACKEND.format(guard=_BOUND_GUARDED),
            unsafe=True,
        ),
        # The bound taken unconditionally: no branch knows the real sum, no fix.
        Example(
            _BACKEND.format(
                guard="        seq_lens_sum = num_seqs * self.max_context_len\n\n"
            )
        ),
        # A guard of one step's length, or of another buffer, does not count.
        Example(
            _BACKEND.format(
                guard="        assert draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, 1) <= kv_indices_buffer.shape[1]\n"
            )
        ),
        Example(
            _BACKEND.format(
                guard="        assert_buffer_fits(draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, self.speculative_num_steps), self.kv_indptr.shape[1], 'x')\n"
            )
        ),
        # A guard of a buffer rebound before the launch, or one that runs only
        # if a lambda is called, does not count either.
        Example(
            _BACKEND.format(
                guard=_UPSTREAM_GUARD
                + "        kv_indices_buffer = self.cuda_graph_kv_indices\n"
            )
        ),
        Example(
            _BACKEND.format(
                guard="        check = lambda: assert_buffer_fits(draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, self.speculative_num_steps), kv_indices_buffer.shape[1], 'x')\n"
            )
        ),
    ),
)


def decide(checker: Checker) -> None:
    for cls in checker.facts.classes:
        if not cls.is_draft_backend:
            continue
        for launch in cls.launches:
            buffer = _buffer(launch.call)
            if buffer is None:
                continue
            at = facts.position(launch.call)
            if any(
                facts.position(guard) < at
                and _checks(guard, buffer, launch, checker)
                and _holds_at_launch(guard, buffer, launch, checker)
                for guard in launch.function.guards
            ):
                continue
            fix, why = _fix(cls, launch, buffer, checker)
            message = RULE.message.format(
                kernel=KERNEL,
                buffer=checker.source.segment(buffer),
                why=f" (no fix: {why})" if why else "",
            )
            checker.add("KVI006", checker.span(launch.call.func), message, fix)


def _buffer(call: ast.Call) -> ast.expr | None:
    """The kernel's ``kv_indices`` argument (the fourth)."""
    for keyword in call.keywords:
        if keyword.arg == "kv_indices":
            return keyword.value
    if len(call.args) > 3 and not any(
        isinstance(a, ast.Starred) for a in call.args[:4]
    ):
        return call.args[3]
    return None


def _checks(guard: ast.AST, buffer: ast.expr, launch: Launch, checker: Checker) -> bool:
    """Does ``guard`` check the full used length against ``buffer``'s row?"""
    pair = _compared(guard)
    if pair is None:
        return False
    used, capacity = pair
    return _is_row_of(capacity, buffer) and _is_full_used_len(
        used, guard, launch, checker
    )


def _holds_at_launch(
    guard: ast.AST, buffer: ast.expr, launch: Launch, checker: Checker
) -> bool:
    """Is the guard run where it stands (not a lambda's body, which runs only
    if called: a guard in a nested ``def`` is that function's), and is the
    buffer it checked the one launched (no assignment to it in between)?"""
    analysis = checker.analysis
    frame = analysis.frame_of(launch.function)
    stmt = analysis.statement(frame, guard) if isinstance(guard, ast.Call) else None
    if stmt is not None and any(
        isinstance(node, ast.Lambda)
        and any(n is guard for n in nodes.walk_nodes(node.body))
        for node in nodes.walk_nodes(stmt)
    ):
        return False
    if isinstance(buffer, ast.Name):
        bound = launch.function.locals.before(buffer.id, facts.position(launch.call))
    else:
        attr = facts.self_attribute(buffer)
        if attr is None:
            return True
        bound = launch.function.attrs.before(attr, facts.position(launch.call))
    return bound is None or bound.at < facts.position(guard)


def _compared(guard: ast.AST) -> tuple[ast.expr, ast.expr] | None:
    """``(used, capacity)`` of a guard, if it has the shape of one."""
    if isinstance(guard, ast.Call):
        used = guard.args[0] if guard.args else _keyword(guard, "used")
        capacity = guard.args[1] if len(guard.args) > 1 else _keyword(guard, "capacity")
        return None if used is None or capacity is None else (used, capacity)
    if isinstance(guard, ast.Assert):
        return _ordered(guard.test, fits=True)
    if isinstance(guard, ast.If) and any(isinstance(s, ast.Raise) for s in guard.body):
        return _ordered(guard.test, fits=False)
    return None


def _ordered(test: ast.expr, fits: bool) -> tuple[ast.expr, ast.expr] | None:
    """``used <= capacity`` (``fits``) or ``used > capacity``, either way round."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    small, large = (ast.LtE, ast.Lt), (ast.GtE, ast.Gt)
    if isinstance(op, small if fits else large):
        return left, right
    if isinstance(op, large if fits else small):
        return right, left
    return None


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _is_row_of(capacity: ast.expr, buffer: ast.expr) -> bool:
    """``buffer.shape[1]`` (or ``[-1]``, ``.size(1)``) of the same buffer."""
    if isinstance(capacity, ast.Subscript):
        shape, index = capacity.value, capacity.slice
        if not (isinstance(shape, ast.Attribute) and shape.attr == "shape"):
            return False
        owner = shape.value
    elif isinstance(capacity, ast.Call) and len(capacity.args) == 1:
        func = capacity.func
        if not (isinstance(func, ast.Attribute) and func.attr == "size"):
            return False
        owner, index = func.value, capacity.args[0]
    else:
        return False
    row = _integer(index)
    return row in (1, -1) and ast.dump(owner) == ast.dump(buffer)


def _integer(node: ast.expr) -> int | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _integer(node.operand)
        return None if value is None else -value
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _is_full_used_len(used: ast.expr, guard, launch: Launch, checker: Checker) -> bool:
    """On every path, ``used`` is the used length through all the draft steps:
    ``draft_kv_indices_used_len(..., num_steps)`` with the step count, or its
    formula (read by value, through locals and branches)."""
    at = guard if isinstance(guard, ast.stmt) else used
    alts = checker.values(used, launch.function, at=at)
    return bool(alts) and all(_full(a.value) for a in alts)


def _full(value) -> bool:
    if isinstance(value, symbolic.Op) and value.kind == "helper":
        if value.info != USED_LEN:
            return False
        steps = value.args[3]
        return isinstance(steps, symbolic.Sym) and steps.role is Role.NUM_STEPS
    tree = arith.build(value, symbolic.SYMBOLIC)
    if not isinstance(tree, arith.Sum):
        return False
    match = formulas.match_used_len(tree)
    if match is None or not match.whole:
        return False
    steps = match.args[3][0]
    return getattr(steps, "role", None) is Role.NUM_STEPS


# ---- the fix ---------------------------------------------------------------

_REQUIRED = "required_kv_indices_len"
_WHAT = "EAGLE draft kv_indices row (size max_bs * topk * max_context_len)"


def _fix(
    cls: ClassFacts, launch: Launch, buffer, checker: Checker
) -> tuple[Fix | None, str]:
    function = launch.function
    at = facts.position(launch.call)
    seq_lens_sum = _bound_name(function, at, "seq_lens_sum", Role.SEQ_LENS_SUM)
    bs = _bound_name(function, at, "bs", None)
    steps = sorted(a for a in cls.attributes if role_of_name(a) is Role.NUM_STEPS)
    missing = [
        what
        for what, value in (
            ("`seq_lens_sum`", seq_lens_sum),
            ("`bs`", bs),
            ("a topk attribute", cls.topk_attr),
            ("a step-count attribute", steps),
        )
        if not value
    ]
    if missing:
        return None, f"no {' or '.join(missing)} in scope before the launch"
    instance = scopes.instance_name(cls.node, function)
    if instance is None:
        return None, "no name here reaches the instance (its topk and step count)"
    if _REQUIRED in function.locals:
        return None, f"`{_REQUIRED}` is already a local here"
    statement = _statement_of(function.node, launch.call)
    if statement is None:
        return None, "the launch is not a statement of its own"
    names = [bs] + ([buffer.id] if isinstance(buffer, ast.Name) else [])
    # Only a fix needs it: every check of a draft backend imports this rule.
    from lint_plugin.rules._guard_placement import place_guard

    place = place_guard(function, statement, seq_lens_sum, names, checker.source)
    if place.at is None:
        return None, place.reason
    indent = place.indent
    step = "speculative_num_steps" if "speculative_num_steps" in steps else steps[0]
    buffer_text = checker.source.segment(buffer)
    lines = [
        f"{_REQUIRED} = {checker.settings.spell(USED_LEN)}(",
        f"    {seq_lens_sum}, {instance}.{cls.topk_attr}, {bs}, {instance}.{step}",
        ")",
        f"{GUARD}(",
        f"    {_REQUIRED},",
        f"    {buffer_text}.shape[1],",
        f'    "{_WHAT}",',
        f"    bs={bs},",
        f"    seq_lens_sum={seq_lens_sum},",
        ")",
        "",
        "",
    ]
    if place.header:
        # On the branch where the real length is known: a line of its own
        # after the `if`'s body, without the blank line kept before a launch.
        content = place.header + "\n".join(indent + line for line in lines[:-2])
        start = checker.source.index(*place.at)
        edit = checker.edit((start, start), content + "\n")
        return Fix("unsafe", RULE.fix_title or "", (edit,)), ""
    content = "\n".join(indent + line if line else "" for line in lines) + indent
    start = checker.source.index(*place.at)
    # Inserted where the launch statement starts: its own indentation stays.
    content = content[len(indent) :]
    edit = checker.edit((start, start), content)
    return Fix("unsafe", RULE.fix_title or "", (edit,)), ""


def _bound_name(
    function: FunctionFacts, at, preferred: str, role: Role | None
) -> str | None:
    """A name bound before ``at`` in ``function``: ``preferred`` or one of ``role``."""
    candidates = [preferred]
    scope: FunctionFacts | None = function
    while scope is not None:
        if role is not None:
            candidates += [p for p in scope.params if role_of_name(p) is role]
        scope = scope.parent
    for name in candidates:
        scope = function
        while scope is not None:
            if scope.locals.before(name, at) is not None or name in scope.params:
                return name
            scope = scope.parent
    return None


def _statement_of(function: ast.AST, call: ast.Call) -> ast.stmt | None:
    """The innermost statement of ``function`` holding ``call``."""
    found = None
    for node in nodes.walk_nodes(function):
        if (
            isinstance(node, ast.stmt)
            and node is not function
            and (node.lineno, node.col_offset) <= (call.lineno, call.col_offset)
            and (node.end_lineno, node.end_col_offset)
            >= (call.end_lineno, call.end_col_offset)
            and (
                found is None
                or (node.lineno, node.col_offset) >= (found.lineno, found.col_offset)
            )
        ):
            found = node
    return found
