"""KVI009: target-verify kv_indices too small for the draft tokens written (#27485).

The second sizing contract (:mod:`lint_plugin.contracts`): a backend whose
target verify fills a flat ``kv_indices`` buffer with each request's sequence
*and* its draft tokens (``create_flashinfer_kv_indices_triton`` given lengths
``seq_lens + num_draft_tokens``) must size it for both.
"""

from __future__ import annotations

from lint_plugin.contracts import TARGET_VERIFY_KV_INDICES as CONTRACT
from lint_plugin.engine.vocabulary import ALLOCATOR_WORDS, Needs
from lint_plugin.lazy import lazy
from lint_plugin.rules._rule import Example, Rule

TYPE_CHECKING = False  # not `typing`: the catalogue is read on every run
if TYPE_CHECKING:
    from lint_plugin.engine.checker import Checker

ast = lazy("ast")
shared = lazy("lint_plugin.rules._contract_buffers")
row_sizing = lazy("lint_plugin.engine.flow.row_sizing")
symbolic = lazy("lint_plugin.algebra.symbolic")
roles = lazy("lint_plugin.roles")
buffer_sizing = lazy("lint_plugin.engine.flow.buffer_sizing")
nodes = lazy("lint_plugin.engine.nodes")

_KERNEL = CONTRACT.writer.name

# A class naming the kernel and a draft-token count: what the engine reads whole.
NEEDS = Needs((CONTRACT.class_words,), where="class", facts=ALLOCATOR_WORDS)

_TEMPLATE = """\
import torch


class FooAttnBackend:
    def __init__(self, model_runner):
        self.max_context_len = model_runner.model_config.context_len
        self.num_draft_tokens = model_runner.server_args.speculative_num_draft_tokens

    def init_cuda_graph_state(self, max_bs: int, max_num_tokens: int):
        self.cuda_graph_kv_indices = torch.zeros(({width},), dtype=torch.int32)

    def init_forward_metadata_capture_cuda_graph(self, bs, req_pool_indices, seq_lens):
        kv_lens = seq_lens + self.num_draft_tokens
        kv_indptr = self.kv_indptr[: bs + 1]
        kv_indptr[1 : bs + 1] = torch.cumsum(kv_lens, dim=0)
        kv_indices = self.cuda_graph_kv_indices
        create_flashinfer_kv_indices_triton[(bs,)](
            self.req_to_token,
            req_pool_indices,
            kv_lens,
            kv_indptr,
            None,
            kv_indices,
            self.req_to_token.stride(0),
        )
"""

RULE = Rule(
    code="KVI009",
    name="unsized-target-verify-kv-indices",
    message=(
        "target-verify kv_indices size {text} can be less than {need} "
        "({witness}), what {kernel} writes with each request's `{lengths}` "
        "entries (row {row}) at the context wall{tokens}: reserve {draft} per "
        "request"
    ),
    fix_title=None,
    fix_safety=None,
    doc=f"""
## What it does
In a class read whole, finds a launch of `{_KERNEL}[grid](...)` whose per-request
lengths (its third argument, `page_kernel_lens_ptr`) add a draft-token count to
the sequence length on some path (`kv_lens = seq_lens + self.num_draft_tokens`,
AITER MLA's target verify), follows its `kv_indices` argument by its values on
every path to the allocations it may be (locals, `self.` attributes through every
assignment of the class, slices and views), and judges each torch allocation of
the class among them by its number of elements on every path, as KVI003 judges a
row: *sized* when it is at least `num_seqs * (context + num_draft_tokens)` for
all positive sizes, *unsized* when some values make it smaller (the message
names them), *not judged* otherwise (`check --statistics` counts those). A buffer
allocated per batch from its lengths' sum (`seq_lens_sum + draft * bs`) is held
to exactly what that batch writes, `seq_lens_sum + num_seqs * num_draft_tokens`.

The least size is what the kernel writes at SGLang's context wall: request `b`
writes `kv_lens[b]` entries at `kv_indptr[b]`, `kv_indptr` being the prefix sum
of the lengths, so `bs` requests write `sum(seq_lens) + bs * num_draft_tokens`,
and a running request's `seq_len` reaches `max_context_len`. A token count in
the size (`max_num_tokens`) is `max_bs * num_draft_tokens` there, as SGLang's
verify graph runner passes it. A draft-token count is any name
`...num_draft_tokens`, `draft_token_num` or `num_tokens_per_req`.

## Why is this bad?
The kernel writes past the end of the buffer: into whatever the CUDA caching
allocator put next, silently. SGLang's AITER backend sized this buffer
`max_bs * max_num_blocks_per_seq` from 0.5.10 to 0.5.12.post1 while its MLA
target verify wrote `seq_len + num_draft_tokens` per request; a near-full
sequence overflowed it (#27485). 0.5.13 reserves the draft slack.

## Example
```python
self.cuda_graph_kv_indices = torch.zeros(
    (max_bs * self.max_context_len,), dtype=torch.int32
)
...
kv_lens = seq_lens + self.num_draft_tokens
create_flashinfer_kv_indices_triton[(bs,)](
    self.req_to_token, req_pool_indices, kv_lens, kv_indptr, None,
    self.cuda_graph_kv_indices, self.req_to_token.stride(0),
)
```

Use instead:
```python
self.cuda_graph_kv_indices = torch.zeros(
    (max_bs * (self.max_context_len + self.num_draft_tokens),), dtype=torch.int32
)
```

A launch whose lengths are the sequence lengths alone (decode, the target verify
of backends that keep the draft tokens out of `kv_indices`) is not this
contract; a buffer the class does not allocate (`kv_indices_buf` handed in) is
not judged here.

## Fix safety
No fix: SGLang has no helper that owns this size (0.5.13 spells the slack
inline), and the slack belongs where the page rounding is.
""",
    valid=(
        Example(
            _TEMPLATE.format(
                width="max_bs * (self.max_context_len + self.num_draft_tokens)"
            )
        ),
        # The lengths are the sequences' alone: the buffer holds them.
        Example(
            _TEMPLATE.format(width="max_bs * self.max_context_len").replace(
                "kv_lens = seq_lens + self.num_draft_tokens", "kv_lens = seq_lens"
            )
        ),
        # AITER 0.5.13's spelling: pages rounded up, then the draft slack.
        Example(
            _TEMPLATE.format(
                width="max_bs * ((self.max_context_len + self.page_size - 1) "
                "// self.page_size * self.page_size + (self.num_draft_tokens or 0))"
            )
        ),
    ),
    invalid=(
        Example(_TEMPLATE.format(width="max_bs * self.max_context_len")),
        # AITER 0.5.12.post1's spelling, the lengths on one branch only.
        Example(
            _TEMPLATE.format(
                width="max_bs * ((self.max_context_len + self.page_size - 1) "
                "// self.page_size)"
            ).replace(
                "kv_lens = seq_lens + self.num_draft_tokens",
                "if self.use_mla:\n"
                "            kv_lens = seq_lens + self.num_draft_tokens\n"
                "        else:\n"
                "            kv_lens = seq_lens",
            )
        ),
        Example(_TEMPLATE.format(width="max_num_tokens * self.max_context_len // 2")),
    ),
)


def decide(checker: Checker) -> None:
    """One finding per allocation of a buffer the kernel fills with draft
    tokens, unsized on some path; a note for each one not judged."""
    shared.decide_contract(checker, CONTRACT, _writes, _report(checker))


def _writes(checker: Checker, cls):
    writer = CONTRACT.writer
    for method in shared.methods_naming(checker, cls, _KERNEL):
        function = method.function
        for node in shared.own_nodes(function, method.rows_of(_KERNEL)):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Subscript)
                and _name(node.func.value) == _KERNEL
            ):
                continue
            buffer = shared.argument(node, writer.argument, writer.keyword)
            lengths = shared.argument(node, writer.lengths, writer.lengths_keyword)
            if buffer is None or lengths is None:
                continue
            draft, per_request = _draft_tokens(checker, lengths, function)
            if draft is None:
                continue
            # The role is the symbol; the class's spelling is what a message says.
            draft = shared.class_size(cls, checker, draft.role, draft.text)
            yield shared.Write(
                node, function, buffer, {"num_draft_tokens": draft}, per_request
            )


def _name(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _may_name_draft(node, function, cls, depth: int = 0) -> bool:
    """Can the values of ``node`` hold a draft-token count? A quick test before
    the values are computed (it may say maybe, never wrongly no): a name of
    that role in it, in what its locals and ``self.`` attributes are assigned,
    or a call (whose value is followed into the function)."""
    if depth > 6:
        return True
    for sub in nodes.walk_nodes(node):
        if isinstance(sub, (ast.Call, ast.Subscript, ast.Lambda)):
            return True
        name = sub.id if isinstance(sub, ast.Name) else getattr(sub, "attr", None)
        if name is None:
            continue
        if roles.role_of_name(name) is roles.Role.NUM_DRAFT_TOKENS:
            return True
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
            bound = function.locals.all(sub.id)
            if not bound and sub.id not in function.params:
                return True  # a module's name, or an enclosing function's
            if any(b.value is None for b in bound):
                return True
            if any(_may_name_draft(b.value, function, cls, depth + 1) for b in bound):
                return True
        if (
            isinstance(sub, ast.Attribute)
            and isinstance(sub.value, ast.Name)
            and sub.value.id == "self"
            and cls is not None
        ):
            for f in cls.functions:
                for b in f.attrs.all(sub.attr):
                    if b.value is None or _may_name_draft(b.value, f, cls, depth + 1):
                        return True
    return False


def _draft_tokens(checker: Checker, lengths, function):
    """``(draft-token count, per request)``: the count the lengths add on
    some path (None when none does), and what one request writes at the wall
    when the lengths read exactly (a request's length plus draft tokens and
    integers: the length is the context size there), else None (the
    contract's own share, ``context + num_draft_tokens``)."""
    draft, shares = None, []
    if not _may_name_draft(lengths, function, function.cls):
        return None, None
    for alt in checker.values(lengths, function):
        syms = list(symbolic.symbols(alt.value))
        drafts = [s for s in syms if s.role is roles.Role.NUM_DRAFT_TOKENS]
        if not drafts:
            continue
        draft = draft or drafts[0]
        lengths_ = {s for s in syms if s.role is None and not s.opaque}
        if len(lengths_) == 1 and all(
            s in lengths_ or s.role is roles.Role.NUM_DRAFT_TOKENS for s in syms
        ):
            share = symbolic.replace(alt.value, {lengths_.pop(): buffer_sizing.CONTEXT})
            if share not in shares:
                shares.append(share)
        else:
            shares.append(None)
    per_request = shares[0] if len(shares) == 1 else None
    return draft, per_request


def _report(checker: Checker):
    def report(allocation, judgement, write, cls) -> None:
        path = judgement.unsized[0]
        lengths = shared.argument(
            write.node, CONTRACT.writer.lengths, CONTRACT.writer.lengths_keyword
        )
        message = RULE.message.format(
            text=row_sizing.describe_path(path, checker.source),
            need=symbolic.render(path.goal),
            draft=write.sizes["num_draft_tokens"].text,
            witness=row_sizing.describe_witness(path),
            kernel=_KERNEL,
            lengths=checker.source.segment(lengths),
            row=checker.source.position(checker.span(write.node)[0])[0],
            tokens=shared.tokens_note(judgement, CONTRACT),
        )
        checker.add(RULE.code, checker.span(path.row.shown), message)

    return report
