"""KVI005: a helper bound outside the helpers module, wherever that is set."""

from __future__ import annotations

import pytest

from lint_plugin.engine.settings import Settings
from lint_plugin.linter import lint_source

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
    assert lint_source(HELPER_DEFINITIONS.encode(), path) == []


@pytest.mark.parametrize(
    "path", ["snippet.py", "sglang/srt/layers/attention/spec_utils.py", "utils.py"]
)
def test_helper_definitions_elsewhere_are_kvi005(path) -> None:
    found = lint_source(HELPER_DEFINITIONS.encode(), path)
    assert [(f.code, f.row) for f in found] == [("KVI005", 1), ("KVI005", 5)]


def test_helpers_module_setting_moves_the_trusted_home() -> None:

    settings = Settings(helpers_module="mypkg.sizes")
    assert (
        lint_source(HELPER_DEFINITIONS.encode(), "src/mypkg/sizes.py", settings) == []
    )
    found = lint_source(
        HELPER_DEFINITIONS.encode(), "sglang/srt/speculative/spec_utils.py", settings
    )
    assert [f.code for f in found] == ["KVI005", "KVI005"]
    imported = b"from mypkg.sizes import draft_kv_indices_used_len\n"
    assert lint_source(imported, "a.py", settings) == []
    assert [f.code for f in lint_source(imported, "a.py")] == ["KVI005"]
