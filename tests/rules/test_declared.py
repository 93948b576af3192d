"""Rule declarations read from text (lint_plugin.engine.declared): the same value
Python gives the statement, or a one-line error naming the file, never a guess.

The oracle is Python itself: each statement is also executed (here, in the test,
over the vocabulary's names) and the two values compared."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lint_plugin.engine import declared, vocabulary
from lint_plugin.engine.roles import Role

NAMESPACE = {**declared._NAMES, "Role": Role}


def executed(statement: str) -> vocabulary.Needs:
    scope = dict(NAMESPACE)
    exec(statement, scope)  # the test's own text, over the vocabulary's names
    return scope["NEEDS"]


VALID = [
    "NEEDS = Needs(((('x',),),))",
    "NEEDS = Needs((((Role.TOPK,), (Role.SEQ_LENS_SUM,)), ((USED_LEN,),)))",
    "NEEDS = Needs(\n    (((KERNEL,),),),  # a comment\n    where='class',\n"
    "    facts=(KERNEL, GUARD),\n)",
    "NEEDS = Needs((((*HELPERS, GUARD),),))",
    "NEEDS = Needs(((CONTEXT, DRAFT_CLASS),), facts=ALLOCATOR_WORDS)",
    "NEEDS = Needs(())",
    "NEEDS = Needs(((((Role.WINDOW),),),))",  # brackets, no comma: no tuple
]


@pytest.mark.parametrize("statement", VALID)
def test_a_declaration_reads_as_python_runs_it(statement: str) -> None:
    text = f'"""A rule."""\n\nimport x\n\n{statement}\n\nRULE = Rule("\\\\")\n'
    assert declared.read_needs(text, "kvi999.py") == executed(statement)


def test_a_declaration_may_start_the_file() -> None:
    assert declared.read_needs("NEEDS = Needs(())\n") == vocabulary.Needs(())


INVALID = [
    ("NEEDS = Needs(())\nNEEDS = Needs(())\n", "2 NEEDS statements"),
    ("RULE = 1\n", "0 NEEDS statements"),
    ("NEEDS = Needs(((f'x',),))\n", "not a vocabulary word"),
    ("NEEDS = Needs(((words(),),))\n", "not a vocabulary word"),
    ("NEEDS = Needs(((USED_LEN(),),))\n", "only Needs(...) is read"),
    ("NEEDS = Needs(((Role.NOPE,),))\n", "names no role 'NOPE'"),
    ("NEEDS = Needs(((1,),))\n", "has '1', not read"),
    ('NEEDS = Needs((("a\\\\b",),))\n', "not read"),
    ("NEEDS = Needs((('x',),), colour=1)\n", "not read"),
    ("NEEDS = Needs(('x',))\n", "is not a Needs"),
    ("NEEDS = (('x',),)\n", "is not one Needs(...) call"),
    ("NEEDS = Needs(()) + 1\n", "not read"),
    ("NEEDS = Needs((\n", "ends too early"),
    ("NEEDS = Needs(", "ends too early"),
    ("NEEDS = Needs((),", "ends too early"),
    ("NEEDS = Needs(((*Role.TOPK,),))\n", "which is not a tuple"),
    ("NEEDS = Needs(((*Needs(()),),))\n", "which is not a tuple"),
    ("NEEDS = Needs(where='class', ())\n", "positional argument after a keyword"),
    ("NEEDS = Needs((), where='a', where='b')\n", "repeats the keyword 'where'"),
]


@pytest.mark.parametrize(("text", "reason"), INVALID)
def test_an_unreadable_declaration_is_one_error_naming_its_file(
    text: str, reason: str
) -> None:
    with pytest.raises(declared.DeclarationError) as raised:
        declared.read_needs(text, "rules/kvi999_x.py")
    message = str(raised.value)
    assert message.startswith("rules/kvi999_x.py: ")
    assert reason in message
    assert "\n" not in message


WORDS = [f"Role.{r.name}" for r in Role] + [
    "USED_LEN",
    "BUFFER_WIDTH",
    "KERNEL",
    "GUARD",
    "'MultiStep'",
    '"kv_indices"',
]
SPLICES = ["*HELPERS", "*CONTEXT", "*DRAFT_CLASS"]


def group_text() -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(WORDS + SPLICES), min_size=1, max_size=4).map(
        lambda ws: "(" + ", ".join(ws) + ("," if len(ws) == 1 else "") + ")"
    )


def tuple_of(items: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(items, min_size=1, max_size=3).map(
        lambda xs: "(" + ", ".join(xs) + ("," if len(xs) == 1 else "") + ")"
    )


@st.composite
def statements(draw) -> str:
    clauses = draw(tuple_of(tuple_of(group_text())))
    where = draw(st.sampled_from(["", ", where='class'", ', where="statement"']))
    facts = draw(st.sampled_from(["", ", facts=ALLOCATOR_WORDS", ", facts=(KERNEL,)"]))
    spacing = draw(st.sampled_from([" ", "\n    ", "  # why\n    "]))
    return f"NEEDS = Needs({spacing}{clauses}{where}{facts}{spacing.strip(' ')})"


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(statement=statements())
def test_any_declaration_of_the_subset_reads_as_python_runs_it(statement) -> None:
    text = f"import y\n\n{statement}\nRULE = Rule('x')\n"
    assert declared.read_needs(text) == executed(statement)


def test_the_catalogue_reads_every_rule_module() -> None:
    from lint_plugin.rules import NEEDS

    assert declared.read_declared() == NEEDS
