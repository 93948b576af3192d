"""The report KVI001 and KVI002 share: an inline used length or row width, and its fix.

The walk records the arithmetic of the rows a rule reads (``ModuleFacts.arithmetic``,
flattened); each of the two rules finds its own formula in it
(:mod:`lint_plugin.engine.formulas`), and this module turns a match into its
finding: the span shown, the helper call that replaces it, and whether the fix is
safe to offer (never where a program keeps the text: an annotation, ``{expr=}``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from lint_plugin.engine.nodes import walk_nodes
from lint_plugin.findings import Fix
from lint_plugin.lazy import lazy

TYPE_CHECKING = False  # not `typing`: the catalogue is read on every run
if TYPE_CHECKING:
    from lint_plugin.algebra.arith import Product, Sum
    from lint_plugin.engine.checker import Checker
    from lint_plugin.engine.formulas import FormulaMatch

arith = lazy("lint_plugin.algebra.arith")
formulas = lazy("lint_plugin.engine.formulas")
text_tools = lazy("lint_plugin.engine.source")


def matches(
    checker: Checker, kind: type, match: Callable[[Sum | Product], FormulaMatch | None]
) -> Iterator[tuple[FormulaMatch, bool]]:
    """Each match of ``match`` in the file's arithmetic (its sums or its
    products: ``kind``), and whether its text is kept by the program."""
    for found in checker.facts.arithmetic:
        for sub in arith.subexpressions(found.expr):
            if isinstance(sub, kind):
                matched = match(sub)
                if matched is not None:
                    yield matched, found.in_annotation


def report(match: FormulaMatch, in_annotation: bool, checker: Checker, rule) -> None:
    """``rule``'s finding for ``match``, with the helper call as its fix."""
    src = checker.source
    owner_span = src.span(match.owner.node)
    if isinstance(match.owner, arith.Sum):
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
        text = text_tools.one_line(text) if "\n" in text else text
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
        return text_tools.one_line(text) if "\n" in text else text

    order = formulas.written_order(match, _evaluation_kind)
    keywords = order.keywords if order else ()
    call = formulas.render_call(
        match, text_of, keywords, checker.settings.spell(match.helper)
    )
    if order is not None and order.at_last and splice and not match.whole:
        splice, edit_span = False, owner_span  # rebuilt, the call moved
    content = formulas.render_replacement(
        match, text_of, term_text_of, splice, call, bool(order and order.at_last)
    )
    message = rule.message.format(
        text=text_tools.one_line(src.text[shown[0] : shown[1]]),
        args=call[call.index("(") + 1 : -1],
    )
    fix = Fix("safe", rule.fix_title or "", (checker.edit(edit_span, content),))
    # No fix where a program keeps the text: an annotation (a string under
    # `from __future__ import annotations`, and for tools), `{expr=}`.
    fixable = match.fixable and order is not None and not in_annotation
    checker.add(rule.code, shown, message, fix if fixable else None)


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
    nodes = list(walk_nodes(expr.node))
    if any(isinstance(node, _EFFECTS) for node in nodes):
        return formulas.EFFECT
    if all(isinstance(node, _CONSTANT) for node in nodes):
        return formulas.CONSTANT
    return formulas.READ


def _balanced(text: str) -> bool:
    depth = 0
    for char in text_tools.COMMENT.sub("", text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0
