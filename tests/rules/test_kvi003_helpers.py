"""KVI003 through a function or method of the file that allocates: the rows it
makes are judged at the call, with the values the call gives its parameters.

Each case is a draft backend that calls a helper from ``init_cuda_graph_state``;
``expected`` is KVI003's finding (by the text it points at) or none. The check's
regions and the whole walk must agree, and the finding must stand where the
width is given.
"""

from __future__ import annotations

import pytest
from rule_snippets import codes, full_walk_codes

from lint_plugin.linter import lint_source

_BACKEND = """\
import torch

{module}

class FooMultiStepDraftBackend:
    def __init__(self, topk, speculative_num_steps, max_context_len, max_bs):
        self.topk = topk
        self.speculative_num_steps = speculative_num_steps
        self.max_context_len = max_context_len
        self.max_bs = max_bs

{methods}
    def init_cuda_graph_state(self, max_bs, max_num_tokens, flag):
{call}
"""

_UNSIZED = "max_bs * self.max_context_len"
_SIZED = "max_bs * self.topk * self.max_context_len"
_RETURNS = "def _alloc(steps, width):\n    return torch.zeros((steps, width), dtype=torch.int32)\n"
_ROWS_METHOD = (
    "    def _alloc_rows(self, width):\n"
    "        return torch.empty((self.speculative_num_steps, width))\n"
)
_ASSIGNS = (
    "    def _make_rows(self, width):\n"
    "        self.cuda_graph_kv_indices = torch.zeros(\n"
    "            (self.speculative_num_steps, width), dtype=torch.int32\n"
    "        )\n"
)

_BRANCHES_ON_THE_TOPK = (
    "def _alloc(steps, width, topk):\n"
    "    if topk == 1:\n"
    "        return torch.zeros((steps, width))\n"
    "    return torch.zeros((steps, width * topk))\n"
)

# (module text, methods, the caller's lines, what the finding points at or None)
CASES = {
    "function-unsized": (
        _RETURNS,
        "",
        f"        self.cuda_graph_kv_indices = _alloc(self.speculative_num_steps, {_UNSIZED})",
        _UNSIZED,
    ),
    "function-sized": (
        _RETURNS,
        "",
        f"        self.cuda_graph_kv_indices = _alloc(self.speculative_num_steps, {_SIZED})",
        None,
    ),
    "function-keywords": (
        _RETURNS,
        "",
        f"        self.cuda_graph_kv_indices = _alloc(width={_UNSIZED}, steps=self.speculative_num_steps)",
        _UNSIZED,
    ),
    "function-width-through-a-local": (
        _RETURNS,
        "",
        f"        w = {_UNSIZED}\n"
        "        self.cuda_graph_kv_indices = _alloc(self.speculative_num_steps, w)",
        "w",
    ),
    # Not per step with the call's values: the step count is not the first dimension.
    "function-no-steps": (
        _RETURNS,
        "",
        f"        self.cuda_graph_kv_indices = _alloc(max_bs, {_UNSIZED})",
        None,
    ),
    "method-returns-unsized": (
        "",
        _ROWS_METHOD,
        f"        self.cuda_graph_kv_indices = self._alloc_rows({_UNSIZED})",
        _UNSIZED,
    ),
    "method-returns-sized": (
        "",
        _ROWS_METHOD,
        f"        self.cuda_graph_kv_indices = self._alloc_rows({_SIZED})",
        None,
    ),
    "method-assigns-unsized": (
        "",
        _ASSIGNS,
        f"        self._make_rows({_UNSIZED})",
        _UNSIZED,
    ),
    "method-assigns-sized": (
        "",
        _ASSIGNS,
        f"        self._make_rows({_SIZED})",
        None,
    ),
    # Another per-step buffer, by the name the helper assigns it to.
    "method-assigns-another-buffer": (
        "",
        "    def _make_rows(self, width):\n"
        "        self.kv_indptr = torch.zeros((self.speculative_num_steps, width))\n",
        f"        self._make_rows({_UNSIZED})",
        None,
    ),
    # A helper calling a helper: judged at the outer call, with its argument.
    "method-through-a-function": (
        _RETURNS,
        "    def _rows_for(self, width):\n"
        "        return _alloc(self.speculative_num_steps, width)\n",
        f"        self.cuda_graph_kv_indices = self._rows_for({_UNSIZED})",
        _UNSIZED,
    ),
    # The helper's branches are read with the call's values: sized on each path.
    "function-branches-on-the-topk": (
        _BRANCHES_ON_THE_TOPK,
        "",
        "        self.cuda_graph_kv_indices = _alloc(\n"
        f"            self.speculative_num_steps, {_UNSIZED}, self.topk\n"
        "        )",
        None,
    ),
    # The topk's 1 passed where the topk is 1: the branch for 1 is taken
    # exactly there (its test read path by path).
    "function-branches-on-a-topk-by-path": (
        _BRANCHES_ON_THE_TOPK,
        "",
        "        self.cuda_graph_kv_indices = _alloc(\n"
        f"            self.speculative_num_steps, {_UNSIZED},\n"
        "            self.topk if self.topk > 1 else 1,\n"
        "        )",
        None,
    ),
    "function-branches-on-a-flag": (
        "def _alloc(steps, width, topk, grow):\n"
        "    if grow:\n"
        "        return torch.zeros((steps, width * topk))\n"
        "    return torch.zeros((steps, width))\n",
        "",
        "        self.cuda_graph_kv_indices = _alloc(\n"
        f"            self.speculative_num_steps, {_UNSIZED}, self.topk, flag\n"
        "        )",
        _UNSIZED,
    ),
    # A parameter the helper binds again holds what it is bound to there.
    "function-rebinds-a-parameter": (
        "def _alloc(backend, n, width):\n"
        "    n = backend.speculative_num_steps\n"
        "    return torch.zeros((n, width))\n",
        "",
        f"        self.cuda_graph_kv_indices = _alloc(self, 1, {_UNSIZED})",
        _UNSIZED,
    ),
    "method-rebinds-a-parameter-on-a-branch": (
        "",
        "    def _alloc(self, n, width):\n"
        "        if width > 100:\n"
        "            n = 1\n"
        "        return torch.zeros((n, width))\n",
        f"        self.cuda_graph_kv_indices = self._alloc(self.speculative_num_steps, {_UNSIZED})",
        _UNSIZED,
    ),
    # Only the buffer the call hands over: a scratch local, or a tuple's
    # element (which buffer the caller unpacks it into is not read), is not.
    "function-scratch-buffer": (
        "def _alloc(steps, width, bs):\n"
        "    out = torch.zeros((steps, width))\n"
        "    scratch = torch.zeros((steps, bs))\n"
        "    return out\n",
        "",
        f"        self.cuda_graph_kv_indices = _alloc(self.speculative_num_steps, {_SIZED}, max_bs)",
        None,
    ),
    "function-returns-a-tuple": (
        "def _alloc(steps, width, bs):\n"
        "    return torch.zeros((steps, width)), torch.zeros((steps, bs + 1))\n",
        "",
        "        self.cuda_graph_kv_indices, self.kv_indptr = _alloc(\n"
        f"            self.speculative_num_steps, {_SIZED}, max_bs\n"
        "        )",
        None,
    ),
    "function-returns-a-local": (
        "def _alloc(steps, width):\n"
        "    out = torch.zeros((steps, width))\n"
        "    return out\n",
        "",
        f"        self.cuda_graph_kv_indices = _alloc(self.speculative_num_steps, {_UNSIZED})",
        _UNSIZED,
    ),
    # A method doing more than make its buffers (longer than an allocation
    # helper is) is not read at its calls.
    "long-method-not-read": (
        "",
        "    def _alloc_rows(self, width):\n"
        + "".join(f"        self.n{i} = {i}\n" for i in range(50))
        + "        return torch.empty((self.speculative_num_steps, width))\n",
        f"        self.cuda_graph_kv_indices = self._alloc_rows({_UNSIZED})",
        None,
    ),
    # A decorator may change what the helper is given: not read.
    "decorated-helper": (
        "import functools\n\n\n"
        "def _grow(fn):\n"
        "    @functools.wraps(fn)\n"
        "    def wrapper(self, w):\n"
        "        return fn(self, w * self.topk)\n"
        "    return wrapper\n",
        "    @_grow\n"
        "    def _alloc_rows(self, width):\n"
        "        return torch.zeros((self.speculative_num_steps, width))\n",
        f"        self.cuda_graph_kv_indices = self._alloc_rows({_UNSIZED})",
        None,
    ),
    # A method that sizes its row from the instance alone is judged where it
    # allocates, once; its call adds nothing.
    "method-judged-where-it-allocates": (
        "",
        "    def _make_rows(self):\n"
        "        self.cuda_graph_kv_indices = torch.zeros(\n"
        "            (self.speculative_num_steps, self.max_bs * self.max_context_len)\n"
        "        )\n",
        "        self._make_rows()",
        "self.max_bs * self.max_context_len",
    ),
    # A row made by a function the helper defines inside is not the call's.
    "function-nested-definition": (
        "def _alloc(steps, width):\n"
        "    def later():\n"
        "        return torch.zeros((steps, width))\n"
        "    return later\n",
        "",
        f"        self.make = _alloc(self.speculative_num_steps, {_UNSIZED})",
        None,
    ),
}


@pytest.mark.parametrize(
    ("module", "methods", "call", "shown"), CASES.values(), ids=CASES.keys()
)
def test_a_row_a_helper_makes_is_judged_at_its_call(
    module: str, methods: str, call: str, shown: str | None
) -> None:
    source = _BACKEND.format(module=module, methods=methods, call=call)
    expected = [] if shown is None else ["KVI003"]
    assert [c for c in codes(source) if c == "KVI003"] == expected
    assert [c for c in full_walk_codes(source) if c == "KVI003"] == expected
    if shown is None:
        return
    (finding,) = [f for f in lint_source(source, "b.py") if f.code == "KVI003"]
    line = source.splitlines()[finding.row - 1]
    assert line[finding.column - 1 :].startswith(shown), (line, finding)
    assert f"width `{shown}`" in finding.message


def test_a_method_that_only_calls_a_helper_is_read() -> None:
    """The caller names no allocator and no kernel, and is not the class's
    last method: it is still read (check leaves such methods unparsed),
    because the helper it calls allocates."""
    source = _BACKEND.format(
        module=_RETURNS,
        methods="",
        call=(
            "        self.rows = 1\n\n"
            "    def capture(self, max_bs):\n"
            "        self.cuda_graph_kv_indices = _alloc(\n"
            "            self.speculative_num_steps, max_bs * self.max_context_len\n"
            "        )\n\n"
            "    def last(self):\n"
            "        return None"
        ),
    )
    assert [c for c in codes(source) if c == "KVI003"] == ["KVI003"]
    assert [c for c in full_walk_codes(source) if c == "KVI003"] == ["KVI003"]


def test_a_row_no_argument_is_the_width_of_is_named_by_its_value() -> None:
    """A flat buffer of ``steps * width``: the finding stands at the call and
    names the width's value and the function that made it."""
    source = _BACKEND.format(
        module="def _flat(steps, width):\n    return torch.zeros(steps * width)\n",
        methods="",
        call=(
            "        self.cuda_graph_kv_indices = _flat(\n"
            f"            self.speculative_num_steps, {_UNSIZED}\n"
            "        )"
        ),
    )
    (finding,) = [f for f in lint_source(source, "b.py") if f.code == "KVI003"]
    line = source.splitlines()[finding.row - 1]
    assert line[finding.column - 1 :].startswith("_flat(")
    assert f"width `{_UNSIZED}` (made by `_flat(...)`)" in finding.message


def test_a_topk_not_given_leaves_the_factor_out() -> None:
    """``_alloc(steps, width)`` with ``topk=None``: the helper's ``if topk is
    not None:`` does not hold, and the row is unsized (shown at the call: the
    row's width is the helper's own local)."""
    source = _BACKEND.format(
        module="def _alloc(steps, width, topk=None):\n"
        "    if topk is not None:\n"
        "        width = width * topk\n"
        "    return torch.zeros((steps, width))\n",
        methods="",
        call=f"        self.cuda_graph_kv_indices = _alloc(self.speculative_num_steps, {_UNSIZED})",
    )
    assert [c for c in codes(source) if c == "KVI003"] == ["KVI003"]
    assert [c for c in full_walk_codes(source) if c == "KVI003"] == ["KVI003"]
