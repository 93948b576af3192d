"""A helper's name bound by anything but the helper, by every form Python has.

KVI005 reports each such binding outside the helpers module (with the form in
its message), and KVI003 and KVI004 then trust a call by that name nowhere in
the file: a width spelled ``draft_kv_indices_buffer_width(...)`` is judged by
what the name may be bound to (unsized when it is a local copy that forgets the
topk, not judged when it is unknown), never taken for the helper's. One answer,
``lint_plugin.bindings``, serves the walk; check's regions, the flake8 plugin
and a walk of the whole tree agree on each case.
"""

from __future__ import annotations

import ast
import sys

import pytest
from rule_snippets import EVERY_RULE

from lint_plugin.engine.source import Source
from lint_plugin.flake8_plugin import KviChecker
from lint_plugin.linter import lint_source, lint_tree

W = "draft_kv_indices_buffer_width"
USED = "draft_kv_indices_used_len"
HELPERS = "sglang.srt.speculative.spec_utils"

_BACKEND = """\
import torch
from {helpers} import {import_}

{module}

class FooMultiStepDraftBackend:
    def __init__(self, topk, speculative_num_steps, max_context_len, max_bs):
        self.topk = topk
        self.speculative_num_steps = speculative_num_steps
        self.max_context_len = max_context_len
        self.max_bs = max_bs

    def init_cuda_graph_state(self, max_bs{param}):
{local}        self.cuda_graph_kv_indices = torch.zeros(
            (
                self.speculative_num_steps,
                {width}(max_bs, self.topk, self.max_context_len),
            ),
            dtype=torch.int32,
        )
{tail}"""


def backend(
    module: str = "",
    param: str = "",
    local: str = "",
    tail: str = "",
    width: str = W,
    import_: str = W,
) -> str:
    local = "".join(f"        {line}\n" for line in local.split("\n") if line)
    return _BACKEND.format(
        helpers=HELPERS,
        import_=import_,
        module=module,
        param=param,
        local=local,
        tail=tail,
        width=width,
    )


# (where the binding is written, the words KVI005's message gives its form, how
# many bindings of the name it makes). Every one binds the width helper's name.
FORMS = {
    "assignment": (dict(module=f"{W} = lambda *a: 1"), "an assignment", 1),
    "unpacking": (dict(module=f"_, {W} = 0, len"), "an assignment", 1),
    "starred-target": (dict(module=f"*{W}, _ = [len, len]"), "an assignment", 1),
    "chained-assignment": (dict(module=f"a = {W} = len"), "an assignment", 1),
    "augmented-assignment": (
        dict(module=f"{W} += 0"),
        "an augmented assignment",
        1,
    ),
    "annotated-assignment": (
        dict(module=f"{W}: object = len"),
        "an annotated assignment",
        1,
    ),
    "bare-annotation-in-the-method": (dict(local=f"{W}: object"), "an annotation", 1),
    "for-target": (dict(module=f"for {W} in (len,):\n    pass"), "a `for` target", 1),
    "async-for-target": (
        dict(module=f"async def g(xs):\n    async for {W} in xs:\n        pass"),
        "a `for` target",
        1,
    ),
    "with-target": (
        dict(module=f"with open('f') as {W}:\n    pass"),
        "a `with` target",
        1,
    ),
    "with-tuple-target": (
        dict(module=f"with cm() as (a, [{W}, b]):\n    pass"),
        "a `with` target",
        1,
    ),
    # The issue's three, on all 8 sites of both releases.
    "parameter-default": (
        dict(param=f", {W}=lambda *a: 1"),
        "a parameter",
        1,
    ),
    "walrus-at-module-level": (
        dict(module=f"({W} := lambda *a: 1)"),
        "an assignment expression (`:=`)",
        1,
    ),
    "match-capture": (
        dict(module=f"match len:\n    case {W}:\n        pass"),
        "a `match` capture",
        1,
    ),
    "walrus-in-a-comprehension": (
        dict(module=f"_ = [({W} := f) for f in (len,)]"),
        "an assignment expression (`:=`)",
        1,
    ),
    "walrus-in-a-default": (
        dict(module=f"def g(x=({W} := len)):\n    pass"),
        "an assignment expression (`:=`)",
        1,
    ),
    "comprehension-target": (
        dict(module=f"_ = [{W} for {W} in (len,)]"),
        "a comprehension target",
        1,
    ),
    "generator-target": (
        dict(module=f"_ = list(1 for _ in () for {W} in (len,))"),
        "a comprehension target",
        1,
    ),
    "def": (dict(module=f"def {W}(n, t, c):\n    return n * c"), "a def", 1),
    "async-def": (dict(module=f"async def {W}(*a):\n    return 1"), "a def", 1),
    "method": (
        dict(module=f"class Sizes:\n    def {W}(self, *a):\n        return 1"),
        "a def",
        1,
    ),
    "class": (dict(module=f"class {W}:\n    pass"), "a class", 1),
    "positional-only-parameter": (
        dict(module=f"def g({W}, /):\n    pass"),
        "a parameter",
        1,
    ),
    "star-args": (dict(module=f"def g(*{W}):\n    pass"), "a parameter", 1),
    "keyword-only-parameter": (
        dict(module=f"def g(*, {W}=len):\n    pass"),
        "a parameter",
        1,
    ),
    "star-star-kwargs": (dict(module=f"def g(**{W}):\n    pass"), "a parameter", 1),
    "lambda-parameter": (dict(module=f"g = lambda {W}: {W}"), "a parameter", 1),
    "import-from-another-module": (
        dict(module=f"from mylib.sizes import {W}"),
        "an import from mylib.sizes",
        1,
    ),
    "import-as": (dict(module=f"import mylib as {W}"), "an import", 1),
    "import-of-a-dotted-module": (dict(module=f"import {W}.sub"), "an import", 1),
    "except-target": (
        dict(local=f"try:\n    pass\nexcept Exception as {W}:\n    pass"),
        "an `except ... as` target",
        1,
    ),
    "match-as": (
        dict(module=f"match len:\n    case [1, 2] as {W}:\n        pass"),
        "a `match` capture",
        1,
    ),
    "match-star": (
        dict(module=f"match ():\n    case [1, *{W}]:\n        pass"),
        "a `match` capture",
        1,
    ),
    "match-mapping-rest": (
        dict(module=f"match {{}}:\n    case {{'k': 1, **{W}}}:\n        pass"),
        "a `match` capture",
        1,
    ),
    "match-nested-in-a-class-pattern": (
        dict(module=f"match len:\n    case int(real=[{W}]) | str(real=[{W}]):\n        pass"),
        "a `match` capture",
        2,
    ),
    "del": (dict(module=f"del {W}"), "a `del`", 1),
    "global": (
        dict(module=f"def g():\n    global {W}\n    {W} = len"),
        "an assignment",
        1,
    ),
    "nonlocal": (
        dict(
            module=f"def g():\n    {W} = 1\n\n    def h():\n        nonlocal {W}\n"
            f"        {W} = 2\n\n    return h"
        ),
        "an assignment",
        2,
    ),
    # Where the walk reads little: a decorator's row above its def, a class's
    # bases, a lambda in a default, a block, a statement over several rows.
    "walrus-in-a-decorator": (
        dict(tail=f"\n    @deco(({W} := len))\n    def other(self):\n        pass\n"),
        "an assignment expression (`:=`)",
        1,
    ),
    "walrus-in-a-base": (
        dict(module=f"class K(({W} := object)):\n    pass"),
        "an assignment expression (`:=`)",
        1,
    ),
    "lambda-in-a-default": (
        dict(module=f"g = lambda a=(lambda {W}: 1): a"),
        "a parameter",
        1,
    ),
    "fallback-def-in-a-try": (
        dict(module=f"try:\n    import x\nexcept ImportError:\n    def {W}(*a):\n        return 1"),
        "a def",
        1,
    ),
    "parenthesized-with": (
        dict(module=f"with (\n    open('a') as a,\n    open('b') as {W},\n):\n    pass"),
        "a `with` target",
        1,
    ),
    # After the class: a region the check reads after the one that calls it.
    "walrus-after-the-use": (
        dict(tail=f"\n\n({W} := lambda *a: 1)\n"),
        "an assignment expression (`:=`)",
        1,
    ),
    "local-assignment-in-another-method": (
        dict(tail=f"\n    def other(self):\n        {W} = len\n        return {W}\n"),
        "an assignment",
        1,
    ),
}  # fmt: skip

if sys.version_info >= (3, 12):
    FORMS["type-alias"] = (dict(module=f"type {W} = int"), "a `type` alias", 1)
    FORMS["type-parameter"] = (
        dict(module=f"def g[{W}](x: {W}) -> {W}:\n    return x"),
        "a type parameter",
        1,
    )


def _findings(text: str, notes: list | None = None):
    return lint_source(text.encode(), "backend.py", EVERY_RULE, notes=notes)


def _key(findings) -> list[tuple[int, int, str, str]]:
    return sorted((f.row, f.column, f.code, f.message) for f in findings)


def _flake8(text: str) -> list[tuple[int, int, str]]:
    checker = KviChecker(ast.parse(text), "backend.py", text.splitlines(True))
    checker.settings = EVERY_RULE
    return sorted(
        (row, column + 1, message.split()[0])
        for row, column, message, _ in checker.run()
    )


def _paths_agree(text: str) -> None:
    """check's regions, the flake8 plugin and a walk of the whole tree give
    the same findings."""
    fast = _findings(text)
    whole = lint_tree(ast.parse(text), Source(text), "backend.py", None, EVERY_RULE)
    assert _key(fast) == _key(whole), text
    assert _flake8(text) == sorted((f.row, f.column, f.code) for f in whole), text


def _width_verdict(text: str) -> str:
    """KVI003 on the allocation: "sized" (trusted), "unsized" (a finding) or
    "not judged" (a note)."""
    notes: list = []
    found = [f for f in _findings(text, notes) if f.code == "KVI003"]
    noted = [n for n in notes if n.code == "KVI003"]
    if found:
        return "unsized"
    return "not judged" if noted else "sized"


def test_the_helper_itself_is_trusted() -> None:
    """The reference: imported from the helpers module and bound by nothing
    else, the width is the helper's and sized."""
    text = backend()
    assert [f.code for f in _findings(text)] == []
    assert _width_verdict(text) == "sized"
    _paths_agree(text)


@pytest.mark.parametrize(("where", "words", "count"), FORMS.values(), ids=FORMS.keys())
def test_every_binding_form_is_kvi005(where: dict, words: str, count: int) -> None:
    text = backend(**where)
    found = [f for f in _findings(text) if f.code == "KVI005"]
    assert len(found) == count, (text, found)
    for finding in found:
        assert f"`{W}` is bound here ({words}) outside {HELPERS}" in finding.message
        line = text.splitlines()[finding.row - 1]
        assert W in line[finding.column - 1 :], (line, finding)
    _paths_agree(text)


@pytest.mark.parametrize(("where", "words", "count"), FORMS.values(), ids=FORMS.keys())
def test_kvi003_never_trusts_a_rebound_helper_name(
    where: dict, words: str, count: int
) -> None:
    """The same width, sized when the name is the helper's, is not: unsized
    where the analysis reads what the name is bound to and it lacks the topk,
    else not judged, as any call it cannot know."""
    assert _width_verdict(backend(**where)) in ("unsized", "not judged")


def test_a_local_copy_that_forgets_the_topk_is_unsized() -> None:
    text = backend(
        module=f"def {W}(num_seqs, topk, max_context_len):\n    return num_seqs * max_context_len"
    )
    assert _width_verdict(text) == "unsized"
    assert sorted(f.code for f in _findings(text)) == ["KVI003", "KVI005"]
    _paths_agree(text)


def test_the_issues_parameter_default_is_not_judged_as_a_module_assignment_is() -> None:
    """``def init(self, max_bs, <helper>=lambda *a: 1)``: what the engine does
    for ``<helper> = lambda *a: 1`` at module level (not judged), not sized."""
    default = backend(param=f", {W}=lambda *a: 1")
    assigned = backend(module=f"{W} = lambda *a: 1")
    assert _width_verdict(default) == _width_verdict(assigned) == "not judged"


def test_an_attribute_is_not_the_name() -> None:
    """``self.<helper> = len`` binds an attribute: no KVI005, and the plain
    name is still the helper's (sized)."""
    text = backend(local=f"self.{W} = len")
    assert [f.code for f in _findings(text)] == []
    assert _width_verdict(text) == "sized"
    _paths_agree(text)


def test_a_subscript_target_is_not_the_name() -> None:
    text = backend(module=f"table = {{}}\ntable[{W}] = 1")
    assert [f.code for f in _findings(text)] == []
    assert _width_verdict(text) == "sized"


def test_a_global_declaration_alone_binds_nothing() -> None:
    text = backend(module=f"def g():\n    global {W}\n    return {W}")
    assert [f.code for f in _findings(text)] == []
    assert _width_verdict(text) == "sized"
    _paths_agree(text)


def test_a_rebound_alias_is_not_trusted() -> None:
    """An alias of a trusted import is a name the helper goes by: a binding of
    it elsewhere (here a parameter) makes it untrusted too. KVI005 reports the
    helpers' own names only."""
    text = backend(
        import_=f"{W} as width_of",
        width="width_of",
        module="def g(width_of):\n    return width_of",
    )
    assert [f.code for f in _findings(text)] == []
    assert _width_verdict(text) == "not judged"
    assert _width_verdict(backend(import_=f"{W} as width_of", width="width_of")) == (
        "sized"
    )
    _paths_agree(text)


@pytest.mark.parametrize(
    ("star", "verdict"),
    [
        ("from mylib.sizes import *", "not judged"),  # may bind any name
        (f"from {HELPERS} import *", "sized"),  # binds the helpers to themselves
    ],
)
def test_a_star_import_may_bind_the_name(star: str, verdict: str) -> None:
    text = backend(module=star)
    assert [f.code for f in _findings(text)] == []
    assert _width_verdict(text) == verdict
    _paths_agree(text)


def test_the_helpers_module_defines_the_helpers_and_trusts_them() -> None:
    """In the helpers module a top-level ``def`` of a helper is the helper
    (trusted: its body, which the analysis cannot read, is not asked)."""
    text = backend(
        import_="annotations",
        module=f"def {W}(num_seqs, topk, max_context_len):\n"
        "    return _checked(num_seqs * topk * max_context_len)",
    ).replace(
        # Not `from __future__`: below `import torch` CPython refuses it (E999).
        f"from {HELPERS} import annotations",
        "import os",
    )
    path = "sglang/srt/speculative/spec_utils.py"
    notes: list = []
    found = lint_source(text.encode(), path, EVERY_RULE, notes=notes)
    assert [f.code for f in found] == []
    assert [n.code for n in notes if n.code == "KVI003"] == []
    # Anywhere else the same def is a local copy: reported, and not trusted.
    assert [f.code for f in _findings(text)] == ["KVI005"]
    assert _width_verdict(text) == "not judged"


KVI004_CALL = f"    return {USED}(seq_lens_sum, bs, topk, 1)\n"


def test_kvi004_reads_only_trusted_helper_calls() -> None:
    """``topk`` passed where ``bs`` belongs: KVI004 for the helper, nothing for a
    local function of the helper's name (KVI005 is the finding there)."""
    trusted = (
        f"from {HELPERS} import {USED}\n\n\n"
        "def f(seq_lens_sum, bs, topk):\n" + KVI004_CALL
    )
    rebound = trusted + f"\n\ndef g({USED}):\n    return {USED}\n"
    assert [f.code for f in _findings(trusted)] == ["KVI004"]
    assert [f.code for f in _findings(rebound)] == ["KVI005"]
    _paths_agree(rebound)
