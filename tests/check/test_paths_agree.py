"""check's fast path, the flake8 plugin and a plain walk of the whole tree find the
same things, on generated programs in the shapes backends take: the helpers
imported under their names, under aliases or through their module, called with
arguments named for any role, in functions, draft backends and other classes,
with attributes assigned in ``__init__``, next to inline formulas."""

from __future__ import annotations

import ast

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lint_plugin.engine.source import Source
from lint_plugin.fix.rewrite import Options, rewrite_text
from lint_plugin.flake8_plugin import KviChecker
from lint_plugin.linter import lint_source, lint_tree

MODULE = "sglang.srt.speculative.spec_utils"
USED, WIDTH = "draft_kv_indices_used_len", "draft_kv_indices_buffer_width"
IMPORTS = {
    "plain": (f"from {MODULE} import {USED}, {WIDTH}\n", USED, WIDTH),
    "alias": (
        f"from {MODULE} import {USED} as used_len, {WIDTH} as width_of\n",
        "used_len",
        "width_of",
    ),
    "module": (
        "from sglang.srt.speculative import spec_utils\n",
        f"spec_utils.{USED}",
        f"spec_utils.{WIDTH}",
    ),
    "dotted": (f"import {MODULE} as su\n", f"su.{USED}", f"su.{WIDTH}"),
    "wrapped": (
        f"from {MODULE} import (\n    {USED} as u,\n    {WIDTH} as w,\n)\n",
        "u",
        "w",
    ),
    # An alias that is also an argument's name: every `k` becomes a mention.
    "clash": (f"from {MODULE} import {USED} as k, {WIDTH} as n\n", "k", "n"),
    "untrusted": (f"from elsewhere import {USED} as used_len\n", "used_len", WIDTH),
}
ARGUMENTS = [
    "seq_lens_sum", "self.topk", "topk", "k", "self.k", "bs", "max_bs", "i + 1",
    "num_steps", "self.speculative_num_steps", "self.max_context_len",
    "max_context_len", "max_num_tokens", "n", "1", "self.width",
]  # fmt: skip
BINDINGS = [
    "self.topk = topk",
    "self.k = topk",
    "self.width = max_bs",
    "self.speculative_num_steps = num_steps",
    "self.max_context_len = max_context_len",
    "k = topk",
]
FORMULAS = [
    "x = seq_lens_sum * self.topk + bs * (i + 1)",
    "x = bs * self.topk * self.max_context_len",
    "x = bs * self.max_context_len",
    "self.buf = torch.zeros((self.speculative_num_steps, bs * self.max_context_len))",
    "self.buf = torch.empty((self.speculative_num_steps, self.width))",
]
CLASSES = [
    "FooMultiStepDraftBackend",
    "FooAttnBackend",
    "Foo",
    # Subclasses of a draft backend the program defines (BASE): one by its name
    # alone, its header over lines with a comment in it.
    "Sub(BarMultiStepDraftBackend)",
    "Sub(  # patched\n    BarMultiStepDraftBackend,\n)",
]
BASE = (
    "class BarMultiStepDraftBackend:\n"
    "    def __init__(self, topk, speculative_num_steps):\n"
    "        self.topk = topk\n"
    "        self.speculative_num_steps = speculative_num_steps\n\n\n"
)
PARAMS = "self, topk, k, bs, max_bs, i, num_steps, max_context_len, seq_lens_sum, n"


@st.composite
def programs(draw) -> str:
    header, used, width = IMPORTS[draw(st.sampled_from(sorted(IMPORTS)))]
    helper, count = draw(st.sampled_from([(used, 4), (width, 3)]))
    arguments = draw(
        st.lists(st.sampled_from(ARGUMENTS), min_size=count, max_size=count)
    )
    body = draw(st.lists(st.sampled_from(FORMULAS + BINDINGS), max_size=2))
    call = f"{helper}({', '.join(arguments)})"
    where = draw(st.sampled_from(["assign", "allocate", "nested", "local import"]))
    if where == "assign":
        body.append(f"y = {call}")
    elif where == "allocate":
        body.append(f"self.buf = torch.zeros((self.speculative_num_steps, {call}))")
    elif where == "nested":
        body += ["def inner():", f"    return {call}", "y = inner()"]
    else:
        body += [header.strip().replace("\n", " "), f"y = {call}"]
        if "(" in header:
            body[-2] = f"from {MODULE} import {USED} as u, {WIDTH} as w"
    init = draw(st.lists(st.sampled_from(BINDINGS), max_size=3))
    method = "".join(f"        {line}\n" for line in body)
    container = draw(st.sampled_from([*CLASSES, None]))
    if container is None:
        text = f"def g({PARAMS}):\n" + method.replace("        ", "    ")
    else:
        text = (
            (BASE if "Bar" in container else "") + f"class {container}:\n"
            f"    def __init__({PARAMS}):\n"
            + "".join(f"        {line}\n" for line in init or ["pass"])
            + f"\n    def g({PARAMS}):\n"
            + method
        )
    if draw(st.booleans()):
        text += f"\n\nz = {call}\n"  # at module level too
    return "import torch\n" + header + "\n\n" + text


def key(findings) -> list[tuple[int, int, str, str]]:
    return sorted((f.row, f.column, f.code, f.message) for f in findings)


def flake8_findings(text: str) -> list[tuple[int, int, str]]:
    checker = KviChecker(ast.parse(text), "gen.py", text.splitlines(keepends=True))
    return sorted(
        (row, column + 1, message.split()[0])
        for row, column, message, _ in checker.run()
    )


@settings(
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(programs())
@example(
    f"from {MODULE} import {USED} as used_len\n\n\n"
    "def f(self, bs, i):\n    return used_len(bs, self.topk, self.topk, i)\n"
)
@example(
    f"from {MODULE} import {USED}\n\n\nclass Foo:\n"
    "    def __init__(self, topk):\n        self.k = topk\n\n"
    "    def f(self, seq_lens_sum, bs):\n"
    f"        return {USED}(seq_lens_sum, bs, self.k, 1)\n"
)
def test_fast_path_flake8_and_whole_walk_agree(text: str) -> None:
    whole = lint_tree(ast.parse(text), Source(text), "gen.py", rows=None)
    fast = lint_source(text.encode(), "gen.py")
    assert key(fast) == key(whole), text
    assert flake8_findings(text) == sorted((f.row, f.column, f.code) for f in whole), (
        text
    )


GUARDS = [
    "",
    "assert {used}(seq_lens_sum, self.topk, bs, self.speculative_num_steps)"
    " <= kv_indices_buffer.shape[1]",
    "assert_buffer_fits({used}(seq_lens_sum, self.topk, bs,"
    " self.speculative_num_steps), kv_indices_buffer.shape[1], 'x')",
    "required = {used}(seq_lens_sum, self.topk, bs, self.speculative_num_steps)\n"
    "if required > kv_indices_buffer.shape[1]:\n    raise RuntimeError('small')",
    "assert {used}(seq_lens_sum, self.topk, bs, 1) <= kv_indices_buffer.shape[1]",
    "used = seq_lens_sum * self.topk + bs * self.speculative_num_steps\n"
    "assert used <= kv_indices_buffer.shape[1]",
]
KEEPS = [
    "self.topk = topk",
    "self.speculative_num_steps = num_steps",
    "self.page_size = 1",
]
# Upstream's launch: the buffer is the fourth argument.
LAUNCH = (
    "{kernel}[(self.speculative_num_steps, bs, {topk})](\n"
    "    forward_batch.req_pool_indices, self.req_to_token, forward_batch.seq_lens,\n"
    "    kv_indices_buffer, self.kv_indptr, forward_batch.positions, self.pool_len,\n"
    "    kv_indices_buffer.shape[1], self.kv_indptr.shape[1], bs,\n"
    "    self.speculative_num_steps, bs, self.page_size,\n"
    ")"
)


@st.composite
def launches(draw) -> str:
    name = draw(st.sampled_from(sorted(IMPORTS)))
    header, used, _ = IMPORTS[name]
    guard = draw(st.sampled_from(GUARDS)).format(used=used)
    kernel = draw(
        st.sampled_from(
            [
                "generate_draft_decode_kv_indices",
                "self.generate_draft_decode_kv_indices",
            ]
        )
    )
    keeps = draw(st.lists(st.sampled_from(KEEPS), min_size=1, max_size=3))
    body = [
        "bs = forward_batch.batch_size",
        "seq_lens_sum = forward_batch.seq_lens_sum",
        *guard.split("\n"),
        *LAUNCH.format(
            kernel=kernel, topk=draw(st.sampled_from(["self.topk", "1"]))
        ).split("\n"),
    ]
    cls = draw(st.sampled_from(CLASSES))
    return (
        "from sglang.srt.layers.attention.utils import assert_buffer_fits\n"
        + header
        + f"\n\nclass {cls}:\n"
        + "    def __init__(self, topk, num_steps):\n"
        + "".join(f"        {line}\n" for line in keeps)
        + "\n    def common_template(self, forward_batch, kv_indices_buffer):\n"
        + "".join(f"        {line}\n" for line in body if line)
    )


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(launches())
def test_the_launch_rule_agrees_on_every_path(text: str) -> None:
    whole = lint_tree(ast.parse(text), Source(text), "gen.py")
    fast = lint_source(text.encode(), "gen.py")
    assert key(fast) == key(whole), text
    assert flake8_findings(text) == sorted((f.row, f.column, f.code) for f in whole), (
        text
    )


@settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(programs(), st.booleans())
def test_fix_rewrites_them_all_once(text: str, unsafe: bool) -> None:
    """Imported under aliases or not, every generated program is rewritten (never
    refused: merging the helpers into an import of aliases used to reorder it,
    and the gate took that for another program), leaves no inline formula, and
    a second run changes nothing."""
    options = Options(unsafe_fixes=unsafe)
    first = rewrite_text(text, "gen.py", options)
    left = [
        f.code
        for f in lint_source(first.text.encode(), "gen.py")
        if f.code in ("KVI001", "KVI002")
    ]
    assert left == [], first.text
    assert not rewrite_text(first.text, "gen.py", options).changed, first.text
