"""Each rule's own VALID/INVALID examples, then the variants the matcher must see
through (Fixit style: the examples are the spec)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from lint_plugin.engine.settings import Settings
from lint_plugin.engine.source import Source
from lint_plugin.linter import analyze, check_source
from lint_plugin.noqa.directives import review
from lint_plugin.rules import OPT_IN, RULES

# Every rule runs here, the opt-in ones too: each example is its own rule's spec.
EVERY_RULE = Settings(opt_in=OPT_IN)


def codes(source: str, path: str = "snippet.py") -> list[str]:
    findings = check_source(source.encode(), path, EVERY_RULE)
    return [f.code for f in review(findings, source, path)]


def example_codes(example, folder) -> list[str]:
    """The codes of an example, in its tree when it has one (written under
    ``folder``, the snippet at its own path)."""
    if not example.tree:
        return codes(example.code)
    for name, text in (*example.tree, (example.path, example.code)):
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return codes(example.code, str(folder / example.path))


def full_walk_codes(source: str) -> list[str]:
    """The engine on the whole tree, none of check's shortcuts."""
    findings = analyze(
        ast.parse(source), Source(source), "snippet.py", None, EVERY_RULE
    )
    return [f.code for f in review(findings, source, "snippet.py")]


VALID = [
    pytest.param(code, ex, id=f"{code}-valid-{i}")
    for code, rule in RULES.items()
    for i, ex in enumerate(rule.valid)
]
INVALID = [
    pytest.param(code, ex, id=f"{code}-invalid-{i}")
    for code, rule in RULES.items()
    for i, ex in enumerate(rule.invalid)
]


@pytest.mark.parametrize(("code", "example"), VALID)
def test_valid_example_has_no_finding_of_its_rule(code: str, example, tmp_path) -> None:
    assert code not in example_codes(example, tmp_path)


@pytest.mark.parametrize(("code", "example"), INVALID)
def test_invalid_example_has_a_finding_of_its_rule(
    code: str, example, tmp_path
) -> None:
    assert example_codes(example, tmp_path).count(code) == 1


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_docs_have_rufflike_sections(code: str) -> None:
    doc = RULES[code].render()
    for heading in ("## What it does", "## Why is this bad?", "## Example"):
        assert heading in doc
    assert "## Fix safety" in doc


def snippet(body: str) -> str:
    """``body`` as a method of a multi-step draft backend."""
    return "class XMultiStepDraftBackend:\n    def f(self, forward_batch, i):\n" + (
        textwrap.indent(textwrap.dedent(body), " " * 8)
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            "n = seq_lens_sum * self.topk + bs * (i + 1)\n", ["KVI001"], id="plain"
        ),
        pytest.param(
            "n = (i + 1) * bs + self.topk * seq_lens_sum\n", ["KVI001"], id="commuted"
        ),
        pytest.param(
            "n = ((seq_lens_sum * (self.topk))) + ((bs) * (i + 1))\n",
            ["KVI001"],
            id="parens",
        ),
        pytest.param(
            "n = (\n    seq_lens_sum  # prefix slots\n    * self.topk\n"
            "    + bs * (i + 1)  # drafts\n)\n",
            ["KVI001"],
            id="split-with-comments",
        ),
        pytest.param(
            "topk = self.topk\nn = seq_lens_sum * topk + bs * (i + 1)\n",
            ["KVI001"],
            id="local-topk",
        ),
        pytest.param(
            "k = self.topk\nn = seq_lens_sum * k + bs * (i + 1)\n",
            ["KVI001"],
            id="alias-of-topk",
        ),
        pytest.param(
            "n = seq_lens_sum * self.topk + bs * (i + 1) + 16\n",
            ["KVI001"],
            id="in-longer-sum",
        ),
        pytest.param(
            "n = extra + seq_lens_sum * self.topk + extra2 + bs * self.speculative_num_steps\n",
            ["KVI001"],
            id="in-longer-sum-apart",
        ),
        pytest.param(
            "n = seq_lens_sum * self.topk + num_seqs * self.topk * (i + 1)\n",
            ["KVI001"],
            id="bs-spelled-out",
        ),
        pytest.param(
            "a, b = seq_lens_sum * self.topk + bs * (i + 1), x * self.topk * self.max_context_len\n",
            ["KVI001", "KVI002"],
            id="two-sites-one-line",
        ),
        pytest.param(
            "w = self.max_context_len * forward_batch.batch_size * self.topk\n",
            ["KVI002"],
            id="width-commuted",
        ),
        pytest.param(
            "w = (forward_batch.batch_size\n     * self.topk)  * self.max_context_len\n",
            ["KVI002"],
            id="width-regrouped",
        ),
        pytest.param("n = batch_size * self.topk + 1\n", [], id="near-miss-batch"),
        pytest.param("n = max_bs * self.topk + 1\n", [], id="near-miss-max-bs"),
        pytest.param("w = max_bs * self.max_context_len\n", [], id="near-miss-no-topk"),
        pytest.param(
            "n = seq_lens_sum * self.topk + bs * i\n", [], id="near-miss-steps"
        ),
        pytest.param(
            "n = seq_lens_sum + bs * (i + 1)\n", [], id="near-miss-no-topk-in-prefix"
        ),
        pytest.param(
            "n = seq_lens_sum * self.topk - bs * (i + 1)\n",
            [],
            id="near-miss-mixed-signs",
        ),
        pytest.param(
            "n = -(seq_lens_sum * self.topk + bs * (i + 1))\n", ["KVI001"], id="negated"
        ),
    ],
)
def test_variants(body: str, expected: list[str]) -> None:
    assert sorted(codes(snippet(body))) == expected


def test_findings_point_at_the_expression_start() -> None:
    (finding,) = check_source(
        snippet(
            "n = (\n    seq_lens_sum * self.topk\n    + bs * (i + 1)\n)\n"
        ).encode(),
        "x.py",
    )
    assert (finding.row, finding.column) == (4, 13)


def test_ordinary_decode_backend_buffer_is_not_a_finding() -> None:
    source = (
        "import torch\n\nclass FooAttnBackend:\n"
        "    def init_cuda_graph_state(self, max_bs, max_num_tokens):\n"
        "        self.cuda_graph_kv_indices = torch.zeros(\n"
        "            (max_bs * self.max_context_len,), dtype=torch.int32\n"
        "        )\n"
    )
    assert codes(source) == []


def test_a_backend_known_by_its_attributes_is_read_whole() -> None:
    """No `...MultiStepDraftBackend` name and no context length in the class: a
    row sized by the helper (under an alias) with 1 for topk is still unsized."""
    source = (
        "import torch\n"
        "from sglang.srt.speculative.spec_utils import (\n"
        "    draft_kv_indices_buffer_width as row_width,\n)\n\n\n"
        "class FooAttnBackend:\n"
        "    def __init__(self, topk, steps, ctx):\n"
        "        self.topk, self.speculative_num_steps, self.ctx = topk, steps, ctx\n\n"
        "    def init_cuda_graph_state(self, max_bs):\n"
        "        self.cuda_graph_kv_indices = torch.zeros(\n"
        "            (self.speculative_num_steps, row_width(max_bs, 1, self.ctx))\n"
        "        )\n"
    )
    assert codes(source) == ["KVI003"]
    assert full_walk_codes(source) == ["KVI003"]
    # A class that only names a topk in passing keeps no draft rows.
    passing = source.replace("self.topk, ", "self.k, ")
    assert codes(passing) == full_walk_codes(passing) == []


HELPER_DEFINITIONS = (
    "def draft_kv_indices_buffer_width(num_seqs, topk, max_context_len):\n"
    "    return num_seqs * topk * max_context_len\n\n\n"
    "def draft_kv_indices_used_len(seq_lens_sum, topk, bs, num_steps):\n"
    "    return seq_lens_sum * topk + bs * num_steps\n"
)


@pytest.mark.parametrize(
    "path",
    [
        "python/sglang/srt/speculative/spec_utils.py",
        "sglang/srt/speculative/spec_utils.py",
        "/site-packages/lint_plugin/runtime.py",
    ],
)
def test_helper_definitions_in_the_helpers_module_are_not_findings(path) -> None:
    assert check_source(HELPER_DEFINITIONS.encode(), path) == []


@pytest.mark.parametrize(
    "path", ["snippet.py", "sglang/srt/layers/attention/spec_utils.py", "utils.py"]
)
def test_helper_definitions_elsewhere_are_kvi005(path) -> None:
    found = check_source(HELPER_DEFINITIONS.encode(), path)
    assert [(f.code, f.row) for f in found] == [("KVI005", 1), ("KVI005", 5)]


def test_helpers_module_setting_moves_the_trusted_home() -> None:
    from lint_plugin.engine.settings import Settings

    settings = Settings(helpers_module="mypkg.sizes")
    assert (
        check_source(HELPER_DEFINITIONS.encode(), "src/mypkg/sizes.py", settings) == []
    )
    found = check_source(
        HELPER_DEFINITIONS.encode(), "sglang/srt/speculative/spec_utils.py", settings
    )
    assert [f.code for f in found] == ["KVI005", "KVI005"]
    imported = b"from mypkg.sizes import draft_kv_indices_used_len\n"
    assert check_source(imported, "a.py", settings) == []
    assert [f.code for f in check_source(imported, "a.py")] == ["KVI005"]


KVI003_CASES = [
    (
        "torch.zeros((self.speculative_num_steps, max_bs * self.max_context_len))",
        ["KVI003"],
    ),
    (
        "torch.empty(self.speculative_num_steps, max_bs * self.max_context_len)",
        ["KVI003"],
    ),
    (
        "torch.zeros(size=(self.speculative_num_steps, max_bs * self.max_context_len))",
        ["KVI003"],
    ),
    (
        "torch.full((self.speculative_num_steps, max_bs * self.max_context_len), -1)",
        ["KVI003"],
    ),
    (
        "torch.empty_strided((self.speculative_num_steps, max_bs * self.max_context_len), (1, 1))",
        ["KVI003"],
    ),
    (
        "self.kv_indptr.new_zeros((self.speculative_num_steps, max_bs * self.max_context_len))",
        ["KVI003"],
    ),
    (
        "torch.zeros((self.speculative_num_steps, max_bs * self.topk * self.max_context_len))",
        ["KVI002"],
    ),
    ("torch.zeros((self.speculative_num_steps, width))", []),
    (
        "torch.zeros((self.speculative_num_steps, max_bs * self.topk * self.sliding_window_size))",
        [],
    ),
    ("torch.zeros((self.speculative_num_steps, max_bs + 1))", []),
]


@pytest.mark.parametrize(("call", "expected"), KVI003_CASES)
def test_unsized_allocation_forms(call: str, expected: list[str]) -> None:
    source = (
        "import torch\n\nclass XMultiStepDraftBackend:\n"
        "    def init_cuda_graph_state(self, max_bs, max_num_tokens):\n"
        "        width = draft_kv_indices_buffer_width(max_bs, self.topk, self.max_context_len)\n"
        f"        self.cuda_graph_kv_indices = {call}\n"
    )
    assert codes(source) == expected


def test_warnings_about_the_analysed_file_are_not_raised() -> None:
    import warnings

    source = snippet('pattern = "\\\\("\nn = seq_lens_sum * self.topk + bs * (i + 1)\n')
    assert "\\(" in source
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert codes(source) == ["KVI001"]
    assert caught == []


@pytest.mark.parametrize(
    ("tail", "syntax_error"),
    [
        ("def g(:\n    pass\n", True),  # a real syntax error elsewhere in the file
        ("nonlocal_ok = 1\n", False),
        # symtable rejects this, ast.parse (and flake8) accept it: not E999.
        ("x = 1\n\n\ndef h():\n    global x\n    x = 2\n", False),
    ],
)
def test_a_file_with_findings_is_e999_only_when_ast_rejects_it(tail, syntax_error):
    source = snippet("n = seq_lens_sum * self.topk + bs * (i + 1)\n") + "\n\n" + tail
    found = [f.code for f in check_source(source.encode(), "x.py")]
    assert found == (["E999"] if syntax_error else ["KVI001"])


def test_module_level_nonlocal_is_not_e999() -> None:
    """The fast syntax check (symtable) is stricter than ast.parse: confirmed."""
    import ast

    source = snippet("n = seq_lens_sum * self.topk + bs * (i + 1)\n") + "nonlocal y\n"
    with pytest.raises(SyntaxError):
        compile(source, "x.py", "exec")
    ast.parse(source)  # flake8's parse accepts it
    assert [f.code for f in check_source(source.encode(), "x.py")] == ["KVI001"]
