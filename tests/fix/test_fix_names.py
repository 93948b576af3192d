"""A helper call means the helper only where its name resolves to it (issue 18).

The gate (``verify``) is shown texts a rewrite might write and must refuse each
whose call means something else there, naming what; the rewrite must then spell
the call so that it resolves (an alias, the module's attribute) or refuse in
one line. Evaluation order, annotations and the module docstring are kept.
"""

from __future__ import annotations

import pytest

from lint_plugin.engine.settings import Settings
from lint_plugin.fix.gate.verify import NotEqual, verify
from lint_plugin.fix.rewrite import Options, RewriteRefused, rewrite_text
from lint_plugin.linter import lint_source

H = "helpers"  # the helpers module
USED = "draft_kv_indices_used_len"
IMPORT = f"from {H} import {USED}\n"
FORMULA = "seq_lens_sum * topk + bs * num_steps"
CALL = f"{USED}(seq_lens_sum, topk, bs, num_steps)"
OPTIONS = Options(helpers_module=H, wrap=False)


def function(body: str, params: str = "seq_lens_sum, topk, bs, num_steps") -> str:
    return f"def f({params}):\n" + "".join(f"    {line}\n" for line in body.split("\n"))


# ---- the gate ------------------------------------------------------------------

# (original, what a rewrite might write): the gate accepts these.
ACCEPTED = {
    "new import": (function(f"return {FORMULA}"), IMPORT + function(f"return {CALL}")),
    "existing import": (
        IMPORT + function(f"return {FORMULA}"),
        IMPORT + function(f"return {CALL}"),
    ),
    "alias": (
        function(f"{USED} = 7\nreturn {FORMULA}"),
        f"from {H} import {USED} as u\n" + function(f"{USED} = 7\nreturn u(seq_lens_sum, topk, bs, num_steps)"),
    ),
    "module attribute": (
        f"import {H} as spec\n" + function(f"{USED} = 7\nreturn {FORMULA}"),
        f"import {H} as spec\n" + function(f"{USED} = 7\nreturn spec.{CALL}"),
    ),
    "nested scope binds nothing": (
        function(f"g = [x for x in (1,)]\nreturn {FORMULA}"),
        IMPORT + function(f"g = [x for x in (1,)]\nreturn {CALL}"),
    ),
    "comprehension elsewhere binds the name": (
        function(f"g = [{USED} for {USED} in (1,)]\nreturn {FORMULA}"),
        IMPORT + function(f"g = [{USED} for {USED} in (1,)]\nreturn {CALL}"),
    ),
    "function made before the import, not called before it": (
        function(f"return {FORMULA}") + "import os\n",
        function(f"return {CALL}") + "import os\n" + IMPORT,
    ),
    "keywords in the order written": (
        function("return num_steps * nxt() + topk * seq_lens_sum"),
        IMPORT + function(f"return {USED}(num_steps=num_steps, bs=nxt(), topk=topk, seq_lens_sum=seq_lens_sum)"),
    ),
}  # fmt: skip

# (original, what a rewrite might write, what the refusal says).
REFUSED = {
    "a local": (
        function(f"{USED} = 7\nreturn {FORMULA}"),
        IMPORT + function(f"{USED} = 7\nreturn {CALL}"),
        "is bound in f()",
    ),
    "a local bound after the call": (
        function(f"x = {FORMULA}\n{USED} = 7\nreturn x"),
        IMPORT + function(f"x = {CALL}\n{USED} = 7\nreturn x"),
        "is bound in f()",
    ),
    "a parameter": (
        function(f"return {FORMULA}", f"seq_lens_sum, topk, bs, num_steps, {USED}"),
        IMPORT + function(f"return {CALL}", f"seq_lens_sum, topk, bs, num_steps, {USED}"),
        "is bound in f()",
    ),
    "a loop variable": (
        function(f"for {USED} in (1,):\n    x = {FORMULA}\nreturn x"),
        IMPORT + function(f"for {USED} in (1,):\n    x = {CALL}\nreturn x"),
        "is bound in f()",
    ),
    "a comprehension variable": (
        function(f"return [{FORMULA} for {USED} in (1,)]"),
        IMPORT + function(f"return [{CALL} for {USED} in (1,)]"),
        "bound in a comprehension",
    ),
    "a lambda's parameter": (
        function(f"return (lambda {USED}: {FORMULA})(1)"),
        IMPORT + function(f"return (lambda {USED}: {CALL})(1)"),
        "bound in a lambda",
    ),
    "an enclosing function's local": (
        f"def outer(seq_lens_sum, topk, bs, num_steps):\n    {USED} = 7\n"
        f"    def inner():\n        return {FORMULA}\n    return inner()\n",
        IMPORT + f"def outer(seq_lens_sum, topk, bs, num_steps):\n    {USED} = 7\n"
        f"    def inner():\n        return {CALL}\n    return inner()\n",
        "bound in outer()",
    ),
    "a class attribute, in the class body": (
        f"class C:\n    {USED} = 3\n    x = {FORMULA}\n",
        IMPORT + f"class C:\n    {USED} = 3\n    x = {CALL}\n",
        "bound in class C",
    ),
    "global rebinding": (
        function(f"return {FORMULA}") + f"def g():\n    global {USED}\n    {USED} = min\n",
        IMPORT + function(f"return {CALL}") + f"def g():\n    global {USED}\n    {USED} = min\n",
        "`global` in g()",
    ),
    "a module-level def": (
        function(f"return {FORMULA}") + f"def {USED}(*a):\n    return 0\n",
        IMPORT + function(f"return {CALL}") + f"def {USED}(*a):\n    return 0\n",
        "a def at line",
    ),
    "a def spelled otherwise, the same after NFKC": (
        function(f"return {FORMULA}") + f"def \uff44{USED[1:]}(*a):\n    return 0\n",
        IMPORT + function(f"return {CALL}") + f"def \uff44{USED[1:]}(*a):\n    return 0\n",
        "a def at line",
    ),
    "an import from another module": (
        f"from other import {USED}\n" + function(f"return {FORMULA}"),
        f"from other import {USED}\n" + function(f"return {CALL}"),
        "an import from other",
    ),
    # Every binding form (lint_plugin.bindings) names itself.
    "a module-level walrus": (
        function(f"return {FORMULA}") + f"({USED} := min)\n",
        IMPORT + function(f"return {CALL}") + f"({USED} := min)\n",
        "an assignment expression (`:=`) at line 4",
    ),
    "a walrus in a def's default": (
        function(f"return {FORMULA}") + f"def g(x=({USED} := min)):\n    pass\n",
        IMPORT + function(f"return {CALL}") + f"def g(x=({USED} := min)):\n    pass\n",
        "an assignment expression (`:=`) at line 4",
    ),
    "a match capture": (
        function(f"return {FORMULA}") + f"match min:\n    case {USED}:\n        pass\n",
        IMPORT + function(f"return {CALL}") + f"match min:\n    case {USED}:\n        pass\n",
        "a `match` capture at line 5",
    ),
    "a bare annotation": (
        function(f"return {FORMULA}") + f"{USED}: int\n",
        IMPORT + function(f"return {CALL}") + f"{USED}: int\n",
        "an annotation at line 4",
    ),
    "a star import": (
        "from other import *\n" + function(f"return {FORMULA}"),
        IMPORT + "from other import *\n" + function(f"return {CALL}"),
        "`*` import from other",
    ),
    "a try/except ImportError fallback": (
        f"try:\n    {IMPORT}except ImportError:\n    def {USED}(*a):\n        return 0\n"
        + function(f"return {FORMULA}"),
        f"try:\n    {IMPORT}except ImportError:\n    def {USED}(*a):\n        return 0\n"
        + function(f"return {CALL}"),
        "a def at line",
    ),
    "only imported inside a block": (
        f"if flag:\n    {IMPORT}" + function(f"return {FORMULA}"),
        f"if flag:\n    {IMPORT}" + function(f"return {CALL}"),
        "only imported inside a block",
    ),
    "an import after a top-level use": (
        "X = seq_lens_sum * topk + bs * num_steps\n" + IMPORT,
        f"X = {CALL}\n" + IMPORT,
        "may be called before its import",
    ),
    "a function called before the import": (
        function(f"return {FORMULA}") + "Y = f(1, 2, 3, 4)\n" + IMPORT,
        function(f"return {CALL}") + "Y = f(1, 2, 3, 4)\n" + IMPORT,
        "may be called before its import",
    ),
    "a walrus moved": (
        function("return seq_lens_sum * topk + (bs := bs + 1) + bs * num_steps"),
        IMPORT + function(f"return {CALL} + (bs := bs + 1)"),
        "different program",
    ),
    "a call reordered": (
        function("return num_steps * nxt() + topk * seq_lens_sum"),
        IMPORT + function(f"return {USED}(seq_lens_sum, topk, nxt(), num_steps)"),
        "different program",
    ),
    "an annotation": (
        "from __future__ import annotations\n" + function("return 0", f"x: {FORMULA}"),
        "from __future__ import annotations\n" + IMPORT + function("return 0", f"x: {CALL}"),
        "different program",
    ),
    "the module docstring displaced": (
        '"""Doc."""\n' + function(f"return {FORMULA}"),
        IMPORT + '"""Doc."""\n' + function(f"return {CALL}"),
        "docstring",
    ),
    "a name the original reads": (
        function(f"return {USED}"),
        IMPORT + function(f"return {USED}"),
        "a name the original uses",
    ),
}  # fmt: skip


@pytest.mark.parametrize(("original", "final"), ACCEPTED.values(), ids=ACCEPTED.keys())
def test_the_gate_accepts_a_call_that_resolves(original: str, final: str) -> None:
    verify(original, final, H)


@pytest.mark.parametrize(
    ("original", "final", "reason"), REFUSED.values(), ids=REFUSED.keys()
)
def test_the_gate_refuses_a_call_that_means_something_else(
    original: str, final: str, reason: str
) -> None:
    with pytest.raises(NotEqual) as refused:
        verify(original, final, H)
    message = str(refused.value)
    assert reason in message
    assert "\n" not in message


# ---- the rewrite ---------------------------------------------------------------

# What fix writes where the plain name is taken: a spelling that resolves.
SPELLED = {
    "a local": (function(f"{USED} = 7\nreturn {FORMULA}"), f"_{USED}("),
    "a parameter": (
        function(f"return {FORMULA}", f"seq_lens_sum, topk, bs, num_steps, {USED}"),
        f"_{USED}(",
    ),
    "a module-level def": (
        function(f"return {FORMULA}") + f"def {USED}(*a):\n    return 0\n",
        f"_{USED}(",
    ),
    "an existing alias": (
        f"from {H} import {USED} as used\n" + function(f"{USED} = 7\nreturn {FORMULA}"),
        "used(",
    ),
    "the module imported": (
        f"import {H} as spec\n" + function(f"{USED} = 7\nreturn {FORMULA}"),
        f"spec.{USED}(",
    ),
    "the alias taken too": (
        function(f"{USED} = 7\n_{USED} = 8\nreturn {FORMULA}"),
        f"_{USED}_1(",
    ),
    "an import after a top-level use": (
        "import os\nX = seq_lens_sum * topk + bs * num_steps\n" + IMPORT,
        None,
    ),
}  # fmt: skip


@pytest.mark.parametrize(("source", "spelled"), SPELLED.values(), ids=SPELLED.keys())
def test_the_rewrite_spells_a_call_that_resolves_or_refuses(
    source: str, spelled: str | None
) -> None:
    if spelled is None:
        with pytest.raises(RewriteRefused) as refused:
            rewrite_text(source, "m.py", OPTIONS)
        assert "\n" not in str(refused.value)
        assert "before its import" in str(refused.value)
        return
    result = rewrite_text(source, "m.py", OPTIONS)  # the gate has passed it
    assert spelled in result.text
    again = rewrite_text(result.text, "m.py", OPTIONS)
    assert again.text == result.text


def test_a_star_import_is_refused_in_one_line_naming_it() -> None:
    source = "from other import *\n" + function(f"return {FORMULA}")
    with pytest.raises(RewriteRefused) as refused:
        rewrite_text(source, "m.py", OPTIONS)
    message = str(refused.value)
    assert "`*` import from other (line 1)" in message and "\n" not in message


# ---- order of evaluation, annotations --------------------------------------------

ORDER = {
    # Names, attributes and constants trade places freely.
    "names": ("num_steps * bs + topk * seq_lens_sum", CALL),
    # A call keeps its place: keywords in the order written.
    "a call": (
        "num_steps * nxt() + topk * seq_lens_sum",
        f"{USED}(num_steps=num_steps, bs=nxt(), topk=topk, seq_lens_sum=seq_lens_sum)",
    ),
    # A call in the last term: the call goes where the last term was.
    "a term moved before": (
        "seq_lens_sum * topk + pad + nxt() * num_steps",
        f"pad + {USED}(seq_lens_sum, topk, nxt(), num_steps)",
    ),
    # A walrus between the terms, read after it: no call keeps the order.
    "a walrus": ("seq_lens_sum * topk + (bs := bs + 1) + bs * num_steps", None),
}


@pytest.mark.parametrize(("formula", "expected"), ORDER.values(), ids=ORDER.keys())
def test_evaluation_order_is_kept_or_there_is_no_fix(
    formula: str, expected: str | None
) -> None:
    source = function(f"return {formula}", "seq_lens_sum, topk, bs, num_steps, pad")
    (finding,) = lint_source(source.encode(), "m.py", Settings(helpers_module=H))
    result = rewrite_text(source, "m.py", OPTIONS)
    if expected is None:
        assert finding.fix is None and result.text == source
    else:
        assert f"return {expected}\n" in result.text


@pytest.mark.parametrize(
    "source",
    [
        function("return 0", f"x: {FORMULA}"),
        "def f() -> (seq_lens_sum * topk + bs * num_steps):\n    return 0\n",
        function(f"x: {FORMULA} = 0\nreturn x"),
        f"W: {FORMULA} = 1\n",
    ],
    ids=["parameter", "return", "local", "module"],
)
def test_a_formula_in_an_annotation_is_reported_not_fixed(source: str) -> None:
    for postponed in ("", "from __future__ import annotations\n"):
        text = postponed + source
        (finding,) = lint_source(text.encode(), "m.py", Settings(helpers_module=H))
        assert finding.code == "KVI001" and finding.fix is None
        assert rewrite_text(text, "m.py", OPTIONS).text == text


def test_a_formula_printed_by_an_f_string_equals_is_kept() -> None:
    """``f"{expr=}"`` prints the expression's text: that site has no fix, the
    file's other sites are still fixed."""
    source = function(f'return f"{{{FORMULA}=}}", f"{{{FORMULA}}}"')
    found = lint_source(source.encode(), "m.py", Settings(helpers_module=H))
    assert [f.fix is None for f in found] == [True, False]
    result = rewrite_text(source, "m.py", OPTIONS)
    assert f'f"{{{FORMULA}=}}", f"{{{CALL}}}"' in result.text


# ---- the helpers module itself (issue 21's definitions, resolved here too) ------

OWN_DEF = (
    f"def {USED}(seq_lens_sum, topk, bs, num_steps):\n"
    "    return seq_lens_sum * topk + bs * num_steps\n\n\n"
)

# (the helpers module's text, what its call is written as, or the refusal).
OWN = {
    "lacking the definition": ("import os\n\n\n" + function(f"return {FORMULA}"), CALL),
    "with its proven definition": (OWN_DEF + function(f"return {FORMULA}"), CALL),
    "a definition that is not the helper": (
        OWN_DEF.replace("bs * num_steps", "bs") + function(f"return {FORMULA}"),
        "is bound at module level by a def at line 1",
    ),
    "a top-level use above where it would be defined": (
        f"import os\nX = {FORMULA}\nimport sys\n",
        "would be defined after code that may call it",
    ),
    "a local of the same name": (
        OWN_DEF + function(f"{USED} = 7\nreturn {FORMULA}"),
        "is bound in f()",
    ),
}  # fmt: skip


@pytest.mark.parametrize(("source", "expected"), OWN.values(), ids=OWN.keys())
def test_the_helpers_module_calls_its_own_definition_or_refuses(
    source: str, expected: str
) -> None:
    """No import of a helper into its own module (it would run half made): the
    call is the plain name, bound by the module's proven ``def`` (added where it
    is missing), where that runs before the call; else one line says why."""
    if not expected.startswith(USED):
        with pytest.raises(RewriteRefused) as refused:
            rewrite_text(source, f"{H}.py", OPTIONS)
        assert expected in str(refused.value) and "\n" not in str(refused.value)
        return
    result = rewrite_text(source, f"{H}.py", OPTIONS)  # the gate has passed it
    assert f"return {expected}\n" in result.text
    assert "import" not in result.text.replace("import os\n", "")
    namespace: dict = {}
    exec(compile(result.text, f"{H}.py", "exec"), namespace)
    assert namespace["f"](11, 3, 4, 2) == 11 * 3 + 4 * 2
    assert rewrite_text(result.text, f"{H}.py", OPTIONS).text == result.text


def test_the_gate_binds_added_definitions_where_they_stand() -> None:
    """A definition the rewrite adds counts from where it is, as an import does:
    after a top-level call of it the module would fail at import."""
    original = f"X = {FORMULA}\n"
    verify(original, OWN_DEF + f"X = {CALL}\n", H, definitions=frozenset({USED}))
    with pytest.raises(NotEqual) as refused:
        verify(
            original, f"X = {CALL}\n\n\n" + OWN_DEF, H, definitions=frozenset({USED})
        )
    assert "before its definition" in str(refused.value)
