"""Each rule's own VALID/INVALID examples and docs (Fixit style: the examples
are the spec), and what every rule shares: E999 before findings."""

from __future__ import annotations

import ast

import pytest
from rule_snippets import codes, example_codes, snippet

from lint_plugin.linter import lint_source
from lint_plugin.rules import RULES

VALID = [
    pytest.param(code, ex, id=f"{code}-valid-{i}")
    for code, rule in RULES.items()
    for i, ex in enumerate(rule.valid)
]


INVALID = [
    pytest.param(code, ex, id=f"{code}-invalid-{i}")
    for code, rule in RULES.items()
    for i, ex in enumerate(rule.invalid)
]


@pytest.mark.parametrize(("code", "example"), VALID)
def test_valid_example_has_no_finding_of_its_rule(code: str, example, tmp_path) -> None:
    assert code not in example_codes(example, tmp_path)


@pytest.mark.parametrize(("code", "example"), INVALID)
def test_invalid_example_has_a_finding_of_its_rule(
    code: str, example, tmp_path
) -> None:
    assert example_codes(example, tmp_path).count(code) == 1


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_docs_have_rufflike_sections(code: str) -> None:
    doc = RULES[code].render()
    for heading in ("## What it does", "## Why is this bad?", "## Example"):
        assert heading in doc
    assert "## Fix safety" in doc


def test_warnings_about_the_analysed_file_are_not_raised() -> None:
    import warnings

    source = snippet('pattern = "\\\\("\nn = seq_lens_sum * self.topk + bs * (i + 1)\n')
    assert "\\(" in source
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert codes(source) == ["KVI001"]
    assert caught == []


@pytest.mark.parametrize(
    ("tail", "syntax_error"),
    [
        ("def g(:\n    pass\n", True),  # a real syntax error elsewhere in the file
        ("nonlocal_ok = 1\n", False),
        # symtable rejects this, ast.parse (and flake8) accept it: not E999.
        ("x = 1\n\n\ndef h():\n    global x\n    x = 2\n", False),
    ],
)
def test_a_file_with_findings_is_e999_only_when_ast_rejects_it(tail, syntax_error):
    source = snippet("n = seq_lens_sum * self.topk + bs * (i + 1)\n") + "\n\n" + tail
    found = [f.code for f in lint_source(source.encode(), "x.py")]
    assert found == (["E999"] if syntax_error else ["KVI001"])


@pytest.mark.parametrize(
    "tail",
    [
        "nonlocal y\n",
        "break\n",
        "def g():\n    nonlocal q\n",
        "match x:\n    case [a] | (b):\n        pass\n",
        "x = " + " + ".join(["1"] * 10_000) + "\n",
    ],
    ids=["module-nonlocal", "break", "unbound-nonlocal", "or-pattern", "deep-sum"],
)
def test_what_cpython_refuses_to_compile_is_e999(tail: str) -> None:
    """ast.parse (flake8's parse) accepts these; CPython's compiler does not,
    so the module cannot be imported: E999, no finding, as for a parse error."""
    source = snippet("n = seq_lens_sum * self.topk + bs * (i + 1)\n") + tail
    ast.parse(source)
    assert [f.code for f in lint_source(source.encode(), "x.py")] == ["E999"]
