"""KVI008: a target-verify custom mask too small for the tree mask copied in.

The verify mask contract (:mod:`lint_plugin.contracts`): a backend that copies
the spec's tree mask into a flat buffer of its own (``buf[: n] =
spec_info.custom_mask``, for its CUDA graph) must size it as SGLang's owner,
``tree_mask_numel(TreeMaskMode.FULL_MASK, ...)``, does (#29450, #29581,
#32920, #32691).
"""

from __future__ import annotations

from lint_plugin.contracts import VERIFY_CUSTOM_MASK as CONTRACT
from lint_plugin.engine.vocabulary import ALLOCATOR_WORDS, Needs
from lint_plugin.findings import Fix
from lint_plugin.lazy import lazy
from lint_plugin.roles import CONTEXT_ROLES, Role
from lint_plugin.rules._rule import Example, Rule

TYPE_CHECKING = False  # not `typing`: the catalogue is read on every run
if TYPE_CHECKING:
    from lint_plugin.engine.checker import Checker

ast = lazy("ast")
alternatives = lazy("lint_plugin.engine.flow.alternatives")
package_tree = lazy("lint_plugin.engine.package_tree")
scopes = lazy("lint_plugin.engine.flow.scopes")
values = lazy("lint_plugin.engine.values")
shared = lazy("lint_plugin.rules._contract_buffers")
statements = lazy("lint_plugin.statements")
row_sizing = lazy("lint_plugin.engine.flow.row_sizing")
symbolic = lazy("lint_plugin.algebra.symbolic")

_MASK = CONTRACT.writer.name  # the spec's attribute copied in

# A class naming the mask and a context size: what the engine reads whole.
NEEDS = Needs((CONTRACT.class_words,), where="class", facts=ALLOCATOR_WORDS)

_TEMPLATE = """\
import torch


class FooAttnBackend:
    def __init__(self, model_runner):
        self.max_context_len = model_runner.model_config.context_len
        self.num_draft_tokens = model_runner.server_args.speculative_num_draft_tokens

    def init_cuda_graph_state(self, max_bs: int, max_num_tokens: int):
        self.cuda_graph_custom_mask = torch.zeros(
            ({width}), dtype=torch.uint8, device="cuda"
        )

    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens, spec_info):
        custom_mask = self.cuda_graph_custom_mask
        custom_mask[: spec_info.custom_mask.shape[0]] = spec_info.custom_mask
"""

_IMPORTS = """\
from sglang.srt.layers.attention.verify_mask import tree_mask_numel
from sglang.srt.speculative.eagle_utils import TreeMaskMode
"""

_TREE = (
    ("sglang/__init__.py", ""),
    (
        "sglang/srt/layers/attention/verify_mask.py",
        "def tree_mask_numel(mode, bs, num_draft_tokens, max_context_len):\n"
        "    return bs * num_draft_tokens * (max_context_len + num_draft_tokens)\n",
    ),
    (
        "sglang/srt/speculative/eagle_utils.py",
        "class TreeMaskMode:\n    FULL_MASK = 1\n",
    ),
)

_ALLOCATION = """\
        self.cuda_graph_custom_mask = torch.zeros(
            ({width}), dtype=torch.uint8, device="cuda"
        )
"""
_FIXED_ALLOCATION = """\
        self.cuda_graph_custom_mask = torch.zeros(
            tree_mask_numel(
                TreeMaskMode.FULL_MASK,
                max_bs,
                self.num_draft_tokens or 1,
                self.max_context_len,
            ),
            dtype=torch.uint8,
            device="cuda",
        )
"""

RULE = Rule(
    code="KVI008",
    name="unsized-verify-custom-mask",
    message=(
        "verify custom mask size {text} can be less than num_seqs * {draft} * "
        "({context} + {draft}) ({witness}), what the copy of the tree mask at "
        "row {row} writes at the context wall{tokens}: size it with "
        "tree_mask_numel(TreeMaskMode.FULL_MASK, num_seqs, {draft}, {context})"
    ),
    fix_title="Size the mask with `tree_mask_numel(TreeMaskMode.FULL_MASK, ...)`",
    fix_safety="unsafe",
    doc="""
## What it does
In a class read whole, finds where the spec's tree mask is copied into a buffer
(`buf[: spec_info.custom_mask.shape[0]] = spec_info.custom_mask`, `buf[:
n].copy_(spec_info.custom_mask)`, through a local bound to the mask), follows the
buffer by its values on every path to the allocations it may be (locals, `self.`
attributes through every assignment of the class, slices and views), and judges
each torch allocation of the class among them by its number of elements on every
path, as KVI003 judges a row: *sized* when it is at least
`num_seqs * num_draft_tokens * (context + num_draft_tokens)` for all positive
sizes, *unsized* when some values make it smaller (the message names them),
*not judged* otherwise. A buffer allocated per batch from its lengths' sum is held
to exactly what that batch writes, `num_draft_tokens * (seq_lens_sum + num_seqs *
num_draft_tokens)`.

That least size is SGLang's own: `tree_mask_numel(TreeMaskMode.FULL_MASK, bs,
num_draft_tokens, max_context_len)` (0.5.23, `srt/layers/attention/verify_mask.py`),
what the tree kernel writes at the context wall: request `b` owns
`num_draft_tokens * (seq_len + num_draft_tokens)` cells and a running request's
`seq_len` reaches `max_context_len`. A token count in the size
(`max_num_tokens`) is `max_bs * num_draft_tokens` there, as SGLang's verify
graph runner passes it; the message says so when it took one. A draft-token
count is any name `...num_draft_tokens`, `draft_token_num` or
`num_tokens_per_req`.

A size that is a call of the owner, `tree_mask_numel(mode, ...)` imported from
`sglang.srt.layers.attention.verify_mask`, is sized by SGLang's definition of what
the tree kernel writes in that mode. A buffer the class does not allocate is not
this rule's: `VerifyMask`'s buffer
(sized by `tree_mask_numel`), a mask FlashInfer packs into bits in its own
wrapper (`custom_mask_buf=`, checked against the packed length there), a
`kv_indices_buf` handed in.

## Why is this bad?
The copy writes past the end of the buffer: a torch error in eager mode, and
inside a captured CUDA graph a write into whatever lies beyond it. The Wave
backend of 0.5.23 allocates `max_bs * max_context_len` cells, short by the
whole `num_draft_tokens` factor; AITER's `max_num_tokens * max_context_len` is
short by `max_bs * num_draft_tokens ** 2` at the context wall (#29581). Five
backends "disagreed on size" before SGLang gave the mask one owner.

## Example
```python
self.cuda_graph_custom_mask = torch.zeros(
    (max_bs * self.max_context_len), dtype=torch.uint8
)
...
custom_mask = self.cuda_graph_custom_mask
custom_mask[: spec_info.custom_mask.shape[0]] = spec_info.custom_mask
```

Use instead:
```python
self.cuda_graph_custom_mask = torch.zeros(
    tree_mask_numel(
        TreeMaskMode.FULL_MASK, max_bs, self.num_draft_tokens, self.max_context_len
    ),
    dtype=torch.uint8,
)
```

## Fix safety
Unsafe (only with `--unsafe-fixes`): the allocation grows. The size written in
the allocation becomes the owner's call, with the method's sequence count (a
token count is replaced by it), the class's draft-token count (`self.num_draft_tokens
or 1`: SGLang's is None without speculation, where the mask is never copied into,
and the allocation must still run) and the size's context; `tree_mask_numel` and
`TreeMaskMode` are imported from the modules that define them in the checked tree
(`verify_mask`, `eagle_utils`). No fix where the tree defines neither, where the
size is made elsewhere than the allocation, where no sequence count or draft-token
count is in reach, or where the class's `__init__` does not assign the draft-token
count in its body (before the allocation, when that is in `__init__`).
""",
    valid=(
        Example(
            _TEMPLATE.format(
                width="max_bs * self.num_draft_tokens * "
                "(self.max_context_len + self.num_draft_tokens)"
            )
        ),
        # Sized by the owner, imported from its module.
        Example(
            _IMPORTS
            + _TEMPLATE.format(width="max_bs * self.max_context_len").replace(
                _ALLOCATION.format(width="max_bs * self.max_context_len"),
                _FIXED_ALLOCATION,
            )
        ),
        # A copy into a buffer the class does not allocate (VerifyMask's).
        Example(
            _TEMPLATE.format(width="max_bs * self.max_context_len").replace(
                "custom_mask = self.cuda_graph_custom_mask",
                "custom_mask = self._verify_mask.buffer",
            )
        ),
        # FlashInfer: the wrapper packs the mask into bits and checks the fit.
        Example(
            _TEMPLATE.format(width="max_num_tokens * self.max_context_len").replace(
                "        custom_mask = self.cuda_graph_custom_mask\n"
                "        custom_mask[: spec_info.custom_mask.shape[0]] = "
                "spec_info.custom_mask\n",
                "        return dict(custom_mask_buf=self.cuda_graph_custom_mask)\n",
            )
        ),
    ),
    invalid=(
        Example(
            _IMPORTS + _TEMPLATE.format(width="max_bs * self.max_context_len"),
            fixed=_IMPORTS
            + _TEMPLATE.format(width="max_bs * self.max_context_len").replace(
                _ALLOCATION.format(width="max_bs * self.max_context_len"),
                _FIXED_ALLOCATION,
            ),
            unsafe=True,
            path="sglang/srt/layers/attention/foo_backend.py",
            tree=_TREE,
        ),
        Example(_TEMPLATE.format(width="max_num_tokens * self.max_context_len")),
        Example(
            _TEMPLATE.format(width="max_bs * self.max_context_len").replace(
                "        custom_mask = self.cuda_graph_custom_mask\n"
                "        custom_mask[: spec_info.custom_mask.shape[0]] = "
                "spec_info.custom_mask\n",
                "        n = spec_info.custom_mask.numel()\n"
                "        self.cuda_graph_custom_mask[:n].copy_(spec_info.custom_mask)\n",
            )
        ),
    ),
)


def decide(checker: Checker) -> None:
    """One finding per allocation of a buffer the tree mask is copied into,
    unsized on some path; a note for each one not judged."""
    shared.decide_contract(checker, CONTRACT, _writes, _report(checker))


def _writes(checker: Checker, cls):
    draft = None
    for method in shared.methods_naming(checker, cls, _MASK):
        function, rows = method.function, method.rows_of(_MASK)
        # The copy names the mask on its row, or a local bound to it there
        # (`mask = spec_info.custom_mask`): its rows are read too.
        for name in method.assigned_on(rows):
            rows = rows | method.rows_of(name)
        for node in shared.own_nodes(function, rows):
            pair = _copy(node)
            if pair is None or not _spec_mask(pair[1], function):
                continue
            if draft is None:
                draft = shared.class_size(
                    cls, checker, Role.NUM_DRAFT_TOKENS, "num_draft_tokens"
                )
            yield shared.Write(node, function, pair[0], {"num_draft_tokens": draft})


def _copy(node):
    """``(destination, source)`` of ``dst[...] = src`` or ``dst.copy_(src)``."""
    if (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Subscript)
    ):
        return node.targets[0], node.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "copy_"
    ):
        source = node.args[0] if node.args else None
        for keyword in node.keywords:
            if keyword.arg == "src":
                source = keyword.value
        return (node.func.value, source) if source is not None else None
    return None


# What a mask may go through on its way to the copy: the same cells.
_AS_IS = frozenset({"to", "view", "reshape", "flatten", "contiguous", "bool", "byte"})


def _spec_mask(node, function, depth: int = 0) -> bool:
    """Is ``node`` the spec's tree mask: ``<spec>.custom_mask`` (not one of
    the class's own), as it is or converted (``.to(torch.uint8)``,
    ``.view(-1)``), or a local bound to such (or to None on another path)?"""
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _AS_IS
    ):
        node = node.func.value
    if isinstance(node, ast.Attribute):
        owner = node.value
        return node.attr == _MASK and not (
            isinstance(owner, ast.Name) and owner.id == "self"
        )
    if isinstance(node, ast.Name) and depth < 4:
        values = [b.value for b in function.locals.all(node.id)]
        masks = [
            v
            for v in values
            if v is not None and not (isinstance(v, ast.Constant) and v.value is None)
        ]
        return any(_spec_mask(v, function, depth + 1) for v in masks) and all(
            _spec_mask(v, function, depth + 1)
            or (isinstance(v, ast.Call) and _names(v, node.id))
            for v in masks
        )
    return False


def _names(call, name: str) -> bool:
    """``name.to(...)`` and the like: a conversion of the local itself."""
    while isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
        if call.func.attr not in _AS_IS:
            return False
        call = call.func.value
    return isinstance(call, ast.Name) and call.id == name


def _report(checker: Checker):
    def report(allocation, judgement, write, cls) -> None:
        path = judgement.unsized[0]
        draft = write.sizes["num_draft_tokens"].text
        context = shared.context_text(path)
        message = RULE.message.format(
            text=row_sizing.describe_path(path, checker.source),
            draft=draft,
            context=context,
            witness=row_sizing.describe_witness(path),
            row=checker.source.position(checker.span(write.node)[0])[0],
            tokens=shared.tokens_note(judgement, CONTRACT),
        )
        fix = _fix(checker, allocation, judgement, path, cls, draft)
        checker.add(RULE.code, checker.span(path.row.shown), message, fix)

    return report


def _fix(checker: Checker, allocation, judgement, path, cls, draft: str):
    """The size where the allocation writes it -> the owner's call; only where
    every other path is sized, the size is a product of a sequence count (or
    a token count, given the method's sequence count) and a context size
    written in the allocation, the class keeps a draft-token count, and the
    tree defines what the call needs while the file binds none of it."""
    row = path.row
    if row.written is None or row.site is None:
        return None
    if any(p.verdict != row_sizing.SIZED for p in judgement.paths if p is not path):
        return None
    node, scope = row.site
    if scope.source is not checker.source or not draft.startswith("self."):
        return None
    parts = values.factors(node)
    if len(parts) != 2:
        return None
    roles = [
        alternatives.role_of_value(checker.values(part, allocation.function, at=node))
        for part in parts
    ]
    contexts = [role in CONTEXT_ROLES for role in roles]
    if contexts.count(True) != 1:
        return None
    context, count = parts[contexts.index(True)], parts[1 - contexts.index(True)]
    count_role = roles[1 - contexts.index(True)]
    if count_role is Role.NUM_SEQS and isinstance(count, (ast.Name, ast.Attribute)):
        count_text = checker.source.segment(count)
    elif count_role is Role.TOKENS:
        count_text = shared.sequence_count(scope, allocation)
    else:
        return None
    if (
        count_text is None
        or not _importable(checker)
        or not _assigned_before(cls, draft[5:], allocation)
    ):
        return None
    instance = scopes.instance_name(cls.node, scope)  # walks the method: last
    if instance is None:
        return None
    owner = CONTRACT.owner
    # None without speculation (SGLang's speculative_num_draft_tokens), where
    # the mask is never copied into: sized for one, the allocation still runs.
    content = owner.call.format(
        num_seqs=count_text,
        num_draft_tokens=f"{instance}{draft[4:]} or 1",
        context=checker.source.segment(context),
    )
    # Inside the call's own brackets, where a `(` can only be grouping.
    opening = checker.source.text.index("(", checker.span(allocation.call.func)[1])
    inside = (opening + 1, checker.span(allocation.call)[1] - 1)
    span = checker.source.widen_to_parens(checker.span(node), inside)
    note = "the mask grows to what the copy writes"
    if count_role is Role.TOKENS:
        note += f"; `{checker.source.segment(count)}` becomes {count_text}"
    message = f"Size the mask with `{content}` (changes the allocation: {note})"
    return Fix("unsafe", message, (checker.edit(span, content),))


def _assigned_before(cls, attr: str, allocation) -> bool:
    """Does the class's own ``__init__`` assign ``self.<attr>`` in a statement
    of its body (on every path), before the allocation when the allocation is
    in ``__init__`` itself? Else the draft count the fix reads may not be
    there yet."""
    init = next(
        (f for f in cls.functions if f.node.name == "__init__" and f.parent is None),
        None,
    )
    if init is None:
        return False
    at = allocation.call.lineno if allocation.function is init else None
    for stmt in init.node.body:
        if at is not None and stmt.lineno >= at:
            return False
        for target in statements.assignment(stmt)[0]:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
                and target.attr == attr
            ):
                return True
    return False


def _importable(checker: Checker) -> bool:
    """Does the tree define each name the owner's call needs, where the
    contract imports it from, while this file binds none of them otherwise?"""
    import re

    text = checker.module.source.text
    for module, name in CONTRACT.owner.imports:
        home = package_tree.module_home(module, 0, checker.path)
        if home is None or package_tree.defines(home.path, name) is not True:
            return False
        if re.search(rf"\b{name}\b", text) and not re.search(
            rf"^from {re.escape(module)} import [^#\n]*\b{name}\b(?! as)",
            text,
            re.M,
        ):
            return False  # bound or used otherwise: the call might mean it
    return True
