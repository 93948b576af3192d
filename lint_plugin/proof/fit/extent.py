"""What the index kernel writes into a kv_indices row, read from its Triton source.

:func:`derive` parses the kernel's ``def`` with ``ast`` and runs it symbolically,
once for every program: program ids, the number of programs on each axis, the
scalar arguments, the sequence's own length and the prefix sums of the lengths
before it are symbols (:func:`.positivity.symbol`: nonnegative integers), so a
value is a sympy expression and ``tl.arange(0, N)`` is a *lane* symbol ``0 <= j <
N``. What memory holds (token ids, positions) is data, which a store may write but
an offset may not depend on.

Conditions fork the run into paths (``if``, ``x if c else y``, ``return``), each
with the conditions it took; a path whose conditions contradict each other is
dropped. A ``for ... in range(...)`` loop runs its body once for a symbolic
iteration ``m`` (``start + m*step <= stop - 1``), with every variable the body
advances by a loop-invariant ``+=`` as ``x0 + m*step_x`` (checked at the end of
the body). Every ``tl.store`` whose pointer is the ``kv_indices`` argument plus an
offset is recorded with that offset, its mask and the path's conditions; its
offset is ``kv_indices_stride * row + in_row``.

:mod:`.store_bound` turns one recorded store into the largest in-row offset it
can write (the mask's bound and the lanes' bound).

Nothing is guessed. A construct outside this set (a ``while``, a subscript, a
call of a function it does not know, an offset depending on data) makes the value
it produced *unknown*; an unknown reaching a kv_indices store (or a store whose
pointer is unknown) makes the store *not followed*, and every construct that was
not followed is reported with its line. :mod:`.fit` then proves nothing about
that kernel and the grid's overrun check is what stands.

Assumptions the launch must keep (every backend's launch does, and the derivation
lists them with each result): ``bs_upper >= num_seqs`` and ``iter_upper >=
num_steps`` (the backends pass ``next_power_of_2`` of each); the grid is
``(num_steps * blocks, num_seqs, topk)``, and a ``num_seqs``/``topk`` argument
equals its axis' program count; a masked load without ``other`` reads 0 where the
mask is false (Triton's interpreter does; compiled Triton promises nothing, which
is why 0.4.7 added ``other=0``).
"""

from __future__ import annotations

import ast
import itertools
import re
from dataclasses import dataclass, field, replace

import sympy as sp

from ..triton_source import KERNEL, _triton_aliases
from .positivity import decide, nonneg, strengthen, symbol

ROW_BUFFER = "kv_indices"
ROW_STRIDE = "kv_indices_stride"
SEQ_LENS = "paged_kernel_lens"
# Tensor arguments (every release's names); any other argument is a scalar.
POINTERS = frozenset(
    {
        "req_pool_indices",
        "req_to_token",
        SEQ_LENS,
        ROW_BUFFER,
        "kv_indptr",
        "positions",
        "v2p",
    }
)

# The vocabulary. Program ids and counts by axis: the grid is
# (num_steps * blocks, num_seqs, topk) in every release.
PID0, B, T = symbol("pid0"), symbol("b"), symbol("t")
PROGRAMS0, NUM_SEQS, TOPK = symbol("programs0"), symbol("num_seqs"), symbol("topk")
PIDS = (PID0, B, T)
PROGRAMS = (PROGRAMS0, NUM_SEQS, TOPK)
ROW, NUM_STEPS = symbol("i"), symbol("num_steps")
SEQ_LEN = symbol("seq_len")  # the program's own sequence length, lens[b]
SEQ_LEN_J = symbol("seq_len_j")  # a sequence's length inside a prefix sum's f
# pid0 split by a constant C (0.5.23's token blocks): pid0 = blk*C + row.
BLK, PID0_MOD, NUM_BLK = symbol("blk"), symbol("pid0_mod_steps"), symbol("num_blk")
# Arguments that are a program count by the launch's contract (0.4.x's kernels).
ALIASES = {"num_seqs": NUM_SEQS, "topk": TOPK}
LAUNCH_FACTS = {
    "page_size": lambda s: [s - 1],
    "ENTRY_PAGE_SIZE": lambda s: [s - 1],
    "bs_upper": lambda s: [s - NUM_SEQS],
}
# The triton.language calls the derivation follows (any other given the row's
# pointer is a write it cannot bound).
FOLLOWED = frozenset(
    {"program_id", "num_programs", "arange", "cdiv", "minimum", "maximum"}
    | {"where", "sum", "load", "store"}
)
ASSUMED = {
    "bs_upper": "bs_upper >= num_seqs",
    "iter_upper": "iter_upper >= num_steps",
}


class Fork(Exception):
    """An expression's value depends on an undecided condition: split the path."""

    def __init__(self, cond: sp.Basic) -> None:
        super().__init__(str(cond))
        self.cond = cond


# -- values -------------------------------------------------------------------


@dataclass(frozen=True)
class Num:
    """An integer or boolean expression; a block when it holds lane symbols."""

    expr: sp.Basic


@dataclass(frozen=True)
class Ptr:
    """A tensor argument plus an element offset (None: an offset not followed)."""

    base: str
    offset: sp.Expr | None


@dataclass(frozen=True)
class SeqBlock:
    """``tl.load(lens + j, mask=j < b, other=0)`` and what elementwise ops made of
    it: lane ``j`` holds ``f(lens[j])`` below ``b`` and ``other`` at and past it."""

    f: sp.Expr  # in SEQ_LEN_J
    lane: sp.Symbol
    other: sp.Expr


@dataclass(frozen=True)
class Data:
    """Values read from memory: stored, never an offset."""


@dataclass(frozen=True)
class Unknown:
    line: int
    why: str


@dataclass(frozen=True)
class Module:
    name: str


@dataclass(frozen=True)
class Helper:
    name: str


@dataclass(frozen=True)
class NoneValue:
    pass


Value = Num | Ptr | SeqBlock | Data | Unknown | Module | Helper | NoneValue


# -- what a run records ---------------------------------------------------------


@dataclass(frozen=True)
class Loop:
    line: int
    counter: sp.Symbol  # m >= 0, the iteration number
    start: sp.Expr
    stop: sp.Expr
    step: sp.Expr

    @property
    def value(self) -> sp.Expr:
        return self.start + self.counter * self.step

    @property
    def fact(self) -> sp.Expr:
        return self.stop - 1 - self.value


@dataclass(frozen=True)
class Store:
    """One ``tl.store`` into the kv_indices argument, as one path reached it."""

    line: int
    offset: sp.Expr | None  # from the argument's start; None: not followed
    mask: sp.Basic | None  # None: a mask the derivation could not follow
    conds: tuple[sp.Basic, ...]
    loops: tuple[Loop, ...]
    why: str = ""


@dataclass(frozen=True)
class Leaf:
    """A path to the kernel's end (or a ``return``): its conditions and stores."""

    conds: tuple[sp.Basic, ...]
    stores: tuple[Store, ...]


@dataclass
class _Path:
    env: dict[str, Value]
    conds: tuple[sp.Basic, ...] = ()
    stores: tuple[Store, ...] = ()
    loops: tuple[Loop, ...] = ()
    done: bool = False

    def copy(self, **changes) -> _Path:
        return replace(self, env=dict(self.env), **changes)


@dataclass
class Derivation:
    """The symbolic run of one kernel."""

    function: str
    filename: str
    line: int
    leaves: list[Leaf]
    params: dict[str, sp.Symbol]
    prefix_sums: dict[sp.Symbol, sp.Expr]  # symbol -> f(seq_len_j) summed over j < b
    lanes: dict[sp.Symbol, sp.Expr]  # lane -> its block's length
    facts: list[sp.Expr]  # ranges of the vocabulary, each >= 0
    unsupported: list[tuple[int, str]] = field(default_factory=list)
    assumptions: list[tuple[int, str]] = field(default_factory=list)
    split: sp.Expr | None = None  # C when pid0 is split as blk*C + row

    @property
    def launch_symbols(self) -> frozenset[sp.Symbol]:
        return frozenset({*self.params.values(), *PROGRAMS, NUM_BLK})

    def stores(self) -> list[Store]:
        seen: dict[int, Store] = {}
        for leaf in self.leaves:
            for store in leaf.stores:
                seen.setdefault(id(store), store)
        return list(seen.values())

    def not_followed(self) -> list[tuple[int, str]]:
        """Stores into the row whose offset or mask the derivation lost."""
        found = {(s.line, s.why) for s in self.stores() if s.offset is None}
        return sorted(found)


class DerivationError(ValueError):
    """The source has no such kernel (not a construct: the input itself)."""


def derive(text: str, function: str = KERNEL, filename: str = "<kernel>") -> Derivation:
    """Run ``function`` of the module ``text`` symbolically (see the module doc)."""
    try:
        tree = ast.parse(text, filename=filename)
    except SyntaxError as exc:
        raise DerivationError(f"{filename}: does not parse: {exc.msg}") from exc
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if function not in defs:
        raise DerivationError(f"{filename}: no top-level def {function}")
    node = defs[function]
    return _Interpreter(tree, node, filename).run()


class _Interpreter:
    def __init__(self, tree: ast.Module, node: ast.FunctionDef, filename: str):
        self.node = node
        self.filename = filename
        self.modules = _triton_aliases(tree)  # local name -> triton module
        self.helpers = {
            n.name
            for n in tree.body
            if isinstance(n, ast.FunctionDef) and n is not node and n.decorator_list
        }
        self.params: dict[str, sp.Symbol] = {}
        self.prefix_sums: dict[sp.Expr, sp.Symbol] = {}
        self.lanes: dict[sp.Symbol, sp.Expr] = {}
        self.facts: list[sp.Expr] = [
            *(n - 1 for n in PROGRAMS),
            *(n - 1 - p for n, p in zip(PROGRAMS, PIDS, strict=True)),
        ]
        self.unsupported: dict[tuple[int, str], None] = {}
        self.assumptions: dict[tuple[int, str], None] = {}
        self.split: sp.Expr | None = None
        self.counters = itertools.count()

    # -- bookkeeping ----------------------------------------------------------

    def note(self, line: int, why: str) -> Unknown:
        self.unsupported.setdefault((line, why), None)
        return Unknown(line, why)

    def assume(self, line: int, what: str) -> None:
        self.assumptions.setdefault((line, what), None)

    def lane(self, length: sp.Expr, path: _Path) -> sp.Symbol:
        """The lane of a block of ``length``; on ``path`` it is below the length
        (a fact of the path that makes the block, not of every path)."""
        known = (s for s, n in self.lanes.items() if sp.expand(n - length) == 0)
        lane = next(known, None)
        if lane is None:
            lane = symbol(f"lane{len(self.lanes)}")
            self.lanes[lane] = length
        below = sp.Le(lane, length - 1)
        if below not in path.conds:
            path.conds = (*path.conds, below)
        return lane

    def path_facts(self, path: _Path) -> list[sp.Expr]:
        facts = list(self.facts)
        for cond in path.conds:
            facts += strengthen(cond, facts)
        facts += [loop.fact for loop in path.loops]
        return facts

    def decide(self, cond: sp.Basic, path: _Path) -> bool | None:
        if cond in path.conds:
            return True
        if sp.Not(cond) in path.conds:
            return False
        return decide(cond, self.path_facts(path))

    def with_cond(self, path: _Path, cond: sp.Basic) -> _Path | None:
        """``path`` taking ``cond``; None when its conditions rule it out."""
        decided = self.decide(cond, path)
        if decided is True:
            return path
        if decided is False:
            return None
        new = path.copy(conds=(*path.conds, cond))
        if isinstance(cond, sp.Eq) and cond.lhs.is_Symbol and cond.rhs.is_Integer:
            new = _substitute(new, {cond.lhs: cond.rhs})
        return new

    # -- the run --------------------------------------------------------------

    def run(self) -> Derivation:
        env: dict[str, Value] = {}
        args = self.node.args
        positional = [*args.posonlyargs, *args.args]
        if args.vararg or args.kwarg or args.kwonlyargs:
            self.note(self.node.lineno, "variadic or keyword-only parameters")
        for arg in positional:
            name = arg.arg
            if name in POINTERS:
                env[name] = Ptr(name, sp.Integer(0))
            elif name in ALIASES:
                env[name] = Num(ALIASES[name])
                axis = PROGRAMS.index(ALIASES[name])
                self.assume(
                    arg.lineno, f"the launch passes {name} = programs on axis {axis}"
                )
            else:
                sym = symbol(_param_name(name))
                self.params[name] = sym
                env[name] = Num(sym)
                self.facts += LAUNCH_FACTS.get(name, lambda s: [])(sym)
                if name in ASSUMED:
                    self.assume(arg.lineno, ASSUMED[name])
        for local, module in self.modules.items():
            env.setdefault(local, Module(module))
        for name in self.helpers:
            env.setdefault(name, Helper(name))
        paths = self.block(self.node.body, [_Path(env)])
        leaves = [Leaf(p.conds, p.stores) for p in paths]
        return Derivation(
            function=self.node.name,
            filename=self.filename,
            line=self.node.lineno,
            leaves=leaves,
            params=self.params,
            prefix_sums={sym: f for f, sym in self.prefix_sums.items()},
            lanes=self.lanes,
            facts=self.facts,
            unsupported=sorted(self.unsupported),
            assumptions=sorted(self.assumptions),
            split=self.split,
        )

    def block(self, stmts: list[ast.stmt], paths: list[_Path]) -> list[_Path]:
        for stmt in stmts:
            nxt: list[_Path] = []
            for path in paths:
                nxt.extend([path] if path.done else self.stmt(stmt, path))
            paths = nxt
        return paths

    def stmt(self, stmt: ast.stmt, path: _Path) -> list[_Path]:
        try:
            # A copy: evaluating may add the path's facts (lanes) and stores.
            return self._stmt(stmt, path.copy())
        except Fork as fork:
            out = []
            for cond in (fork.cond, sp.Not(fork.cond)):
                taken = self.with_cond(path, cond)
                if taken is not None:
                    out.extend(self.stmt(stmt, taken))
            return out

    def _stmt(self, stmt: ast.stmt, path: _Path) -> list[_Path]:
        line = stmt.lineno
        if isinstance(stmt, ast.Expr):
            if isinstance(stmt.value, ast.Constant):
                return [path]  # a docstring
            path = path.copy()
            self.expr(stmt.value, path)
            return [path]
        if isinstance(stmt, ast.Assign | ast.AnnAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if stmt.value is None:
                return [path]
            value = self.expr(stmt.value, path)
            path = path.copy()
            for target in targets:
                if isinstance(target, ast.Name):
                    path.env[target.id] = value
                else:
                    self.note(line, f"assignment to {ast.unparse(target)}")
                    for name in _names(target):
                        path.env[name] = Unknown(line, f"{name} assigned by unpacking")
            return [path]
        if isinstance(stmt, ast.AugAssign):
            if not isinstance(stmt.target, ast.Name):
                self.note(line, f"assignment to {ast.unparse(stmt.target)}")
                return [path]
            current = self.name(stmt.target.id, line, path)
            value = self.binop(
                stmt.op, current, self.expr(stmt.value, path), line, path
            )
            path = path.copy()
            path.env[stmt.target.id] = value
            return [path]
        if isinstance(stmt, ast.If):
            test = self.expr(stmt.test, path)
            if not isinstance(test, Num):
                marker = sp.Symbol(f"data_condition_line{line}")
                self.note(line, "a condition on data: both branches followed")
                a = self.block(stmt.body, [path.copy(conds=(*path.conds, marker))])
                b = self.block(
                    stmt.orelse, [path.copy(conds=(*path.conds, sp.Not(marker)))]
                )
                return a + b
            out = []
            truth = _boolean(test.expr)
            for cond, body in ((truth, stmt.body), (sp.Not(truth), stmt.orelse)):
                taken = self.with_cond(path, cond)
                if taken is not None:
                    out.extend(self.block(body, [taken]))
            return out
        if isinstance(stmt, ast.For):
            return self.loop(stmt, path)
        if isinstance(stmt, ast.Return):
            return [path.copy(done=True)]
        if isinstance(stmt, ast.Pass):
            return [path]
        return [self.opaque_stmt(stmt, path, type(stmt).__name__.lower())]

    def opaque_stmt(self, stmt: ast.stmt, path: _Path, what: str) -> _Path:
        """A statement not followed: what it assigns is unknown, and every store
        in it may write the row anywhere."""
        line = stmt.lineno
        self.note(line, f"{what} statement not followed")
        path = path.copy()
        for name in _assigned(stmt):
            path.env[name] = Unknown(
                line, f"{name} assigned by the {what} at line {line}"
            )
        stores = [
            Store(
                n.lineno, None, None, path.conds, path.loops, f"store inside the {what}"
            )
            for n in ast.walk(stmt)
            if isinstance(n, ast.Call) and _call_name(n) == "store"
        ]
        path.stores = (*path.stores, *stores)
        return path

    def loop(self, stmt: ast.For, path: _Path) -> list[_Path]:
        line = stmt.lineno
        it = stmt.iter
        is_range = (
            isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name)
            and it.func.id == "range"
            and not it.keywords
            and 1 <= len(it.args) <= 3
            and isinstance(stmt.target, ast.Name)
            and not stmt.orelse
        )
        if not is_range:
            return [self.opaque_stmt(stmt, path, "loop")]
        bounds = [self.expr(a, path) for a in it.args]
        if not all(isinstance(v, Num) and not self.has_lanes(v.expr) for v in bounds):
            return [self.opaque_stmt(stmt, path, "loop over a non-scalar range")]
        exprs = [v.expr for v in bounds]
        start, stop, step = (
            (sp.Integer(0), exprs[0], sp.Integer(1))
            if len(exprs) == 1
            else (exprs[0], exprs[1], exprs[2] if len(exprs) == 3 else sp.Integer(1))
        )
        if self.decide(sp.Ge(step, 1), path) is not True:
            return [self.opaque_stmt(stmt, path, "loop with a step not known >= 1")]
        counter = symbol(f"m{line}_{next(self.counters)}")
        loop = Loop(line, counter, start, stop, step)
        assigned = set()
        for sub in stmt.body:
            assigned |= _assigned(sub)
        inductions = {}
        for sub in stmt.body:
            if (
                isinstance(sub, ast.AugAssign)
                and isinstance(sub.target, ast.Name)
                and isinstance(sub.op, ast.Add | ast.Sub)
                and not (_names(sub.value) & assigned)
                and sum(1 for s in stmt.body if sub.target.id in _assigned(s)) == 1
            ):
                inductions[sub.target.id] = sub
        body = path.copy(loops=(*path.loops, loop))
        for name in assigned - set(inductions):
            body.env[name] = Unknown(line, f"{name} carried between iterations")
        starts = {}
        for name, sub in inductions.items():
            x0 = self.name(name, line, path)
            step_x = self.expr(sub.value, path)
            if isinstance(sub.op, ast.Sub) and isinstance(step_x, Num):
                step_x = Num(-step_x.expr)
            starts[name] = (x0, step_x)
            moved = self.binop(ast.Mult(), Num(counter), step_x, line, path)
            body.env[name] = self.binop(ast.Add(), x0, moved, line, path)
        body.env[stmt.target.id] = Num(loop.value)
        outs = self.block(stmt.body, [body])
        new_stores: dict[int, Store] = {id(s): s for s in path.stores}
        broken = False
        for out in outs:
            if out.done:
                self.note(line, "return inside a loop")
            for name, (x0, step_x) in starts.items():
                moved = self.binop(ast.Mult(), Num(counter + 1), step_x, line, out)
                advanced = self.binop(ast.Add(), x0, moved, line, out)
                if not _same(out.env.get(name), advanced):
                    broken = True
            for store in out.stores:
                new_stores.setdefault(id(store), store)
        stores = list(new_stores.values())
        if broken:
            self.note(line, "a loop variable is not advanced by a constant step")
            stores = [
                replace(s, offset=None, why=f"loop at line {line}")
                if loop in s.loops
                else s
                for s in stores
            ]
        after = path.copy(stores=tuple(stores))
        for name in assigned | {stmt.target.id}:
            after.env[name] = Unknown(line, f"{name} after the loop at line {line}")
        return [after]

    # -- expressions ------------------------------------------------------------

    def has_lanes(self, expr: sp.Basic) -> bool:
        return bool(expr.free_symbols & set(self.lanes))

    def name(self, name: str, line: int, path: _Path) -> Value:
        if name in path.env:
            return path.env[name]
        if name in ("True", "False", "None"):
            return Num(sp.true if name == "True" else sp.false)
        return self.note(line, f"unknown name {name}")

    def expr(self, node: ast.expr, path: _Path) -> Value:
        line = getattr(node, "lineno", self.node.lineno)
        if isinstance(node, ast.Constant):
            if node.value is None:
                return NoneValue()
            if isinstance(node.value, bool):
                return Num(sp.true if node.value else sp.false)
            if isinstance(node.value, int):
                return Num(sp.Integer(node.value))
            return self.note(line, f"constant {node.value!r}")
        if isinstance(node, ast.Name):
            return self.name(node.id, line, path)
        if isinstance(node, ast.BinOp):
            left, right = self.expr(node.left, path), self.expr(node.right, path)
            return self.binop(node.op, left, right, line, path)
        if isinstance(node, ast.UnaryOp):
            value = self.expr(node.operand, path)
            if not isinstance(value, Num):
                return (
                    value
                    if isinstance(value, Data | Unknown)
                    else self.note(line, f"{ast.unparse(node)}")
                )
            if isinstance(node.op, ast.USub):
                return Num(-value.expr)
            if isinstance(node.op, ast.Not):
                return Num(sp.Not(_boolean(value.expr)))
            if isinstance(node.op, ast.UAdd):
                return value
            return self.note(line, f"operator {ast.unparse(node)}")
        if isinstance(node, ast.Compare):
            left = self.expr(node.left, path)
            result: Value = Num(sp.true)
            for op, comparator in zip(node.ops, node.comparators, strict=True):
                right = self.expr(comparator, path)
                compared = self.compare(op, left, right, line)
                result = self.binop(ast.BitAnd(), result, compared, line, path)
                left = right
            return result
        if isinstance(node, ast.BoolOp):
            # `and`/`or` of conditions (as Triton reads them on scalars).
            values = [_truth(self.expr(v, path)) for v in node.values]
            combine = ast.BitAnd() if isinstance(node.op, ast.And) else ast.BitOr()
            result = values[0]
            for value in values[1:]:
                result = self.binop(combine, result, value, line, path)
            return result
        if isinstance(node, ast.IfExp):
            test = self.expr(node.test, path)
            if not isinstance(test, Num):
                return self.note(line, "a conditional expression on data")
            truth = _boolean(test.expr)
            decided = self.decide(truth, path)
            if decided is None:
                raise Fork(truth)
            return self.expr(node.body if decided else node.orelse, path)
        if isinstance(node, ast.Attribute):
            base = self.expr(node.value, path)
            if isinstance(base, Module):
                return Module(f"{base.name}.{node.attr}")
            return self.note(line, f"attribute {ast.unparse(node)}")
        if isinstance(node, ast.Call):
            return self.call(node, path)
        return self.note(line, f"{type(node).__name__} expression {ast.unparse(node)}")

    def compare(self, op: ast.cmpop, a: Value, b: Value, line: int) -> Value:
        if isinstance(a, Unknown) or isinstance(b, Unknown):
            return a if isinstance(a, Unknown) else b
        if not (isinstance(a, Num) and isinstance(b, Num)):
            if isinstance(a, Data | Num) and isinstance(b, Data | Num):
                return Data()
            return self.note(line, "comparison of pointers")
        rel = {
            ast.Lt: sp.Lt,
            ast.LtE: sp.Le,
            ast.Gt: sp.Gt,
            ast.GtE: sp.Ge,
            ast.Eq: sp.Eq,
            ast.NotEq: sp.Ne,
        }.get(type(op))
        if rel is None:
            return self.note(line, f"comparison {type(op).__name__}")
        return Num(rel(a.expr, b.expr))

    def binop(
        self, op: ast.operator, a: Value, b: Value, line: int, path: _Path
    ) -> Value:
        for v in (a, b):
            if isinstance(v, Unknown):
                return v
        if isinstance(a, Ptr) or isinstance(b, Ptr):
            return self.pointer_arith(op, a, b, line)
        if (isinstance(a, Data) or isinstance(b, Data)) and (
            isinstance(a, Data | Num) and isinstance(b, Data | Num)
        ):
            return Data()
        if not (isinstance(a, Num) and isinstance(b, Num)):
            return self.note(
                line, f"arithmetic on {type(a).__name__}, {type(b).__name__}"
            )
        x, y = a.expr, b.expr
        if isinstance(op, ast.BitAnd | ast.BitOr) and (
            _is_condition(x) or _is_condition(y)
        ):
            x, y = _boolean(x), _boolean(y)
            return Num(sp.And(x, y) if isinstance(op, ast.BitAnd) else sp.Or(x, y))
        if isinstance(op, ast.Add):
            return Num(x + y)
        if isinstance(op, ast.Sub):
            return Num(x - y)
        if isinstance(op, ast.Mult):
            return Num(x * y)
        if isinstance(op, ast.FloorDiv | ast.Mod):
            return self.divide(op, x, y, line, path)
        return self.note(line, f"operator {type(op).__name__}")

    def divide(
        self, op: ast.operator, x: sp.Expr, y: sp.Expr, line: int, path: _Path
    ) -> Value:
        floor_div = isinstance(op, ast.FloorDiv)
        if (x == PID0 or (x == PROGRAMS0 and floor_div)) and y.is_Symbol:
            # pid0 = blk * C + row over blk in [0, num_blk): the token blocks.
            if self.split is not None and self.split != y:
                return self.note(line, "pid0 split by two different counts")
            if self.split is None:
                self.split = y
                self.assume(line, f"programs on axis 0 = {y} * num_blk")
            # The split's ranges hold on this path only (where y > 0).
            ranges = (
                sp.Le(PID0_MOD, y - 1),
                sp.Ge(NUM_BLK, 1),
                sp.Le(BLK, NUM_BLK - 1),
            )
            path.conds = (*path.conds, *(r for r in ranges if r not in path.conds))
            if x == PROGRAMS0:
                return Num(NUM_BLK)
            return Num(BLK if floor_div else PID0_MOD)
        if x == PID0:
            return self.note(line, "pid0 divided by an expression")
        return Num(sp.floor(x / y) if floor_div else sp.Mod(x, y))

    def pointer_arith(self, op: ast.operator, a: Value, b: Value, line: int) -> Value:
        if isinstance(b, Ptr) and isinstance(op, ast.Add):
            a, b = b, a
        if not isinstance(a, Ptr) or isinstance(b, Ptr):
            return self.note(line, "arithmetic on two pointers")
        if not isinstance(op, ast.Add | ast.Sub):
            return self.note(line, f"pointer {type(op).__name__}")
        if isinstance(b, Data) or a.offset is None:
            return Ptr(a.base, None)
        if not isinstance(b, Num):
            return self.note(line, f"pointer plus {type(b).__name__}")
        delta = b.expr if isinstance(op, ast.Add) else -b.expr
        return Ptr(a.base, a.offset + delta)

    def call(self, node: ast.Call, path: _Path) -> Value:
        line = node.lineno
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "to":
            value = self.expr(func.value, path)
            if not isinstance(value, Module):
                return value  # a cast keeps integers (and data) what they are
        callee = self.expr(func, path)
        args = [self.expr(a, path) for a in node.args]
        kwargs = {k.arg: self.expr(k.value, path) for k in node.keywords if k.arg}
        row_pointer = any(
            isinstance(v, Ptr) and v.base == ROW_BUFFER
            for v in (*args, *kwargs.values())
        )
        if isinstance(callee, Helper):
            if row_pointer:
                return self.unfollowed_write(line, f"{callee.name} gets the row", path)
            return Data()
        if (
            row_pointer
            and isinstance(callee, Module)
            and callee.name.rsplit(".", 1)[-1] not in FOLLOWED
        ):
            # An atomic, a block pointer, anything else: it may write the row.
            return self.unfollowed_write(line, f"{callee.name} on the row", path)
        if isinstance(callee, Module) and callee.name.startswith("triton.language."):
            return self.triton_call(
                callee.name.rsplit(".", 1)[1], args, kwargs, node, path
            )
        if isinstance(callee, Unknown):
            return callee
        return self.note(line, f"call of {ast.unparse(func)}")

    def triton_call(
        self, name: str, args: list, kwargs: dict, node: ast.Call, path: _Path
    ) -> Value:
        line = node.lineno

        def arg(index: int, key: str, default: Value | None = None) -> Value | None:
            if index < len(args):
                return args[index]
            return kwargs.get(key, default)

        if name in ("program_id", "num_programs"):
            axis = arg(0, "axis")
            if not (isinstance(axis, Num) and axis.expr in (0, 1, 2)):
                return self.note(line, f"tl.{name} of an unknown axis")
            table = PIDS if name == "program_id" else PROGRAMS
            return Num(table[int(axis.expr)])
        if name == "arange":
            lo, hi = arg(0, "start"), arg(1, "end")
            if not (isinstance(lo, Num) and isinstance(hi, Num)):
                return self.note(line, "tl.arange of unknown bounds")
            return Num(lo.expr + self.lane(hi.expr - lo.expr, path))
        if name == "cdiv":
            x, y = arg(0, "x"), arg(1, "div")
            if not (isinstance(x, Num) and isinstance(y, Num)):
                return x if isinstance(x, Data | Unknown) else Data()
            return Num(sp.floor((x.expr + y.expr - 1) / y.expr))
        if name in ("minimum", "maximum"):
            x, y = arg(0, "x"), arg(1, "y")
            pick = sp.Min if name == "minimum" else sp.Max
            if isinstance(x, Num) and isinstance(y, Num):
                return Num(pick(x.expr, y.expr))
            if isinstance(y, SeqBlock):
                x, y = y, x
            if (
                isinstance(x, SeqBlock)
                and isinstance(y, Num)
                and not self.has_lanes(y.expr)
            ):
                return SeqBlock(pick(x.f, y.expr), x.lane, pick(x.other, y.expr))
            if any(isinstance(v, Unknown) for v in (x, y)):
                return next(v for v in (x, y) if isinstance(v, Unknown))
            return (
                Data()
                if all(isinstance(v, Num | Data) for v in (x, y))
                else self.note(line, f"tl.{name} of a block of lengths")
            )
        if name == "where":
            c, x, y = arg(0, "condition"), arg(1, "x"), arg(2, "y")
            if all(isinstance(v, Num) for v in (c, x, y)):
                return Num(sp.Piecewise((x.expr, _boolean(c.expr)), (y.expr, True)))
            if any(isinstance(v, Unknown) for v in (c, x, y)):
                return next(v for v in (c, x, y) if isinstance(v, Unknown))
            return Data()
        if name == "sum":
            x = arg(0, "input")
            if isinstance(x, SeqBlock):
                return self.prefix_sum(x, line, path)
            if isinstance(x, Data | Unknown):
                return x
            return self.note(line, "tl.sum of a block that is not a block of lengths")
        if name == "load":
            return self.load(
                arg(0, "pointer"), arg(1, "mask"), arg(2, "other"), line, path
            )
        if name == "store":
            self.store(arg(0, "pointer"), arg(2, "mask", NoneValue()), line, path)
            return NoneValue()
        return self.note(line, f"tl.{name} not followed")

    def unfollowed_write(self, line: int, why: str, path: _Path) -> Unknown:
        self.note(line, f"a write that may reach the row: {why}")
        store = Store(line, None, None, path.conds, path.loops, why)
        path.stores = (*path.stores, store)
        return Unknown(line, why)

    def load(self, ptr, mask, other, line: int, path: _Path) -> Value:
        if not (isinstance(ptr, Ptr) and ptr.base == SEQ_LENS):
            return ptr if isinstance(ptr, Unknown) else Data()
        offset = ptr.offset
        if offset is None:
            return self.note(line, "a sequence length at an offset not followed")
        if offset == B and mask is None:
            return Num(SEQ_LEN)
        lanes = offset.free_symbols & set(self.lanes)
        if (
            offset.is_Symbol
            and lanes == {offset}
            and isinstance(mask, Num)
            and mask.expr == sp.Lt(offset, B)
        ):
            if other is None or isinstance(other, NoneValue):
                self.assume(line, "masked-out lanes of a load without other read 0")
                fill = sp.Integer(0)
            elif isinstance(other, Num) and not self.has_lanes(other.expr):
                fill = other.expr
            else:
                return self.note(line, "sequence lengths with an unknown other")
            return SeqBlock(SEQ_LEN_J, offset, fill)
        return self.note(line, f"sequence lengths at offset {offset}")

    def prefix_sum(self, block: SeqBlock, line: int, path: _Path) -> Value:
        facts = self.path_facts(path)
        if not nonneg(self.lanes[block.lane] - NUM_SEQS, facts):
            return self.note(line, "a sum over fewer lanes than sequences")
        if sp.simplify(block.other) != 0:
            return self.note(line, f"a sum of lengths padded with {block.other}")
        f = block.f
        if not nonneg(f, facts):
            # Its symbol is a nonnegative integer: the sum must be one.
            return self.note(line, f"a sum of {f}, not known >= 0")
        if f not in self.prefix_sums:
            self.prefix_sums[f] = symbol(f"prefix{len(self.prefix_sums)}")
        return Num(self.prefix_sums[f])

    def store(self, ptr, mask, line: int, path: _Path) -> None:
        if isinstance(ptr, Ptr) and ptr.base != ROW_BUFFER:
            return
        why = ""
        offset = None
        if isinstance(ptr, Ptr):
            offset = ptr.offset
            if offset is None:
                why = "an offset depending on data"
        else:
            why = ptr.why if isinstance(ptr, Unknown) else "a pointer not followed"
        if isinstance(mask, NoneValue):
            mask_expr: sp.Basic | None = sp.true
        elif isinstance(mask, Num):
            mask_expr = _boolean(mask.expr)
        else:
            mask_expr = None
            if isinstance(mask, Unknown):
                why = why or mask.why
        if offset is None:
            self.note(line, f"a store that may write the row: {why}")
        store = Store(line, offset, mask_expr, path.conds, path.loops, why)
        path.stores = (*path.stores, store)


# Names the vocabulary (and fit's) symbols take; an argument so named gets its own.
RESERVED = re.compile(
    r"(pid0|b|t|programs0|num_seqs|topk|i|num_steps|seq_len|seq_len_j|blk"
    r"|pid0_mod_steps|num_blk|max_context_len|seq_len_next|seq_lens_sum"
    r"|(lane|prefix|m)\d.*|_.*|sum\(.*)"
)


def _param_name(name: str) -> str:
    return f"arg_{name}" if RESERVED.fullmatch(name) else name


def _is_condition(expr: sp.Basic) -> bool:
    # Not isinstance(expr, Boolean): a sympy Symbol is one, and ours are integers.
    return isinstance(
        expr, sp.logic.boolalg.BooleanAtom | sp.logic.boolalg.BooleanFunction | sp.Rel
    ) or (expr.is_Symbol and not expr.is_integer)


def _truth(value: Value) -> Value:
    return Num(_boolean(value.expr)) if isinstance(value, Num) else value


def _boolean(expr: sp.Basic) -> sp.Basic:
    if _is_condition(expr):
        return expr
    return sp.Ne(expr, 0)


def _same(a: Value | None, b: Value) -> bool:
    if isinstance(a, Num) and isinstance(b, Num):
        return sp.expand(a.expr - b.expr) == 0
    if isinstance(a, Ptr) and isinstance(b, Ptr):
        if a.offset is None or b.offset is None:
            return False
        return a.base == b.base and sp.expand(a.offset - b.offset) == 0
    return False


def _substitute(path: _Path, subs: dict) -> _Path:
    def sub(v: Value) -> Value:
        if isinstance(v, Num):
            return Num(v.expr.xreplace(subs))
        if isinstance(v, Ptr) and v.offset is not None:
            return Ptr(v.base, v.offset.xreplace(subs))
        if isinstance(v, SeqBlock):
            return SeqBlock(v.f.xreplace(subs), v.lane, v.other.xreplace(subs))
        return v

    path.env = {k: sub(v) for k, v in path.env.items()}
    path.conds = tuple(c.xreplace(subs) for c in path.conds[:-1]) + path.conds[-1:]
    return path


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _assigned(node: ast.AST) -> set[str]:
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assign):
            for target in sub.targets:
                found |= _names(target)
        elif isinstance(sub, ast.AugAssign | ast.AnnAssign | ast.For):
            found |= _names(sub.target)
    return found


def _call_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""
