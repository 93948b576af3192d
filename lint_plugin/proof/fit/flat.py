"""The write extent of any flat index kernel, with its vocabulary read from its source.

:mod:`.extent` follows ``generate_draft_decode_kv_indices`` with the vocabulary of
that one kernel. This module reads any ``@triton.jit`` kernel that copies a run
of entries per program into a flat output (``create_flashinfer_kv_indices_triton``,
``assign_extend_cache_locs``, ``assign_draft_cache_locs_contiguous``) and learns
what it needs from the source:

* **pointers**: the arguments that stand alone as a term of a ``tl.load`` or
  ``tl.store`` address (through locals: ``token_pool = req_to_token + ...``);
  the **outputs** are those a store writes;
* **per-program values**: ``tl.load(p + pid)`` is the program's own entry of
  ``p``, a symbol ``p[b]`` (a length, a start, an offset: every such value is
  taken to be a nonnegative integer); a caller's fact may say what it is (``x =
  prefix_sum(lens)``: ``x[b]`` is the sum of ``lens`` over the programs before);
* **prefix sums**: ``tl.sum`` of loads over ``tl.arange(0, N)`` masked to the
  lanes below ``pid`` (``other=0``) is the sum over the earlier programs, when a
  fact says ``N >= programs``;
* **loops**: ``for i in range(...)`` runs once for a symbolic ``i`` within its
  bounds; a variable the body advances by a loop-invariant ``+=`` is its value
  at entry plus ``(i - start)`` steps; ``range(blk, stop, num_blk)`` over the
  programs of axis 1 covers ``[0, stop)`` for the request of axis 0 together;
  ``tl.static_range`` is unrolled;
* **masks**: a store's address is its base plus a position ``t`` (a lane plus the
  loop's index times the lane count); a conjunct of its mask that bounds ``t``
  bounds the extent, one that names no lane is a condition of the store, and one
  on data (a loaded token id) is left out, which only widens the extent.

Branches on constexpr flags, optional pointers (``None`` or given) and program
values fork the run. The result is, per store and path, the range of offsets a
program ``b`` writes, ``[lo(b), hi(b))``. Against a caller's stated size of the
output (``numel(out) = ...``) each is proven to fit (:func:`.positivity.nonneg`,
for all values, ``b <= programs - 1``, each total the program's own entry plus
the entries before and after it) or refuted by the smallest values found that
break it (:mod:`.flat_fit`). Anything not followed is reported with its line:
then nothing is claimed about that output.
"""

from __future__ import annotations

import ast
import itertools
import re
from dataclasses import dataclass, field, replace

import sympy as sp

from ..triton_source import _triton_aliases
from .extent import Data, NoneValue, Num, Ptr
from .positivity import nonneg, symbol

B, PROGRAMS = symbol("b"), symbol("programs")
BLK, NUM_BLK = symbol("blk"), symbol("num_blk")
# The programs after b: programs = b + 1 + REST_PROGRAMS.
REST_PROGRAMS = symbol("programs_after_b")
PROVEN, REFUTED, NOT_PROVEN = "proven", "refuted", "not proven"


# Casts that keep every offset a kernel computes (the values are taken to fit
# in 32 bits: an assumption every verdict prints).
_WIDE_INTS = ("int32", "int64", "uint32", "uint64")
# A condition on data, kept in a mask as a marker: it narrows the writes by an
# amount not read (the extent is then an upper bound, never a refutation).
_DATA = sp.Symbol("condition_on_data")


class FlatError(Exception):
    """The kernel or a fact cannot be read (a usage error)."""


# -- facts ---------------------------------------------------------------------


@dataclass(frozen=True)
class Facts:
    """What the caller states: ``pins`` (a constexpr's or optional pointer's
    value: an int, a bool, ``None`` or ``"given"``), ``prefix`` (``x`` ->
    ``lens``: ``x[b]`` is the sum of ``lens`` before ``b``), ``numel`` (output ->
    its size as text), ``ordered`` (``(a, c)``: ``a[j] >= c[j]``), ``covers``
    (lane-count arguments at least the number of programs), ``equal`` (a scalar
    argument -> text)."""

    pins: dict = field(default_factory=dict)
    prefix: dict = field(default_factory=dict)
    numel: dict = field(default_factory=dict)
    ordered: tuple = ()
    covers: frozenset = frozenset()
    equal: dict = field(default_factory=dict)
    bounded: dict = field(default_factory=dict)  # x -> text: every x[j] <= it
    texts: tuple[str, ...] = ()


_PREFIX = re.compile(r"^(\w+)\s*=\s*prefix_sum\((\w+)\)$")
_NUMEL = re.compile(r"^numel\((\w+)\)\s*=\s*(.+)$")
_ORDER = re.compile(r"^(\w+)\s*>=\s*(\w+)$")
_BOUND = re.compile(r"^(\w+)\s*<=\s*(.+)$")
_PIN = re.compile(r"^(\w+)\s*=\s*(None|given|True|False|-?\d+)$")
_EQUAL = re.compile(r"^(\w+)\s*=\s*(.+)$")


def parse_facts(texts) -> Facts:
    """Facts from their text (``--fact``); a fact of no known form is an error."""
    facts = Facts(texts=tuple(texts))
    for text in texts:
        text = text.strip()
        if m := _PREFIX.match(text):
            facts.prefix[m.group(1)] = m.group(2)
        elif m := _NUMEL.match(text):
            facts.numel[m.group(1)] = m.group(2)
        elif (m := _ORDER.match(text)) and m.group(2) == "programs":
            facts = replace(facts, covers=facts.covers | {m.group(1)})
        elif m := _ORDER.match(text):
            facts = replace(facts, ordered=(*facts.ordered, (m.group(1), m.group(2))))
        elif m := _BOUND.match(text):
            facts.bounded[m.group(1)] = m.group(2)
        elif m := _PIN.match(text):
            value = m.group(2)
            facts.pins[m.group(1)] = {"None": None, "True": True, "False": False}.get(
                value, value if value == "given" else None
            )
            if value.lstrip("-").isdigit():
                facts.pins[m.group(1)] = int(value)
        elif m := _EQUAL.match(text):
            facts.equal[m.group(1)] = m.group(2)
        else:
            raise FlatError(f"a fact of no known form: {text!r}")
    for value in (
        *facts.numel.values(),
        *facts.equal.values(),
        *facts.bounded.values(),
    ):
        _check_size(value)
    return facts


_SIZE_NODES = (ast.Expression, ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Name)
_SIZE_NODES += (ast.Load, ast.Constant, ast.Call)


def _check_size(text: str) -> None:
    """A size is integers, names, ``sum(name)``, ``+ - *`` and parentheses."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise FlatError(f"a size of no known form: {text!r}") from None
    for node in ast.walk(tree):
        ok = isinstance(node, _SIZE_NODES)
        if isinstance(node, ast.Constant):
            ok = type(node.value) is int
        if isinstance(node, ast.Call):
            ok = (
                isinstance(node.func, ast.Name)
                and node.func.id == "sum"
                and len(node.args) == 1
                and isinstance(node.args[0], ast.Name)
                and not node.keywords
            )
        if not ok:
            raise FlatError(f"a size of no known form: {text!r}")


# -- values: an integer (``Num``) and a pointer (``Ptr``) as :mod:`.extent` has
# them, and what a flat writer adds ---------------------------------------------


@dataclass(frozen=True)
class LaneVec:
    """Loads over a lane masked to the lanes below ``pid`` (0 elsewhere):
    ``{pointer: coefficient}``, summed by ``tl.sum`` into prefix sums."""

    lane: sp.Symbol
    terms: tuple[tuple[str, sp.Expr], ...]


@dataclass(frozen=True)
class Unknown:
    why: str


@dataclass(frozen=True)
class Store:
    line: int
    base: str
    offset: sp.Expr
    mask: object  # a Num's expression, or None (no mask), or Unknown/Data
    conds: tuple
    loops: tuple  # (index symbol, lo, hi)
    lanes: tuple  # (lane symbol, count)


@dataclass
class State:
    env: dict
    conds: tuple = ()
    done: bool = False


@dataclass
class Derivation:
    name: str
    pointers: tuple[str, ...]
    outputs: tuple[str, ...]
    loads: dict  # symbol name -> what it is ("lens[b]", "sum of lens before b")
    stores: list[Store]
    notes: list[str]
    lanes: dict  # lane symbol -> count


class _Kernel:
    def __init__(self, node: ast.FunctionDef, aliases: dict, facts: Facts) -> None:
        self.node = node
        self.tl = {n for n, m in aliases.items() if m == "triton.language"}
        self.facts = facts
        self.params = [a.arg for a in node.args.args]
        defaults = node.args.defaults
        self.defaults = dict(
            zip(self.params[len(self.params) - len(defaults) :], defaults, strict=True)
        )
        self.constexpr = {
            a.arg
            for a in node.args.args
            if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)
        }
        self.pointers = _pointers(node, set(self.params) - self.constexpr, self.tl)
        # Pointers the kernel tests (`if kv_start_idx:`): a caller may pass None.
        self.tested = _tested_names(node)
        self.stores: list[Store] = []
        self.notes: list[str] = []
        self.loads: dict = {}
        self.lanes: dict = {}
        self.loops: list = []
        self._fresh = itertools.count()

    # -- the run ---------------------------------------------------------------

    def run(self) -> None:
        states = [State(self._entry())]
        for name in self.params:
            forks = self._forks_of(name)
            if forks:
                states = [
                    State({**s.env, name: value}, s.conds)
                    for s in states
                    for value in forks
                ]
        for state in states:
            self._block(self.node.body, [state])

    def _entry(self) -> dict:
        env = {}
        for name in self.params:
            if name in self.pointers:
                env[name] = Ptr(name, sp.Integer(0))
            elif name in self.facts.pins and self.facts.pins[name] is not None:
                env[name] = Num(sp.sympify(self.facts.pins[name]))
            else:
                env[name] = Num(symbol(name))
        return env

    def _forks_of(self, name: str) -> list:
        """An optional pointer is given or None; a bool flag is either; a fact
        pins either."""
        default = self.defaults.get(name)
        pinned = self.facts.pins.get(name, "unpinned")
        if name in self.pointers and (_is_none(default) or name in self.tested):
            if pinned is None:
                return [NoneValue()]
            if pinned == "given":
                return [Ptr(name, sp.Integer(0))]
            return [NoneValue(), Ptr(name, sp.Integer(0))]
        if isinstance(default, ast.Constant) and isinstance(default.value, bool):
            if isinstance(pinned, bool):
                return [Num(sp.true if pinned else sp.false)]
            return [Num(sp.false), Num(sp.true)]
        return []

    def _block(self, body, states: list[State]) -> list[State]:
        for stmt in body:
            nxt = []
            for state in states:
                if state.done:
                    nxt.append(state)
                    continue
                try:
                    nxt += self._stmt(stmt, state)
                except (TypeError, ValueError, IndexError, KeyError, AttributeError):
                    # A form this reading does not know (keyword arguments,
                    # booleans in arithmetic): named, and what it set unknown.
                    self._note(stmt, "a statement not followed")
                    for name in _bound_names(stmt):
                        state.env = {**state.env, name: Unknown("not followed")}
                    nxt.append(state)
            states = nxt
        return states

    def _stmt(self, stmt, state: State) -> list[State]:
        if isinstance(stmt, ast.Expr):
            if isinstance(stmt.value, ast.Constant):
                return [state]  # a docstring
            self._value(stmt.value, state)
            return [state]
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if stmt.value is None:
                return [state]
            value = self._value(stmt.value, state)
            if isinstance(stmt, ast.AugAssign):
                value = self._binop(
                    stmt.op, self._value(stmt.target, state), value, stmt
                )
            for target in targets:
                if isinstance(target, ast.Name):
                    state.env = {**state.env, target.id: value}
                else:
                    self._note(stmt, "an assignment to something other than a name")
            return [state]
        if isinstance(stmt, ast.If):
            return self._if(stmt, state)
        if isinstance(stmt, ast.Return):
            state.done = True
            return [state]
        if isinstance(stmt, ast.For):
            return self._for(stmt, state)
        if isinstance(stmt, ast.Pass):
            return [state]
        self._note(stmt, f"a `{type(stmt).__name__}` statement")
        return [state]

    def _if(self, stmt: ast.If, state: State) -> list[State]:
        test = self._value(stmt.test, state)
        truth = _truth(test)
        if truth is None:
            self._note(stmt, "a condition on data")
            truth_values = (True, False)
            cond = None
        elif isinstance(truth, bool):
            truth_values = (truth,)
            cond = None
        else:
            cond = truth
            truth_values = (True, False)
        out = []
        for value in truth_values:
            branch = State(dict(state.env), state.conds)
            if cond is not None:
                branch.conds = (*state.conds, cond if value else sp.Not(cond))
            out += self._block(stmt.body if value else stmt.orelse, [branch])
        return out

    def _for(self, stmt: ast.For, state: State) -> list[State]:
        if not isinstance(stmt.target, ast.Name) or not isinstance(stmt.iter, ast.Call):
            self._note(stmt, "a loop over something other than a range")
            return [state]
        call = stmt.iter
        name = self._tl_name(call.func) or _plain_name(call.func)
        args = [self._value(a, state) for a in call.args]
        if any(not isinstance(a, Num) for a in args):
            self._note(stmt, "a range of something other than integers")
            return [state]
        exprs = [a.expr for a in args]
        if name == "static_range" or (
            name == "range" and all(e.is_Integer for e in exprs) and len(exprs) == 1
        ):
            if not exprs or not all(e.is_Integer for e in exprs) or len(exprs) > 3:
                self._note(stmt, "an unrolled range of something other than integers")
                return [state]
            states = [state]
            for k in range(*(int(e) for e in exprs)):
                for s in states:
                    s.env = {**s.env, stmt.target.id: Num(sp.Integer(k))}
                states = self._block(stmt.body, states)
            return states
        if name != "range" or not 1 <= len(exprs) <= 3:
            self._note(stmt, "a loop over something other than range(...)")
            return [state]
        start, stop, step = (
            (sp.Integer(0), exprs[0], sp.Integer(1))
            if len(exprs) == 1
            else (exprs[0], exprs[1], exprs[2] if len(exprs) == 3 else sp.Integer(1))
        )
        if start == BLK and step == NUM_BLK:
            # The programs of axis 1 stride over one request's loop together:
            # between them, every index of [0, stop).
            start, step = sp.Integer(0), sp.Integer(1)
        if step != 1:
            self._note(stmt, "a loop whose step is not 1")
            return [state]
        index = symbol(f"{stmt.target.id}{next(self._fresh)}")
        entry = dict(state.env)
        body = State({**entry, stmt.target.id: Num(index)}, state.conds)
        advanced = dict(_advanced(stmt.body))
        for name in _carried(stmt.body, entry) - set(advanced):
            # Set from its own last iteration's value: one symbolic run of the
            # body does not see it.
            self._note(stmt, f"`{name}` carried from one iteration to the next")
            body.env[name] = Unknown("carried by the loop")
        for target, increment in advanced.items():
            before = entry.get(target)
            inc = self._value(increment, State(entry))
            if isinstance(before, (Num, Ptr)) and isinstance(inc, Num):
                moved = (index - start) * inc.expr
                body.env[target] = (
                    Num(before.expr + moved)
                    if isinstance(before, Num)
                    else Ptr(before.base, before.offset + moved)
                )
            else:
                self._note(stmt, f"`{target}` advanced by the loop cannot be followed")
        self.loops.append((index, start, stop))
        try:
            # The trailing advances are the model's (x0 + steps * c), not run.
            kept = [
                s for s in stmt.body if not (_is_advance(s) and s.target.id in advanced)
            ]
            outs = self._block(kept, [body])
        finally:
            self.loops.pop()
        # After the loop, what it changed holds no value this run follows.
        after = []
        for out in outs:
            env = dict(entry)
            for key, value in out.env.items():
                if key not in entry or entry[key] != value:
                    env[key] = Unknown("changed by a loop")
            after.append(State(env, state.conds))
        return after or [state]

    # -- expressions -------------------------------------------------------------

    def _value(self, node, state: State):
        if isinstance(node, ast.Constant):
            if node.value is None:
                return NoneValue()
            if isinstance(node.value, bool):
                return Num(sp.true if node.value else sp.false)
            if isinstance(node.value, int):
                return Num(sp.Integer(node.value))
            return Unknown("a constant that is no integer")
        if isinstance(node, ast.Name):
            return state.env.get(node.id, Unknown(f"`{node.id}`"))
        if isinstance(node, ast.BinOp):
            return self._binop(
                node.op,
                self._value(node.left, state),
                self._value(node.right, state),
                node,
            )
        if isinstance(node, ast.UnaryOp):
            value = self._value(node.operand, state)
            if isinstance(value, Num):
                if isinstance(node.op, ast.USub):
                    return Num(-value.expr)
                if isinstance(node.op, ast.Not):
                    return Num(sp.Not(value.expr))
            return value if isinstance(value, Data) else Unknown("a unary operator")
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left = self._value(node.left, state)
            right = self._value(node.comparators[0], state)
            op = node.ops[0]
            if isinstance(op, (ast.Is, ast.IsNot)):
                if isinstance(right, NoneValue):
                    is_none = isinstance(left, NoneValue)
                    return Num(
                        sp.true if is_none == isinstance(op, ast.Is) else sp.false
                    )
                return Unknown("an identity test")
            if isinstance(left, Num) and isinstance(right, Num):
                return Num(_compare(op, left.expr, right.expr))
            if isinstance(left, Data) or isinstance(right, Data):
                return Data()
            return Unknown("a comparison")
        if isinstance(node, ast.BoolOp):
            values = [self._value(v, state) for v in node.values]
            if all(isinstance(v, Num) for v in values):
                join = sp.And if isinstance(node.op, ast.And) else sp.Or
                return Num(join(*(v.expr for v in values)))
            return Unknown("a boolean operator")
        if isinstance(node, ast.Call):
            return self._call(node, state)
        if isinstance(node, ast.IfExp):
            test = _truth(self._value(node.test, state))
            if isinstance(test, bool):
                return self._value(node.body if test else node.orelse, state)
            self._note(node, "a conditional expression not decided")
            return Unknown("a conditional expression")
        return Unknown(type(node).__name__)

    def _binop(self, op, left, right, node):
        if isinstance(left, Unknown) or isinstance(right, Unknown):
            return left if isinstance(left, Unknown) else right
        if isinstance(left, NoneValue) or isinstance(right, NoneValue):
            return NoneValue()  # an absent pointer: its store never runs
        if isinstance(op, ast.BitAnd) and {type(left), type(right)} == {Num, Data}:
            # A write where both hold: the part on data only narrows it.
            kept = left if isinstance(left, Num) else right
            return Num(sp.And(kept.expr, _DATA))
        if isinstance(left, Data) or isinstance(right, Data):
            return Data()
        if (
            isinstance(op, ast.BitAnd)
            and isinstance(left, Num)
            and isinstance(right, Num)
        ):
            return Num(sp.And(left.expr, right.expr))
        if (
            isinstance(op, ast.BitOr)
            and isinstance(left, Num)
            and isinstance(right, Num)
        ):
            return Num(sp.Or(left.expr, right.expr))
        if isinstance(left, Ptr) and isinstance(right, Num):
            if isinstance(op, ast.Add):
                return Ptr(left.base, left.offset + right.expr)
            if isinstance(op, ast.Sub):
                return Ptr(left.base, left.offset - right.expr)
        if isinstance(right, Ptr) and isinstance(left, Num) and isinstance(op, ast.Add):
            return Ptr(right.base, right.offset + left.expr)
        if isinstance(left, Num) and isinstance(right, Num):
            a, b = left.expr, right.expr
            if isinstance(op, ast.Add):
                return Num(a + b)
            if isinstance(op, ast.Sub):
                return Num(a - b)
            if isinstance(op, ast.Mult):
                return Num(a * b)
            if isinstance(op, (ast.FloorDiv, ast.Mod)):
                # Triton truncates toward zero, sympy floors: equal where the
                # dividend is nonnegative (every size, the divisor too, is).
                if not nonneg(a):
                    self._note(node, "a division of what may be negative")
                    return Unknown("a division")
                if isinstance(op, ast.FloorDiv):
                    return Num(sp.floor(a / b))
                return Num(sp.Mod(a, b))
        if (
            isinstance(left, LaneVec)
            and isinstance(right, LaneVec)
            and left.lane == right.lane
            and isinstance(op, (ast.Add, ast.Sub))
        ):
            sign = 1 if isinstance(op, ast.Add) else -1
            terms = dict(left.terms)
            for name, coeff in right.terms:
                terms[name] = terms.get(name, 0) + sign * coeff
            return LaneVec(left.lane, tuple(sorted(terms.items())))
        if isinstance(op, ast.Mult):
            vec, num = (left, right) if isinstance(left, LaneVec) else (right, left)
            if isinstance(vec, LaneVec) and isinstance(num, Num):
                return LaneVec(vec.lane, tuple((n, c * num.expr) for n, c in vec.terms))
        self._note(node, "an operation on pointers or lanes not followed")
        return Unknown("an operation")

    def _call(self, node: ast.Call, state: State):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "to":
            value = self._value(func.value, state)
            kind = ast.unparse(node.args[0]) if node.args else ""
            if isinstance(value, Num) and not kind.endswith(_WIDE_INTS):
                self._note(
                    node, f"a cast to {kind or 'a type'} (may not keep the value)"
                )
                return Unknown("a narrowing cast")
            return value
        name = self._tl_name(func)
        if name is None:
            self._note(node, f"a call of `{ast.unparse(func)}`")
            return Unknown("a call")
        kwargs = {k.arg: k.value for k in node.keywords}
        if name in ("program_id", "num_programs"):
            axis = node.args[0] if node.args else kwargs.get("axis")
            axis = axis.value if isinstance(axis, ast.Constant) else None
            table = (B, BLK) if name == "program_id" else (PROGRAMS, NUM_BLK)
            if axis in (0, 1):
                return Num(table[axis])
            self._note(node, f"`{name}` of an axis other than 0 or 1")
            return Unknown(name)
        if name == "arange":
            lo, hi = (self._value(a, state) for a in node.args[:2])
            if not (isinstance(lo, Num) and isinstance(hi, Num) and lo.expr == 0):
                self._note(node, "a tl.arange not from 0")
                return Unknown("arange")
            # Two aranges of one length are one vector: their lanes line up.
            lane = symbol(f"lane_{hi.expr}".replace(" ", ""))
            self.lanes[lane] = hi.expr
            return Num(lane)
        if name == "cdiv":
            a, b = (self._value(x, state) for x in node.args[:2])
            if isinstance(a, Num) and isinstance(b, Num):
                return Num(sp.ceiling(a.expr / b.expr))
            return Unknown("cdiv")
        if name in ("minimum", "maximum"):
            a, b = (self._value(x, state) for x in node.args[:2])
            if isinstance(a, Num) and isinstance(b, Num):
                return Num((sp.Min if name == "minimum" else sp.Max)(a.expr, b.expr))
            return Data() if Data() in (a, b) else Unknown(name)
        if name == "load":
            return self._load(node, kwargs, state)
        if name == "store":
            self._store(node, kwargs, state)
            return NoneValue()
        if name == "sum":
            value = self._value(node.args[0], state)
            if isinstance(value, LaneVec):
                return self._prefix_sum(value, node)
            return Data() if isinstance(value, Data) else Unknown("tl.sum")
        self._note(node, f"a call of `tl.{name}`")
        return Unknown(name)

    def _load(self, node, kwargs, state):
        pointer = self._value(node.args[0] if node.args else kwargs["pointer"], state)
        mask = kwargs.get("mask", node.args[1] if len(node.args) > 1 else None)
        other = kwargs.get("other", node.args[2] if len(node.args) > 2 else None)
        if not isinstance(pointer, Ptr):
            return Data()
        offset = sp.expand(pointer.offset)
        if offset == B:
            return Num(self._own_entry(pointer.base))
        lanes = [s for s in offset.free_symbols if s in self.lanes]
        if len(lanes) == 1 and offset == lanes[0] and mask is not None:
            lane = lanes[0]
            masked = self._value(mask, state)
            zero = other is not None and self._value(other, state) == Num(sp.Integer(0))
            below = (sp.StrictLessThan(lane, B), sp.StrictGreaterThan(B, lane))
            if isinstance(masked, Num) and masked.expr in below and zero:
                return LaneVec(lane, ((pointer.base, sp.Integer(1)),))
        return Data()

    def _own_entry(self, base: str) -> sp.Symbol:
        prefix = self.facts.prefix.get(base)
        if prefix is not None:
            total = symbol(f"sum_{prefix}_before_b")
            self.loads[total.name] = f"the sum of {prefix}[j] over j < b"
            self.loads[f"{base}[b]"] = f"{base}[b] = sum of {prefix}[j], j < b"
            return total
        own = symbol(f"{base}[b]")
        self.loads[own.name] = f"{base}[b], program b's own entry"
        return own

    def _prefix_sum(self, vec: LaneVec, node) -> Num | Unknown:
        count = self.lanes[vec.lane]
        name = str(count)
        if name not in self.facts.covers:
            self._note(
                node,
                f"a sum over tl.arange(0, {name}) masked below the program: the "
                f"earlier programs only if {name} >= programs (a fact)",
            )
            return Unknown("a prefix sum")
        total = sp.Integer(0)
        for base, coeff in vec.terms:
            before = symbol(f"sum_{base}_before_b")
            self.loads[before.name] = f"the sum of {base}[j] over j < b"
            total += coeff * before
        return Num(total)

    def _store(self, node, kwargs, state: State) -> None:
        pointer = self._value(node.args[0] if node.args else kwargs["pointer"], state)
        mask_node = kwargs.get("mask", node.args[2] if len(node.args) > 2 else None)
        mask = None if mask_node is None else self._value(mask_node, state)
        if isinstance(pointer, NoneValue):
            return  # a store to an absent output: that path never runs it
        if not isinstance(pointer, Ptr):
            self._note(node, "a store whose address is not followed")
            return
        self.stores.append(
            Store(
                node.lineno,
                pointer.base,
                sp.expand(pointer.offset),
                mask.expr
                if isinstance(mask, Num)
                else (None if mask is None else mask),
                state.conds,
                tuple(self.loops),
                tuple(self.lanes.items()),
            )
        )

    def _tl_name(self, func) -> str | None:
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in self.tl
        ):
            return func.attr
        if isinstance(func, ast.Name) and func.id == "range":
            return "range"
        return None

    def _note(self, node, what: str) -> None:
        line = getattr(node, "lineno", 0)
        text = f"line {line}: {what}"
        if text not in self.notes:
            self.notes.append(text)


def _plain_name(func) -> str | None:
    return func.id if isinstance(func, ast.Name) else None


def _is_none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _truth(value):
    """True/False when decided, a sympy condition, or None (data, unknown)."""
    if isinstance(value, NoneValue):
        return False
    if isinstance(value, Ptr):
        return True
    if isinstance(value, Num):
        expr = value.expr
        if expr in (sp.true, sp.false):
            return bool(expr)
        if expr.is_Integer:
            return bool(expr != 0)
        if expr.is_Relational or isinstance(expr, (sp.And, sp.Or, sp.Not)):
            return expr
        return sp.Ne(expr, 0)
    return None


def _compare(op, a, b):
    table = {
        ast.Lt: sp.StrictLessThan,
        ast.LtE: sp.LessThan,
        ast.Gt: sp.StrictGreaterThan,
        ast.GtE: sp.GreaterThan,
        ast.Eq: sp.Eq,
        ast.NotEq: sp.Ne,
    }
    return table[type(op)](a, b)


def _advanced(body) -> list[tuple[str, ast.expr]]:
    """``x += c`` at the end of a loop's body (after every other statement),
    each name once, ``c`` naming nothing the body assigns: ``x`` is then its
    value at entry plus ``c`` per iteration before."""
    tail = []
    for stmt in reversed(body):
        if not _is_advance(stmt):
            break
        tail.append(stmt)
    assigned: set[str] = set()
    for stmt in body:
        assigned |= _bound_names(stmt)
    names = [s.target.id for s in tail]
    found = []
    for stmt in reversed(tail):
        name = stmt.target.id
        free = {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
        others = [s for s in body if s not in tail and name in _bound_names(s)]
        if names.count(name) == 1 and not others and not free & assigned:
            found.append((name, stmt.value))
    return found


def _carried(body, entry: dict) -> set[str]:
    """Names bound before the loop that its body assigns again."""
    assigned: set[str] = set()
    for stmt in body:
        assigned |= _bound_names(stmt)
    return {name for name in assigned if name in entry}


def _bound_names(stmt) -> set[str]:
    """Every name a statement (and the statements inside it) binds."""
    found: set[str] = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
    return found


def _is_advance(stmt) -> bool:
    return (
        isinstance(stmt, ast.AugAssign)
        and isinstance(stmt.op, ast.Add)
        and isinstance(stmt.target, ast.Name)
    )


def _tested_names(node: ast.FunctionDef) -> set[str]:
    """Names tested for truth or against None in an ``if``."""
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, (ast.If, ast.IfExp)):
            test = sub.test
            if isinstance(test, ast.Name):
                found.add(test.id)
            elif (
                isinstance(test, ast.Compare)
                and isinstance(test.left, ast.Name)
                and len(test.ops) == 1
                and isinstance(test.ops[0], (ast.Is, ast.IsNot))
            ):
                found.add(test.left.id)
    return found


def _pointers(node: ast.FunctionDef, params: set[str], tl: set[str]) -> tuple[str, ...]:
    """The arguments standing alone as a term of a load's or store's address
    (through the locals assigned from such sums)."""
    assigned: dict[str, list[ast.expr]] = {}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assign):
            for target in sub.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(sub.value)

    def terms(expr, seen) -> set[str]:
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
            return terms(expr.left, seen) | terms(expr.right, seen)
        if isinstance(expr, ast.Name):
            if expr.id in params:
                return {expr.id}
            if expr.id in assigned and expr.id not in seen:
                return set().union(
                    *(terms(v, seen | {expr.id}) for v in assigned[expr.id])
                )
        return set()

    found: set[str] = set()
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Call)
            and isinstance(sub.func, ast.Attribute)
            and isinstance(sub.func.value, ast.Name)
            and sub.func.value.id in tl
            and sub.func.attr in ("load", "store")
            and sub.args
        ):
            found |= terms(sub.args[0], set())
    return tuple(a.arg for a in node.args.args if a.arg in found)


# -- the derivation ------------------------------------------------------------


def find_kernel(text: str, name: str, filename: str) -> tuple[ast.FunctionDef, dict]:
    tree = ast.parse(text, filename=filename)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node, _triton_aliases(tree)
    raise FlatError(f"{filename}: no top-level def {name}")


def derive(
    text: str, name: str, facts: Facts, filename: str = "<kernel>"
) -> Derivation:
    node, aliases = find_kernel(text, name, filename)
    kernel = _Kernel(node, aliases, facts)
    kernel.run()
    outputs = tuple(dict.fromkeys(s.base for s in kernel.stores))
    return Derivation(
        name,
        kernel.pointers,
        outputs,
        kernel.loads,
        kernel.stores,
        kernel.notes,
        kernel.lanes,
    )
