"""The two helper formulas, and how an expression is matched against them.

This is the one place that knows ``seq_lens_sum * topk + bs * num_steps`` and
``num_seqs * topk * max_context_len``. It works on the neutral tree of
:mod:`lint_plugin.algebra.arith`, so ``check``, flake8, ``fix`` and the proof share it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

from lint_plugin.algebra.arith import Expr, Leaf, Product, Sum, subexpressions
from lint_plugin.algebra.helpers import BUFFER_WIDTH as BUFFER_WIDTH
from lint_plugin.algebra.helpers import HELPER_SLOTS as HELPER_SLOTS
from lint_plugin.algebra.helpers import HELPER_TERMS as HELPER_TERMS
from lint_plugin.algebra.helpers import USED_LEN as USED_LEN
from lint_plugin.records import record
from lint_plugin.roles import Role

# Roles strong enough that seeing one in another slot is certainly a mistake.
_STRONG_ROLES = frozenset(
    {Role.TOPK, Role.SEQ_LENS_SUM, Role.MAX_CONTEXT_LEN, Role.NUM_STEPS}
)

Arg = tuple[
    Expr, ...
]  # factors multiplied together (``bs`` may be ``num_seqs * topk``)


@record(frozen=True, eq=False)
class FormulaMatch:
    """An inline copy of a helper formula inside ``owner``.

    For a sum, ``terms`` are the indices of the two matched terms in source order;
    the match covers the whole owner when they are all of its terms.
    """

    code: str
    helper: str
    args: tuple[Arg, ...]
    owner: Sum | Product
    terms: tuple[int, ...] = ()

    @property
    def whole(self) -> bool:
        return isinstance(self.owner, Product) or len(self.terms) == len(
            self.owner.terms
        )

    @property
    def fixable(self) -> bool:
        """The helper call would be well placed: no fix may write a KVI004 call
        (in ``seq_lens_sum * self.topk + self.topk * num_steps`` bs would be a
        topk; in ``max_num_tokens * topk * max_context_len`` num_seqs a token
        count). Such a site is reported, with no fix."""
        return _well_placed(self.helper, self.args)

    @property
    def contiguous(self) -> bool:
        """The matched terms are neighbours in the flattened sum."""
        return self.whole or self.terms[1] == self.terms[0] + 1


def find_formula_matches(expr: Expr) -> Iterator[FormulaMatch]:
    """Every inline helper formula in ``expr`` and its sub-expressions."""
    for sub in subexpressions(expr):
        match = match_used_len(sub) if isinstance(sub, Sum) else match_buffer_width(sub)
        if match is not None:
            yield match


def match_used_len(expr: Sum) -> FormulaMatch | None:
    """``seq_lens_sum * topk + bs * num_steps`` as two terms of ``expr``."""
    # The two terms share a sign: `cap - (seq_lens_sum * topk + bs * num_steps)`
    # (a capacity check's natural spelling) subtracts the whole formula.
    for negative in (False, True):
        anchor = steps = None
        for index, term in enumerate(expr.terms):
            if term.negative != negative or not isinstance(term.expr, Product):
                continue
            if anchor is None and _is_prefix_term(term.expr):
                anchor = index
            elif steps is None and _split_steps_term(term.expr) is not None:
                steps = index
        if anchor is not None and steps is not None:
            break
    else:
        return None
    sls, topk = _prefix_roles(expr.terms[anchor].expr)
    bs, num_steps = _split_steps_term(expr.terms[steps].expr)
    args = ((sls,), (topk,), bs, (num_steps,))
    return FormulaMatch("KVI001", USED_LEN, args, expr, tuple(sorted((anchor, steps))))


def match_buffer_width(expr: Product) -> FormulaMatch | None:
    """``num_seqs * topk * max_context_len`` in any order, nothing else multiplied."""
    if len(expr.factors) != 3:
        return None
    topk = _only(expr.factors, Role.TOPK)
    mcl = _only(expr.factors, Role.MAX_CONTEXT_LEN)
    if topk is None or mcl is None:
        return None
    (count,) = (f for f in expr.factors if f is not topk and f is not mcl)
    if not _is_count(count):
        return None
    args = ((count,), (topk,), (mcl,))
    return FormulaMatch("KVI002", BUFFER_WIDTH, args, expr)


def _well_placed(helper: str, args: Sequence[Arg]) -> bool:
    """Would the helper call be free of KVI004 (``seq_lens_sum * self.topk +
    self.topk * num_steps`` is no used length: its bs would be a topk)?"""
    slots = [slot for slot, _ in HELPER_SLOTS[helper]]
    roles = [
        (slot, arg[0].role if len(arg) == 1 and isinstance(arg[0], Leaf) else None)
        for slot, arg in zip(slots, args, strict=True)
    ]
    return not misplaced_arguments(helper, roles)


def misplaced_arguments(
    helper: str, roles: Sequence[tuple[str, Role | None]]
) -> list[tuple[str, Role]]:
    """Slots of a helper call given another slot's strong role: ``(slot, role)``.

    ``roles`` pairs each argument's slot name with the role recognised for it.
    """
    expected = dict(HELPER_SLOTS[helper])
    problems = []
    for slot, role in roles:
        if slot not in expected or role is None:
            continue
        strong_elsewhere = role in _STRONG_ROLES and role is not expected[slot]
        # A token count already includes topk: as num_seqs it counts topk twice.
        tokens_as_seqs = role is Role.TOKENS and slot == "num_seqs"
        if strong_elsewhere or tokens_as_seqs:
            problems.append((slot, role))
    return problems


# ---- rendering -------------------------------------------------------------

_ATOM = re.compile(r"[A-Za-z_][\w.]*|\d+")


def render_call(
    match: FormulaMatch,
    text_of: Callable[[Expr], str],
    keywords: Sequence[str] = (),
    callee: str | None = None,
) -> str:
    """The helper call that replaces the matched formula, arguments in role order
    (or, ``keywords``, as keyword arguments in that order).

    ``text_of`` gives an expression's source text without its outer parentheses;
    ``callee`` is how the helper is spelled there (default: its name).
    """
    texts = [_render_arg(arg, text_of) for arg in match.args]
    if keywords:
        slots = [name for name, _ in HELPER_SLOTS[match.helper]]
        texts = [f"{slot}={texts[slots.index(slot)]}" for slot in keywords]
    return render_helper_call(callee or match.helper, texts)


def render_helper_call(callee: str, arg_texts: Sequence[str]) -> str:
    return f"{callee}({', '.join(arg_texts)})"


EFFECT, READ, CONSTANT = "effect", "read", "constant"


@record(frozen=True)
class Order:
    """How a helper call keeps the formula's order of evaluation."""

    keywords: tuple[str, ...] = ()  # slots written as keywords, in this order
    at_last: bool = False  # the call stands where the last matched term was


def written_order(match: FormulaMatch, kind_of: Callable[[Expr], str]) -> Order | None:
    """How a call can evaluate the formula's operands in the formula's order,
    where that matters (an operand, or a term the call moves past, may have an
    effect: a walrus, a call), or None when no call keeps it: positional
    arguments where the first matched term was, else where the last one was,
    else keyword arguments (evaluated as written) in the operands' order.

    ``kind_of`` says what evaluating an operand does: EFFECT (it may change
    something), READ (names, attributes: it sees what an effect changed) or
    CONSTANT (neither). Two operands may trade places unless one has an effect
    and the other has one too or reads."""
    slots = [name for name, _ in HELPER_SLOTS[match.helper]]
    if isinstance(match.owner, Product):
        window, passed = list(match.owner.factors), []
    else:
        first, last = match.terms
        window, passed = [], []
        for index in range(first, last + 1):
            expr = match.owner.terms[index].expr
            if index in match.terms:
                window += expr.factors if isinstance(expr, Product) else [expr]
            else:
                window.append(expr)
                passed.append(expr)
    position = {id(unit): index for index, unit in enumerate(window)}
    kind = {id(unit): kind_of(unit) for unit in window}
    if EFFECT not in kind.values():
        return Order()

    def keeps_order(units: Sequence[Expr]) -> bool:
        for index, unit in enumerate(units):
            for later in units[index + 1 :]:
                if position[id(unit)] < position[id(later)]:
                    continue
                kinds = {kind[id(unit)], kind[id(later)]}
                if EFFECT in kinds and CONSTANT not in kinds:
                    return False
        return True

    by_slot = [f for arg in match.args for f in arg]
    by_source = sorted(
        zip(slots, match.args, strict=True),
        key=lambda pair: min(position[id(f)] for f in pair[1]),
    )
    in_source = [f for _, arg in by_source for f in arg]
    for order, units in (
        (Order(), by_slot + passed),
        (Order(at_last=True), passed + by_slot),
        (Order(tuple(slot for slot, _ in by_source)), in_source + passed),
        (Order(tuple(slot for slot, _ in by_source), True), passed + in_source),
    ):
        if keeps_order(units):
            return order
    return None


def render_replacement(
    match: FormulaMatch,
    text_of: Callable[[Expr], str],
    term_text_of: Callable[[int], str],
    splice: bool,
    call: str | None = None,
    at_last: bool = False,
) -> str:
    """Text for the matched terms' span when ``splice``, else for the whole owner
    rebuilt from its terms (the matched pair replaced by the call, where the
    first of them was, or ``at_last`` where the last was).

    ``term_text_of(i)`` gives term ``i``'s text with its own parentheses;
    ``call`` is the call's text (default: :func:`render_call`'s).
    """
    call = call or render_call(match, text_of)
    if splice:
        return call
    first, second = match.terms
    if at_last:
        first, second = second, first
    parts: list[str] = []
    for index, term in enumerate(match.owner.terms):
        if index == second:
            continue
        text = call if index == first else term_text_of(index)
        if parts:
            parts.append("-" if term.negative else "+")
        elif term.negative:
            text = f"-{text}"  # a leading subtracted term keeps its sign
        parts.append(text)
    return " ".join(parts)


def _render_arg(arg: Arg, text_of: Callable[[Expr], str]) -> str:
    if len(arg) == 1:
        return text_of(arg[0])
    texts = [text_of(f) for f in arg]
    return " * ".join(t if _ATOM.fullmatch(t) else f"({t})" for t in texts)


# ---- roles of the pieces ---------------------------------------------------


def _only(factors: Sequence[Expr], role: Role) -> Expr | None:
    found = [f for f in factors if isinstance(f, Leaf) and f.role is role]
    return found[0] if len(found) == 1 else None


def _is_prefix_term(expr: Product) -> bool:
    return _prefix_roles(expr) != (None, None)


def _prefix_roles(expr: Product) -> tuple[Expr | None, Expr | None]:
    if len(expr.factors) == 2:
        sls = _only(expr.factors, Role.SEQ_LENS_SUM)
        topk = _only(expr.factors, Role.TOPK)
        if sls is not None and topk is not None:
            return sls, topk
    return None, None


def _split_steps_term(expr: Product) -> tuple[Arg, Expr] | None:
    """``bs * num_steps``: one step factor, the rest (at least one) is ``bs``."""
    steps = [f for f in expr.factors if _is_steps(f)]
    if len(steps) != 1:
        return None
    rest = tuple(f for f in expr.factors if f is not steps[0])
    if not rest or not all(_is_count(f) for f in rest):
        return None
    return rest, steps[0]


def _is_steps(expr: Expr) -> bool:
    """``num_steps``-like names, or a loop index plus one (``i + 1``, ``1 + i``)."""
    if isinstance(expr, Leaf):
        return expr.role is Role.NUM_STEPS
    if isinstance(expr, Sum) and len(expr.terms) == 2:
        first, second = expr.terms
        if first.negative or second.negative:
            return False
        return any(
            isinstance(index, Leaf)
            and index.name is not None
            and isinstance(one, Leaf)
            and one.value == 1
            for index, one in ((first.expr, second.expr), (second.expr, first.expr))
        )
    return False


def _is_count(expr: Expr) -> bool:
    """A factor that may stand for a number of sequences or branches."""
    return (
        isinstance(expr, Leaf)
        and expr.value is None
        and expr.role not in (Role.SEQ_LENS_SUM, Role.MAX_CONTEXT_LEN, Role.NUM_STEPS)
    )
