"""Is a per-step row at least ``num_seqs * topk * context`` on every path?

KVI003's judgement, kept with the width analysis it reads: each allocation of a
draft backend is read as rows, one per path
(:mod:`lint_plugin.engine.flow.per_step_rows`);
a row is ``sized`` when it is at least the goal for all positive sizes
(:func:`lint_plugin.engine.flow.bounds.proves`), ``unsized`` when a binding shows
it smaller (:func:`lint_plugin.engine.flow.bounds.find_witness`), and ``not judged``
otherwise. The rule (``rules/kvi003_unsized_draft_buffer.py``) reports from these
verdicts, and ``check --explain`` shows them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from lint_plugin.algebra import symbolic
from lint_plugin.algebra.symbolic import Const, Expr, Op, holds
from lint_plugin.contracts import DRAFT_KV_INDICES, Contract
from lint_plugin.engine.facts import Allocation, ModuleFacts
from lint_plugin.engine.flow.bounds import evaluable, find_witness, proves, values_of
from lint_plugin.engine.flow.dataflow import literal_order
from lint_plugin.engine.flow.per_step_rows import InnerCalls, Row, allocation_rows
from lint_plugin.engine.flow.widths import Analysis
from lint_plugin.engine.formulas import BUFFER_WIDTH
from lint_plugin.engine.source import one_line
from lint_plugin.records import field, record
from lint_plugin.roles import CONTEXT_ROLES, Role, other_buffer_of


@record
class PathVerdict:
    """One path of an allocation: its row width and what it is.

    ``verdict`` is ``sized`` (a proof that the row is at least
    ``num_seqs * topk * context`` for all positive sizes), ``unsized`` (a
    binding where it is less: ``witness``), or ``not judged`` (``reason``)."""

    row: Row
    verdict: str
    goal: Expr | None = None
    witness: dict | None = None
    reason: str = ""
    conditions: list = field(default_factory=list)  # (text, polarity) shown


@record
class Judgement:
    allocation: Allocation
    paths: list
    # The token counts the size names, as spelt, where a contract's phase
    # took them to be something (buffer_sizing): what a message says.
    tokens: tuple = ()

    @property
    def unsized(self) -> list[PathVerdict]:
        return [p for p in self.paths if p.verdict == UNSIZED]

    @property
    def verdict(self) -> str:
        kinds = {p.verdict for p in self.paths}
        for kind in (UNSIZED, NOT_JUDGED, SIZED):
            if kind in kinds:
                return kind
        return NOT_JUDGED


SIZED, UNSIZED, NOT_JUDGED = "sized", "unsized", "not judged"


def judgements(facts: ModuleFacts, analysis: Analysis) -> list[Judgement]:
    """Every kv_indices row allocation of the file's draft backends, judged:
    those written in them, and those a call of a function or method of the
    file makes with the values the call gives."""
    found = []
    inner = None
    for cls in facts.classes:
        if not cls.is_draft_backend:
            continue
        inner = inner or InnerCalls(analysis, facts)
        for allocation in (*cls.allocations, *cls.calls):
            judgement = judge_in_class(cls, allocation, analysis, inner)
            if judgement is not None:
                found.append(judgement)
    return found


def judge_in_class(cls, allocation: Allocation, analysis, inner) -> Judgement | None:
    """``judge`` of an allocation of ``cls`` (its ``ClassFacts``), sized by the
    class's own topk."""
    return judge(
        allocation,
        analysis,
        f"self.{cls.topk_attr}" if cls.topk_attr else "topk",
        inner,
        none_runs_no_draft=cls.keeps_one_topk,
    )


def judge(
    allocation: Allocation,
    analysis,
    topk_text: str = "topk",
    inner=None,
    *,
    none_runs_no_draft: bool = False,
) -> Judgement | None:
    """None when the allocation is no kv_indices row: not per step, another
    per-step buffer (by its name), or no path of its width holds a context
    size. A row none of whose paths names one, but one that cannot be
    evaluated, assigned to a ``kv_indices`` name, is not judged.
    ``none_runs_no_draft``: ``topk_text`` is the backend's only topk, and a
    path that takes it to be None runs no draft step (not judged)."""
    if allocation.target and other_buffer_of(allocation.target):
        return None
    rows = allocation_rows(analysis, allocation.function, allocation.call, inner)
    if rows is None:
        return None
    rows = with_contexts(rows)
    if not any(contexts_of(r.width) for r in rows):
        opaque = [r for r in rows if not evaluable(r.width)]
        if not opaque or "kv_indices" not in (allocation.target or ""):
            return None
        texts = sorted(
            {s.text for r in opaque for s in symbolic.symbols(r.width) if s.opaque}
        )
        reason = f"no context size on any path, and `{texts[0]}` cannot be evaluated"
        paths = [PathVerdict(r, NOT_JUDGED, reason=reason) for r in opaque[:1]]
        return Judgement(allocation, paths)
    groups = group_rows(rows)
    own_topk = topk_text if none_runs_no_draft else None
    return judge_paths(
        allocation, groups, analysis, lambda w: _goals(w, topk_text), own_topk
    )


def judge_paths(
    allocation: Allocation,
    groups: dict[tuple, list[Row]],
    analysis,
    goals_of,
    own_topk: str | None = None,
) -> Judgement | None:
    """Each group of paths (one width from the same definitions) judged against
    ``goals_of(width)``: ``(goals, goal, reason)``, the least sizes the width
    must reach (one per context size), the least of them, and why there is no
    goal when there is none. Shared by every sizing contract."""
    paths = [
        p
        for p in (
            _judge_group(g, analysis, goals_of, own_topk) for g in groups.values()
        )
        if p is not None
    ]
    if not paths:
        return None
    # One order whatever tree the nodes came from (a region's, the whole file's):
    # the message names the first unsized path.
    paths.sort(key=_path_order)
    return Judgement(allocation, paths)


def group_rows(rows: list[Row]) -> dict[tuple, list[Row]]:
    """Paths to the same width from the same definitions differ only in the
    branches they took: judged once, as one path, under each set of conditions."""
    groups: dict[tuple, list[Row]] = {}
    for row in rows:
        key = (row.width, row.rows, id(row.site and row.site[0]), row.how)
        groups.setdefault(key, []).append(row)
    return groups


def with_contexts(rows: list[Row]) -> list[Row]:
    """The rows of the allocations some path of which holds a context size:
    a call of a function of the file may make several buffers (``origin``),
    and one whose rows hold none (a ``(steps, max_bs + 1)`` buffer) is no
    kv_indices row, as it is not where it is written. All of them where none
    does (the caller decides what that is)."""
    origins: dict[int, list[Row]] = {}
    for row in rows:
        origins.setdefault(id(row.origin), []).append(row)
    if len(origins) == 1:
        return rows
    kept = [
        row
        for group in origins.values()
        if any(contexts_of(r.width) for r in group)
        for row in group
    ]
    return kept or rows


def _path_order(path: PathVerdict) -> tuple:
    return (
        path.row.rows,
        symbolic.render(path.row.width),
        sorted(path.conditions),
        path.verdict,
    )


def contexts_of(width: Expr) -> list[Expr]:
    """The context sizes a width is made of: context-sized symbols, and what a
    call of the width helper was given as its ``max_context_len``."""
    found: list[Expr] = []
    for sym in symbolic.symbols(width):
        if sym.role in CONTEXT_ROLES and sym not in found:
            found.append(sym)
    stack = [width]
    while stack:
        node = stack.pop()
        if isinstance(node, Op):
            if node.kind == "helper" and node.info == BUFFER_WIDTH:
                context = node.args[2]
                if context not in found and not any(
                    s.role in CONTEXT_ROLES for s in symbolic.symbols(context)
                ):
                    found.append(context)
            stack.extend(node.args)
    return found


def _judge_group(
    group: list[Row], analysis, goals_of, own_topk: str | None
) -> PathVerdict | None:
    """One width reached under one or more sets of branch conditions; None when
    no set can be taken (its conditions contradict, or no value satisfies them)."""
    width = group[0].width
    goals, goal, reason = goals_of(width)
    variants = [(row, _conditions(row, analysis, own_topk)) for row in group]
    variants = [(row, c) for row, c in variants if c is not None]
    if not variants:
        return None
    row, (_, shown) = variants[0]
    verdict = PathVerdict(row, NOT_JUDGED, goal, conditions=shown)
    if len(variants) > 1:
        verdict.conditions = []  # several sets of branches lead here
    if goal is None:
        verdict.reason = reason
        return verdict
    if proves(width, goals):
        verdict.verdict = SIZED
        return verdict
    opaque = sorted({s.text for s in symbolic.symbols(width) if s.opaque})
    undecided = False
    taken = False
    for row, (conds, shown) in variants:
        if conds and _proven(width, goals, conds):
            taken = True  # sized wherever it is taken
            continue
        if opaque:
            undecided = taken = True
            continue
        witness = find_witness(width, goal, conds)
        if witness is not None:
            return PathVerdict(row, UNSIZED, goal, witness, conditions=shown)
        if _satisfiable(width, goal, conds):
            undecided = taken = True
    if not taken:
        return None  # no binding takes any of these paths
    if undecided:
        verdict.reason = (
            f"`{opaque[0]}` cannot be evaluated"
            if opaque
            else "neither a proof that it is large enough nor a case where it is not"
        )
        return verdict
    verdict.verdict = SIZED
    return verdict


def _goals(width: Expr, topk_text: str):
    """``(goals, goal, reason)``: what the row must hold, as one polynomial per
    context size it is made of and as the least of them; no goal and the reason
    when the width names no sequence count but may hold one in disguise (a
    draft-token count too: in draft decode nothing says what it is)."""
    syms = list(symbolic.symbols(width))
    topk = next((s for s in syms if s.role is Role.TOPK), None) or symbolic.role_symbol(
        Role.TOPK, topk_text
    )
    return contract_goals(
        DRAFT_KV_INDICES, width, {"topk": topk}, free=(Role.NUM_DRAFT_TOKENS,)
    )


def contract_goals(
    contract: Contract,
    width: Expr,
    sizes: dict[str, Expr],
    free: tuple[Role, ...] = (),
):
    """``(goals, goal, reason)`` of ``contract``'s least size for ``width``: its
    formula over the width's own sequence count and context sizes, ``sizes``
    for its other names (the topk, the draft-token count); one goal per context
    size and the least of them. No goal when the width names no sequence count
    but may hold one: a name of no role (or of a role in ``free``), something
    that cannot be evaluated."""
    syms = list(symbolic.symbols(width))
    lengths = next((s for s in syms if s.role is Role.SEQ_LENS_SUM), None)
    contexts = contexts_of(width) or [
        symbolic.role_symbol(Role.MAX_CONTEXT_LEN, "max_context_len")
    ]
    count = next((s for s in syms if s.role is Role.NUM_SEQS), None)
    if count is None:
        opaque = sorted({s.text for s in syms if s.opaque})
        if opaque:
            return [], None, f"`{opaque[0]}` cannot be evaluated"
        unknown = sorted({s.text for s in syms if s.role is None or s.role in free})
        if unknown:
            return (
                [],
                None,
                f"no sequence count in the width, and `{unknown[0]}` may be one",
            )
        count = symbolic.role_symbol(Role.NUM_SEQS, "num_seqs")
    if lengths is not None and contract.exact is not None:
        # Allocated per batch from its lengths' sum: what that batch writes.
        exact = least_size(
            contract.exact, {**sizes, "num_seqs": count, "seq_lens_sum": lengths}
        )
        return [exact], exact, ""
    goals = [
        least_size(contract.least, {**sizes, "num_seqs": count, "context": c})
        for c in contexts
    ]
    if len(goals) == 1:
        return goals, goals[0], ""
    least = Op("min", tuple(contexts))
    return (
        goals,
        least_size(contract.least, {**sizes, "num_seqs": count, "context": least}),
        "",
    )


def least_size(formula: str, sizes: dict[str, Expr]) -> Expr:
    """A contract's formula (names, integers, ``+``, ``*``, parentheses: our
    own text, never a file's) with each name's value from ``sizes``."""
    import ast

    def value(node) -> Expr:
        if isinstance(node, ast.Name):
            return sizes[node.id]
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return Const(node.value)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return symbolic.add(value(node.left), value(node.right))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            return symbolic.mul(value(node.left), value(node.right))
        raise ValueError(f"not a contract formula: {formula!r}")

    return value(ast.parse(formula, mode="eval").body)


def _satisfiable(width, goal, conds) -> bool:
    """Do some small positive values take the path (a few hundred tried)?"""
    if not conds:
        return True
    for binding in itertools.islice(_sample(width, goal, conds), 300):
        try:
            if all(holds(c, binding) == want for c, want in conds):
                return True
        except symbolic.Undefined:
            continue
    return False


def _sample(width, goal, conds):
    from lint_plugin.engine.flow.bounds import bindings

    keys = sorted(
        {
            s.key
            for e in (width, goal, *(c for c, _ in conds))
            for s in symbolic.symbols(e)
        }
    )
    yield from bindings(keys)


def _conditions(row: Row, analysis, own_topk: str | None = None):
    """``(evaluable conditions, shown conditions)`` of a path, or None when its
    conditions contradict each other (``flag`` and ``not flag``, an opaque test
    taken both ways, ``a and b`` with ``not a``), or take ``own_topk`` (the
    backend's only topk) to be None: SGLang's topk is None only without
    speculation, where no draft step runs, so such a path is not judged."""
    evaluable_conds = []
    shown = []
    tests = []  # every condition, as a formula of its tests (for consistency)
    for cond in sorted(row.conds, key=literal_order):
        expr, positive = analysis.condition(cond)
        if expr is None:
            tests.append((("opaque", cond[0], id(cond[1]), id(cond[3])), positive))
            continue
        tests.append((expr, positive))
        for part, holds_so in _conjuncts(expr, positive):
            text = symbolic.render(part)
            if own_topk is not None:
                part = _not_none(part, own_topk)
            if _evaluable_condition(part):
                if (part, holds_so) not in evaluable_conds:
                    evaluable_conds.append((part, holds_so))
                    shown.append((text, holds_so))
            elif (text, holds_so) not in shown:
                shown.append((text, holds_so))
    if not _consistent(tests) or _never_taken(evaluable_conds):
        return None
    return evaluable_conds, shown


def _not_none(expr: Expr, topk_text: str) -> Expr:
    """``expr`` with each test of the topk spelt ``topk_text`` for None false."""
    false = {t: Const(0) for t in symbolic.none_tests(expr) if t.info == topk_text}
    return symbolic.replace(expr, false) if false else expr


def _conjuncts(expr: Expr, positive: bool) -> list[tuple[Expr, bool]]:
    """The conditions that each hold where ``expr`` is ``positive``: ``a and
    flag`` taken pins ``a`` though ``flag`` is free (``case 1 if flag:``), as
    ``a or flag`` not taken does."""
    if isinstance(expr, Op):
        if expr.kind == "not":
            return _conjuncts(expr.args[0], not positive)
        if (expr.kind == "and" and positive) or (expr.kind == "bor" and not positive):
            return [c for a in expr.args for c in _conjuncts(a, positive)]
    return [(expr, positive)]


_MAX_ATOMS = 12  # tests of one path tried every way (4,096 at most)


def _consistent(tests: list) -> bool:
    """Can every condition hold at once, each test (a comparison, a flag, an
    opaque test) free to go either way? Past ``_MAX_ATOMS`` tests only a test
    taken both ways is a contradiction. Comparisons are decided again by the
    values (``_satisfiable``): here they are atoms like the rest."""
    atoms: list = []
    for formula, _ in tests:
        for atom in _atoms(formula):
            if atom not in atoms:
                atoms.append(atom)
    if len(atoms) > _MAX_ATOMS:
        seen: dict = {}
        for formula, positive in tests:
            while isinstance(formula, Op) and formula.kind == "not":
                formula, positive = formula.args[0], not positive
            if seen.setdefault(formula, positive) != positive:
                return False
        return True
    for values in itertools.product((False, True), repeat=len(atoms)):
        truth = dict(zip(atoms, values, strict=True))
        if all(holds(f, {}, truth.__getitem__) == positive for f, positive in tests):
            return True
    return False


def _atoms(formula) -> Iterator:
    if isinstance(formula, Op) and formula.kind in ("not", "and", "bor"):
        for arg in formula.args:
            yield from _atoms(arg)
    else:
        yield formula


def _evaluable_condition(expr: Expr) -> bool:
    """Decided by the symbols' values: comparisons of known values. A truth test
    of a name of no role (a flag) is an atom, free to be either way."""
    if not evaluable(expr):
        return False
    if isinstance(expr, Op) and expr.kind in ("not", "and", "bor"):
        return all(_evaluable_condition(a) for a in expr.args)
    if isinstance(expr, Op) and expr.kind == "truth":
        return all(s.role is not None for s in symbolic.symbols(expr))
    return True


def _proven(width: Expr, goals: list[Expr], conds) -> bool:
    """A proof, by cases over the values the path's conditions pin a symbol
    to (``if self.topk == 1:`` on this path: topk is 1)."""
    pins = _pins(conds)
    if not pins:
        return proves(width, goals)
    keys = sorted(pins)
    for values in itertools.product(*(pins[k] for k in keys)):
        replaced = {
            symbolic.Sym(k, k): Const(v) for k, v in zip(keys, values, strict=True)
        }
        if not proves(
            symbolic.replace(width, replaced),
            [symbolic.replace(g, replaced) for g in goals],
        ):
            return False
    return True


def _pins(conds) -> dict[str, list[int]]:
    """Symbols a path's conditions allow only a few values of."""
    single: dict[str, list] = {}
    for expr, positive in conds:
        keys = {s.key for s in symbolic.symbols(expr)}
        if len(keys) == 1:
            single.setdefault(keys.pop(), []).append((expr, positive))
    pins = {}
    for key, tests in single.items():
        allowed = []
        for value in range(1, 18):
            try:
                if all(holds(e, {key: value}) == want for e, want in tests):
                    allowed.append(value)
            except symbolic.Undefined:
                break
        else:
            if 17 not in allowed and len(allowed) <= 4:
                pins[key] = allowed
    return pins


def describe_path(path: PathVerdict, source) -> str:
    """``w`` (= ``max_bs * self.max_context_len``, row 12), as the message says it."""
    row = path.row
    if row.made_by is not None and row.shown is row.made_by:
        # No argument is the width: the value it has, and what made it.
        callee = one_line(source.segment(row.made_by.func))
        rows = ", ".join(map(str, row.rows))
        through = f", through row{'s' if len(row.rows) > 1 else ''} {rows}"
        return (
            f"`{symbolic.render(row.width)}` (made by `{callee}(...)`"
            f"{through if row.rows else ''})"
        )
    text = f"`{one_line(source.segment(row.shown))}`"
    if row.site is not None:
        node, scope = row.site
        made = one_line(scope.source.segment(node))
        if f"`{made}`" != text:
            where = getattr(node, "lineno", 0) + scope.source.row_offset
            text += f" (= `{made}`, row {where})"
    elif row.rows:
        rows = ", ".join(map(str, row.rows))
        plural = "s" if len(row.rows) > 1 else ""
        text += f" (= `{symbolic.render(row.width)}` through row{plural} {rows})"
    return text


def describe_witness(path: PathVerdict, witness: dict | None = None) -> str:
    """``max_bs=1, self.topk=2, ... gives 1 < 2``: the path's own binding, or
    ``witness`` (one that a :class:`Reading` found reachable)."""
    witness = (path.witness if witness is None else witness) or {}
    syms = _goal_symbols(path.goal) + list(symbolic.symbols(path.row.width))
    shown = ", ".join(f"{t}={v}" for t, v in values_of(witness, syms))
    value = symbolic.evaluate(path.row.width, witness)
    need = symbolic.evaluate(path.goal, witness)
    return f"{shown} gives {value} < {need}"


def _goal_symbols(goal: Expr) -> list:
    """The goal's symbols in its order: count, topk, context."""
    if isinstance(goal, Op) and goal.kind == "*":
        return [s for a in goal.args for s in symbolic.symbols(a)]
    return list(symbolic.symbols(goal))


@record
class Reading:
    """What a message may truly say of an unsized path, given what the class
    allows and what its callers pass.

    The path's counterexample may need what no instance has: a topk above one
    in a class whose ``__init__`` refuses it (``refused``), or a token count
    below ``num_seqs * topk`` where SGLang's draft graph runner passes
    ``max_num_tokens = max_bs * topk`` (the premise the proof harness makes).
    ``fits``: the row holds the goal under ``refused`` and, for each token
    count in ``tokens``, that premise; ``witness``: otherwise a binding where
    it does not, reachable under them too (None when neither is found)."""

    path: PathVerdict
    fits: bool = False
    witness: dict | None = None
    refused: bool = False
    tokens: tuple = ()


_TOPK = symbolic.role_symbol(Role.TOPK, "topk")


def read_unsized(
    path: PathVerdict, analysis, topk_text: str, refused: bool, own_topk=None
) -> Reading:
    """``path`` (unsized) read under the least of the class's refusal of
    ``topk > 1`` (``refused``) and the token-count premise that makes it fit;
    its own counterexample where neither applies."""
    width = path.row.width
    tokens = [s for s in symbolic.symbols(width) if s.role is Role.TOKENS]
    if not refused and not tokens:
        return Reading(path, witness=path.witness)
    goals, goal, _ = _goals(width, topk_text)
    if goal is None:
        return Reading(path, witness=path.witness)
    found = _conditions(path.row, analysis, own_topk)
    conds = found[0] if found else []
    count = next((s for s in symbolic.symbols(goal) if s.role is Role.NUM_SEQS), None)
    texts = tuple(dict.fromkeys(s.text for s in tokens))
    premise = bool(tokens) and count is not None
    # Each alone: with topk 1 a token count already covers the sequences
    # (bounds' tokens >= count), so both together prove nothing more.
    for use_refusal, use_premise in ((refused, False), (False, premise)):
        if not (use_refusal or use_premise):
            continue
        subs = _assumed(tokens if use_premise else [], count, use_refusal)
        mine = symbolic.replace(width, subs)
        theirs = [symbolic.replace(g, subs) for g in goals]
        pinned = [(symbolic.replace(c, subs), want) for c, want in conds]
        if (
            _never_taken(pinned)
            or proves(mine, theirs)
            or (pinned and _proven(mine, theirs, pinned))
        ):
            return Reading(path, True, None, use_refusal, texts if use_premise else ())
    if not (refused or premise):
        return Reading(path, witness=path.witness)
    # The counterexample an instance can reach: under all that holds at once.
    subs = _assumed(tokens if premise else [], count, refused)
    pinned = [(symbolic.replace(c, subs), want) for c, want in conds]
    witness = find_witness(
        symbolic.replace(width, subs), symbolic.replace(goal, subs), pinned
    )
    if witness is not None:
        # Shown with every symbol the message names, the assumed ones too.
        witness = dict(witness)
        if refused:
            witness[_TOPK.key] = 1
        for sym in tokens if premise else []:
            witness[sym.key] = symbolic.evaluate(subs[sym], witness)
    return Reading(path, False, witness, refused, texts if premise else ())


def _never_taken(conds) -> bool:
    """Does a condition the assumptions made constant fail (a path under
    ``if self.topk > 1:`` in a class refusing that)?"""
    for expr, want in conds:
        if not any(symbolic.symbols(expr)):
            try:
                if holds(expr, {}) != want:
                    return True
            except symbolic.Undefined:
                continue
    return False


def _assumed(tokens: list, count, refused: bool) -> dict:
    """Each token count as ``count * topk``, the topk 1 where it is refused."""
    topk = Const(1) if refused else _TOPK
    subs = {sym: symbolic.mul(count, topk) for sym in tokens}
    if refused:
        subs[_TOPK] = topk
    return subs
