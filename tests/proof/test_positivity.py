"""The prover behind the kernel proof: a certificate or nothing, never a wrong "yes".

Valid claims it must prove (the shapes the kernel proof poses), false ones it must
not, and a brute-force oracle: for random expressions and facts, whenever it says
"proven", no point of a small grid that satisfies the facts makes the goal negative.
"""

from __future__ import annotations

import itertools

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from lint_plugin.proof.fit.numeric import evaluate
from lint_plugin.proof.fit.positivity import contradictory, decide, nonneg, symbol

K, L, ROW_I, STEPS, CTX, CAP, N, T, B = (
    symbol(n) for n in ("topk", "seq_len", "i", "steps", "ctx", "cap", "n", "t", "b")
)
ROW = [K - 1, STEPS - 1 - ROW_I, CTX - L - STEPS]  # topk >= 1, i < steps, the limit

PROVEN = [
    pytest.param(K * CTX - K * L - K * (ROW_I + 1), ROW, id="width-holds-a-row"),
    pytest.param(
        K * CTX - K * sp.Min(L, CAP) - K * (ROW_I + 1), ROW, id="window-width"
    ),
    pytest.param(K * L - K * sp.Min(L, CAP), [], id="window-below-used"),
    pytest.param(128 * sp.floor((L + 127) / 128) - L, [], id="cdiv-covers"),
    pytest.param(L + ROW_I + 1 - (L - 1), [], id="draft-store-dominates-copy"),
    pytest.param(K * L + (ROW_I + 1) * K + K * (L - L), [K - 1], id="next-sequence"),
    pytest.param((K - T - 1) * L + (T + 1) * N, [K - 1 - T], id="branch-order"),
]

NOT_PROVEN = [
    pytest.param(K * CTX - K * L - K * (ROW_I + 2), ROW, id="one-entry-too-many"),
    pytest.param(K * CTX - K * L - (ROW_I + 1), [STEPS - 1 - ROW_I], id="no-limit"),
    pytest.param(CTX - K * L, ROW, id="topk-missing-from-width"),
    pytest.param(sp.Min(L, CAP) - L, [], id="window-above"),
    pytest.param((N - K) * L + K * N, [N - B - 2], id="stride-without-topk"),
    pytest.param(L - 1, [], id="zero-length"),
]


@pytest.mark.parametrize(("goal", "facts"), PROVEN)
def test_proves(goal, facts):
    assert nonneg(goal, facts)


@pytest.mark.parametrize(("goal", "facts"), NOT_PROVEN)
def test_does_not_prove_what_is_false(goal, facts):
    assert not nonneg(goal, facts)
    # And each really is false somewhere the facts hold (the cases are honest).
    assert _counterexample(goal, facts) is not None


def test_contradictory_facts_are_seen():
    assert contradictory([L - CTX - 1, CTX - L])  # seq_len > ctx and seq_len <= ctx
    assert contradictory([STEPS - 1, -STEPS])
    assert not contradictory(ROW)


@pytest.mark.parametrize(
    ("cond", "facts", "expected"),
    [
        (sp.Ne(STEPS, 0), [STEPS - 1], True),
        (sp.Eq(STEPS, 0), [STEPS - 1], False),
        (sp.Eq(K, 1), [K - 1], None),
        (sp.Or(sp.Eq(K, 1), sp.Lt(ROW_I, STEPS)), ROW, True),
        (sp.And(sp.Ge(CTX, L), sp.Lt(CTX, L)), ROW, False),
    ],
)
def test_decide(cond, facts, expected):
    assert decide(cond, facts) is expected


def _counterexample(goal, facts, top=7):
    symbols = sorted(
        set().union(goal.free_symbols, *(f.free_symbols for f in facts)),
        key=lambda s: s.name,
    )
    for values in itertools.product(range(top), repeat=len(symbols)):
        env = dict(zip(symbols, values, strict=True))
        if all(evaluate(f, env) >= 0 for f in facts) and evaluate(goal, env) < 0:
            return env
    return None


SYMBOLS = (K, L, ROW_I, CAP)


@st.composite
def expressions(draw, depth=2):
    """Small integer expressions over four symbols: + - * Min Max floor."""
    if depth == 0 or draw(st.booleans()):
        if draw(st.booleans()):
            return draw(st.sampled_from(SYMBOLS))
        return sp.Integer(draw(st.integers(-3, 3)))
    a, b = draw(expressions(depth - 1)), draw(expressions(depth - 1))
    kind = draw(st.sampled_from(["add", "sub", "mul", "min", "max", "floor"]))
    if kind == "floor":
        return sp.floor((a + draw(st.integers(0, 3))) / draw(st.integers(1, 4)))
    return {
        "add": lambda: a + b,
        "sub": lambda: a - b,
        "mul": lambda: a * b,
        "min": lambda: sp.Min(a, b),
        "max": lambda: sp.Max(a, b),
    }[kind]()


@settings(max_examples=300, deadline=None)
@given(goal=expressions(), facts=st.lists(expressions(depth=1), max_size=3))
def test_proven_means_no_counterexample(goal, facts):
    if nonneg(goal, facts):
        assert _counterexample(goal, facts, top=6) is None
