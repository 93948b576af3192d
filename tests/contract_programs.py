"""Generated backends for the sizing contracts (KVI008, KVI009) and their truth.

Each program is an attention backend in the shape SGLang's are: ``__init__``
keeps a context size, a draft-token count and a page size; a graph-state method
computes a buffer's size through locals, a branch, a module function or a
rounding, and allocates it in one of many spellings; another method writes it
as the contract's writer does (the tree mask copied in, or the index kernel
launched with lengths holding the draft tokens).

The truth is the program's own execution: the size is allocated (by a stub
``torch`` recording the element count) for every binding of a grid of sequence
counts, draft-token counts, contexts, page sizes and a flag, with
``max_num_tokens = max_bs * num_draft_tokens`` as SGLang's verify graph runner
passes it, and compared with what the writer writes at the context wall (the
contract's least size). Generated code only: nothing here runs an analysed file.
"""

from __future__ import annotations

import itertools
import random
import re
import textwrap

from lint_plugin.contracts import TARGET_VERIFY_KV_INDICES, VERIFY_CUSTOM_MASK

C, N, P = "self.max_context_len", "self.num_draft_tokens", "self.page_size"

GRID = {
    "max_bs": (1, 2, 3, 8),
    "num_draft_tokens": (1, 2, 3, 8),
    "max_context_len": (1, 2, 7, 64, 129),
    "page_size": (1, 2, 16),
    "flag": (False, True),
}


def least(code: str, b: dict) -> int:
    """What the contract's writer writes for the binding, at the context wall."""
    s, n, c = b["max_bs"], b["num_draft_tokens"], b["max_context_len"]
    if code == VERIFY_CUSTOM_MASK.code:
        return s * n * (c + n)
    assert code == TARGET_VERIFY_KV_INDICES.code
    return s * (c + n)


# A request's share, by contract: the right one, and ways to get it wrong.
PER_REQUEST = {
    VERIFY_CUSTOM_MASK.code: (
        f"({C} + {N})",
        f"({N} + {C})",
        f"{C}",
        f"({C} + {N} - 1)",
        f"({C} + 2 * {N})",
        f"(cdiv({C}, {P}) * {P} + {N})",
        f"(({C} + {P} - 1) // {P} * {P} + ({N} or 0))",
        f"({C} + 1)",
        f"max({C}, {N})",
        f"({C} // {P} * {P} + {N})",
    ),
    TARGET_VERIFY_KV_INDICES.code: (
        f"({C} + {N})",
        f"({C} + {N} - 1)",
        f"{C}",
        f"cdiv({C}, {P})",
        f"(cdiv({C}, {P}) * {P} + ({N} or 0))",
        f"(({C} + {P} - 1) // {P} * {P} + {N})",
        f"({C} + 2 * {N})",
        f"({C} + 1)",
        f"max({C} + {N}, 2 * {C})",
        f"({C} // {P} * {P} + {N})",
    ),
}

# The requests (and, for the mask, each request's draft tokens) it is multiplied by.
COUNTS = {
    VERIFY_CUSTOM_MASK.code: (
        f"max_bs * {N}",
        f"{N} * max_bs",
        "max_num_tokens",
        "max_bs",
        f"max_bs * max({N}, 1)",
        "max_num_tokens + max_bs",
    ),
    TARGET_VERIFY_KV_INDICES.code: (
        "max_bs",
        "max_num_tokens",
        "(max_bs + 1)",
        "max(max_bs, 2)",
    ),
}

_HEADER = """\
import functools

import torch

alloc_bytes = functools.partial(torch.zeros, dtype=torch.uint8)


def cdiv(a, b):
    return -(-a // b)


def per_request(context, draft):
    return {body}


class FooAttnBackend:
    def __init__(self, context, draft, page):
        self.max_context_len = context
        self.num_draft_tokens = draft
        self.page_size = page

    def init_cuda_graph_state(self, max_bs, max_num_tokens, flag):
{state}
"""

_MASK_WRITER = {
    "alias": """
    def replay(self, bs, seq_lens, spec_info):
        custom_mask = self.{name}
        custom_mask[: spec_info.custom_mask.shape[0]] = spec_info.custom_mask
""",
    "copy": """
    def replay(self, bs, seq_lens, spec_info):
        n = spec_info.custom_mask.numel()
        self.{name}[:n].copy_(spec_info.custom_mask)
""",
    "local": """
    def replay(self, bs, seq_lens, spec_info):
        mask = spec_info.custom_mask
        buf = self.{name}
        buf[: mask.shape[0]] = mask
""",
}

_KERNEL_WRITER = {
    "local": """
    def replay(self, bs, req_pool_indices, seq_lens, spec_info):
        kv_lens = seq_lens + self.num_draft_tokens
        kv_indptr = self.kv_indptr[: bs + 1]
        kv_indptr[1 : bs + 1] = torch.cumsum(kv_lens, dim=0)
        kv_indices = self.{name}
        create_flashinfer_kv_indices_triton[(bs,)](
            self.req_to_token,
            req_pool_indices,
            kv_lens,
            kv_indptr,
            None,
            kv_indices,
            self.req_to_token.stride(0),
        )
""",
    "branch": """
    def replay(self, bs, req_pool_indices, seq_lens, spec_info):
        if self.use_mla:
            kv_lens = seq_lens + spec_info.draft_token_num
        else:
            kv_lens = seq_lens
        create_flashinfer_kv_indices_triton[(bs,)](
            self.req_to_token,
            req_pool_indices,
            kv_lens,
            self.kv_indptr,
            None,
            self.{name}[: kv_lens.sum()],
            self.req_to_token.stride(0),
        )
""",
    "keywords": """
    def replay(self, bs, req_pool_indices, seq_lens, spec_info):
        create_flashinfer_kv_indices_triton[(bs,)](
            req_to_token_ptr=self.req_to_token,
            req_pool_indices_ptr=req_pool_indices,
            page_kernel_lens_ptr=seq_lens + self.num_draft_tokens,
            kv_indptr=self.kv_indptr,
            kv_start_idx=None,
            kv_indices_ptr=self.{name},
            req_to_token_ptr_stride=self.req_to_token.stride(0),
        )
""",
}

_PER_REQUEST_BODIES = (
    "context + draft",
    "context",
    "draft * (context + draft)",
    "context + draft - 1",
)


class Program:
    """One generated backend: ``source`` and what it was made of."""

    def __init__(self, code: str, source: str, parts: dict) -> None:
        self.code = code
        self.source = source
        self.parts = parts


def _allocation(rng: random.Random, size: str, dims: tuple[str, str] | None) -> str:
    """An allocator call of ``size`` elements (``dims``: the same as two)."""
    spellings = [
        f"torch.zeros([{size}], dtype=torch.uint8)",
        f"alloc_bytes(({size},))",
        f"torch.zeros(*[{size}])",
        f"torch.zeros(({size}), dtype=torch.uint8)",
        f"torch.zeros({size}, dtype=torch.int32)",
        f"torch.empty(({size},), dtype=torch.int32)",
        f"torch.zeros(size=({size},))",
        f"torch.full(({size},), 0, dtype=torch.int32)",
        f"torch.zeros({size}).view(-1)",
    ]
    if dims is not None:
        spellings.append(f"torch.zeros(({dims[0]}, {dims[1]}), dtype=torch.uint8)")
    return rng.choice(spellings)


def program(code: str, rng: random.Random) -> Program:
    """A generated backend for the contract ``code``."""
    count = rng.choice(COUNTS[code])
    per = rng.choice(PER_REQUEST[code])
    extra = rng.choice(("", "", "", " + 1", " + max_bs", " - 1"))
    size = f"{count} * {per}{extra}"
    lines: list[str] = []
    how = rng.choice(("inline", "local", "branch", "function", "aug"))
    if how == "local":
        lines += [f"per_req = {per}", f"size = {count} * per_req{extra}"]
        size = "size"
    elif how == "branch":
        other = f"{rng.choice(COUNTS[code])} * {rng.choice(PER_REQUEST[code])}"
        lines += [
            "if flag:",
            f"    size = {count} * {per}{extra}",
            "else:",
            f"    size = {other}",
        ]
        size = "size"
    elif how == "function":
        size = f"{count} * per_request({C}, {N}){extra}"
        per = f"per_request({C}, {N})"
    elif how == "aug":
        lines += [f"size = {count} * {C}", f"size += {count} * ({per} - {C}){extra}"]
        size = "size"
    body = rng.choice(_PER_REQUEST_BODIES) if how == "function" else "context"
    dims = (count, per) if how in ("inline", "function") and not extra else None
    call = _allocation(rng, size, dims)
    name = rng.choice(("cuda_graph_custom_mask", "buf", "cuda_graph_kv_indices"))
    if rng.random() < 0.3:
        lines += [f"local_buf = {call}", f"self.{name} = local_buf"]
    else:
        lines += [f"self.{name} = {call}"]
    state = textwrap.indent("\n".join(lines), " " * 8)
    writers = _MASK_WRITER if code == VERIFY_CUSTOM_MASK.code else _KERNEL_WRITER
    writer = rng.choice(sorted(writers))
    source = _HEADER.format(body=body, state=state) + writers[writer].format(name=name)
    return Program(code, source, {"how": how, "writer": writer, "size": size})


class _Tensor:
    def __init__(self, numel: int) -> None:
        self.numel = numel

    def view(self, *shape):
        return self


class _Torch:
    uint8 = int32 = "dtype"

    @staticmethod
    def _numel(shape) -> int:
        if isinstance(shape, int):
            return shape
        total = 1
        for dim in shape:
            total *= dim
        return total

    def _make(self, *args, size=None, **kwargs):
        shape = size if size is not None else args[0]
        return _Tensor(self._numel(shape))

    zeros = empty = _make

    def full(self, shape, value, **kwargs):
        return _Tensor(self._numel(shape))


class TreeMaskMode:
    QLEN_ONLY, FULL_MASK = 0, 1


def tree_mask_numel(mode, bs, num_draft_tokens, max_context_len):
    """SGLang 0.5.23's owner of the mask's size (verify_mask.py), as documented."""
    if mode == TreeMaskMode.QLEN_ONLY:
        return bs * num_draft_tokens * num_draft_tokens
    return bs * num_draft_tokens * (max_context_len + num_draft_tokens)


# What a fix imports, given as the stubs above when the program runs.
_STUB_IMPORTS = re.compile(
    r"^(import torch|from sglang\.[\w.]+ import [\w, ]+)\n", re.M
)


def sizes(source: str) -> dict[tuple, int]:
    """The element count the program allocates for each binding of the grid."""
    namespace: dict = {
        "torch": _Torch(),
        "tree_mask_numel": tree_mask_numel,
        "TreeMaskMode": TreeMaskMode,
    }
    exec(compile(_STUB_IMPORTS.sub("", source), "<generated>", "exec"), namespace)
    cls = namespace["FooAttnBackend"]
    found = {}
    for values in itertools.product(*GRID.values()):
        b = dict(zip(GRID, values, strict=True))
        backend = cls(b["max_context_len"], b["num_draft_tokens"], b["page_size"])
        tokens = b["max_bs"] * b["num_draft_tokens"]
        backend.init_cuda_graph_state(b["max_bs"], tokens, b["flag"])
        buffers = [v for v in vars(backend).values() if isinstance(v, _Tensor)]
        found[values] = buffers[0].numel
    return found


def short_at(code: str, source: str) -> list[dict]:
    """The bindings of the grid where the buffer is smaller than its writes."""
    found = []
    for values, numel in sizes(source).items():
        b = dict(zip(GRID, values, strict=True))
        if numel < least(code, b):
            found.append(b)
    return found


# The modules a fix imports the owner from, as a checked tree holds them.
TREE = (
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
BACKEND_PATH = "sglang/srt/layers/attention/foo_backend.py"
