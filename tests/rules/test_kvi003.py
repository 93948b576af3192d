"""KVI003: which allocations are draft kv_indices rows, and the forms an unsized
one takes."""

from __future__ import annotations

import pytest
from rule_snippets import codes, full_walk_codes

from lint_plugin.linter import lint_source
from lint_plugin.roles import OTHER_PER_STEP_BUFFERS, other_buffer_of


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
    # A role named as the attribute of what is not a dotted name: reported,
    # spelled as the source has it (it crashed the message's rendering).
    (
        "torch.zeros((self.speculative_num_steps, max_bs * self.attn_backends[0].max_context_len))",
        ["KVI003"],
    ),
    (
        "torch.zeros((self.speculative_num_steps, max_bs * get_config().max_context_len))",
        ["KVI003"],
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


OTHER_BUFFER_NAMES = [
    pytest.param(f"self.cuda_graph_{word}{suffix}", id=f"{buffer}-{word}")
    for buffer, words in OTHER_PER_STEP_BUFFERS.items()
    for word in words
    for suffix in ("", "_buf")
]


@pytest.mark.parametrize("target", OTHER_BUFFER_NAMES)
def test_another_per_step_buffer_is_not_a_kv_indices_row(target: str) -> None:
    """The same unsized row assigned to any name of another per-step buffer
    (engine.roles.OTHER_PER_STEP_BUFFERS) is not KVI003's; to a kv_indices name
    it is."""
    source = (
        "import torch\n\nclass XMultiStepDraftBackend:\n"
        "    def init_cuda_graph_state(self, max_bs):\n"
        "        width = draft_kv_indices_buffer_width(max_bs, self.topk, self.max_context_len)\n"
        "        {target} = torch.zeros((self.speculative_num_steps, max_bs * self.max_context_len))\n"
    )
    assert codes(source.format(target=target)) == []
    assert codes(source.format(target="self.cuda_graph_kv_indices")) == ["KVI003"]


# The names KVI003 has skipped since the rule was written (its private pattern
# `indptr|mask|last_page|seq_lens|positions|qo_` before engine.roles held them):
# written out here, so a word dropped from the table fails.
SKIPPED_SINCE_THE_START = (
    "indptr",
    "mask",
    "last_page",
    "seq_lens",
    "positions",
    "qo_",
)


@pytest.mark.parametrize("word", SKIPPED_SINCE_THE_START)
def test_the_buffers_kvi003_always_skipped_are_still_skipped(word: str) -> None:
    assert other_buffer_of(f"self.cuda_graph_{word}_buf") is not None


def test_a_query_offset_buffer_is_named_as_one() -> None:
    assert other_buffer_of("self.qo_indptr") == "qo_indptr"
    assert other_buffer_of("self.kv_indptr") == "kv_indptr"
    assert other_buffer_of("self.cuda_graph_kv_indices") is None


_BASE = (
    "import torch\n\n\nclass TritonMultiStepDraftBackend:\n"
    "    def __init__(self, model_runner, topk, speculative_num_steps):\n"
    "        self.topk = topk\n"
    "        self.speculative_num_steps = speculative_num_steps\n"
)
_NO_TOPK_BASE = _BASE.replace("self.topk = topk", "self.k = topk")
_UNSIZED_ROWS = (
    "    def init_cuda_graph_state(self, max_bs, max_num_tokens):\n"
    "        self.cuda_graph_kv_indices = torch.zeros(\n"
    "            (self.speculative_num_steps, max_bs * self.max_context_len)\n"
    "        )\n"
)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # A multi-step draft backend keeps the topk its base of the file keeps.
        (
            f"{_BASE}\n\nclass PatchedMultiStepDraftBackend(TritonMultiStepDraftBackend):\n"
            + _UNSIZED_ROWS,
            ["KVI003"],
        ),
        # And its base's base's.
        (
            f"{_BASE}\n\nclass Middle(TritonMultiStepDraftBackend):\n    pass\n\n\n"
            "class PatchedMultiStepDraftBackend(Middle):\n" + _UNSIZED_ROWS,
            ["KVI003"],
        ),
        # A base that keeps no topk: one branch per request, the row is right.
        (
            f"{_NO_TOPK_BASE}\n\nclass PatchedMultiStepDraftBackend(TritonMultiStepDraftBackend):\n"
            + _UNSIZED_ROWS,
            [],
        ),
        # A base of another module is not read (the limit the README states).
        (
            "import torch\nfrom sglang.x import TritonMultiStepDraftBackend\n\n\n"
            "class PatchedMultiStepDraftBackend(TritonMultiStepDraftBackend):\n"
            + _UNSIZED_ROWS,
            [],
        ),
        # Named by its base: a subclass of a draft backend is one.
        (
            f"{_BASE}\n\nclass Patched(TritonMultiStepDraftBackend):\n" + _UNSIZED_ROWS,
            ["KVI003"],
        ),
        # The header over lines, a comment in it.
        (
            f"{_BASE}\n\nclass Patched(  # patched\n    TritonMultiStepDraftBackend,\n"
            "    metaclass=type,\n):\n" + _UNSIZED_ROWS,
            ["KVI003"],
        ),
        # Named by its base, which keeps no topk: the row is right.
        (
            f"{_NO_TOPK_BASE}\n\nclass Patched(TritonMultiStepDraftBackend):\n"
            + _UNSIZED_ROWS,
            [],
        ),
        # Neither it nor its bases named so: known only by what it keeps itself.
        (
            f"{_BASE}\n\nclass Middle(TritonMultiStepDraftBackend):\n    pass\n\n\n"
            "class Patched(Middle):\n" + _UNSIZED_ROWS,
            [],
        ),
    ],
    ids=[
        "base",
        "base-of-base",
        "base-keeps-no-topk",
        "other-module",
        "named-by-its-base",
        "header-over-lines",
        "named-by-a-base-keeping-no-topk",
        "base-of-base-unnamed",
    ],
)
def test_a_draft_backend_keeps_the_topk_of_its_bases_in_the_file(
    source: str, expected: list[str]
) -> None:
    assert codes(source) == expected
    assert full_walk_codes(source) == expected


@pytest.mark.parametrize(
    ("importing", "expected"),
    [
        ("from pkg.base import TritonMultiStepDraftBackend\n", ["KVI003"]),
        ("from .base import TritonMultiStepDraftBackend\n", ["KVI003"]),
        ("from .base import TritonMultiStepDraftBackend as Base\n", ["KVI003"]),
        # Not in the tree: nothing is assumed of it.
        ("from elsewhere.base import TritonMultiStepDraftBackend\n", []),
        # Imported as a module: a dotted base is not read.
        ("from pkg import base\n", []),
    ],
    ids=["absolute", "relative", "aliased", "outside-the-tree", "dotted"],
)
def test_a_draft_backend_keeps_the_topk_of_a_base_imported_from_its_tree(
    tmp_path, importing: str, expected: list[str]
) -> None:
    """SGLang's TRT-LLM draft backends subclass FlashInfer's from another module
    and keep no topk of their own: an unsized row in one is found."""
    import ast

    from rule_snippets import EVERY_RULE

    from lint_plugin.engine.source import Source
    from lint_plugin.linter import lint_tree

    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text(_BASE)
    base = "Base" if " as Base" in importing else "TritonMultiStepDraftBackend"
    if importing.startswith("from pkg import base"):
        base = "base.TritonMultiStepDraftBackend"
    source = (
        f"import torch\n{importing}\n\n"
        f"class TRTLLMMultiStepDraftBackend({base}):\n" + _UNSIZED_ROWS
    )
    path = str(package / "sub.py")
    assert codes(source, path) == expected
    whole = lint_tree(ast.parse(source), Source(source), path, None, EVERY_RULE)
    assert [f.code for f in whole] == expected


_METHOD_WIDTH = (
    "import torch\n\n\nclass FooMultiStepDraftBackend:\n"
    "    def __init__(self, topk, speculative_num_steps, max_context_len):\n"
    "        self.topk = topk\n"
    "        self.speculative_num_steps = speculative_num_steps\n"
    "        self.max_context_len = max_context_len\n\n"
    "    {decorator}\n"
    "    def _w({params}):\n"
    "        return {width}\n\n"
    "    def init_cuda_graph_state(self, max_bs, max_num_tokens):\n"
    "        kv_indices_width = self._w({args})\n"
    "        self.cuda_graph_kv_indices = torch.zeros(\n"
    "            (self.speculative_num_steps, kv_indices_width), dtype=torch.int32\n"
    "        )\n"
)


@pytest.mark.parametrize(
    ("decorator", "params", "width", "args", "expected"),
    [
        ("@staticmethod", "n, c", "n * c", "max_bs, self.max_context_len", ["KVI003"]),
        (
            "@staticmethod",
            "n, k, c",
            "n * k * c",
            "max_bs, self.topk, self.max_context_len",
            [],
        ),
        (
            "@classmethod",
            "cls, n, c",
            "n * c",
            "max_bs, self.max_context_len",
            ["KVI003"],
        ),
        ("", "self, n, c", "n * c", "max_bs, self.max_context_len", ["KVI003"]),
    ],
    ids=["static-unsized", "static-sized", "classmethod", "method"],
)
def test_a_width_returned_by_a_method_called_through_self(
    decorator: str, params: str, width: str, args: str, expected: list[str]
) -> None:
    """A ``@staticmethod`` binds no instance: its arguments are its parameters."""
    source = _METHOD_WIDTH.format(
        decorator=decorator or "# a plain method",
        params=params,
        width=width,
        args=args,
    )
    assert codes(source) == expected
    assert full_walk_codes(source) == expected


_BRANCHED = (
    _BASE + "        self.max_context_len = model_runner.model_config.context_len\n\n"
    "    def init_cuda_graph_state(self, max_bs, max_num_tokens):\n"
    "{branches}"
    "        self.cuda_graph_kv_indices = torch.zeros(\n"
    "            (self.speculative_num_steps, w)\n"
    "        )\n"
)
_TOPK_ONE = "max_bs * self.max_context_len"  # sized only where topk is 1
_SIZED = "max_bs * self.topk * self.max_context_len"


@pytest.mark.parametrize(
    ("branches", "expected"),
    [
        # A case taken only when its value equals the subject.
        (
            "        match self.topk:\n"
            f"            case 1:\n                w = {_TOPK_ONE}\n"
            f"            case _:\n                w = {_SIZED}\n",
            [],
        ),
        (
            "        match self.topk:\n"
            f"            case 2 | 1:\n                w = max_bs * 2 * self.max_context_len\n"
            f"            case _:\n                w = {_SIZED}\n",
            [],
        ),
        # topk 2 takes the unsized case.
        (
            "        match self.topk:\n"
            f"            case 1 | 2:\n                w = {_TOPK_ONE}\n"
            f"            case _:\n                w = {_SIZED}\n",
            ["KVI003"],
        ),
        # A guard: the case may be skipped with topk 1, and taken with any.
        (
            f"        w = {_SIZED}\n"
            "        match self.topk:\n"
            f"            case 1 if max_bs > 0:\n                w = {_TOPK_ONE}\n",
            [],
        ),
        (
            f"        w = {_SIZED}\n"
            "        match max_bs:\n"
            f"            case 1:\n                w = {_TOPK_ONE}\n",
            ["KVI003"],
        ),
        # Membership in a literal tuple is a test of equalities.
        (
            f"        if self.topk in (1,):\n            w = {_TOPK_ONE}\n"
            f"        else:\n            w = {_SIZED}\n",
            [],
        ),
        (
            f"        if self.topk not in [1]:\n            w = {_SIZED}\n"
            f"        else:\n            w = {_TOPK_ONE}\n",
            [],
        ),
        (
            f"        if self.topk in (1, 2):\n            w = {_TOPK_ONE}\n"
            f"        else:\n            w = {_SIZED}\n",
            ["KVI003"],
        ),
        # Another value in the tuple: unread, so the test may go either way.
        (
            f"        if self.topk in (1, self.mode):\n            w = {_TOPK_ONE}\n"
            f"        else:\n            w = {_SIZED}\n",
            ["KVI003"],
        ),
        # A match that binds no other name leaves their paths alone: the
        # unsized case (topk 2, max_bs 1) is found, not lost to too many paths.
        (
            "        k = self.topk\n"
            "        w = max_bs * k * self.max_context_len\n"
            "        match self.topk:\n"
            f"            case 1:\n                w = {_TOPK_ONE}\n"
            "            case 2 | 3:\n"
            "                w = max_bs * max_bs * self.max_context_len\n"
            "        if max_bs > 1:\n"
            "            w = max_bs * max_bs * k * self.max_context_len\n"
            "        if max_bs > 2:\n"
            "            w = max(max_bs * k * self.max_context_len, "
            "max_bs * self.topk * self.max_context_len)\n",
            ["KVI003"],
        ),
        # `case _:` is always taken when reached: nothing falls through it.
        (
            f"        w = {_TOPK_ONE}\n"
            "        match self.topk:\n"
            f"            case 1:\n                w = {_TOPK_ONE}\n"
            f"            case _:\n                w = {_SIZED}\n",
            [],
        ),
        (
            f"        w = {_TOPK_ONE}\n"
            "        match self.topk:\n"
            f"            case 1:\n                w = {_TOPK_ONE}\n"
            f"            case other if max_bs > 0:\n                w = {_SIZED}\n",
            ["KVI003"],
        ),
    ],
    ids=[
        "case-1",
        "case-or",
        "case-or-unsized",
        "case-guarded-sized-default",
        "case-other-subject",
        "in-tuple",
        "not-in-list",
        "in-tuple-unsized",
        "in-tuple-unread",
        "case-then-tests",
        "case-wildcard",
        "case-capture-guarded",
    ],
)
def test_a_branch_taken_on_a_value_of_topk_holds_on_its_path(
    branches: str, expected: list[str]
) -> None:
    """``match`` value patterns and membership in a literal tuple narrow the
    topk on their path, as ``if self.topk == 1:`` does (they cried wolf)."""
    source = _BRANCHED.format(branches=branches)
    # The sized spelling is an inline width (KVI002), whatever the branch.
    assert [c for c in codes(source) if c != "KVI002"] == expected
    assert [c for c in full_walk_codes(source) if c != "KVI002"] == expected


@pytest.mark.parametrize(
    ("branches", "expected"),
    [
        # Each round adds a row: only the rounds' count sizes it, which the
        # values do not follow. Not judged; around the loop, sized.
        (
            f"        w = {_TOPK_ONE}\n        k = 1\n"
            "        while k < self.topk:\n"
            f"            w += {_TOPK_ONE}\n            k += 1\n",
            [],
        ),
        (
            f"        w = {_TOPK_ONE}\n"
            "        for _ in range(self.topk - 1):\n"
            f"            w += {_TOPK_ONE}\n",
            [],
        ),
        # A `while` is skipped only where its test fails on entry.
        (
            f"        w = {_TOPK_ONE}\n"
            "        while self.topk > 1:\n"
            f"            w = {_SIZED}\n            break\n",
            [],
        ),
        # Skipped on a test of anything else: the width it had is the row's.
        (
            f"        w = {_TOPK_ONE}\n"
            "        while self.enabled:\n"
            f"            w += {_TOPK_ONE}\n",
            ["KVI003"],
        ),
    ],
    ids=["while-accumulates", "for-accumulates", "while-on-topk", "while-on-a-flag"],
)
def test_a_width_a_loop_updates_from_itself_is_not_judged(
    branches: str, expected: list[str]
) -> None:
    """What a loop adds to a width it had before the loop is opaque (the rule's
    doc); the path that skips the loop is judged with the loop's test."""
    source = _BRANCHED.format(branches=branches)
    assert [c for c in codes(source) if c != "KVI002"] == expected
    assert [c for c in full_walk_codes(source) if c != "KVI002"] == expected


@pytest.mark.parametrize(
    ("call", "width"),
    [
        ("torch.zeros(self.speculative_num_steps, *dims)", "dims"),
        ("torch.zeros(*steps, *dims)", "steps"),
        ("torch.zeros(self.speculative_num_steps, dims[0])", "dims[0]"),
    ],
)
def test_the_message_names_the_argument_holding_the_width(
    call: str, width: str
) -> None:
    """Dimensions given one per argument, one of them starred: the finding
    names and points at the width's argument, not the step count."""
    source = _BRANCHED.format(
        branches=(
            "        dims = [max_bs * self.max_context_len]\n"
            "        steps = [self.speculative_num_steps]\n"
        )
    ).replace(
        "torch.zeros(\n            (self.speculative_num_steps, w)\n        )", call
    )
    (finding,) = [f for f in lint_source(source, "b.py") if f.code == "KVI003"]
    assert f"width `{width}`" in finding.message
    line = source.splitlines()[finding.row - 1]
    assert line[finding.column - 1 :].startswith(width)


_UNDER = (
    "import torch\n\n\nclass FooMultiStepDraftBackend:\n"
    "    def __init__(self, topk, speculative_num_steps, max_context_len):\n"
    "        self.topk = topk\n"
    "        self.speculative_num_steps = speculative_num_steps\n"
    "        self.max_context_len = max_context_len\n\n"
    "    def init_cuda_graph_state(self, max_bs, flag):\n"
    "{body}"
)
_ALLOCATE = (
    "self.cuda_graph_kv_indices = torch.zeros("
    "(self.speculative_num_steps, max_bs * self.max_context_len))"
)


def assert_kvi003(source: str, expected: list[str]) -> None:
    """KVI003's findings in ``source``, by check's regions and by a whole walk."""
    assert [c for c in codes(source) if c == "KVI003"] == expected
    assert [c for c in full_walk_codes(source) if c == "KVI003"] == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (f"        if self.topk == 1:\n            {_ALLOCATE}\n", []),
        (
            f"        if flag:\n            if self.topk == 1:\n"
            f"                {_ALLOCATE}\n",
            [],
        ),
        (
            "        if self.topk > 1:\n            pass\n"
            f"        else:\n            {_ALLOCATE}\n",
            [],
        ),
        (
            "        if self.topk == 1:\n            pass\n"
            f"        else:\n            {_ALLOCATE}\n",
            ["KVI003"],
        ),
        (f"        if flag:\n            {_ALLOCATE}\n", ["KVI003"]),
        (
            "        match self.topk:\n            case 2:\n                pass\n"
            f"            case 1:\n                {_ALLOCATE}\n",
            [],
        ),
        (
            "        match self.topk:\n            case 1:\n                pass\n"
            f"            case _:\n                {_ALLOCATE}\n",
            ["KVI003"],
        ),
        (
            "        for _ in range(self.topk - 1):\n"
            "            pass\n"
            f"        {_ALLOCATE}\n",
            ["KVI003"],
        ),
    ],
    ids=[
        "under-topk-1",
        "nested",
        "in-the-else",
        "else-of-topk-1",
        "flag",
        "match-case-1",
        "match-default",
        "after-loop",
    ],
)
def test_an_allocation_under_a_branch_holds_its_test(
    body: str, expected: list[str]
) -> None:
    """The allocation's own enclosing tests hold on its path, however deep
    (the flow skips a compound statement that binds nothing)."""
    source = _UNDER.format(body=body)
    assert_kvi003(source, expected)


_GROWN = (
    "self.cuda_graph_kv_indices = torch.zeros("
    "(self.speculative_num_steps, max_bs * self.max_context_len * k))"
)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # `k` is 1 exactly where the topk is: the unsized row is the topk's 1.
        (
            "        k = self.topk if self.topk > 1 else 1\n"
            f"        if k == 1:\n            {_ALLOCATE}\n"
            f"        else:\n            {_GROWN}\n",
            [],
        ),
        (
            "        if self.topk > 1:\n            k = self.topk\n"
            "        else:\n            k = 1\n"
            f"        if k == 1:\n            {_ALLOCATE}\n"
            f"        else:\n            {_GROWN}\n",
            [],
        ),
        (
            "        k = self.topk if self.topk > 1 else 1\n"
            "        match k:\n"
            f"            case 1:\n                {_ALLOCATE}\n"
            f"            case _:\n                {_GROWN}\n",
            [],
        ),
        # A topk of 2 makes `k` 1: unsized there.
        (
            "        if self.topk > 2:\n            k = self.topk\n"
            "        else:\n            k = 1\n"
            f"        if k == 1:\n            {_ALLOCATE}\n"
            f"        else:\n            {_GROWN}\n",
            ["KVI003"],
        ),
        # A name of no role is a symbol by its text, which may stand for
        # another value where it is read again (an object's attribute set in
        # between): not read path by path.
        (
            "        k = self.topk if flag.size > 1 else 1\n"
            "        flag.size = 2\n"
            "        w = max_bs * self.max_context_len\n"
            "        if flag.size > 1 and k == 1:\n            pass\n"
            "        else:\n            w = w * self.topk\n"
            "        self.cuda_graph_kv_indices = torch.zeros(\n"
            "            (self.speculative_num_steps, w)\n        )\n",
            ["KVI003"],
        ),
        # A nested function rebinds the tested size between its reads.
        (
            "        def grow():\n"
            "            nonlocal max_bs\n"
            "            max_bs = 2\n"
            "        k = self.topk if max_bs > 1 else 1\n"
            "        grow()\n"
            "        w = max_bs * self.max_context_len\n"
            "        if max_bs > 1 and k == 1:\n            pass\n"
            "        else:\n            w = w * self.topk\n"
            "        self.cuda_graph_kv_indices = torch.zeros(\n"
            "            (self.speculative_num_steps, w)\n        )\n",
            ["KVI003"],
        ),
        # Two spellings of one size (either may be None): not read path by path.
        (
            "        k = self.draft_topk if self.topk > 1 else max(self.topk, 1)\n"
            "        w = max_bs * self.max_context_len\n"
            "        if k == self.topk:\n            w = w * k\n"
            "        self.cuda_graph_kv_indices = torch.zeros(\n"
            "            (self.speculative_num_steps, w)\n        )\n",
            ["KVI003"],
        ),
        # Paths that do not exclude one another say nothing of `k`.
        (
            "        k = 1\n        if flag:\n            k = self.topk\n"
            "        if max_bs > 8:\n            k = 2\n"
            f"        if k == 1:\n            {_ALLOCATE}\n",
            ["KVI003"],
        ),
    ],
    ids=[
        "ifexp",
        "if-else",
        "match",
        "if-else-topk-2",
        "an-attribute-set-in-between",
        "rebound-by-a-nested-function",
        "two-spellings-of-a-size",
        "overlapping-paths",
    ],
)
def test_a_test_whose_value_differs_by_path_is_read_path_by_path(
    body: str, expected: list[str]
) -> None:
    """``if k == 1:`` where ``k`` is the topk on one path and 1 on another
    holds where some path's own tests and its value do."""
    source = _UNDER.format(body=body)
    assert_kvi003(source, expected)


def test_a_parameter_and_an_attribute_of_its_name_are_not_one_value() -> None:
    """``self.page_size`` and the parameter ``page_size`` are read as one
    symbol: a test of the one after a path chosen by the other is not read
    path by path (the row is unsized where they differ)."""
    source = (
        "import torch\n\n\nclass FooMultiStepDraftBackend:\n"
        "    def __init__(self, topk, speculative_num_steps, max_context_len, page_size):\n"
        "        self.topk = topk\n"
        "        self.speculative_num_steps = speculative_num_steps\n"
        "        self.max_context_len = max_context_len\n"
        "        self.page_size = page_size\n\n"
        "    def init_cuda_graph_state(self, max_bs, page_size):\n"
        "        k = self.topk if self.page_size > 1 else 1\n"
        "        w = max_bs * self.max_context_len\n"
        "        if page_size > 1 and k == 1:\n            pass\n"
        "        else:\n            w = w * self.topk\n"
        "        self.cuda_graph_kv_indices = torch.zeros(\n"
        "            (self.speculative_num_steps, w)\n        )\n"
    )
    assert [c for c in codes(source) if c == "KVI003"] == ["KVI003"]
    assert [c for c in full_walk_codes(source) if c == "KVI003"] == ["KVI003"]


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        ("self.topk * 2 is not None", []),
        ("not (max_bs + 1 is None)", []),
        ("None is not self.max_context_len * 3", []),
        # A size may be None (a topk parameter defaulting to None, SGLang's
        # `speculative_eagle_topk` without speculation): either way. The
        # backend's own topk is not None where a draft step runs
        # (test_a_path_where_the_topk_is_none_runs_no_draft_step).
        ("self.topk is not None", []),
        ("None is not self.topk", []),
        ("self.page_size is not None", ["KVI003"]),
        ("flag is not None", ["KVI003"]),
        ("self.topk * 2 is not flag", ["KVI003"]),
    ],
)
def test_arithmetic_is_never_none(test: str, expected: list[str]) -> None:
    """Arithmetic is a number (Python computes one or raises): ``is None`` is
    false for it, so the path that skips the topk's factor is not taken. A
    name's value, a size's too, may be None."""
    body = (
        "        w = max_bs * self.max_context_len\n"
        f"        if {test}:\n            w = w * self.topk\n"
        "        self.cuda_graph_kv_indices = torch.zeros(\n"
        "            (self.speculative_num_steps, w)\n        )\n"
    )
    source = _UNDER.format(body=body)
    assert_kvi003(source, expected)


_NONE_HEAD = (
    "import torch\n\n\n"
    "def _rows(steps, width, topk=None):\n"
    "    if topk is not None:\n        width = width * topk\n"
    "    return torch.zeros((steps, width))\n\n\n"
    "class FooMultiStepDraftBackend:\n"
    "    def __init__(self, topk, speculative_num_steps, max_context_len, draft_topk=None):\n"
    "        self.topk = topk\n"
    "        self.speculative_num_steps = speculative_num_steps\n"
    "        self.max_context_len = max_context_len\n"
    "{keeps}"
    "\n    def init_cuda_graph_state(self, max_bs, topk=None):\n"
    "{body}"
    "{allocate}"
)
_W = "        w = max_bs * self.max_context_len\n"
_ROWS = (
    "        self.cuda_graph_kv_indices = torch.zeros(\n"
    "            (self.speculative_num_steps, w)\n        )\n"
)


@pytest.mark.parametrize(
    ("body", "keeps", "expected"),
    [
        pytest.param(
            _W + "        if self.topk is not None:\n            w = w * self.topk\n",
            "",
            [],
            id="factor-unless-none",
        ),
        pytest.param(
            "        k = 1 if self.topk is None else self.topk\n"
            "        w = max_bs * k * self.max_context_len\n",
            "",
            [],
            id="one-when-none",
        ),
        pytest.param(
            "        k = self.topk\n" + _W + "        if k is not None:\n"
            "            w *= k\n",
            "",
            [],
            id="alias-of-the-topk",
        ),
        pytest.param(
            "        if self.topk is None or self.topk == 1:\n"
            "            w = max_bs * self.max_context_len\n"
            "        else:\n            w = max_bs * self.topk * self.max_context_len\n",
            "",
            [],
            id="none-or-one",
        ),
        pytest.param(
            _W + "        if self.topk is not None and self.topk > 1:\n"
            "            w = w * self.topk\n",
            "",
            [],
            id="not-none-and-above-one",
        ),
        pytest.param(
            _W + "        w = w if self.topk is None else w * self.topk\n",
            "",
            [],
            id="conditional-expression",
        ),
        # Short only where the topk is None, where no draft step runs.
        pytest.param(
            "        w = max_bs * self.topk * self.max_context_len\n"
            "        if self.topk is None:\n"
            "            w = max_bs * self.max_context_len // 2\n",
            "",
            [],
            id="half-a-row-when-none",
        ),
        pytest.param(
            _W + "        if self.topk is not None and self.topk > 2:\n"
            "            w = w * self.topk\n",
            "",
            ["KVI003"],
            id="factor-above-two-only",
        ),
        # Another size tested for None says nothing of the backend's topk.
        pytest.param(
            _W + "        if topk is not None:\n            w = w * topk\n",
            "",
            ["KVI003"],
            id="a-parameter-defaulting-to-none",
        ),
        pytest.param(
            _W
            + "        if self.draft_topk is not None:\n            w = w * self.topk\n",
            "        self.draft_topk = draft_topk\n",
            ["KVI003"],
            id="another-topk-attribute",
        ),
        pytest.param(
            _W + "        if self.topk is not None:\n            w = w * self.topk\n",
            "        self.draft_topk = draft_topk\n",
            ["KVI003"],
            id="the-topk-beside-another",
        ),
    ],
)
def test_a_path_where_the_topk_is_none_runs_no_draft_step(
    body: str, keeps: str, expected: list[str]
) -> None:
    """The backend's own topk is None only without speculation (SGLang's
    ``speculative_eagle_topk``), where no draft step runs: a path that takes it
    to be None is not judged. Where the class keeps two topk attributes, or
    another size is tested (a parameter defaulting to None), the test is free
    either way."""
    source = _NONE_HEAD.format(keeps=keeps, body=body, allocate=_ROWS)
    assert_kvi003(source, expected)


_STEPS_AND_ROW = "self.speculative_num_steps, max_bs * self.max_context_len"


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (f"_rows({_STEPS_AND_ROW}, self.topk)", []),
        (f"_rows({_STEPS_AND_ROW})", ["KVI003"]),
        (f"_rows({_STEPS_AND_ROW}, topk)", ["KVI003"]),
    ],
)
def test_a_helper_given_a_topk_that_may_be_none(call: str, expected: list[str]) -> None:
    """A helper's ``if topk is not None:`` reads the value its call gives: the
    backend's topk (not None where a draft step runs), nothing (None: no
    factor), or a parameter defaulting to None (free either way)."""
    allocate = f"        self.cuda_graph_kv_indices = {call}\n"
    source = _NONE_HEAD.format(keeps="", body="", allocate=allocate)
    assert_kvi003(source, expected)


_POOL_BACKEND = (
    "import torch\n\n\nclass FooMultiStepDraftBackend:\n"
    "    def __init__(self, model_runner, topk, speculative_num_steps):\n"
    "        self.topk = topk\n"
    "        self.speculative_num_steps = speculative_num_steps\n"
    "        self.max_context_len = model_runner.model_config.context_len\n"
    "        self.kv_indices_width = {width}\n"
    "        self.cuda_graph_kv_indices = torch.zeros(\n"
    "            (self.speculative_num_steps, self.kv_indices_width)\n        )\n"
)


_POOL = "model_runner.req_to_token_pool.size"


@pytest.mark.parametrize(
    ("width", "expected"),
    [
        (f"{_POOL} * self.max_context_len", ["KVI003"]),
        (f"self.max_context_len * {_POOL}", ["KVI003"]),
        (f"{_POOL} * self.topk * self.max_context_len", []),
        (f"max({_POOL} * self.max_context_len, 1 << 20)", ["KVI003"]),
        (f"{_POOL} * self.topk * self.max_context_len + (1 << 10)", []),
        (f"{_POOL} * self.max_context_len + (1 << 10)", ["KVI003"]),
        (f"{_POOL} * self.max_context_len << 1", ["KVI003"]),
        (f"{_POOL} * self.max_context_len * self.topk << 1", []),
        (f"{_POOL} * self.max_context_len * self.topk >> 1", ["KVI003"]),
        (f"({_POOL} << 3) * self.max_context_len >> 3", ["KVI003"]),
        (f"({_POOL} * self.topk << 3) * self.max_context_len >> 3", []),
        # `size` alone, or of another pool, is a quantity of no known role.
        ("model_runner.token_to_kv_pool.size * self.max_context_len", []),
    ],
)
def test_the_request_pool_size_is_a_sequence_count(
    width: str, expected: list[str]
) -> None:
    """SGLang's request pool keeps a row per request slot: its ``size`` counts
    sequences (``max_bs = model_runner.req_to_token_pool.size``), so a row of
    it times the context lacks the topk. A shift is a power of two."""
    source = _POOL_BACKEND.format(width=width)
    assert_kvi003(source, expected)


_UNPACKED = (
    "import torch\n\n\n"
    "def dims(steps, num_seqs, context):\n"
    "    return steps, num_seqs * context\n\n\n"
    "class FooMultiStepDraftBackend:\n"
    "    def __init__(self, topk, speculative_num_steps, max_context_len):\n"
    "        self.topk = topk\n"
    "        self.speculative_num_steps = speculative_num_steps\n"
    "        self.max_context_len = max_context_len\n\n"
    "    def _dims(self, num_seqs):\n"
    "        return self.speculative_num_steps, num_seqs * {row}\n\n"
    "    def init_cuda_graph_state(self, max_bs):\n"
    "        {targets} = {call}\n"
    "        self.cuda_graph_kv_indices = torch.zeros(({steps}, w))\n"
)


@pytest.mark.parametrize(
    ("targets", "call", "steps", "row", "expected"),
    [
        ("steps, w", "self._dims(max_bs)", "steps", "self.max_context_len", ["KVI003"]),
        ("n, w", "self._dims(max_bs)", "n", "self.max_context_len", ["KVI003"]),
        (
            "self.steps, w",
            "self._dims(max_bs)",
            "self.steps",
            "self.max_context_len",
            ["KVI003"],
        ),
        (
            "steps, w",
            "dims(self.speculative_num_steps, max_bs, self.max_context_len)",
            "steps",
            "self.max_context_len",
            ["KVI003"],
        ),
        (
            "steps, w",
            "self._dims(max_bs)",
            "steps",
            "self.topk * self.max_context_len",
            [],
        ),
    ],
)
def test_a_step_count_unpacked_from_a_call_is_read(
    targets: str, call: str, steps: str, row: str, expected: list[str]
) -> None:
    """``steps, w = self._dims(max_bs)``: the rows are the steps whatever the
    local is called, as the width is read through the call."""
    source = _UNPACKED.format(targets=targets, call=call, steps=steps, row=row)
    assert_kvi003(source, expected)


@pytest.mark.parametrize(
    ("buffer", "expected"),
    [
        ("torch.zeros(max_bs * self.max_context_len).repeat(steps, 1)", ["KVI003"]),
        (
            "torch.zeros((1, max_bs * self.max_context_len)).expand(steps, -1)",
            ["KVI003"],
        ),
        (
            "torch.zeros((1, max_bs * self.max_context_len)).expand(steps, -1).contiguous()",
            ["KVI003"],
        ),
        ("torch.zeros(max_bs * self.topk * self.max_context_len).repeat(steps, 1)", []),
        ("torch.zeros(max_bs * self.max_context_len).repeat(steps, self.topk)", []),
        (
            "torch.zeros((1, max_bs * self.topk * self.max_context_len)).expand(steps, -1)",
            [],
        ),
        # Repeated along another dimension than the steps: no per-step rows.
        ("torch.zeros(max_bs * self.max_context_len).repeat(2, 1)", []),
    ],
)
def test_a_row_repeated_per_step_is_judged(buffer: str, expected: list[str]) -> None:
    """``row.repeat(steps, 1)`` and ``row.expand(steps, -1)`` make one row per
    step of the allocation's own size."""
    body = (
        "        steps = self.speculative_num_steps\n"
        f"        self.cuda_graph_kv_indices = {buffer}\n"
    )
    source = _UNDER.format(body=body)
    assert_kvi003(source, expected)


@pytest.mark.parametrize(
    ("target", "buffer", "expected"),
    [
        # Another per-step buffer, by the name the chain is assigned to.
        ("self.cuda_graph_custom_mask", "torch.zeros(_W).repeat(steps, 1)", []),
        ("self.kv_indptr_buf", "torch.zeros((1, _W)).expand(steps, -1)", []),
        ("self.draft_mask", "torch.zeros(steps * _W).view(steps, -1)", []),
        ("self.cuda_graph_kv_indices", "torch.zeros(_W).repeat(steps, 1)", ["KVI003"]),
        # What follows the repeat decides the rows kept.
        (
            "self.cuda_graph_kv_indices",
            "torch.zeros(_W).repeat(steps, 1).repeat(1, self.topk)",
            [],
        ),
        ("self.cuda_graph_kv_indices", "torch.zeros(_W).repeat(steps, 1)[0]", []),
        ("self.cuda_graph_kv_indices", "torch.zeros(_W).repeat(steps, 1).T", []),
        (
            "self.cuda_graph_kv_indices",
            "torch.zeros(steps * _W).view(steps, -1).to(torch.int32)",
            ["KVI003"],
        ),
    ],
)
def test_what_a_chain_makes_of_the_allocation_is_what_is_kept(
    target: str, buffer: str, expected: list[str]
) -> None:
    """A view or a repeat of the allocation is judged as the buffer assigned
    to the chain's name, and only where nothing after it but a shape-keeping
    method changes the rows."""
    body = (
        "        steps = self.speculative_num_steps\n"
        f"        {target} = {buffer.replace('_W', 'max_bs * self.max_context_len')}\n"
    )
    assert_kvi003(_UNDER.format(body=body), expected)


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        ("self.topk != None", []),
        ("None != self.topk", []),
        ("not self.topk == None", []),
        ("topk != None", ["KVI003"]),
    ],
)
def test_a_none_test_spelt_with_equality(test: str, expected: list[str]) -> None:
    """``!= None`` and ``== None`` test a size for None as ``is`` does."""
    body = (
        "        w = max_bs * self.max_context_len\n"
        f"        if {test}:\n            w = w * self.topk\n"
        "        self.cuda_graph_kv_indices = torch.zeros(\n"
        "            (self.speculative_num_steps, w)\n        )\n"
    )
    assert_kvi003(_NONE_HEAD.format(keeps="", body=body, allocate=""), expected)


@pytest.mark.parametrize(
    ("k", "expected"),
    [("self.topk or 1", []), ("max(self.topk, 1)", []), ("self.topk", [])],
)
def test_a_helper_given_a_value_that_is_never_none(k: str, expected: list[str]) -> None:
    """``self.topk or 1`` is never None (None is falsy): a helper's ``if topk
    is not None:`` is taken for it."""
    allocate = (
        f"        k = {k}\n"
        "        self.cuda_graph_kv_indices = _rows(\n"
        "            self.speculative_num_steps, max_bs * self.max_context_len, k\n"
        "        )\n"
    )
    assert_kvi003(_NONE_HEAD.format(keeps="", body="", allocate=allocate), expected)


@pytest.mark.parametrize(
    ("shift", "expected"),
    [("w <<= 1", ["KVI003"]), ("w <<= self.topk", []), ("w >>= 1", ["KVI003"])],
)
def test_a_width_shifted_in_place(shift: str, expected: list[str]) -> None:
    """``w <<= n`` doubles a width n times (``1 << topk`` is at least topk)."""
    body = (
        "        w = max_bs * self.max_context_len\n"
        f"        {shift}\n"
        "        self.cuda_graph_kv_indices = torch.zeros(\n"
        "            (self.speculative_num_steps, w)\n        )\n"
    )
    assert_kvi003(_UNDER.format(body=body), expected)


def test_a_step_count_unpacked_beside_a_width_of_many_paths() -> None:
    """The step count unpacked beside a width that differs by path is one
    value: the shape's paths are the width's, not their square (which would
    pass the paths the analysis reads, and leave the row unread)."""
    body = (
        "        w = max_bs * self.max_context_len * self.topk\n"
        "        if flag:\n"
        "            w = draft_kv_indices_buffer_width(max_bs, self.topk, self.max_context_len)\n"
        "        match self.topk:\n"
        "            case 1:\n                w = self.max_context_len\n"
        "            case 2 | 3:\n                w = max_bs * self.topk * self.max_context_len\n"
        "            case _:\n                w = max_bs * self.max_context_len\n"
        "        w = max(w, 1)\n"
        "        steps, w = self._steps_and(w)\n"
        "        self.cuda_graph_kv_indices = torch.zeros((steps, w))\n"
        "\n    def _steps_and(self, w):\n"
        "        return self.speculative_num_steps, w\n"
    )
    assert_kvi003(_UNDER.format(body=body), ["KVI003"])
