"""KVI008 and KVI009 on spellings a backend author writes (an outside review's
cases): where the buffer is made, how the write reaches it, what the lengths
add. Fixit style: each snippet is valid (no finding of its rule) or invalid
(exactly one), on check's regions and on a whole walk alike."""

from __future__ import annotations

import pytest
from rule_snippets import codes, full_walk_codes

from lint_plugin.linter import lint_source

MASK = """\
import torch


class {base}:
{base_body}

class FooAttnBackend({base}):
    def __init__(self, model_runner):
        self.max_context_len = model_runner.model_config.context_len
        self.num_draft_tokens = model_runner.server_args.speculative_num_draft_tokens

    def init_cuda_graph_state(self, max_bs: int, max_num_tokens: int):
{alloc}

    def replay(self, bs, seq_lens, spec_info):
{write}
"""

SHORT = (
    "        self.cuda_graph_custom_mask = torch.zeros(max_bs * self.max_context_len)"
)
SIZED = (
    "        self.cuda_graph_custom_mask = torch.zeros(\n"
    "            max_bs * self.num_draft_tokens"
    " * (self.max_context_len + self.num_draft_tokens)\n"
    "        )"
)
COPY = (
    "        custom_mask = self.cuda_graph_custom_mask\n"
    "        custom_mask[: spec_info.custom_mask.shape[0]] = spec_info.custom_mask"
)


def mask(alloc: str = SHORT, write: str = COPY, base_body: str = "    pass\n") -> str:
    return MASK.format(base="Base", base_body=base_body, alloc=alloc, write=write)


MASK_INVALID = {
    "moved to the device": SHORT.replace(")", ").to('cuda')"),
    "cloned": SHORT.replace(")", ").clone()"),
    "two dimensions, flattened": (
        "        self.cuda_graph_custom_mask = torch.zeros(\n"
        "            (max_bs, self.max_context_len)\n"
        "        ).flatten()"
    ),
    "sliced whole": SHORT + "[:]",
    "a view sliced at the copy": mask(
        write="        n = spec_info.custom_mask.numel()\n"
        "        self.cuda_graph_custom_mask.view(-1)[:n].copy_(spec_info.custom_mask)"
    ),
    "narrowed at the copy": mask(
        write="        n = spec_info.custom_mask.numel()\n"
        "        self.cuda_graph_custom_mask.narrow(0, 0, n).copy_(spec_info.custom_mask)"
    ),
    "a local slice copied into": mask(
        write="        dst = self.cuda_graph_custom_mask[: spec_info.custom_mask.numel()]\n"
        "        dst.copy_(spec_info.custom_mask)"
    ),
    "a local slice assigned into": mask(
        write="        dst = self.cuda_graph_custom_mask[: spec_info.custom_mask.numel()]\n"
        "        dst[:] = spec_info.custom_mask"
    ),
    "copy_ by keyword": mask(
        write="        n = spec_info.custom_mask.numel()\n"
        "        self.cuda_graph_custom_mask[:n].copy_(src=spec_info.custom_mask)"
    ),
    "a mask that may be None": mask(
        write="        if spec_info is not None:\n"
        "            m = spec_info.custom_mask\n"
        "        else:\n"
        "            m = None\n"
        "        if m is not None:\n"
        "            self.cuda_graph_custom_mask[: m.shape[0]] = m"
    ),
    "a mask converted first": mask(
        write="        m = spec_info.custom_mask\n"
        "        m = m.to(torch.uint8)\n"
        "        self.cuda_graph_custom_mask[: m.shape[0]] = m"
    ),
    "copied in a nested function": mask(
        write="        def fill():\n"
        "            buf = self.cuda_graph_custom_mask\n"
        "            buf[: spec_info.custom_mask.shape[0]] = spec_info.custom_mask\n"
        "\n"
        "        fill()"
    ),
}
MASK_INVALID = {
    name: text if text.startswith("import") else mask(alloc=text)
    for name, text in MASK_INVALID.items()
}

MASK_VALID = {
    "sized": mask(alloc=SIZED),
    "sized, then moved to the device": mask(alloc=SIZED + ".to('cuda')"),
    "the class's own mask copied, not the spec's": mask(
        write="        self.cuda_graph_custom_mask[: self.mask.shape[0]] = self.mask"
    ),
    "no copy": mask(write="        return self.cuda_graph_custom_mask"),
}

KERNEL = """\
import torch


class FooAttnBackend:
    def __init__(self, model_runner):
        self.max_context_len = model_runner.model_config.context_len
        self.num_draft_tokens = model_runner.server_args.speculative_num_draft_tokens

    def init_cuda_graph_state(self, max_bs: int, max_num_tokens: int):
        self.cuda_graph_kv_indices = torch.zeros(({width},), dtype=torch.int32)

    def replay(self, bs, req_pool_indices, seq_lens):
{launch}
"""

LAUNCH = """\
        kv_lens = {lengths}
        create_flashinfer_kv_indices_triton[(bs,)](
            self.req_to_token,
            req_pool_indices,
            kv_lens,
            self.kv_indptr,
            None,
            self.cuda_graph_kv_indices,
            self.req_to_token.stride(0),
        )"""


def kernel(width: str, lengths: str = "seq_lens + self.num_draft_tokens", launch=None):
    body = LAUNCH.format(lengths=lengths) if launch is None else launch
    return KERNEL.format(width=width, launch=body)


KERNEL_INVALID = {
    "lengths adding twice the draft tokens": kernel(
        "max_bs * (self.max_context_len + self.num_draft_tokens)",
        "seq_lens + 2 * self.num_draft_tokens",
    ),
    "launched in a nested function": kernel(
        "max_bs * self.max_context_len",
        launch="        def fill():\n"
        + "\n".join(
            "    " + line
            for line in LAUNCH.format(
                lengths="seq_lens + self.num_draft_tokens"
            ).splitlines()
        )
        + "\n\n        fill()",
    ),
}

KERNEL_VALID = {
    "lengths adding one draft token fewer": kernel(
        "max_bs * (self.max_context_len + self.num_draft_tokens - 1)",
        "seq_lens + self.num_draft_tokens - 1",
    ),
    "the sequences' own lengths": kernel("max_bs * self.max_context_len", "seq_lens"),
}


def _count(code: str, source: str) -> int:
    found = codes(source).count(code)
    assert full_walk_codes(source).count(code) == found, "regions and whole walk"
    return found


@pytest.mark.parametrize("source", MASK_INVALID.values(), ids=MASK_INVALID)
def test_mask_invalid(source: str) -> None:
    assert _count("KVI008", source) == 1


@pytest.mark.parametrize("source", MASK_VALID.values(), ids=MASK_VALID)
def test_mask_valid(source: str) -> None:
    assert _count("KVI008", source) == 0


@pytest.mark.parametrize("source", KERNEL_INVALID.values(), ids=KERNEL_INVALID)
def test_kernel_invalid(source: str) -> None:
    assert _count("KVI009", source) == 1


@pytest.mark.parametrize("source", KERNEL_VALID.values(), ids=KERNEL_VALID)
def test_kernel_valid(source: str) -> None:
    assert _count("KVI009", source) == 0


def test_a_two_dimensional_buffer_is_shown_whole() -> None:
    source = mask(
        alloc="        self.cuda_graph_custom_mask = torch.zeros("
        "(max_bs, self.max_context_len))"
    )
    (finding,) = [f for f in lint_source(source.encode(), "x.py") if f.code == "KVI008"]
    assert "size `(max_bs, self.max_context_len)`" in finding.message


def test_the_lengths_written_are_the_goal() -> None:
    source = kernel(
        "max_bs * (self.max_context_len + self.num_draft_tokens)",
        "seq_lens + 2 * self.num_draft_tokens",
    )
    (finding,) = [f for f in lint_source(source.encode(), "x.py") if f.code == "KVI009"]
    assert (
        "max_bs * (self.max_context_len + 2*self.num_draft_tokens)"
        in (finding.message.replace(" * self.num", "*self.num"))
        or "2" in finding.message.split("can be less than")[1].split("(")[1]
    )


TREE = {
    "sglang/__init__.py": "",
    "sglang/srt/layers/attention/verify_mask.py": (
        "def tree_mask_numel(mode, bs, num_draft_tokens, max_context_len):\n"
        "    return bs * num_draft_tokens * (max_context_len + num_draft_tokens)\n"
    ),
    "sglang/srt/speculative/eagle_utils.py": "class TreeMaskMode:\n    FULL_MASK = 1\n",
}


def _fix_of(source: str, tmp_path) -> str | None:
    """The KVI008 fix's replacement text, in a tree that defines the owner."""
    for name, text in TREE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    path = tmp_path / "sglang/srt/layers/attention/foo_backend.py"
    path.write_text(source)
    (finding,) = [
        f for f in lint_source(source.encode(), str(path)) if f.code == "KVI008"
    ]
    return finding.fix.edits[0].content if finding.fix else None


def test_the_fix_sizes_for_one_draft_token_without_speculation(tmp_path) -> None:
    """SGLang's draft count is None when nothing is speculated: the fixed
    allocation must still run there (the mask is then never copied into)."""
    content = _fix_of(mask(), tmp_path)
    assert content == (
        "tree_mask_numel(TreeMaskMode.FULL_MASK, max_bs, "
        "self.num_draft_tokens or 1, self.max_context_len)"
    )


def test_no_fix_reads_a_draft_count_not_assigned_yet(tmp_path) -> None:
    """Allocated in __init__ before the draft count is: the fix would read an
    attribute that is not there."""
    source = mask(alloc="        pass").replace(
        "        self.max_context_len = model_runner.model_config.context_len\n",
        "        self.max_context_len = model_runner.model_config.context_len\n"
        "        max_bs = model_runner.req_to_token_pool.size\n"
        "        self.cuda_graph_custom_mask = torch.zeros(max_bs * self.max_context_len)\n",
    )
    assert _fix_of(source, tmp_path) is None
    # Assigned only on some path of __init__: no fix either.
    guarded = mask().replace(
        "        self.num_draft_tokens = model_runner",
        "        if model_runner.spec:\n            self.num_draft_tokens = model_runner",
    )
    assert _fix_of(guarded, tmp_path) is None


def test_a_mask_bound_over_several_lines_is_followed() -> None:
    source = mask(
        write="        m = (\n"
        "            spec_info.custom_mask\n"
        "        )\n"
        "        self.cuda_graph_custom_mask[: m.shape[0]] = m"
    )
    assert _count("KVI008", source) == 1
