"""Findings of one parsed ``ast`` tree: the engine's walk, shared by every front end.

``check`` hands it the small regions of a file that can match; the flake8 plugin
hands it flake8's own tree. Either way each arithmetic expression is flattened
once into :mod:`lint_plugin.arith` and matched by :mod:`lint_plugin.formulas`.
"""

from __future__ import annotations

import ast
import bisect
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from lint_plugin.allocations import allocation_shape, is_draft_backend_class
from lint_plugin.arith import AST, Leaf, Product, Sum, build
from lint_plugin.findings import Edit, Finding, Fix
from lint_plugin.formulas import (
    BUFFER_WIDTH,
    HELPER_SLOTS,
    FormulaMatch,
    find_formula_matches,
    has_topk_factor,
    mentions_role,
    misplaced_arguments,
    render_call,
    render_helper_call,
    render_replacement,
)
from lint_plugin.roles import SEQUENCE_COUNT_NAMES, Role, role_of_name
from lint_plugin.rules import RULES
from lint_plugin.source import COMMENT, Source, one_line

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.ClassDef, *_FUNCTIONS)


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


def _mentions(rows: Sequence[int] | None, node: ast.AST) -> bool:
    """Does ``node`` span a row of ``rows`` (None: every row counts)?"""
    if rows is None:
        return True
    index = bisect.bisect_left(rows, node.lineno)
    return index < len(rows) and rows[index] <= node.end_lineno


@dataclass
class _Scope:
    """What a function (and the functions nested in it) says about its names."""

    params: list[str] = field(default_factory=list)
    aliases: dict[str, Role] = field(default_factory=dict)
    sized: set[str] = field(default_factory=set)  # locals holding a sized width
    functions: list[ast.AST] = field(default_factory=list)  # this one and outer ones


@dataclass(frozen=True)
class _Context:
    draft_class: bool = False
    class_topk: str | None = None  # "self.topk" when the class keeps one
    scope: _Scope | None = None


def analyze(
    tree: ast.AST, source: Source, path: str, rows: Sequence[int] | None = None
) -> list[Finding]:
    """All KVI findings in ``tree`` (not filtered by noqa or selection).

    ``rows`` (sorted, in the tree's numbering) are the rows that mention a word a
    finding needs; statements touching none of them are skipped, except in a
    function with aliases (``k = self.topk``), whose formulas may name none.
    """
    walker = _Walker(source, path, rows)
    walker.visit(tree, _Context(), False)
    return walker.findings


class _Walker:
    def __init__(self, source: Source, path: str, rows: Sequence[int] | None) -> None:
        self.source = source
        self.path = path
        self.rows = rows
        self.findings: list[Finding] = []
        self._targets: dict[int, str] = {}  # id(call) -> name it is assigned to

    def mentions(self, node: ast.AST) -> bool:
        return _mentions(self.rows, node)

    # ---- traversal -------------------------------------------------------

    def visit(self, node: ast.AST, ctx: _Context, parent_arith: bool) -> None:
        if (
            isinstance(node, ast.stmt)
            and not isinstance(node, _SCOPES)
            and not (ctx.scope and ctx.scope.aliases)
            and not self.mentions(node)
        ):
            return  # the common case: a statement that names nothing we match
        if isinstance(node, ast.ClassDef):
            ctx = self._class_context(node, ctx)
        elif isinstance(node, _FUNCTIONS):
            if node.name in HELPER_SLOTS:
                return  # the helpers' own definitions spell out the formulas
            scope = _scope(node, ctx.scope, self.rows)
            ctx = _Context(ctx.draft_class, ctx.class_topk, scope)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            self._remember_target(node)
        elif isinstance(node, ast.Call):
            self._check_call(node, ctx)
        is_arith = AST.binop(node) is not None
        if is_arith and not parent_arith:
            self._check_arith(node, ctx)
        for child in ast.iter_child_nodes(node):
            self.visit(child, ctx, is_arith)

    def _class_context(self, node: ast.ClassDef, ctx: _Context) -> _Context:
        draft = is_draft_backend_class(node.name)
        topk = None
        if draft:
            for sub in ast.walk(node):
                if (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.ctx, ast.Store)
                    and isinstance(sub.value, ast.Name)
                    and sub.value.id == "self"
                    and role_of_name(sub.attr) is Role.TOPK
                ):
                    topk = f"self.{sub.attr}"
                    break
        return _Context(draft, topk, None)

    def _remember_target(self, node: ast.Assign | ast.AnnAssign) -> None:
        if isinstance(node.value, ast.Call):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [AST.name(t) or "" for t in targets]
            self._targets[id(node.value)] = " ".join(names)

    # ---- KVI001 / KVI002 -------------------------------------------------

    def _check_arith(self, node: ast.AST, ctx: _Context) -> None:
        aliases = ctx.scope.aliases if ctx.scope else {}
        for match in find_formula_matches(build(node, AST, aliases)):
            self._report_formula(match)

    def _report_formula(self, match: FormulaMatch) -> None:
        src = self.source
        owner_span = src.span(match.owner.node)
        if isinstance(match.owner, Sum):
            spans = [
                src.widen_to_parens(
                    src.span(match.owner.terms[i].expr.node), owner_span
                )
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
        else:
            shown = edit_span = owner_span
            splice = True

        def text_of(expr) -> str:
            text = src.segment(expr.node)
            return one_line(text) if "\n" in text else text

        def term_text_of(index: int) -> str:
            start, end = src.widen_to_parens(
                src.span(match.owner.terms[index].expr.node), owner_span
            )
            # One line: the span's comments move above it, and a line break
            # could land outside any bracket (after a backslash continuation).
            text = src.text[start:end]
            return one_line(text) if "\n" in text else text

        call = render_call(match, text_of)
        content = render_replacement(match, text_of, term_text_of, splice)
        rule = RULES[match.code]
        message = rule.message.format(
            text=one_line(src.text[shown[0] : shown[1]]),
            args=call[call.index("(") + 1 : -1],
        )
        fix = Fix("safe", rule.fix_title or "", (self._edit(edit_span, content),))
        self._add(match.code, shown, message, fix if match.fixable else None)

    # ---- KVI003 / KVI004 -------------------------------------------------

    def _check_call(self, call: ast.Call, ctx: _Context) -> None:
        for keyword in call.keywords:
            if keyword.arg and isinstance(keyword.value, ast.Call):
                self._targets[id(keyword.value)] = keyword.arg
        name = AST.name(call.func)
        if name in HELPER_SLOTS:
            self._check_helper_arguments(call, name, ctx)
        elif ctx.draft_class and ctx.scope is not None:
            self._check_allocation(call, ctx)

    def _check_helper_arguments(self, call: ast.Call, helper: str, ctx: _Context):
        slots = [slot for slot, _ in HELPER_SLOTS[helper]]
        aliases = ctx.scope.aliases if ctx.scope else {}
        given: list[tuple[str, ast.expr]] = []
        for index, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                break
            if index < len(slots):
                given.append((slots[index], arg))
        given += [(k.arg, k.value) for k in call.keywords if k.arg in slots]
        nodes = dict(given)
        roles = []
        for slot, node in given:
            expr = build(node, AST, aliases)
            roles.append((slot, expr.role if isinstance(expr, Leaf) else None))
        for slot, role in misplaced_arguments(helper, roles):
            node = nodes[slot]
            span = self.source.span(node)
            message = RULES["KVI004"].message.format(
                text=one_line(self.source.segment(node)),
                role=f"a {role.value}",
                helper=helper,
                slot=slot,
            )
            self._add("KVI004", span, message, None)

    def _check_allocation(self, call: ast.Call, ctx: _Context) -> None:
        shape = allocation_shape(call)
        if shape is None or len(shape) != 2:
            return
        scope = ctx.scope
        steps = build(shape[0], AST, scope.aliases)
        if not (isinstance(steps, Leaf) and steps.role is Role.NUM_STEPS):
            return
        width_node = shape[1]
        width = build(width_node, AST, scope.aliases)
        # A kv_indices row is context-sized; other per-step buffers (kv_indptr,
        # masks) are another rule's business.
        target = self._targets.get(id(call))
        if not mentions_role(width, Role.MAX_CONTEXT_LEN) or (
            target is not None and "kv_indices" not in target
        ):
            return
        if _is_sized(width_node, width, scope):
            return
        span = self.source.span(width_node)
        text = one_line(self.source.segment(width_node))
        message = RULES["KVI003"].message.format(text=text)
        self._add("KVI003", span, message, self._unsafe_fix(width, span, ctx))

    def _unsafe_fix(self, width, span, ctx: _Context) -> Fix | None:
        """``count * max_context_len`` -> the helper with the class's topk."""
        if not isinstance(width, Product) or len(width.factors) != 2:
            return None
        mcl = [
            f for f in width.factors if getattr(f, "role", None) is Role.MAX_CONTEXT_LEN
        ]
        if len(mcl) != 1:
            return None
        (count,) = (f for f in width.factors if f is not mcl[0])
        if not isinstance(count, Leaf) or count.value is not None:
            return None
        scope = ctx.scope
        topk = ctx.class_topk or next(
            (n for n in scope.params if role_of_name(n) is Role.TOPK), None
        )
        count_text = self.source.segment(count.node)
        note = "the row grows by the topk factor"
        if count.role is Role.TOKENS:
            known = set(scope.params) | _assigned_names(scope.functions)
            seqs = next((n for n in SEQUENCE_COUNT_NAMES if n in known), None)
            if seqs is None:
                return None
            note = f"{count_text} is replaced by the sequence count {seqs} times topk"
            count_text = seqs
        if topk is None:
            return None
        content = render_helper_call(
            BUFFER_WIDTH, (count_text, topk, self.source.segment(mcl[0].node))
        )
        message = f"Size the row with `{content}` (changes the allocation: {note})"
        return Fix("unsafe", message, (self._edit(span, content),))

    # ---- output ----------------------------------------------------------

    def _edit(self, span: tuple[int, int], content: str) -> Edit:
        row, column = self.source.position(span[0])
        end_row, end_column = self.source.position(span[1])
        return Edit(content, row, column, end_row, end_column)

    def _add(self, code, span, message, fix) -> None:
        row, column = self.source.position(span[0])
        end_row, end_column = self.source.position(span[1])
        self.findings.append(
            Finding(self.path, row, column, end_row, end_column, code, message, fix)
        )


def _scope(
    node: ast.FunctionDef | ast.AsyncFunctionDef,
    outer: _Scope | None,
    rows: Sequence[int] | None,
) -> _Scope:
    scope = _Scope()
    if outer is not None:
        scope.params = list(outer.params)
        scope.aliases = dict(outer.aliases)
        scope.sized = set(outer.sized)
        scope.functions = list(outer.functions)
    scope.functions.append(node)
    args = node.args
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        scope.params.append(arg.arg)
    # An alias or a sized local is assigned on a row naming its role or helper, so
    # statements that mention nothing are not looked into.
    pending = deque(s for s in node.body if _mentions(rows, s))
    while pending:
        statement = pending.popleft()
        for child in ast.iter_child_nodes(statement):
            if isinstance(child, (ast.stmt, ast.excepthandler)) and _mentions(
                rows, child
            ):
                pending.append(child)
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            continue
        target = statement.targets[0]
        if not isinstance(target, ast.Name):
            continue
        value = build(statement.value, AST, scope.aliases)
        # `k = self.topk` makes `k` a topk; a name with its own role keeps it.
        if (
            isinstance(value, Leaf)
            and value.role is not None
            and role_of_name(target.id) is None
        ):
            scope.aliases[target.id] = value.role
        if _is_sized(statement.value, value, scope):
            scope.sized.add(target.id)
    return scope


def _assigned_names(functions: Sequence[ast.AST]) -> set[str]:
    """Local names of these functions (only needed for a rare unsafe fix)."""
    return {
        target.id
        for function in functions
        for sub in ast.walk(function)
        if isinstance(sub, ast.Assign)
        for target in sub.targets
        if isinstance(target, ast.Name)
    }


def _is_sized(node: ast.expr, width, scope: _Scope) -> bool:
    if isinstance(node, ast.Call) and AST.name(node.func) == BUFFER_WIDTH:
        return True
    if isinstance(node, ast.Name) and node.id in scope.sized:
        return True
    return has_topk_factor(width)
