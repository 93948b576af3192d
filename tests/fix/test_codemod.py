"""Before/after cases for the rewrite, libcst ``CodemodTest`` style."""

from __future__ import annotations

import re
import textwrap

import pytest
from libcst.codemod import CodemodTest

from lint_plugin.codemod import DraftKvIndicesCommand
from lint_plugin.fix.rewrite import Options, rewrite_text
from lint_plugin.rules import RULES

HELPERS = "helpers"  # a short module name keeps the added import on one line
GUARDS = "guards"


def rewrite(source: str, **options) -> str:
    options.setdefault("helpers_module", HELPERS)
    options.setdefault("guard_module", GUARDS)
    return rewrite_text(source, "snippet.py", Options(**options)).text


def without_helper_import(text: str) -> str:
    """The text as if the helpers were already imported (the formatter puts a
    blank line after an import it adds at the very top)."""
    text = re.sub(rf"^from ({HELPERS}|{GUARDS}) import [^\n]*\n", "", text, flags=re.M)
    return text.lstrip("\n")


FIXABLE = [
    pytest.param(ex, id=f"{code}-{i}")
    for code, rule in RULES.items()
    for i, ex in enumerate(rule.invalid)
    if ex.fixed is not None
]


def rewrite_example(example, folder, source: str | None = None, **options) -> str:
    """``rewrite`` of an example, in its tree when it has one (written under
    ``folder``: a fix that imports from another module of the tree asks it)."""
    source = example.code if source is None else source
    if not example.tree:
        return rewrite(source, **options)
    for name, text in example.tree:
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    path = folder / example.path
    path.parent.mkdir(parents=True, exist_ok=True)
    options.setdefault("helpers_module", HELPERS)
    options.setdefault("guard_module", GUARDS)
    return rewrite_text(source, str(path), Options(**options)).text


@pytest.mark.parametrize("example", FIXABLE)
def test_rule_example_is_fixed_as_documented(example, tmp_path) -> None:
    after = rewrite_example(example, tmp_path, unsafe_fixes=example.unsafe)
    assert without_helper_import(after) == example.fixed


@pytest.mark.parametrize("example", FIXABLE)
def test_second_run_changes_nothing(example, tmp_path) -> None:
    once = rewrite_example(example, tmp_path, unsafe_fixes=example.unsafe)
    again = rewrite_example(example, tmp_path, once, unsafe_fixes=example.unsafe)
    assert again == once


@pytest.mark.parametrize("example", [p for p in FIXABLE if p.values[0].unsafe])
def test_unsafe_fix_needs_the_flag(example, tmp_path) -> None:
    assert rewrite_example(example, tmp_path) == example.code


def method(body: str) -> str:
    return "class XMultiStepDraftBackend:\n    def f(self, forward_batch, i):\n" + (
        textwrap.indent(textwrap.dedent(body), " " * 8)
    )


VARIANTS = [
    pytest.param(
        "n = (i + 1) * bs + self.topk * forward_batch.seq_lens_sum\n",
        "n = draft_kv_indices_used_len(forward_batch.seq_lens_sum, self.topk, bs, i + 1)\n",
        id="commuted",
    ),
    pytest.param(
        "n = ((seq_lens_sum) * (self.topk)) + (bs * (i + 1))\n",
        "n = draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)\n",
        id="parens",
    ),
    pytest.param(
        "topk = self.topk\nn = seq_lens_sum * topk + bs * (i + 1)\n",
        "topk = self.topk\nn = draft_kv_indices_used_len(seq_lens_sum, topk, bs, i + 1)\n",
        id="local-topk",
    ),
    pytest.param(
        "n = seq_lens_sum * self.topk + bs * (i + 1) + 16\n",
        "n = draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1) + 16\n",
        id="prefix-of-longer-sum",
    ),
    pytest.param(
        "n = 16 + seq_lens_sum * self.topk + bs * (i + 1)\n",
        "n = 16 + draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)\n",
        id="suffix-of-longer-sum",
    ),
    pytest.param(
        "n = seq_lens_sum * self.topk + extra - bs * (i + 1) + bs * (i + 1)\n",
        "n = (\n"
        "    draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)\n"
        "    + extra\n"
        "    - bs * (i + 1)\n"
        ")\n",
        id="apart-in-longer-sum",
    ),
    pytest.param(
        "n = seq_lens_sum * self.topk + num_seqs * self.topk * (i + 1)\n",
        "n = draft_kv_indices_used_len(\n"
        "    seq_lens_sum, self.topk, num_seqs * self.topk, i + 1\n"
        ")\n",
        id="bs-spelled-out",
    ),
    pytest.param(
        "a, b = seq_lens_sum * topk + bs * (i + 1), n * topk * max_context_len\n",
        "a, b = (\n"
        "    draft_kv_indices_used_len(seq_lens_sum, topk, bs, i + 1),\n"
        "    draft_kv_indices_buffer_width(n, topk, max_context_len),\n"
        ")\n",
        id="two-sites-one-line",
    ),
    pytest.param(
        "n = (\n    seq_lens_sum * self.topk  # prefix slots\n    + bs * (i + 1)  # drafts\n)\n",
        "n = (\n"
        "    # prefix slots\n"
        "    draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)  # drafts\n"
        ")\n",
        id="comments-kept",
    ),
    pytest.param(
        "n = batch_size * self.topk + 1\n",
        "n = batch_size * self.topk + 1\n",
        id="near-miss",
    ),
]


@pytest.mark.parametrize(("before", "after"), VARIANTS)
def test_variant_rewrites(before: str, after: str) -> None:
    result = without_helper_import(rewrite(method(before)))
    assert result == method(after)


class TestImports(CodemodTest):
    TRANSFORM = DraftKvIndicesCommand

    def test_merges_into_existing_import_sorted_and_wrapped(self) -> None:
        before = """
            from sglang.srt.speculative.spec_utils import generate_draft_decode_kv_indices

            n = seq_lens_sum * self.topk + bs * (i + 1)
            w = bs * self.topk * self.max_context_len
        """
        after = """
            from sglang.srt.speculative.spec_utils import (
                draft_kv_indices_buffer_width,
                draft_kv_indices_used_len,
                generate_draft_decode_kv_indices,
            )

            n = draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)
            w = draft_kv_indices_buffer_width(bs, self.topk, self.max_context_len)
        """
        self.assertCodemod(before, after)

    def test_new_import_joins_first_party_block_in_order(self) -> None:
        before = """
            import torch

            from sglang.srt.layers.radix_attention import AttentionType
            from sglang.srt.utils import is_cuda

            n = seq_lens_sum * self.topk + bs * (i + 1)
        """
        after = """
            import torch

            from sglang.srt.layers.radix_attention import AttentionType
            from sglang.srt.speculative.spec_utils import draft_kv_indices_used_len
            from sglang.srt.utils import is_cuda

            n = draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)
        """
        self.assertCodemod(before, after)

    def test_new_import_after_last_import_without_same_package(self) -> None:
        before = """
            import torch

            n = seq_lens_sum * self.topk + bs * (i + 1)
        """
        after = """
            import torch
            from lint_plugin.runtime import draft_kv_indices_used_len

            n = draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)
        """
        self.assertCodemod(before, after, helpers_module="lint_plugin.runtime")

    def test_first_import_after_docstring_keeps_blank_lines(self) -> None:
        before = """
            \"\"\"A backend.\"\"\"


            class XMultiStepDraftBackend:
                def f(self, seq_lens_sum, bs, i):
                    return seq_lens_sum * self.topk + bs * (i + 1)
        """
        after = """
            \"\"\"A backend.\"\"\"

            from sglang.srt.speculative.spec_utils import draft_kv_indices_used_len


            class XMultiStepDraftBackend:
                def f(self, seq_lens_sum, bs, i):
                    return draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)
        """
        self.assertCodemod(before, after)

    def test_nothing_rewritten_nothing_imported(self) -> None:
        before = """
            import torch

            n = batch_size * self.topk + 1
        """
        self.assertCodemod(before, before)

    def test_name_already_imported_is_not_imported_twice(self) -> None:
        before = """
            from sglang.srt.speculative.spec_utils import draft_kv_indices_used_len

            n = seq_lens_sum * self.topk + bs * (i + 1)
        """
        after = """
            from sglang.srt.speculative.spec_utils import draft_kv_indices_used_len

            n = draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)
        """
        self.assertCodemod(before, after)

    def test_local_import_is_kept_and_module_import_added(self) -> None:
        before = """
            import torch


            class XMultiStepDraftBackend:
                def __init__(self):
                    from sglang.srt.speculative.spec_utils import generate_draft_decode_kv_indices

                    self.kernel = generate_draft_decode_kv_indices

                def f(self, seq_lens_sum, bs, i):
                    return seq_lens_sum * self.topk + bs * (i + 1)
        """
        after = """
            import torch
            from sglang.srt.speculative.spec_utils import draft_kv_indices_used_len


            class XMultiStepDraftBackend:
                def __init__(self):
                    from sglang.srt.speculative.spec_utils import generate_draft_decode_kv_indices

                    self.kernel = generate_draft_decode_kv_indices

                def f(self, seq_lens_sum, bs, i):
                    return draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)
        """
        self.assertCodemod(before, after)

    def test_unsafe_fix_only_with_flag(self) -> None:
        before = """
            import torch


            class XMultiStepDraftBackend:
                def init_cuda_graph_state(self, max_bs, max_num_tokens):
                    self.topk = 2
                    self.cuda_graph_kv_indices = torch.zeros(
                        (self.speculative_num_steps, max_bs * self.max_context_len),
                    )
        """
        self.assertCodemod(before, before)
        after = """
            import torch
            from sglang.srt.speculative.spec_utils import draft_kv_indices_buffer_width


            class XMultiStepDraftBackend:
                def init_cuda_graph_state(self, max_bs, max_num_tokens):
                    self.topk = 2
                    self.cuda_graph_kv_indices = torch.zeros(
                        (
                            self.speculative_num_steps,
                            draft_kv_indices_buffer_width(max_bs, self.topk, self.max_context_len),
                        ),
                    )
        """
        self.assertCodemod(before, after, unsafe_fixes=True)
