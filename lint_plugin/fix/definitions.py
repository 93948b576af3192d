"""The definitions ``fix`` adds to a module of the tree that lacks them, and the
proof that what was written computes exactly what the rules assume.

Written here in upstream's shape (0.5.13's ``spec_utils.py`` and
``layers/attention/utils.py``): the same names, parameters and annotations, a
docstring, the width helper's refusal of widths of ``2**31`` or more (int32 flat
offsets) and the guard's message ``what: used U > capacity C (k=v, ...)``. Both
refusals are raised rather than asserted, with the exception type upstream's
``assert`` raises, so they hold under ``python -O``.

The proof (:func:`prove_definition`) reads a definition back from the text about
to be written and evaluates its body symbolically over the statements it may
hold (a docstring, assignments to locals, refusals that raise, one return):
the returned value, in canonical polynomial form (:mod:`lint_plugin.fix.gate.poly`),
must be the helper's formula (:mod:`lint_plugin.engine.formulas`) over its own
parameters, the width's refusal must compare that same value with ``2**31``, and the
guard must raise exactly when ``used > capacity``. A definition that says anything else
is a refusal, never a write.
"""

from __future__ import annotations

import ast

from lint_plugin.engine.formulas import (
    BUFFER_WIDTH,
    HELPER_SLOTS,
    HELPER_TERMS,
    USED_LEN,
)
from lint_plugin.engine.vocabulary import GUARD
from lint_plugin.fix.gate.poly import Canonicalizer

INT32_LIMIT = 2**31

DEFINITIONS: dict[str, str] = {
    BUFFER_WIDTH: '''\
def draft_kv_indices_buffer_width(
    num_seqs: int, topk: int, max_context_len: int
) -> int:
    """Per-step row width of the EAGLE draft-decode kv_indices buffer.

    Each of the num_seqs * topk draft branches attends up to max_context_len KV
    slots, so the width carries the topk factor (#27338, #27460). The index
    kernel's flat offsets are int32: a width of 2**31 or more is refused.
    """
    width = num_seqs * topk * max_context_len
    # Raised, not asserted: the refusal holds under python -O.
    if width >= 2**31:
        raise AssertionError(
            f"kv_indices row width {num_seqs} * {topk} * {max_context_len} = "
            f"{width} would overflow int32 flat offsets; reduce batch/topk/context"
        )
    return width
''',
    USED_LEN: '''\
def draft_kv_indices_used_len(
    seq_lens_sum: int, topk: int, bs: int, num_steps: int
) -> int:
    """kv_indices entries used through num_steps draft-decode steps.

    bs = topk * num_seqs branches: each holds its sequence's KV slots and one
    index per step. Called with num_steps = i + 1 for step i's slice and with
    speculative_num_steps for the capacity check. Exact without a draft window;
    with one (window_size / sink_size) a row holds fewer entries and this is an
    upper bound.
    """
    return seq_lens_sum * topk + bs * num_steps
''',
    GUARD: '''\
def assert_buffer_fits(used: int, capacity: int, what: str, **context) -> None:
    """Fail fast when a preallocated buffer cannot hold what is written to it.

    The kv_indices kernels bound their writes per row, not against the buffer,
    so an undersized buffer silently overwrites the next row. Every argument is
    a host integer: the check costs no device sync.
    """
    # Raised, not asserted: the check holds under python -O.
    if used > capacity:
        details = ", ".join(f"{key}={value}" for key, value in context.items())
        raise AssertionError(
            f"{what}: used {used} > capacity {capacity}"
            + (f" ({details})" if details else "")
        )
''',
}
# The order definitions are added in (upstream's: the width first).
ORDER = (BUFFER_WIDTH, USED_LEN, GUARD)


def prove_definition(node: ast.FunctionDef) -> str | None:
    """Why ``node`` is not a definition of its name the rules can trust, or None
    when it provably is one."""
    if node.name == GUARD:
        return _prove_guard(node)
    if node.name not in HELPER_SLOTS:
        return f"{node.name} is not a helper"
    params = [name for name, _ in HELPER_SLOTS[node.name]]
    if _parameters(node) != (params, None):
        return f"{node.name} does not take ({', '.join(params)})"
    returned, refusals = _evaluate(node.body)
    if returned is None:
        return f"{node.name}: its body is not a straight computation"
    canon = Canonicalizer(expand_helpers=False)
    formula = canon.canonical(_formula(node.name, params))
    if canon.canonical(returned) != formula:
        return f"{node.name} does not return {_spelled(node.name, params)}"
    if node.name == BUFFER_WIDTH:
        if not any(_refuses_width(test, canon, formula) for test in refusals):
            return f"{node.name} does not refuse widths >= 2**31"
    elif refusals:
        return f"{node.name} refuses some values"
    return None


def _parameters(node: ast.FunctionDef) -> tuple[list[str], str | None]:
    """Positional parameter names, and the ``**`` one, of a plain signature (one
    with defaults, ``*args`` or keyword-only parameters reads as none)."""
    args = node.args
    if args.defaults or args.kw_defaults or args.vararg or args.kwonlyargs:
        return [], "?"
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    return names, (args.kwarg.arg if args.kwarg else None)


def _formula(helper: str, params: list[str]) -> ast.expr:
    terms = []
    for term in HELPER_TERMS[helper]:
        product: ast.expr = ast.Name(params[term[0]], ast.Load())
        for index in term[1:]:
            product = ast.BinOp(
                product, ast.Mult(), ast.Name(params[index], ast.Load())
            )
        terms.append(product)
    total = terms[0]
    for term in terms[1:]:
        total = ast.BinOp(total, ast.Add(), term)
    return total


def _spelled(helper: str, params: list[str]) -> str:
    return " + ".join(
        " * ".join(params[i] for i in term) for term in HELPER_TERMS[helper]
    )


def _evaluate(body: list[ast.stmt]) -> tuple[ast.expr | None, list[ast.expr]]:
    """The value ``body`` returns (locals substituted by their values) and the
    tests of its refusals (``if test: raise``), or ``(None, ...)`` when it does
    anything else."""
    env: dict[str, ast.expr] = {}
    refusals: list[ast.expr] = []
    for index, statement in enumerate(body):
        if index == 0 and _is_docstring(statement):
            continue
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            env[statement.targets[0].id] = _substituted(statement.value, env)
        elif _is_refusal(statement):
            refusals.append(_substituted(statement.test, env))
        elif isinstance(statement, ast.Return) and statement.value is not None:
            if index != len(body) - 1:
                return None, refusals
            return _substituted(statement.value, env), refusals
        else:
            return None, refusals
    return None, refusals


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _is_refusal(statement: ast.stmt) -> bool:
    """``if test: ...; raise ...`` with no else, whose body only raises (its
    assignments are to names nothing after it reads: it never falls through)."""
    return (
        isinstance(statement, ast.If)
        and not statement.orelse
        and bool(statement.body)
        and isinstance(statement.body[-1], ast.Raise)
        and all(isinstance(s, (ast.Assign, ast.Raise)) for s in statement.body)
    )


def _substituted(node: ast.expr, env: dict[str, ast.expr]) -> ast.expr:
    class Substitute(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name) -> ast.expr:
            return env.get(name.id, name)

    import copy

    return Substitute().visit(copy.deepcopy(node))


def _refuses_width(test: ast.expr, canon: Canonicalizer, formula: int) -> bool:
    """``width >= 2**31`` (or ``2**31 <= width``) with ``width`` the formula."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(op, ast.LtE):
        left, right, op = right, left, ast.GtE()
    return (
        isinstance(op, ast.GtE)
        and canon.canonical(left) == formula
        and _constant(right) == INT32_LIMIT
    )


def _constant(node: ast.expr) -> int | None:
    """An integer literal, or a power of two literals (``2**31``)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        base, exponent = _constant(node.left), _constant(node.right)
        if base is not None and exponent is not None and 0 <= exponent <= 64:
            return base**exponent
    return None


def _prove_guard(node: ast.FunctionDef) -> str | None:
    """``assert_buffer_fits(used, capacity, what, **context)`` that raises exactly
    when ``used > capacity`` and otherwise returns None."""
    if _parameters(node) != (["used", "capacity", "what"], "context"):
        return f"{GUARD} does not take (used, capacity, what, **context)"
    body = node.body[1:] if node.body and _is_docstring(node.body[0]) else node.body
    if len(body) != 1 or not _is_refusal(body[0]):
        return f"{GUARD}'s body is not one refusal"
    test = body[0].test
    fires = (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and (
            (
                isinstance(test.ops[0], ast.Gt)
                and _is_name(test.left, "used")
                and _is_name(test.comparators[0], "capacity")
            )
            or (
                isinstance(test.ops[0], ast.Lt)
                and _is_name(test.left, "capacity")
                and _is_name(test.comparators[0], "used")
            )
        )
    )
    if not fires:
        return f"{GUARD} does not refuse exactly used > capacity"
    return None


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name
