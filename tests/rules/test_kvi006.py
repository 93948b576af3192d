"""KVI006's guard: where it comes from (the tree's own module unless configured)
and where it goes (only where the length it checks is the real one)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lint_plugin.engine.settings import Settings
from lint_plugin.fix.guard_home import guard_module_for
from lint_plugin.fix.rewrite import Options, rewrite_text
from lint_plugin.linter import lint_source
from lint_plugin.rules.kvi006_unguarded_launch import _BACKEND, RULE

KVI006 = Options(unsafe_fixes=True, selected=lambda f: f.code == "KVI006")


def backend(guard: str) -> str:
    return _BACKEND.format(guard=guard)


def kvi006(text: str) -> list[str]:
    found = lint_source(text.encode(), "b.py", Settings())
    return [f.message for f in found if f.code == "KVI006"]


@pytest.mark.parametrize(
    "guard",
    [
        # Unconditional, or folded into one expression: no branch knows the sum.
        "        seq_lens_sum = num_seqs * self.max_context_len\n",
        "        seq_lens_sum = seq_lens_sum or num_seqs * self.max_context_len\n",
        "        seq_lens_sum = (\n            seq_lens_sum if seq_lens_sum is not None\n"
        "            else num_seqs * self.max_context_len\n        )\n",
        # An else of its own, or a test of something else.
        "        if seq_lens_sum is None:\n"
        "            seq_lens_sum = num_seqs * self.max_context_len\n"
        "        else:\n            pass\n",
        "        if self.eager:\n"
        "            seq_lens_sum = num_seqs * self.max_context_len\n",
        # bs changes between the branch and the launch.
        "        if seq_lens_sum is None:\n"
        "            seq_lens_sum = num_seqs * self.max_context_len\n"
        "        bs = bs + 0\n",
    ],
)
def test_an_upper_bound_with_no_branch_for_the_real_sum_is_refused(guard) -> None:
    text = backend(guard)
    (message,) = kvi006(text)
    assert "(no fix: `seq_lens_sum` is replaced by an upper bound on line" in message
    assert "fires on valid input" in message
    assert "\n" not in message
    assert rewrite_text(text, "b.py", KVI006).text == text


@pytest.mark.parametrize(
    "guard",
    [
        "        if seq_lens_sum is None:\n"
        "            seq_lens_sum = num_seqs * self.max_context_len\n",
        "        if not seq_lens_sum:\n"
        "            seq_lens_sum = num_seqs * self.attn_backends[0].max_context_len\n",
        "        if seq_lens_sum is None: seq_lens_sum = num_seqs * self.max_context_len\n",
    ],
)
def test_the_guard_goes_where_the_sum_is_real(guard) -> None:
    text = backend(guard)
    fixed = rewrite_text(text, "b.py", KVI006)
    assert [f.code for f in fixed.applied] == ["KVI006"]
    tree = ast.parse(fixed.text)
    (branch,) = [n for n in ast.walk(tree) if isinstance(n, ast.If)]
    assert [type(s).__name__ for s in branch.orelse] == ["Assign", "Expr"]
    assert ast.unparse(branch.orelse[1]).startswith("assert_buffer_fits(")
    assert kvi006(fixed.text) == []  # guarded now: a second run is a no-op
    assert rewrite_text(fixed.text, "b.py", KVI006).text == fixed.text


def test_without_a_bound_the_guard_goes_right_before_the_launch() -> None:
    fixed = rewrite_text(backend(""), "b.py", KVI006).text
    assert "        )\n\n        generate_draft_decode_kv_indices[" in fixed


def _renamed(instance: str) -> str:
    """The backend with its method reaching the instance by another name."""
    return (
        backend("")
        .replace("common_template(self,", f"common_template({instance},")
        .replace("self.", f"{instance}.")
        .replace(f"{instance}.topk = topk", "self.topk = topk")
        .replace(
            f"{instance}.speculative_num_steps = speculative",
            "self.speculative_num_steps = speculative",
        )
    )


def test_the_guard_reaches_the_instance_by_the_methods_own_name() -> None:
    """The guard's topk and step count are the instance's, spelt as the method
    spells it: ``self`` is no name in a method whose first parameter is ``me``."""
    text = _renamed("me")
    fixed = rewrite_text(text, "b.py", KVI006)
    assert [f.code for f in fixed.applied] == ["KVI006"]
    tree = ast.parse(fixed.text)
    (method,) = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and n.name == "common_template"
    ]
    read = {n.id for n in ast.walk(method) if isinstance(n, ast.Name)}
    assert "self" not in read
    assert "seq_lens_sum, me.topk, bs, me.speculative_num_steps" in fixed.text


def test_no_guard_where_the_instance_name_is_rebound() -> None:
    text = _renamed("me").replace(
        "        num_seqs = forward_batch.batch_size\n",
        "        num_seqs = forward_batch.batch_size\n        me = forward_batch.owner\n",
    )
    assert kvi006(text)
    assert rewrite_text(text, "b.py", KVI006).text == text


# ---- where the guard is imported from -----------------------------------------


def package(root: Path, files: dict[str, str]) -> Path:
    (root / "sglang").mkdir()
    (root / "sglang/__init__.py").write_text("")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    target = root / "sglang/srt/layers/attention/triton_backend.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


GUARD_DEF = "def assert_buffer_fits(used, capacity, what, **context):\n    pass\n"


@pytest.mark.parametrize(
    ("files", "source", "expected"),
    [
        ({}, "", "sglang.srt.layers.attention.utils"),
        (
            {"sglang/kernels/ops/attention/utils.py": GUARD_DEF},
            "",
            "sglang.kernels.ops.attention.utils",
        ),
        (
            {"sglang/srt/layers/attention/utils.py": GUARD_DEF},
            "",
            "sglang.srt.layers.attention.utils",
        ),
        (
            {"sglang/srt/layers/attention/utils.py": "import torch\n"},
            "",
            "sglang.srt.layers.attention.utils",  # lacks it: fix defines it there
        ),
        ({"sglang/guards/checks.py": GUARD_DEF}, "", "sglang.guards.checks"),
        (
            {"sglang/kernels/ops/attention/utils.py": GUARD_DEF},
            "def f():\n    from mine.guards import assert_buffer_fits\n",
            "mine.guards",
        ),
    ],
)
def test_the_guard_module_comes_from_the_tree(tmp_path, files, source, expected):
    target = package(tmp_path, files)
    assert guard_module_for(ast.parse(source), str(target)) == expected


def test_the_configured_guard_module_wins(tmp_path) -> None:
    target = package(tmp_path, {"sglang/kernels/ops/attention/utils.py": GUARD_DEF})
    text = backend("")
    options = Options(
        unsafe_fixes=True,
        selected=lambda f: f.code == "KVI006",
        guard_module="my.guards",
    )
    fixed = rewrite_text(text, str(target), options).text
    assert "\nfrom my.guards import assert_buffer_fits\n" in fixed
    tree_default = rewrite_text(text, str(target), KVI006).text
    assert "\nfrom sglang.kernels.ops.attention.utils import assert_buffer_fits\n" in (
        tree_default
    )


@pytest.mark.parametrize(
    "example",
    [*RULE.valid, *RULE.invalid],
    ids=[f"valid-{i}" for i in range(len(RULE.valid))]
    + [f"invalid-{i}" for i in range(len(RULE.invalid))],
)
def test_check_reports_what_a_whole_walk_reports(example) -> None:
    """check parses a region: the rows its messages name are the file's (the
    upper bound's line was counted from the region's first row)."""
    from lint_plugin.engine.source import Source
    from lint_plugin.linter import lint_tree

    settings = Settings()
    text = example.code
    key = lambda f: (f.row, f.column, f.code, f.message)  # noqa: E731
    whole = lint_tree(ast.parse(text), Source(text), "b.py", None, settings)
    fast = lint_source(text, "b.py", settings, syntax_checked=True)
    assert sorted(map(key, fast)) == sorted(map(key, whole))
