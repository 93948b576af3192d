"""check leaves the methods of a class read whole that hold nothing a rule starts
from unparsed until something reads them (``engine/lazy_methods``). Held to the
slow form, a whole parse and a whole walk: the tree once every method is read is
the whole parse's, node for node with every position; the findings are the whole
walk's, on fixed shapes, on generated classes whose widths flow through deferred
methods, and (in ``tests/corpus``) on every file of three releases. A method the
line scan misreads makes the whole file decide."""

from __future__ import annotations

import ast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lint_plugin import linter
from lint_plugin.engine import facts, lazy_methods, scan
from lint_plugin.engine.allocations import allocator_aliases
from lint_plugin.engine.facts import helper_aliases
from lint_plugin.engine.source import Source
from lint_plugin.records import replace

HEAD = """\
import functools
import torch


class FooMultiStepDraftBackend:
"""
INIT = """
    def __init__(self, model_runner, topk, speculative_num_steps):
        self.topk = topk
        self.speculative_num_steps = speculative_num_steps
        self.max_context_len = model_runner.model_config.context_len
"""
# The class's last method is never deferred: the class ends where it ends.
TAIL = """
    def init_cuda_graph_state(self, max_bs, max_num_tokens):
        self.cuda_graph_kv_indices = torch.zeros(
            ({steps}, {width}), dtype=torch.int32
        )
"""

# Methods that hold nothing a rule starts from, in the layouts a line scan can
# misjudge: decorators over several lines, signatures over several lines with
# the `)` at the def's column, comments and blank lines after the body, strings
# whose lines start at column 0 or with `#`, a body in an `if` of the class,
# one-liners, tabs, backslashes, nested functions.
SHAPES = {
    "plain": "    def set_row(self):\n        self.row = self.max_context_len\n",
    "decorated": (
        "    @functools.lru_cache(\n        maxsize=None,\n    )\n"
        "    def cached(self, n):\n        return n + 1\n"
    ),
    "async": "    async def wait(self):\n        await self.event.wait()\n",
    "signature": (
        "    def sized(\n        self,\n        n: int,\n    ) -> int:\n"
        "        return n * 2\n"
    ),
    "comments after": (
        "    def noted(self):\n        x = 1\n        return x  # done\n"
        "        # a comment deeper than the body\n\n# at column 0\n\n"
    ),
    "string at column 0": (
        '    def doc(self):\n        text = """\n# not a comment\ndef not_a_def():\n'
        '"""\n        return text\n'
    ),
    "one-liner": "    def one(self): return 1\n",
    "tabs": "    def tabbed(self):\n    \tif self:\n    \t\treturn 2\n",
    "nested": (
        "    def outer(self):\n        def inner():\n"
        "            self.row = self.max_context_len\n        return inner\n"
    ),
    "property": (
        "    @property\n    def row_prop(self):\n        return self.max_context_len\n"
    ),
    "bracket at column 0": (
        "    def call(self):\n        return dict(\n            a=1,\n)\n"
    ),
    "statement after": ("    def before(self):\n        return 0\n\n    LIMIT = 3\n"),
}
# A method under an `if` of the class body is parsed with its class: the `if`
# would end where a stub ends.
UNDER_AN_IF = "    if True:\n\n        def hidden(self):\n            return 3\n"
WIDTH = "max_bs * self.max_context_len"


def _program(
    methods: list[str], width: str = WIDTH, steps: str = "self.speculative_num_steps"
) -> str:
    return HEAD + "\n".join(methods) + INIT + TAIL.format(width=width, steps=steps)


def _region_tree(text: str) -> tuple[ast.Module, list[ast.stmt]]:
    """The class region as check parses it, and its methods left unparsed."""
    lines = text.split("\n")
    aliases = helper_aliases(text)
    layout = scan.Layout(text, lines, scan.StringSpans(text), aliases)
    start = next(r for r, _, kind, _ in layout.blocks if kind == "class")
    end = layout.block_end(start)
    snippet = "\n".join(lines[start:end]) + "\n"
    tree = lazy_methods.parse_region(
        snippet, "x.py", layout, start, end, False, aliases, allocator_aliases(text)
    )
    return tree, _pending(tree.body[0].body)


def _pending(body: list[ast.stmt]) -> list[ast.stmt]:
    """The methods of a class body not parsed yet (without reading them:
    ``ast.walk`` reads every field, and so parses them)."""
    found = []
    for stmt in body:
        if lazy_methods.is_pending(stmt):
            found.append(stmt)
        elif isinstance(stmt, ast.If):
            found += _pending(stmt.body)
    return found


def _shape(node):
    """Every node's class name, fields and positions (``ast.dump`` leaves out
    a field that is None by its class's default, which a lazy node's class
    has as a property)."""
    if isinstance(node, list):
        return [_shape(item) for item in node]
    if not isinstance(node, ast.AST):
        return node
    names = (*node._fields, *node._attributes)
    return (type(node).__name__, *((n, _shape(getattr(node, n, None))) for n in names))


def _whole_region(text: str) -> ast.Module:
    lines = text.split("\n")
    layout = scan.Layout(text, lines, scan.StringSpans(text))
    start = next(r for r, _, kind, _ in layout.blocks if kind == "class")
    return ast.parse("\n".join(lines[start : layout.block_end(start)]) + "\n")


def _whole_walk(text: str) -> list[tuple]:
    tree = ast.parse(text)
    found = linter.lint_tree(tree, Source(text), "x.py", rows=None)
    return sorted((f.row, f.column, f.code, f.message) for f in found)


def _check(text: str) -> list[tuple]:
    found = linter.lint_source(text, "x.py", syntax_checked=True)
    return sorted((f.row, f.column, f.code, f.message) for f in found)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_deferred_method_reads_as_the_whole_parse(shape: str) -> None:
    text = _program([SHAPES[shape]])
    tree, deferred = _region_tree(text)
    assert deferred, "the shape is meant to be deferred"
    # Reading every field parses every deferred method here.
    assert _shape(tree) == _shape(_whole_region(text))
    assert not any(lazy_methods.is_pending(n) for n in ast.walk(tree))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_deferred_method_costs_no_finding(shape: str) -> None:
    text = _program([SHAPES[shape], SHAPES["plain"]])
    assert _check(text) == _whole_walk(text)
    assert _check(text), "the unsized row is reported"


def test_a_backslash_onto_a_class_level_line_keeps_the_method_parsed() -> None:
    """The line a backslash continues a method's statement onto reads, to the
    line scan, as the class's next statement: deferring the method would give
    the class an attribute it does not have."""
    method = "    def helper(self):\n        x = \\\n    LIMIT = 4096\n"
    text = _program([method, SHAPES["plain"]], "max_bs * self.LIMIT")
    assert [m.name for m in _region_tree(text)[1]] == ["set_row"]
    assert _check(text) == _whole_walk(text)


# Texts the line scan could misjudge, or whose decorators the walk reads with
# the method: each is parsed with its class (found by a review of this code).
MISJUDGED = {
    "a decorator holding a formula": (
        "    @d(a * self.topk * self.max_context_len)\n"
        "    def f(self):\n        pass\n",
        "",
    ),
    "a form feed resetting the indentation": (
        "    def f(self):\n        pass\n     \x0c    def row(self):\n"
        "        return self.max_context_len\n",
        "max_bs * self.row()",
    ),
    "an identifier that is topk once normalised": (
        "    def f(self, a):\n        return a * self.\uff54opk * self.max_context_len\n",
        "",
    ),
    "a decorator spelling topk another way": (
        "    @d(a * self.\uff54opk * self.max_context_len)\n    def f(self):\n"
        "        pass\n",
        "",
    ),
    "a decorator continued by a backslash": (
        "    @d(torch.zeros \\\n"
        "        ((self.speculative_num_steps, max_bs * self.max_context_len)))\n"
        "    def f(self):\n        pass\n",
        "",
    ),
    # Every call the walk records names its allocator as a whole word.
    "an allocator in parentheses": (
        "    def f(self, max_bs):\n        self.buf = (torch.zeros)(\n"
        "            (self.speculative_num_steps, max_bs * self.max_context_len)\n"
        "        )\n",
        "",
    ),
    "a comment before the call's bracket": (
        "    def f(self, max_bs):\n        self.buf = (torch.zeros  # note\n"
        "            ((self.speculative_num_steps, max_bs * self.max_context_len)))\n",
        "",
    ),
}


@pytest.mark.parametrize("case", sorted(MISJUDGED))
def test_what_the_scan_may_misjudge_is_parsed_with_its_class(case: str) -> None:
    method, width = MISJUDGED[case]
    text = _program([method], width or WIDTH)
    assert _check(text) == _whole_walk(text) != []


def test_an_allocation_the_scan_reads_as_no_call_is_walked() -> None:
    """`(torch.zeros)(...)`, whose width an `__init__` assigns: the rows the
    walk reads a class's facts from hold its allocator as a whole word, not
    only as a call (the fast path missed it before deferring was written)."""
    init = (
        "    def set_w(self, max_bs):\n        self.w = max_bs * self.max_context_len\n"
    )
    text = _program([init], "self.w").replace("torch.zeros(\n", "(torch.zeros)(\n")
    assert "(torch.zeros)(" in text
    assert (
        [f[2] for f in _check(text)] == ["KVI003"] == [f[2] for f in _whole_walk(text)]
    )


def test_a_form_feed_after_the_class_keeps_its_methods_parsed() -> None:
    """Python reads ` \\fX = 1` as a line at column 0, the line scan as one
    of the class: its real last method would be deferred, and the class end
    there (found by a review of this code)."""
    text = (
        "import torch\nclass B:\n    def g(self, max_bs):\n"
        "        self.buf = torch.zeros((self.speculative_num_steps, max_bs * self.row))\n"
        "        self.topk = 1\n\n    def f(self):\n"
        "        self.row = self.max_context_len\n \x0cX = 1\n"
    )
    assert _check(text) == _whole_walk(text) != []


def test_a_method_under_an_if_is_parsed_with_its_class() -> None:
    text = _program([UNDER_AN_IF, SHAPES["plain"]])
    tree, deferred = _region_tree(text)
    assert [m.name for m in deferred] == ["set_row"]
    assert _shape(tree) == _shape(_whole_region(text))
    assert _check(text) == _whole_walk(text) != []


# Methods that must be read (an allocation, the kernel, a helper, both words of
# a formula's clause) and one that may not (topk without the rest).
@pytest.mark.parametrize(
    ("method", "deferred"),
    [
        ("    def a(self):\n        return torch.empty(4)\n", False),
        ("    def a(self):\n        return alloc (4)\n", False),
        ("    def a(self):\n        generate_draft_decode_kv_indices[g](x)\n", False),
        ("    def a(self):\n        return draft_kv_indices_used_len\n", False),
        ("    def a(self):\n        assert_buffer_fits(x, y)\n", False),
        ("    def a(self, bs):\n        return self.topk * seq_lens_sum\n", False),
        ("    def a(self):\n        return self.topk\n", True),
        ("    def a(self):\n        return self.max_context_len\n", True),
        # A clause's words where only a name of their role can hold them: topk
        # in a name of no role is no topk (SGLang's Aiter backend, 432 lines).
        (
            "    def a(self):\n        self._ensure_spec_v2_topk_supported()\n"
            "        return self.max_context_len + self.topk_p\n",
            True,
        ),
        ("    def a(self):\n        return self.spec_topk + self.context_len\n", False),
        (
            "    def a(self):\n        k = self.topk\n"
            "        return k * self.max_context_len\n",
            False,
        ),
        ("    def a(self):\n        return x.topk * self.context_len\n", False),
        ("    def a(self):\n        return 'topk', self.context_len\n", False),
    ],
)
def test_what_a_rule_starts_from_is_never_deferred(method: str, deferred: bool) -> None:
    text = _program([method]).replace(
        "import torch\n", "import torch\nalloc = torch.zeros\n"
    )
    _, found = _region_tree(text)
    assert bool(found) is deferred


def test_a_width_is_read_through_a_deferred_method() -> None:
    """The row's width flows from an attribute only a deferred method assigns:
    reported unsized, and sized once that method multiplies by a topk it reads
    from another deferred method."""
    unsized = _program([SHAPES["plain"]], "max_bs * self.row")
    assert [f[2] for f in _check(unsized)] == ["KVI003"]
    sized = _program(
        [
            "    def set_k(self):\n        self.k = self.topk\n",
            "    def set_row(self):\n        self.row = self.max_context_len * self.k\n",
        ],
        "max_bs * self.row",
    )
    assert _region_tree(sized)[1]
    assert _check(sized) == _whole_walk(sized) == []


def test_a_step_count_is_read_through_a_deferred_method() -> None:
    """Whether the row is one per draft step is read from the attributes the
    class assigns (the walk's bindings): here only a deferred method assigns
    the first dimension's step count, in a tuple target."""
    method = (
        "    def set_n(self):\n"
        "        self.other, self.n = 1, self.speculative_num_steps\n"
    )
    per_step = _program([method], steps="self.n")
    assert _region_tree(per_step)[1]
    assert [f[2] for f in _check(per_step)] == ["KVI003"]
    constant = _program(
        [method.replace("self.speculative_num_steps", "4")], steps="self.n"
    )
    assert _check(constant) == _whole_walk(constant) == []


@pytest.mark.parametrize("steps", ["self.n", "self.speculative_num_steps"])
def test_a_method_asked_of_several_attributes_is_parsed_not_walked(
    monkeypatch, steps: str
) -> None:
    """Whether each buffer is one per step asks every method whether it may
    assign the attribute its first dimension reads. A deferred method that
    reads those attributes and assigns none is parsed to answer the first
    question and answers the next from the same rows: it is never walked
    (SGLang's Aiter backend walked its 432-line capture method so)."""
    text = (
        _program(
            ["    def use(self):\n        return self.n + self.m + self.w\n"],
            steps=steps,
        )
        .replace(
            "        self.max_context_len =",
            "        self.n = self.speculative_num_steps\n        self.m = 1\n"
            "        self.w = 2\n        self.max_context_len =",
        )
        .replace(
            "max_num_tokens):\n",
            "max_num_tokens):\n        self.a = torch.zeros((self.m, max_bs))\n"
            "        self.b = torch.zeros((self.w, max_bs))\n",
        )
    )
    assert [m.name for m in _region_tree(text)[1]] == ["use"]
    walked = []
    real = facts.LazyFunctionFacts.gathered

    def counted(self) -> None:
        if self._gather is not None:
            walked.append(self.node.name)
        real(self)

    monkeypatch.setattr(facts.LazyFunctionFacts, "gathered", counted)
    assert _check(text) == _whole_walk(text)
    assert [f[2] for f in _check(text)] == ["KVI003"]
    assert walked == []


def test_a_misread_method_makes_the_whole_file_decide(monkeypatch) -> None:
    """A stub whose method parses as another is a misread: the whole file is
    parsed and walked instead, and nothing is lost."""
    text = _program([SHAPES["plain"], SHAPES["nested"]], "max_bs * self.row")
    expected = _whole_walk(text)
    raised = []
    real = lazy_methods.Misread.__init__

    def counted(self, *args) -> None:
        raised.append(args[0])
        real(self, *args)

    real_plan = lazy_methods.plan

    def misread(*args):
        # As if the line scan had taken the method for another.
        return [replace(m, name=m.name + "_x") for m in real_plan(*args)]

    monkeypatch.setattr(lazy_methods.Misread, "__init__", counted)
    monkeypatch.setattr(lazy_methods, "plan", misread)
    assert _check(text) == expected
    assert raised, "the wrong rows were caught"


def test_a_line_the_scan_misreads_makes_the_whole_file_decide() -> None:
    """A continuation line at column 0 ends the method's block for the line
    scan: the region does not parse, and the whole file decides."""
    method = "    def call(self):\n        return dict(\na=1,\n)\n"
    text = _program([method, SHAPES["plain"]], "max_bs * self.row")
    assert _check(text) == _whole_walk(text) != []


# Generated classes: deferred methods assign the attributes a row's width is
# built from, in every target form the walk records, read through properties
# and calls; the width is sized or not depending on what they hold.
ASSIGNMENTS = [
    "self.{a} = {v}",
    "self.{a}: int = {v}",
    "self.{a}, self.other = {v}, 1",
    "(self.other,\n         self.{a}) = 1, {v}",
    "self.{a} = 0\n        self.{a} += {v}",
    "for self.{a} in [{v}]:\n            pass",
    "with ctx({v}) as self.{a}:\n            pass",
]
VALUES = [
    "self.max_context_len",
    "self.max_context_len * self.k",
    "4096",
    "self.k",
    # topk in a name of no role (the method may be deferred), and of its role.
    "self.max_context_len * self.topk_p",
    "self.max_context_len * self.draft_topk",
]
STEPS = ["self.speculative_num_steps", "4", "self.speculative_num_steps - 1"]
READS = ["self.{a}", "self.get_{a}()", "self.{a}_prop"]


@st.composite
def generated_classes(draw) -> str:
    attrs = draw(
        st.lists(
            st.sampled_from(["row", "cap", "span", "n"]),
            min_size=1,
            max_size=4,
            unique=True,
        )
    )
    methods = ["    def set_k(self):\n        self.k = self.topk\n"]
    for attr in attrs:
        form = draw(st.sampled_from(ASSIGNMENTS))
        value = draw(st.sampled_from(STEPS if attr == "n" else VALUES))
        body = form.format(a=attr, v=value)
        if draw(st.booleans()):
            body = f"def inner():\n            {body.replace(chr(10), chr(10) + '    ')}\n        inner()"
        methods.append(f"    def set_{attr}(self):\n        {body}\n")
        methods.append(f"    def get_{attr}(self):\n        return self.{attr}\n")
        methods.append(
            f"    @property\n    def {attr}_prop(self):\n        return self.{attr}\n"
        )
    methods = draw(st.permutations(methods))
    read = draw(st.sampled_from(READS)).format(a=draw(st.sampled_from(attrs)))
    steps = "self.speculative_num_steps"
    if "n" in attrs:
        steps = draw(st.sampled_from([steps, *(r.format(a="n") for r in READS)]))
    return _program(list(methods), f"max_bs * {read}", steps)


@settings(max_examples=150, deadline=None)
@given(generated_classes())
def test_generated_classes_find_what_the_whole_walk_finds(text: str) -> None:
    assert _region_tree(text)[1]
    assert _check(text) == _whole_walk(text)
