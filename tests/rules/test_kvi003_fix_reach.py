"""KVI003's unsafe fix sizes a row where its width is made; it is offered only
when the value made there reaches nothing but the rows reported with it
(``rules/_width_reach.py``). Each case is run: the original and the rewritten
module are executed in a child Python with a torch that records shapes, and
every buffer but the reported rows must come out the same size."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from lint_plugin import linter
from lint_plugin.fix.rewrite import Options, rewrite_text

HEAD = """\
import torch


class FooMultiStepDraftBackend:
    def __init__(self, topk, speculative_num_steps, max_context_len):
        self.topk = topk
        self.speculative_num_steps = speculative_num_steps
        self.max_context_len = max_context_len

"""
_ROW = "self.cuda_graph_kv_indices = torch.zeros((self.speculative_num_steps, {}))"


def _module(*methods: str) -> str:
    return HEAD + "\n".join(
        textwrap.indent(textwrap.dedent(m), "    ") for m in methods
    )


def _init(*lines: str) -> str:
    body = "".join(f"    {line}\n" for line in lines)
    return f"def init_cuda_graph_state(self, max_bs, max_num_tokens):\n{body}"


_ROW_WIDTH = "def _row_width(self, bs):\n    return bs * self.max_context_len\n"

# name: (module, the rows the fix must grow; None: no fix may be offered)
CASES = {
    "a local read by the row only": (
        _module(_init("w = max_bs * self.max_context_len", _ROW.format("w"))),
        ["cuda_graph_kv_indices"],
    ),
    "a local read through another local": (
        _module(
            _init(
                "w = max_bs * self.max_context_len",
                "width: int = w",
                _ROW.format("width"),
            )
        ),
        ["cuda_graph_kv_indices"],
    ),
    "a local read by two reported rows": (
        _module(
            _init(
                "w = max_bs * self.max_context_len",
                _ROW.format("w"),
                "self.draft_kv_indices = torch.zeros((self.speculative_num_steps, w))",
            )
        ),
        ["cuda_graph_kv_indices", "draft_kv_indices"],
    ),
    "a local read by another buffer": (
        _module(
            _init(
                "w = max_bs * self.max_context_len",
                _ROW.format("w"),
                "self.page_table = torch.zeros(w)",
            )
        ),
        None,
    ),
    "a local read by another buffer through arithmetic": (
        _module(
            _init(
                "w = max_bs * self.max_context_len",
                _ROW.format("w + 64"),
                "self.page_table = torch.zeros(w // 2)",
            )
        ),
        None,
    ),
    "a local read by a test": (
        _module(
            _init(
                "w = max_bs * self.max_context_len",
                _ROW.format("w"),
                "self.small = torch.zeros(1 if w < 4096 else 2)",
            )
        ),
        None,
    ),
    "a local passed to a call": (
        _module(
            _init(
                "w = max_bs * self.max_context_len",
                _ROW.format("w"),
                "self.scratch = self._scratch(w)",
            ),
            "def _scratch(self, n):\n    return torch.zeros(n)\n",
        ),
        None,
    ),
    "a walrus in the row, read by another buffer": (
        _module(
            _init(
                _ROW.format("(w := max_bs * self.max_context_len)"),
                "self.page_table = torch.zeros(w)",
            )
        ),
        None,
    ),
    "another buffer in the row's statement": (
        _module(
            _init(
                "w = max_bs * self.max_context_len",
                "self.cuda_graph_kv_indices, self.page_table = ("
                "torch.zeros((self.speculative_num_steps, w)), torch.zeros(w))",
            )
        ),
        None,
    ),
    "a method called by the row only": (
        _module(_init(_ROW.format("self._row_width(max_bs)")), _ROW_WIDTH),
        ["cuda_graph_kv_indices"],
    ),
    "a method called by another buffer too": (
        _module(
            _init(
                _ROW.format("self._row_width(max_bs)"),
                "self.page_table = torch.zeros(self._row_width(max_bs))",
            ),
            _ROW_WIDTH,
        ),
        None,
    ),
    "a method handed on by reference": (
        _module(
            _init(
                _ROW.format("self._row_width(max_bs)"),
                "self.sizer = self._row_width",
            ),
            _ROW_WIDTH,
        ),
        None,
    ),
    "an attribute read by the row only": (
        _module(
            _init(
                "self.row_width = max_bs * self.max_context_len",
                _ROW.format("self.row_width"),
            )
        ),
        ["cuda_graph_kv_indices"],
    ),
    "an attribute read by another buffer": (
        _module(
            _init(
                "self.row_width = max_bs * self.max_context_len",
                _ROW.format("self.row_width"),
                "self.page_table = torch.zeros(self.row_width)",
            )
        ),
        None,
    ),
    "an attribute read by name": (
        _module(
            _init(
                "self.row_width = max_bs * self.max_context_len",
                _ROW.format("self.row_width"),
                'self.page_table = torch.zeros(getattr(self, "row_width"))',
            )
        ),
        None,
    ),
    # The helper's topk is spelt through the name the method reaches the
    # instance by; where no name does, no fix.
    "a method whose instance is not called self": (
        _module(
            "def init_cuda_graph_state(backend, max_bs, max_num_tokens):\n"
            "    w = max_bs * backend.max_context_len\n"
            "    backend.cuda_graph_kv_indices = torch.zeros(\n"
            "        (backend.speculative_num_steps, w)\n"
            "    )\n"
        ),
        ["cuda_graph_kv_indices"],
    ),
    "a width made in a function of the module": (
        _module(_init(_ROW.format("_row_width(max_bs, self.max_context_len)")))
        + "\n\ndef _row_width(bs, max_context_len):\n    return bs * max_context_len\n",
        None,
    ),
    "a width made in a method whose self is rebound": (
        _module(
            _init(
                "w = max_bs * self.max_context_len",
                _ROW.format("w"),
                "self = self",
            )
        ),
        None,
    ),
}

_CHILD = r"""
import json, sys, types

class Tensor:
    def __init__(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        self.shape = list(shape)

torch = types.ModuleType("torch")
torch.zeros = lambda *shape, **_: Tensor(*shape)
sys.modules["torch"] = torch
helpers = types.ModuleType("sglang.srt.speculative.spec_utils")
helpers.draft_kv_indices_buffer_width = lambda n, topk, context: n * topk * context
for name in ("sglang", "sglang.srt", "sglang.srt.speculative"):
    sys.modules[name] = types.ModuleType(name)
sys.modules["sglang.srt.speculative.spec_utils"] = helpers
namespace = {}
exec(compile(sys.stdin.read(), "backend.py", "exec"), namespace)
backend = namespace["FooMultiStepDraftBackend"](3, 5, 7)
backend.init_cuda_graph_state(11, 13)
print(json.dumps({k: v.shape for k, v in vars(backend).items() if isinstance(v, Tensor)}))
"""


def _shapes(text: str) -> dict[str, list[int]]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=text,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


@pytest.mark.parametrize(("text", "grown"), CASES.values(), ids=CASES.keys())
def test_the_unsafe_fix_changes_only_the_rows_it_reports(text, grown) -> None:
    findings = linter.lint_source(text, "backend.py")
    assert findings and {f.code for f in findings} == {"KVI003"}
    offered = [f for f in findings if f.fix is not None]
    rewritten = rewrite_text(text, "backend.py", Options(unsafe_fixes=True)).text
    if grown is None:
        assert not offered
        assert rewritten == text
        return
    assert offered
    before, after = _shapes(text), _shapes(rewritten)
    assert before.keys() == after.keys()
    for name in before:
        if name in grown:
            # topk 3, 11 sequences, context 7: the row holds them all now.
            assert before[name][1] < 11 * 3 * 7 <= after[name][1]
        else:
            assert after[name] == before[name]
