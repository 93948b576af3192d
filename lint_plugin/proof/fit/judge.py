"""The helpers proven against the kernel's own source, for every size.

For each *branch* of the kernel (the launch-level conditions a path took:
``page_size == 1 or topk == 1``, ``window_size > 0``, ``NUM_STEPS == 0``), from
the stores :mod:`.extent` derived:

1. **The program's extent.** One store's bound ``E_s(b, t, i)`` dominates every
   other store of the branch (``E_s* - E_s >= 0`` proven for all sizes, using the
   other store's own path conditions), so a program ``(b, t)`` of row ``i`` writes
   nothing past ``E(b, t) = E_s*``. ``E`` may depend on the sequence's own length
   ``L_b``, the prefix sums ``S_f(b) = sum_{j<b} f(L_j)`` (one per ``f`` the kernel
   sums: ``L``, ``min(L, window + sink)``), ``b``, ``t``, ``i``, the counts and the
   scalar arguments, and on nothing else (not on a token block).
2. **The maximum over programs, for any number of sequences.** Two differences are
   proven nonnegative, for all values of every symbol:
   ``E(b, t+1) - E(b, t)`` for ``t + 1 <= topk - 1``, and
   ``E(b+1, topk-1) - E(b, topk-1)`` for ``b + 1 <= num_seqs - 1``, where the next
   sequence's ``S_f(b+1) = S_f(b) + f(L_b)`` and its own length ``L_{b+1}`` is a new,
   unconstrained symbol. By induction every program's extent is at most
   ``E(num_seqs-1, topk-1)``: the row's extent is ``R = E(num_seqs-1, topk-1) + 1``.
   Since ``S_f(num_seqs-1) = T_f - f(L_last)`` with ``T_f = sum_j f(L_j)``, ``R``
   is written in the totals; it must then be *sum-shaped*,
   ``R = sum_f alpha_f*T_f + beta*num_seqs + gamma`` with ``alpha``, ``beta``,
   ``gamma`` free of every per-sequence symbol and of ``num_seqs``, i.e.
   ``R = sum_j r(L_j) + gamma`` with ``r(L) = sum_f alpha_f*f(L) + beta``.
3. **The helpers, per sequence.** ``draft_kv_indices_used_len(seq_lens_sum, topk,
   num_seqs*topk, i+1) = sum_j u(L_j)`` with ``u(L) = topk*L + topk*(i+1)``, and
   ``draft_kv_indices_buffer_width(num_seqs, topk, max_context_len) = sum_j
   topk*max_context_len``. A sum is bounded termwise, so for every ``num_seqs``
   and every list of lengths:

   - no window: ``R == used_len`` iff ``r(L) - u(L)`` is identically 0 and
     ``gamma == 0`` (and the dominant store really writes ``E`` at the last program:
     its lane ``min(M, N) - 1`` satisfies the mask whenever ``M >= 1``, and its
     path conditions hold there; otherwise only ``<=`` is proven);
   - a window: ``R <= used_len`` from ``u(L) - r(L) >= 0`` and ``gamma <= 0``;
   - ``R <= width`` from ``topk*max_context_len - r(L) >= 0`` for every
     ``L + num_steps <= max_context_len`` and ``0 <= i <= num_steps - 1``, and
     ``gamma <= 0``: the *contract* (upstream's premise);
   - the same at the *wall* (:mod:`lint_plugin.envelope`): for every ``L <=
     max_context_len - 1``, the lengths SGLang really admits while drafting.

   The fit condition itself is printed: ``r(L)`` at the last row ``i = num_steps
   - 1`` against ``topk*max_context_len``, a common positive factor divided out
   (``seq_len + num_steps <= max_context_len`` for upstream's kernels).

Each ``>= 0`` is :func:`.positivity.nonneg`: a certificate or nothing. When a step
is not proven, the launches of a small exhaustive search (every branch's scalar
values, 1-3 sequences, topk 1-4, 1-5 steps, lengths at and below the limit) are
evaluated exactly on the derived model (:mod:`.concrete`), and the first that breaks
a claim is its counterexample; with none, the claim is "not proven" and the grid's
overrun check is what stands. A kernel whose stores the derivation could not follow
is "not derived", with the lines.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import sympy as sp

from lint_plugin import envelope

from ..triton_source import KernelSource
from . import extent as ex
from .concrete import CONTEXT_ARGS, Sizes, launch_values, row_extents
from .numeric import NotEvaluable, evaluate
from .positivity import contradictory, decide, nonneg, strengthen, symbol
from .store_bound import Bound, bound

CONTRACT, WALL = envelope.CONTRACT, envelope.WALL
USED = "draft_kv_indices_used_len(seq_lens_sum, topk, num_seqs*topk, i + 1)"
WIDTH = "draft_kv_indices_buffer_width(num_seqs, topk, max_context_len)"
MAX_CONTEXT = symbol("max_context_len")
NEXT_SEQ_LEN = symbol("seq_len_next")
PROVEN, REFUTED, NOT_PROVEN = "proven", "refuted", "not proven"
SEARCH_CASES = 1200  # launches, at most (about 10 ms each on this machine)


@dataclass(frozen=True)
class Counterexample:
    sizes: Sizes
    row: int
    writes: int  # entries the row gets (its largest offset + 1)
    limit: int  # what the helper gives the row

    def describe(self, relation: str) -> str:
        return (
            f"{self.sizes.describe()}: row {self.row} writes {self.writes} entries, "
            f"{relation} {self.limit}"
        )


@dataclass(frozen=True)
class Claim:
    # "=", "<=" (against used_len), "fits" (against the width, in the contract)
    # or "wall" (against the width, at the context wall).
    name: str
    status: str
    why: str = ""
    counterexample: Counterexample | None = None


@dataclass
class Branch:
    conds: tuple[sp.Basic, ...]  # in the proof's vocabulary (row i, num_steps)
    label: str
    raw_conds: tuple[sp.Basic, ...] = ()  # as the derivation took them
    extent: sp.Expr | None = None  # the row's extent, in the totals
    per_program: sp.Expr | None = None
    windowed: bool = False
    claims: list[Claim] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    totals: dict[sp.Symbol, sp.Expr] = field(default_factory=dict)
    renaming: dict[sp.Symbol, sp.Symbol] = field(default_factory=dict)
    exact: bool = False  # the extent is written (not only an upper bound)
    # Per request, when its widest row fits the width, and which row that is.
    condition: tuple[str, str] | None = None

    @property
    def failed(self) -> list[Claim]:
        return [c for c in self.claims if c.status != PROVEN]


FITS, DOES_NOT_FIT = "fits for all sizes", "DOES NOT FIT"
DOES_NOT_FIT_AT_WALL = "DOES NOT FIT at the context wall"


@dataclass
class KernelFit:
    derivation: ex.Derivation
    branches: list[Branch]
    seconds: float
    envelope: str = WALL  # what the verdict judges: WALL or CONTRACT

    def verdict_under(self, judged: str) -> str:
        """The verdict in the envelope ``judged``: a refutation of the contract
        first (the kernel overruns even where upstream's premise holds), then one
        at the wall, then what is not proven."""
        if self.derivation.not_followed() or any(
            b.extent is None and not b.failed for b in self.branches
        ):
            return "not derived"
        names = {"=", "<=", "fits"} | ({"wall"} if judged == WALL else set())
        claims = [c for b in self.branches for c in b.claims if c.name in names]
        if any(c.status == REFUTED and c.name != "wall" for c in claims):
            return DOES_NOT_FIT
        if any(c.status == REFUTED for c in claims):
            return DOES_NOT_FIT_AT_WALL
        if any(c.status == NOT_PROVEN for c in claims) or not claims:
            return "not proven"
        return FITS

    @property
    def verdict(self) -> str:
        return self.verdict_under(self.envelope)

    @property
    def fits(self) -> bool:
        return self.verdict == FITS

    @property
    def refuted(self) -> bool:
        """A counterexample in the judged envelope."""
        return self.verdict in (DOES_NOT_FIT, DOES_NOT_FIT_AT_WALL)

    @property
    def contract_refuted(self) -> bool:
        """A counterexample even where upstream's premise holds."""
        return self.verdict_under(CONTRACT) == DOES_NOT_FIT

    def counterexamples(self) -> list[tuple[Branch, Claim]]:
        return [(b, c) for b in self.branches for c in b.claims if c.counterexample]

    def branch_for(self, sizes: Sizes) -> Branch | None:
        """The branch a launch of ``sizes`` takes."""
        values = launch_values(self.derivation, sizes).values
        for branch in self.branches:
            try:
                if all(bool(evaluate(c, values)) for c in branch.raw_conds):
                    return branch
            except NotEvaluable:
                continue
        return None

    def extent_at(self, sizes: Sizes) -> list[int] | None:
        """The symbolic row extent evaluated for ``sizes``, per row (None when the
        branch it takes has no closed form)."""
        branch = self.branch_for(sizes)
        if branch is None or branch.extent is None:
            return None
        values = launch_values(self.derivation, sizes).values
        env = {branch.renaming.get(k, k): v for k, v in values.items()}
        env.update({ex.NUM_SEQS: sizes.num_seqs, ex.TOPK: sizes.topk})
        env[ex.NUM_STEPS] = sizes.num_steps
        lens = sizes.seq_lens
        for total, f in branch.totals.items():
            env[total] = sum(int(evaluate(f, {**env, ex.SEQ_LEN_J: n})) for n in lens)
        return [
            int(evaluate(branch.extent, {**env, ex.ROW: row}))
            for row in range(sizes.num_steps)
        ]


def prove_kernel(source: KernelSource, judged: str = WALL) -> KernelFit:
    """:func:`prove_fit` on a located kernel (:func:`.locate.locate_kernel`, or
    ``--kernel``): the very source the harness jits."""
    return prove_fit(source.text, source.name, source.path, judged)


def prove_fit(
    text: str,
    function: str = ex.KERNEL,
    filename: str = "<kernel>",
    judged: str = WALL,
) -> KernelFit:
    """Derive the kernel's write extent and prove (or refute) the helpers on it,
    in both envelopes; the verdict reads the one ``judged``."""
    start = time.perf_counter()
    derivation = ex.derive(text, function, filename)
    branches = []
    if not derivation.not_followed():
        for conds, stores in _branches(derivation):
            branches.append(_prove_branch(derivation, conds, stores))
        _search(derivation, branches, CONTRACT)
        _search(derivation, branches, WALL)
    return KernelFit(derivation, branches, time.perf_counter() - start, judged)


def _is_launch(cond: sp.Basic, derivation: ex.Derivation) -> bool:
    return bool(cond.free_symbols) and cond.free_symbols <= derivation.launch_symbols


def _branches(derivation: ex.Derivation) -> Iterator[tuple[tuple, list[ex.Store]]]:
    groups: dict[tuple, dict[int, ex.Store]] = {}
    for leaf in derivation.leaves:
        key = tuple(
            sorted({c for c in leaf.conds if _is_launch(c, derivation)}, key=sp.srepr)
        )
        found = groups.setdefault(key, {})
        for store in leaf.stores:
            found.setdefault(id(store), store)
    # A path that returned early took fewer conditions: it belongs to every branch
    # that extends them (its programs run in those launches too).
    keys = [k for k in groups if not any(set(k) < set(o) for o in groups)]
    for key in keys:
        stores: dict[int, ex.Store] = {}
        for other, found in groups.items():
            if set(other) <= set(key):
                stores.update(found)
        if stores:
            yield key, list(stores.values())


def _label(conds: tuple) -> str:
    return " and ".join(_show(c) for c in conds) or "every launch"


def _show(expr: sp.Basic) -> str:
    text = str(expr)
    for old, new in (("~", "not "), ("&", "and"), ("|", "or"), ("Eq(", "==(")):
        text = text.replace(old, new)
    return _eq_infix(text)


def _eq_infix(text: str) -> str:
    # ==(a, b) -> a == b; Ne(a, b) -> a != b (sympy prints both as calls).
    for call, op in (("==(", "=="), ("Ne(", "!=")):
        while call in text:
            start = text.index(call)
            depth, i = 0, start + len(call)
            while i < len(text):
                if text[i] == "(":
                    depth += 1
                elif text[i] == ")":
                    if depth == 0:
                        break
                    depth -= 1
                i += 1
            inner = text[start + len(call) : i]
            a, b = _split_args(inner)
            text = f"{text[:start]}{a} {op} {b}{text[i + 1 :]}"
    return text


def _split_args(inner: str) -> tuple[str, str]:
    depth = 0
    for i, ch in enumerate(inner):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            return inner[:i].strip(), inner[i + 1 :].strip()
    return inner, ""


def resolve(expr: sp.Basic, facts: list) -> sp.Basic:
    """``Min``/``Max`` whose argument the facts order, replaced by it; the terms
    all arguments share, moved out (``Min(a + c, b + c) = c + Min(a, b)``)."""
    if not isinstance(expr, sp.Basic) or expr.is_Atom:
        return expr
    args = [resolve(a, facts) for a in expr.args]
    if isinstance(expr, sp.Min | sp.Max):
        sign = 1 if isinstance(expr, sp.Min) else -1
        for a in args:
            if all(nonneg(sign * (o - a), facts) for o in args if o is not a):
                return a
        expanded = [sp.expand(a) for a in args]
        terms = [a.as_coefficients_dict() for a in expanded]
        common = sum(
            (c * t for t, c in terms[0].items() if all(d.get(t) == c for d in terms)),
            sp.Integer(0),
        )
        return common + expr.func(*(sp.expand(a - common) for a in expanded))
    return expr.func(*args) if args != list(expr.args) else expr


def _prove_branch(
    derivation: ex.Derivation, conds: tuple, stores: list[ex.Store]
) -> Branch:
    branch = Branch(conds, _label(conds), raw_conds=conds)
    window = derivation.params.get("window_size")
    if window is not None:
        raw_facts = list(derivation.facts)
        for cond in conds:
            raw_facts += strengthen(cond, raw_facts)
        on = decide(sp.Ge(window, 1), raw_facts)
        branch.windowed = on is not False
        if on is None:
            branch.notes.append("the window is not decided by the branch")
    bounds = [bound(derivation, s) for s in stores]
    missing = [b for b in bounds if b.value is None]
    if missing:
        branch.notes += [f"line {b.store.line}: {b.why}" for b in missing]
        return _unproven(branch, "a store has no bound")
    rows = {b.row for b in bounds}
    if len(rows) != 1 or not rows <= {ex.PID0, ex.PID0_MOD}:
        branch.notes.append(f"rows written: {sorted(map(str, rows))}")
        return _unproven(branch, "the row is not a program id")
    (row,) = rows
    renaming = {ex.PID0: ex.ROW, ex.PROGRAMS0: ex.NUM_STEPS}
    if row == ex.PID0_MOD:
        renaming = {ex.PID0_MOD: ex.ROW, derivation.split: ex.NUM_STEPS}
    branch.renaming = renaming
    branch.conds = tuple(c.xreplace(renaming) for c in conds)
    branch.label = _label(branch.conds)
    facts = [f.xreplace(renaming) for f in derivation.facts]
    facts += [ex.NUM_STEPS - 1, ex.NUM_STEPS - 1 - ex.ROW]
    if "iter_upper" in derivation.params:
        facts.append(derivation.params["iter_upper"] - ex.NUM_STEPS)
    for cond in branch.conds:
        facts += strengthen(cond, facts)
    if contradictory(facts):
        # Facts no launch satisfies would make every claim vacuously true.
        branch.notes.append("its facts contradict each other")
        return _unproven(branch, "the branch's facts contradict each other")

    def own_facts(b: Bound) -> list:
        extra = []
        for cond in b.store.conds:
            extra += strengthen(cond.xreplace(renaming), facts)
        return facts + extra

    # The branch's equalities (topk == 1, NUM_STEPS == 0) hold throughout it.
    equal = {
        c.lhs: c.rhs
        for c in branch.conds
        if isinstance(c, sp.Eq) and c.lhs.is_Symbol and not c.rhs.free_symbols
    }
    values = [
        resolve(b.value.xreplace(renaming).xreplace(equal), own_facts(b))
        for b in bounds
    ]
    best = None
    for k, candidate in enumerate(values):
        if all(
            j == k or nonneg(candidate - v, own_facts(bounds[j]))
            for j, v in enumerate(values)
        ):
            best = k
            if bounds[k].attain is not None:
                break
    if best is None:
        return _unproven(branch, "no store's bound dominates the others")
    per_program = values[best]
    branch.per_program = per_program
    params = (p.xreplace(renaming) for p in derivation.params.values())
    allowed = {
        *(ex.ROW, ex.B, ex.T, ex.NUM_SEQS, ex.TOPK, ex.NUM_STEPS, ex.SEQ_LEN),
        *derivation.prefix_sums,
        *params,
    }
    if not per_program.free_symbols <= allowed:
        extra = per_program.free_symbols - allowed
        return _unproven(branch, f"the extent depends on {sorted(map(str, extra))}")
    last_t = {ex.T: (ex.TOPK - 1).xreplace(equal)}
    step_t = per_program.xreplace({ex.T: ex.T + 1}) - per_program
    if not nonneg(step_t, [*facts, ex.TOPK - 2 - ex.T]):
        return _unproven(branch, "not proven nondecreasing in the branch t")
    top = per_program.xreplace(last_t)
    advance = {ex.B: ex.B + 1, ex.SEQ_LEN: NEXT_SEQ_LEN}
    for sym, f in derivation.prefix_sums.items():
        advance[sym] = sym + f.xreplace({ex.SEQ_LEN_J: ex.SEQ_LEN})
    step_b = top.xreplace(advance) - top
    if not nonneg(step_b, [*facts, ex.NUM_SEQS - 2 - ex.B]):
        return _unproven(branch, "not proven nondecreasing in the sequence b")
    last_b = (ex.NUM_SEQS - 1).xreplace(equal)
    witness = {ex.B: last_b, **last_t, ex.BLK: 0}
    row_extent = top.xreplace({ex.B: last_b}) + 1
    totals = {}
    in_totals = {}
    for sym, f in derivation.prefix_sums.items():
        total = symbol(_total_name(f))
        totals[total] = f
        in_totals[sym] = total - f.xreplace({ex.SEQ_LEN_J: ex.SEQ_LEN})
    extent = sp.expand(row_extent.xreplace(in_totals))
    branch.totals = totals
    per_seq_symbols = {ex.SEQ_LEN, ex.B, ex.T}
    if extent.free_symbols & per_seq_symbols:
        return _unproven(branch, "the row's extent is not a sum over sequences")
    alphas = {t: sp.expand(extent.coeff(t)) for t in totals}
    rest = sp.expand(extent - sum(a * t for t, a in alphas.items()))
    beta = sp.expand(rest.coeff(ex.NUM_SEQS))
    gamma = sp.expand(rest - beta * ex.NUM_SEQS)
    shaped = set(totals) | {ex.NUM_SEQS}
    if any(v.free_symbols & shaped for v in (*alphas.values(), beta, gamma)):
        return _unproven(branch, "the row's extent is not a sum over sequences")
    branch.extent = extent
    own = {ex.SEQ_LEN_J: ex.SEQ_LEN}
    r = sum((alphas[t] * f.xreplace(own) for t, f in totals.items()), beta)
    u = (ex.TOPK * ex.SEQ_LEN + ex.TOPK * (ex.ROW + 1)).xreplace(equal)
    attained = _attained(derivation, bounds[best], witness, renaming, facts)
    branch.exact = attained
    claims = []
    if branch.windowed:
        ok = nonneg(u - r, facts) and nonneg(-gamma, facts)
        claims.append(Claim("<=", PROVEN if ok else NOT_PROVEN))
    else:
        identical = sp.expand(r - u) == 0 and gamma == 0
        if identical and attained:
            claims.append(Claim("=", PROVEN))
        elif identical:
            claims.append(
                Claim("=", NOT_PROVEN, "the bound is not shown to be written")
            )
        else:
            claims.append(Claim("=", NOT_PROVEN, "the extent is another function"))
    width = (ex.TOPK * MAX_CONTEXT).xreplace(equal)
    for name, premise in (
        ("fits", MAX_CONTEXT - ex.SEQ_LEN - ex.NUM_STEPS),
        ("wall", MAX_CONTEXT - 1 - ex.SEQ_LEN),
    ):
        ok = nonneg(width - r, [*facts, premise]) and nonneg(-gamma, facts)
        claims.append(Claim(name, PROVEN if ok else NOT_PROVEN))
    branch.claims = claims  # what is not proven, the search tries to refute
    widest = _widest_row(r, facts)
    if gamma == 0 and widest is not None:
        row, where = widest
        branch.condition = (fit_condition(width - r.xreplace({ex.ROW: row})), where)
    return branch


def _widest_row(r: sp.Expr, facts: list) -> tuple[sp.Expr, str] | None:
    """The row a request's entries ``r`` are most in, when one row is for every
    size: the last when ``r`` grows with the row, the first when it shrinks."""
    step = r.xreplace({ex.ROW: ex.ROW + 1}) - r
    inner = [*facts, ex.NUM_STEPS - 2 - ex.ROW]
    if nonneg(step, inner):
        return ex.NUM_STEPS - 1, "the last row, i = num_steps - 1"
    if nonneg(-step, inner):
        return sp.Integer(0), "the first row, i = 0"
    return None


def fit_condition(slack: sp.Expr) -> str:
    """``slack >= 0`` (the width less a request's last row) as a relation: a
    common factor known positive (topk) divided out, every subtracted term on the
    left, the request's own length first: ``seq_len + num_steps <=
    max_context_len``."""
    slack = sp.factor_terms(sp.expand(slack))
    if isinstance(slack, sp.Mul):
        kept = [f for f in slack.args if not (f == ex.TOPK or f.is_positive)]
        slack = sp.Mul(*kept)
    left, right = [], []
    for term in sp.Add.make_args(sp.expand(slack)):
        coeff = term.as_coeff_Mul()[0]
        (left if coeff < 0 else right).append(-term if coeff < 0 else term)

    def order(term: sp.Expr) -> tuple:
        return (ex.SEQ_LEN not in term.free_symbols, term.is_number, str(term))

    def show(terms: list) -> str:
        text = " + ".join(str(t) for t in sorted(terms, key=order)) or "0"
        return text.replace("Min(", "min(").replace("Max(", "max(")

    return f"{show(left)} <= {show(right)}"


def _total_name(f: sp.Expr) -> str:
    if f == ex.SEQ_LEN_J:
        return "seq_lens_sum"
    shown = str(f.xreplace({ex.SEQ_LEN_J: ex.SEQ_LEN})).replace("Min", "min")
    return f"sum({shown.replace('Max', 'max')})"


def _attained(
    derivation: ex.Derivation,
    bound: Bound,
    witness: dict,
    renaming: dict,
    facts: list,
) -> bool:
    """The bound is written at the last program (b, t) = (num_seqs-1, topk-1)."""
    if bound.attain is None:
        return False
    per_program = {ex.B, ex.T, ex.BLK, ex.ROW, ex.SEQ_LEN, *derivation.prefix_sums}
    for cond in (bound.attain, *bound.store.conds):
        cond = cond.xreplace(renaming)
        if not cond.free_symbols & per_program:
            continue  # a launch-level condition: the branch's own
        if cond.free_symbols & set(derivation.lanes):
            continue  # a lane's range: the bound's own domain
        if decide(cond.xreplace(witness), facts) is not True:
            return False
    return True


# -- counterexamples ------------------------------------------------------------

PARAM_VALUES = {
    "page_size": (1, 2),
    "window_size": (0, 2),
    "sink_size": (0, 1),
    "ENTRY_PAGE_SIZE": (1,),
    "TRANSLATE": (0,),
}
DERIVED = {"bs_upper", "iter_upper", "num_tokens_upper", ex.ROW_STRIDE, *CONTEXT_ARGS}


def candidates(
    derivation: ex.Derivation, conds: tuple, judged: str = CONTRACT
) -> Iterator[Sizes]:
    """Launches, smallest first, that take the branch of ``conds`` (raw symbols),
    with the longest lengths the envelope ``judged`` admits first."""
    used = set()
    for store in derivation.stores():
        for e in (store.offset, store.mask, *store.conds):
            if e is not None:
                used |= e.free_symbols
    for c in conds:
        used |= c.free_symbols
    names = [
        n
        for n, s in derivation.params.items()
        if s in used
        and n not in DERIVED
        and (derivation.split is None or s != derivation.split)
    ]
    split = derivation.split
    shapes = []
    for steps, topk, seqs, room in itertools.product(
        range(1, 6), range(1, 5), range(1, 4), (0, 2, 7)
    ):
        shapes.append((steps + topk + seqs + room, steps, topk, seqs, room))
    shapes.sort()
    for _, steps, topk, seqs, room in shapes:
        ctx = steps + 1 + room
        limit = ctx - 1 if judged == WALL else ctx - steps
        # At the limit first: an overrun needs the longest sequences.
        patterns = dict.fromkeys(
            [
                (limit,) * seqs,
                (1,) * seqs,
                tuple(limit if j % 2 == 0 else 1 for j in range(seqs)),
                tuple(1 if j % 2 == 0 else limit for j in range(seqs)),
            ]
        )
        options = [PARAM_VALUES.get(n, (0, 1, 5)) for n in names]
        splits = [(0, 1), (steps, 1), (steps, 2)] if split is not None else [(None, 1)]
        for lens in patterns:
            for values in itertools.product(*options):
                for split_value, blocks in splits:
                    params = dict(zip(names, values, strict=True))
                    if split is not None:
                        params[str(split)] = split_value
                    yield Sizes(lens, topk, steps, ctx, tuple(params.items()), blocks)


def _unproven(branch: Branch, why: str) -> Branch:
    names = ["<=" if branch.windowed else "=", "fits", "wall"]
    branch.claims = [Claim(n, NOT_PROVEN, why) for n in names]
    return branch


def _search(derivation: ex.Derivation, branches: list[Branch], judged: str) -> None:
    """Look for launches in the envelope ``judged`` that break the claims not
    proven there; each launch counts for the branch it takes. A claim with none
    found stays "not proven"."""
    names = {"wall"} if judged == WALL else {"=", "<=", "fits"}
    pending = {
        id(b): {c.name for c in b.claims if c.status != PROVEN and c.name in names}
        for b in branches
    }
    pending = {k: v for k, v in pending.items() if v}
    if not pending:
        return
    conds = {id(b): b.raw_conds for b in branches if id(b) in pending}
    found: dict[int, dict[str, Counterexample]] = {k: {} for k in pending}
    checked = dict.fromkeys(pending, 0)
    stopped = ""
    every = tuple({c for cs in conds.values() for c in cs})
    for tried, sizes in enumerate(candidates(derivation, every, judged)):
        if tried >= SEARCH_CASES or all(pending[k] <= set(found[k]) for k in pending):
            break
        try:
            values = launch_values(derivation, sizes).values
            key = next(
                (
                    k
                    for k, cs in conds.items()
                    if all(bool(evaluate(c, values)) for c in cs)
                ),
                None,
            )
            if key is None or pending[key] <= set(found[key]):
                continue
            writes = row_extents(derivation, sizes)
        except NotEvaluable as exc:
            # One launch the model cannot evaluate; the others still count.
            stopped = stopped or f"launches the model cannot evaluate skipped: {exc}"
            continue
        checked[key] += 1
        for row, entries in enumerate(writes):
            limits = {
                "fits": (entries > sizes.width, sizes.width),
                "wall": (entries > sizes.width, sizes.width),
                "=": (entries != sizes.used_len(row), sizes.used_len(row)),
                "<=": (entries > sizes.used_len(row), sizes.used_len(row)),
            }
            for name in pending[key] - set(found[key]):
                broken, limit = limits[name]
                if broken:
                    found[key][name] = Counterexample(sizes, row, entries, limit)
    for branch in branches:
        key = id(branch)
        if key not in pending:
            continue
        if stopped:
            branch.notes.append(stopped)
        claims = []
        for claim in branch.claims:
            if claim.name in found[key]:
                example = found[key][claim.name]
                claims.append(Claim(claim.name, REFUTED, claim.why, example))
            elif claim.status != PROVEN and claim.name in pending[key]:
                note = f"no counterexample in {checked[key]} launches"
                why = f"{claim.why}; {note}" if claim.why else note
                claims.append(Claim(claim.name, NOT_PROVEN, why))
            else:
                claims.append(claim)
        branch.claims = claims


# -- the lines prove prints -------------------------------------------------------


def render_extent(branch: Branch) -> str:
    """``topk*seq_lens_sum + num_seqs*topk*(i + 1)``: the row's extent as sums."""
    extent = branch.extent
    if extent is None:
        return "(no closed form)"
    parts = []
    rest = extent
    for total in branch.totals:
        alpha = sp.factor(extent.coeff(total))
        if alpha != 0:
            parts.append(f"{_factor(alpha)}{total}")
            rest -= alpha * total
    rest = sp.expand(rest)
    beta = sp.factor(rest.coeff(ex.NUM_SEQS))
    if beta != 0:
        parts.append(f"num_seqs*{_grouped(beta)}")
        rest = sp.expand(rest - beta * ex.NUM_SEQS)
    if rest != 0:
        parts.append(str(rest))
    return " + ".join(parts).replace("+ -", "- ")


def render_program(derivation: ex.Derivation, branch: Branch) -> str | None:
    """One past the largest offset program (b, t) of row i writes, as the layout
    reads: the prefix sums, b and t with their strides, then the rest."""
    if branch.per_program is None:
        return None
    names = {}
    for sym, f in derivation.prefix_sums.items():
        total = _total_name(f)
        names[sym] = symbol(
            "seq_lens_before_b" if total == "seq_lens_sum" else f"{total}_before_b"
        )
    rest = sp.expand(branch.per_program + 1).xreplace(names)
    parts = []
    for sym in (*names.values(), ex.B, ex.T):
        stride = sp.factor(rest.coeff(sym))
        if stride == 0 or stride.free_symbols & {*names.values(), ex.B, ex.T}:
            continue
        parts.append(
            f"{_grouped(stride)}*{sym}"
            if sym in names.values()
            else f"{sym}*{_grouped(stride)}"
        )
        rest = sp.expand(rest - stride * sym)
    if rest != 0:
        parts.append(str(rest))
    return " + ".join(parts).replace("Min(", "min(").replace("+ -", "- ")


def _factor(alpha: sp.Expr) -> str:
    return "" if alpha == 1 else f"{_grouped(alpha)}*"


def _grouped(expr: sp.Expr) -> str:
    return f"({expr})" if isinstance(expr, sp.Add) else str(expr)


def describe(fit: KernelFit) -> list[str]:
    """The kernel's line for prove's table, then one line per distinct extent and
    one per counterexample or unproven claim."""
    d = fit.derivation
    where = f"{d.filename.rsplit('/', 1)[-1]}:{d.line}"
    count = len(fit.branches)
    head = (
        f"kernel extent: {d.function} ({where}, {count} "
        f"branch{'es' if count != 1 else ''}): {fit.verdict} "
        f"(sympy, {fit.seconds:.1f} s)"
    )
    lines = [head, f"  {premise_line(fit)}"]
    if d.not_followed():
        stores = {line for line, _ in d.not_followed()}
        lines += [f"  line {line}: {why}" for line, why in d.unsupported]
        lines += [
            f"  line {line}: a store the derivation lost: {why}"
            for line, why in d.not_followed()
            if (line, why) not in d.unsupported
        ]
        lines.append(
            f"  {len(stores)} store(s) not followed: the grid's overrun check stands"
        )
        return lines
    lines += [
        f"  not followed (reaches no row): line {line}: {why}"
        for line, why in d.unsupported
    ]
    groups: dict[tuple, list[Branch]] = {}
    for branch in fit.branches:
        relation = next((c.name for c in branch.claims if c.name in ("=", "<=")), "")
        ok = all(c.status == PROVEN for c in branch.claims if c.name == relation)
        key = (render_extent(branch), relation if ok else "?")
        groups.setdefault(key, []).append(branch)
    for (shown, relation), members in groups.items():
        common = set(members[0].conds)
        for m in members[1:]:
            common &= set(m.conds)
        label = _label(tuple(c for c in members[0].conds if c in common))
        many = f" ({len(members)} branches)" if len(members) > 1 else ""
        rel = {"=": "=", "<=": "<=", "?": "vs"}.get(relation, "vs")
        holds = "holds" if all(m.exact for m in members) else "holds at most"
        lines.append(f"  {label}{many}: row i holds {shown} {rel} {USED}")
        lines[-1] = lines[-1].replace("row i holds", f"row i {holds}", 1)
        ends = render_program(d, members[0])
        if ends and members[0].extent is not None:
            lines.append(
                f"    program (b, t) writes below {ends}; the most at the last one"
            )
    conditions: dict[tuple, list[Branch]] = {}
    for branch in fit.branches:
        if branch.condition is not None:
            key = (branch.condition, branch.exact)
            conditions.setdefault(key, []).append(branch)
    for ((condition, where), exact), members in conditions.items():
        many = f" ({len(members)} branches)" if len(members) > 1 else ""
        label = _label(tuple(set.intersection(*(set(m.conds) for m in members))))
        # A row is a sum over requests: one short request leaves room for a long
        # one, so the condition is necessary only for a request alone.
        alone = "; and only if, for a request alone" if exact else ""
        lines.append(
            f"  {label}{many}: the width holds every row if every request has "
            f"{condition} ({where}{alone})"
        )
    judged = (
        ("=", "<=", "fits", "wall") if fit.envelope == WALL else ("=", "<=", "fits")
    )
    for branch in fit.branches:
        for claim in branch.failed:
            if claim.name not in judged:
                continue
            target = USED if claim.name in ("=", "<=") else WIDTH
            where = "at the context wall, " if claim.name == "wall" else ""
            if claim.counterexample is not None:
                relation = {"fits": ">", "wall": ">", "=": "!=", "<=": ">"}[claim.name]
                text = claim.counterexample.describe(f"{relation} {target} =")
                lines.append(f"  counterexample ({where}{branch.label}): {text}")
            else:
                what = {"=": f"= {USED}", "<=": f"<= {USED}"}
                lines.append(
                    f"  not proven ({where}{branch.label}): "
                    f"{what.get(claim.name, f'<= {WIDTH}')}: {claim.why}"
                )
        lines += [f"  note ({branch.label}): {n}" for n in branch.notes]
    lines += envelope_summary(fit)
    if d.assumptions:
        assumed = "; ".join(f"{what} (line {line})" for line, what in d.assumptions)
        lines.append(f"  assuming {assumed}")
    return lines


def premise_line(fit: KernelFit) -> str:
    """What the verdict is measured against, and where SGLang says so."""
    found = envelope.sources(fit.derivation.filename)
    where = (
        ", ".join(found) if found else f"not in this tree; {envelope.known_sources()}"
    )
    if fit.envelope == WALL:
        return (
            f"envelope: the context wall, {envelope.WALL_PREMISE} "
            f"(SGLang's max_req_len = context_len - 1 and req_to_token's "
            f"headroom: {where}); --envelope contract for upstream's premise"
        )
    return (
        f"envelope: upstream's contract, {envelope.CONTRACT_PREMISE} (--envelope "
        f"contract); SGLang does not keep it: a request reaches max_context_len - 1 "
        f"({where})"
    )


def envelope_summary(fit: KernelFit) -> list[str]:
    """The other envelope's verdict, and what stops an overrun at the wall."""
    if fit.verdict == "not derived":
        return []
    if fit.envelope == CONTRACT:
        wall = fit.verdict_under(WALL)
        return [f"  at the context wall ({envelope.WALL_PREMISE}): {wall}"]
    contract = fit.verdict_under(CONTRACT)
    lines = [f"  under upstream's contract ({envelope.CONTRACT_PREMISE}): {contract}"]
    if fit.verdict == DOES_NOT_FIT_AT_WALL:
        lines.append(
            "  only a capacity guard before the launch (assert_buffer_fits, "
            "KVI006) turns this overrun into an error instead of a silent write"
        )
    return lines
