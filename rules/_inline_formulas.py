"""The reports of KVI001 and KVI002: an inline used length or row width, and its fix.

The walk matches every arithmetic expression against the two helper formulas
(:mod:`lint_plugin.engine.formulas`) and records the matches as facts
(``ModuleFacts.formulas``, in the order met); this module turns each into its
rule's finding: the span shown, the helper call that replaces it, and whether the
fix is safe to offer (never where a program keeps the text: an annotation,
``{expr=}``). Both rules report here, in one pass, so findings keep the order of
the walk.
"""

from __future__ import annotations

import ast

from lint_plugin.engine.arith import Sum
from lint_plugin.engine.facts import ModuleFacts
from lint_plugin.engine.formulas import (
    CONSTANT,
    EFFECT,
    READ,
    FormulaMatch,
    render_call,
    render_replacement,
    written_order,
)
from lint_plugin.engine.reporter import Reporter
from lint_plugin.engine.source import COMMENT, one_line
from lint_plugin.findings import Fix
from lint_plugin.rules import RULES


def report_inline_formulas(facts: ModuleFacts, reporter: Reporter) -> None:
    """A KVI001 or KVI002 finding for each formula the walk matched."""
    for formula in facts.formulas:
        _report(formula.match, formula.in_annotation, reporter)


def _report(match: FormulaMatch, in_annotation: bool, reporter: Reporter) -> None:
    src = reporter.source
    owner_span = src.span(match.owner.node)
    if isinstance(match.owner, Sum):
        spans = [
            src.widen_to_parens(src.span(match.owner.terms[i].expr.node), owner_span)
            for i in match.terms
        ]
        shown = owner_span if match.whole else (spans[0][0], spans[-1][1])
        # Terms next to each other in the flattened sum may still sit in
        # different parentheses (`a + (b + c)`): splice only a balanced span,
        # else rewrite the whole sum from its terms.
        splice = match.whole or (
            match.contiguous and _balanced(src.text[shown[0] : shown[1]])
        )
        edit_span = shown if splice else owner_span
        if splice and not match.whole:
            # `cap - (a + b)`: the call takes the group's parentheses' place.
            grouped = src.widen_to_parens(shown, owner_span)
            if match.owner.terms[match.terms[0]].negative and grouped == shown:
                # `cap - a - b`: the span reads `a - b`, so rebuild the sum.
                splice, edit_span = False, owner_span
            else:
                edit_span = grouped
    else:
        shown = edit_span = owner_span
        splice = True

    def text_of(expr) -> str:
        text = src.segment(expr.node)
        text = one_line(text) if "\n" in text else text
        # An argument (a keyword's value above all) takes a walrus only in
        # parentheses.
        return f"({text})" if isinstance(expr.node, ast.NamedExpr) else text

    def term_text_of(index: int) -> str:
        start, end = src.widen_to_parens(
            src.span(match.owner.terms[index].expr.node), owner_span
        )
        # One line: the span's comments move above it, and a line break
        # could land outside any bracket (after a backslash continuation).
        text = src.text[start:end]
        return one_line(text) if "\n" in text else text

    order = written_order(match, _evaluation_kind)
    keywords = order.keywords if order else ()
    call = render_call(match, text_of, keywords, reporter.settings.spell(match.helper))
    if order is not None and order.at_last and splice and not match.whole:
        splice, edit_span = False, owner_span  # rebuilt, the call moved
    content = render_replacement(
        match, text_of, term_text_of, splice, call, bool(order and order.at_last)
    )
    rule = RULES[match.code]
    message = rule.message.format(
        text=one_line(src.text[shown[0] : shown[1]]),
        args=call[call.index("(") + 1 : -1],
    )
    fix = Fix("safe", rule.fix_title or "", (reporter.edit(edit_span, content),))
    # No fix where a program keeps the text: an annotation (a string under
    # `from __future__ import annotations`, and for tools), `{expr=}`.
    fixable = match.fixable and order is not None and not in_annotation
    reporter.add(match.code, shown, message, fix if fixable else None)


# What may have an effect when evaluated (or change what is read after it).
_EFFECTS = (
    ast.Call,
    ast.NamedExpr,
    ast.Await,
    ast.Yield,
    ast.YieldFrom,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


_CONSTANT = (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop)


def _evaluation_kind(expr) -> str:
    """What evaluating an operand does (see ``formulas.written_order``)."""
    nodes = list(ast.walk(expr.node))
    if any(isinstance(node, _EFFECTS) for node in nodes):
        return EFFECT
    if all(isinstance(node, _CONSTANT) for node in nodes):
        return CONSTANT
    return READ


def _balanced(text: str) -> bool:
    depth = 0
    for char in COMMENT.sub("", text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0
