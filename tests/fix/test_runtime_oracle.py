"""The bundled reference runtime and the rewrite oracle."""

from __future__ import annotations

import subprocess
import sys

import pytest
from import_probe import imported_by

from lint_plugin import runtime
from lint_plugin.fix.gate.oracle import equivalent


@pytest.mark.parametrize(
    ("num_seqs", "topk", "max_context_len"), [(1, 1, 1), (4, 8, 4096), (256, 4, 32768)]
)
def test_buffer_width_is_the_product(num_seqs: int, topk: int, max_context_len: int):
    expected = num_seqs * topk * max_context_len
    assert (
        runtime.draft_kv_indices_buffer_width(num_seqs, topk, max_context_len)
        == expected
    )


@pytest.mark.parametrize(
    ("sls", "topk", "bs", "steps"), [(0, 1, 1, 1), (100, 4, 12, 3)]
)
def test_used_len_is_prefix_plus_drafts(sls: int, topk: int, bs: int, steps: int):
    assert (
        runtime.draft_kv_indices_used_len(sls, topk, bs, steps)
        == sls * topk + bs * steps
    )


def test_width_at_int32_limit_is_refused() -> None:
    with pytest.raises(runtime.KvIndicesWidthOverflow, match="int32"):
        runtime.draft_kv_indices_buffer_width(2**10, 2**10, 2**11)  # exactly 2**31
    assert runtime.draft_kv_indices_buffer_width(1, 1, 2**31 - 1) == 2**31 - 1


def test_refusal_holds_under_python_O() -> None:
    code = (
        "from lint_plugin.runtime import draft_kv_indices_buffer_width as w\n"
        "try:\n    w(2**16, 2**8, 2**8)\nexcept ValueError:\n    print('refused')\n"
    )
    out = subprocess.run(
        [sys.executable, "-O", "-c", code], capture_output=True, text=True
    )
    assert out.stdout.strip() == "refused"


def test_importing_the_runtime_imports_no_torch() -> None:
    body = "import lint_plugin.runtime\n_result = None"
    assert imported_by(body, ("torch",)) == ([], "None")


@pytest.mark.parametrize(
    ("original", "rewritten"),
    [
        (
            "seq_lens_sum * self.topk + bs * (i + 1)",
            "draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)",
        ),
        (
            "(i + 1) * bs + topk * s.seq_lens_sum",
            "draft_kv_indices_used_len(s.seq_lens_sum, topk, bs, i + 1)",
        ),
        ("a * self.topk * m + 3", "draft_kv_indices_buffer_width(a, self.topk, m) + 3"),
        ("f(x) * topk * m", "draft_kv_indices_buffer_width(f(x), topk, m)"),
    ],
)
def test_equal_rewrites_pass(original: str, rewritten: str) -> None:
    assert equivalent(original, rewritten) is None


@pytest.mark.parametrize(
    ("original", "rewritten"),
    [
        (
            "seq_lens_sum * self.topk + bs * (i + 1)",
            "draft_kv_indices_used_len(seq_lens_sum, bs, self.topk, i + 1)",
        ),
        (
            "seq_lens_sum * self.topk + bs * (i + 1)",
            "draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i)",
        ),
        ("a * self.topk * m", "draft_kv_indices_buffer_width(a, self.topk, m) + 1"),
        ("a * m", "draft_kv_indices_buffer_width(a, self.topk, m)"),
        ("f(x) * topk * m", "draft_kv_indices_buffer_width(f(y), topk, m)"),
    ],
)
def test_unequal_rewrites_are_named(original: str, rewritten: str) -> None:
    reason = equivalent(original, rewritten)
    assert reason is not None and rewritten in reason


def test_oracle_never_evaluates_code() -> None:
    # A call the interpreter does not know is an opaque value, never run.
    assert equivalent("__import__('os').system('false') * t.topk * m", "x") is not None
