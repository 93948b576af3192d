"""A torch allocation read as per-step rows, one :class:`Row` per path.

The allocator is followed through aliases and ``functools.partial``
(:mod:`lint_plugin.engine.flow.known_values`), the shape read in every spelling (a
tuple, a list, ``torch.Size``, starred parts, concatenation, a shape variable,
``size=``, varargs), and a buffer is per step when its first dimension is a step count,
a flat buffer is steps times a row, a flat buffer is viewed per step, or a row is made
once per step (a comprehension or a loop over the steps). KVI003 judges each row's width
(:mod:`lint_plugin.engine.flow.row_sizing`).
"""

from __future__ import annotations

import ast
import itertools
import math
from collections.abc import Callable

from lint_plugin.algebra import symbolic as sy
from lint_plugin.algebra.symbolic import Const, Expr, Op, Sym, Tup
from lint_plugin.engine.allocations import (
    file_allocating_functions,
    file_allocator_aliases,
    is_allocation,
    may_call_allocating,
)
from lint_plugin.engine.facts import ModuleFacts
from lint_plugin.engine.flow.alternatives import MAX_ALTS, Alt, Frame, Ref, is_int
from lint_plugin.engine.flow.known_values import (
    ALLOCATORS,
    REPEATS,
    RESHAPES,
    SHAPE_FIRST,
    last_name,
    literal_dims,
)
from lint_plugin.engine.flow.scopes import REACH
from lint_plugin.engine.flow.step_counts import (
    CallParameters,
    may_hold_steps,
    unwalked_call_test,
)
from lint_plugin.engine.flow.widths import Analysis
from lint_plugin.engine.nodes import walk_nodes
from lint_plugin.roles import Role, other_buffer_of


class Row:
    """One path of an allocation read as per-step rows: ``width`` is a row's
    value; ``shown`` the node a finding points at; ``written`` the width's own
    node when the shape spells it as the second of two dimensions (the unsafe
    fix sizes it where it is made: ``site``); ``rows``: the rows of the
    definitions the width was followed through; ``how``: ``steps`` (a steps
    dimension first), ``flat`` (steps times the row), ``loop`` (one allocation
    per step), ``view`` (a flat buffer viewed per step)."""

    __slots__ = (
        "conds",
        "how",
        "made_by",
        "origin",
        "rows",
        "shown",
        "site",
        "width",
        "written",
    )

    def __init__(
        self, width, conds, rows, site, shown, written, how, origin=None, made_by=None
    ) -> None:
        self.width = width
        self.conds = conds
        self.rows = rows
        self.site = site
        self.shown = shown
        self.written = written
        self.how = how
        # Made by a function of the file the allocation calls: the allocation
        # in it (its rows are judged apart from the others') and the call.
        self.origin = origin
        self.made_by = made_by


def is_steps(value: Expr) -> bool:
    """A draft step count, give or take a constant (``num_steps - 1``)."""
    if isinstance(value, Sym):
        return value.role is Role.NUM_STEPS
    return (
        isinstance(value, Op)
        and value.kind == "+"
        and len(value.args) == 2
        and isinstance(value.args[1], Const)
        and isinstance(value.args[0], Sym)
        and value.args[0].role is Role.NUM_STEPS
    )


def _without_steps(value: Expr) -> Expr | None:
    """``steps * w`` (in any order) as ``w``."""
    factors = (
        list(value.args) if isinstance(value, Op) and value.kind == "*" else [value]
    )
    steps = [f for f in factors if is_steps(f)]
    if len(steps) != 1:
        return None
    factors.remove(steps[0])
    return sy.mul(*factors) if factors else Const(1)


def _divide(total: Expr, divisor: Expr) -> Expr | None:
    factors = (
        list(total.args) if isinstance(total, Op) and total.kind == "*" else [total]
    )
    if divisor in factors:
        factors.remove(divisor)
        return sy.mul(*factors) if factors else Const(1)
    return None


class _Shape:
    __slots__ = ("conds", "dims", "rows", "shown", "width_alt", "written")

    def __init__(self, dims, width_alt, conds, rows, shown, written) -> None:
        self.dims = dims
        self.width_alt = width_alt
        self.conds = conds
        self.rows = rows
        self.shown = shown
        self.written = written


def allocation_rows(
    analysis: Analysis, function, call: ast.Call, inner: InnerCalls | None = None
) -> list[Row] | None:
    """The per-step rows an allocation call makes, one per path; None when it
    is no allocation (or none of its paths is per step). With ``inner``, a
    call of a function or method of the file is read as the allocations it
    makes (see ``_helper_rows``)."""
    frame = analysis.frame_of(function)
    return _rows(analysis, frame, call, _walked_test(analysis, function), inner)


# May this dimension, in the frame it is read in, hold a draft step count? A
# quick test before any value is computed (it may say maybe, never wrongly no).
StepsTest = Callable[[ast.expr], bool]


def _walked_test(analysis: Analysis, function) -> StepsTest:
    return lambda node: may_hold_steps(analysis, node, function)


def _walked_call_test(analysis: Analysis, function, call) -> StepsTest:
    return lambda node: may_hold_steps(analysis, node, function, call)


def _rows(
    analysis: Analysis,
    frame: Frame,
    call: ast.Call,
    may_be_steps: StepsTest,
    inner: InnerCalls | None,
) -> list[Row] | None:
    """``allocation_rows`` in ``frame``."""
    stmt = analysis.statement(frame, call)
    text = frame.scope.source.segment(stmt) if stmt is not None else ""
    loop = _per_step_loop(analysis, frame, stmt, call, text)
    viewed = any(w in text for w in _AFTER_WORDS) and _viewed(call, stmt)
    func = call.func
    if inner is not None and not inner.may_make_rows(call, may_be_steps):
        return None  # `self._alloc_rows(w)` with no step count where it could be
    if (
        not (loop or viewed)
        and isinstance(func, ast.Attribute)
        and func.attr in ALLOCATORS
        and not any(map(may_be_steps, _first_dims(call)))
    ):
        return None  # torch.zeros((max_bs, n)): no step count where it could be
    callees = analysis.values(call.func, frame, stmt)
    allocators = [
        c
        for c in callees
        if isinstance(c.value, Ref) and c.value.kind in ("alloc", "partial")
    ]
    if not allocators:
        if inner is None:
            return None
        return _helper_rows(analysis, frame, stmt, call, callees, inner, may_be_steps)
    found: list[Row] = []
    reach = None
    for allocator in allocators:
        for shape in shapes(
            analysis, allocator.value, call, frame, stmt, loop or viewed, may_be_steps
        ):
            if reach is None:
                reach = reach_conditions(frame, stmt)
            shape.conds |= allocator.conds
            row = _per_step(analysis, shape, call, frame, stmt, loop)
            if row is None:
                continue
            for conds in reach:
                found.append(
                    Row(
                        row[0],
                        shape.conds | conds,
                        shape.rows,
                        row[1],
                        shape.shown,
                        shape.written,
                        row[2],
                    )
                )
    return found or None


def reach_conditions(frame: Frame, stmt) -> list[frozenset]:
    """The sets of branch conditions under which ``stmt`` runs in ``frame``."""
    return [
        frozenset((k, n, p, frame) for k, n, p in fact.conds)
        for fact in (frame.scope.flow(REACH).reached(stmt) if stmt is not None else ())
    ] or [frozenset()]


def _helper_rows(
    analysis: Analysis,
    frame: Frame,
    stmt,
    call: ast.Call,
    callees,
    inner: InnerCalls,
    may_be_steps: StepsTest,
) -> list[Row] | None:
    """A call of a function or method of the file that allocates
    (``self._alloc_rows(max_bs * self.max_context_len)``): the per-step rows
    its allocations make with the values this call gives its parameters,
    shown at the argument a row's width is (else at the call). No fix is
    offered there. A method of the class is judged where it allocates too:
    only what the call changes is judged at the call."""
    found: list[Row] = []
    reach = None
    for callee in callees:
        ref = callee.value
        if not (isinstance(ref, Ref) and ref.kind in ("function", "method")):
            continue
        node, where = ref.payload
        made = inner(node)
        if not made:
            continue
        method = ref.kind == "method"
        bound = analysis.call_frame(node, where, call, frame, stmt, method)
        if bound is None:
            continue
        callee_frame, given = bound
        walked = inner.walked(node)
        if walked is not None:

            def given_steps(name: str, given=given) -> bool:
                # A parameter left to its default: its default may be one.
                return name not in given or may_be_steps(given[name])

            in_call = _walked_call_test(
                analysis, walked, CallParameters(callee_frame, walked, given_steps)
            )
        else:
            in_call = unwalked_call_test(callee_frame.scope, given, may_be_steps)
        if not _plain(node):
            continue  # a decorator may change what it is given
        for inner_call in made:
            rows = _rows(analysis, callee_frame, inner_call, in_call, inner) or []
            if rows and not _the_calls_buffer(analysis, callee_frame, inner_call):
                continue
            if rows and method and callee_frame.instance is None:
                own = analysis._frame(callee_frame.scope)
                alone = _rows(analysis, own, inner_call, _maybe, inner) or []
                rows = [
                    r
                    for r in rows
                    if not any(r.width == a.width and r.how == a.how for a in alone)
                ]
            if rows and reach is None:
                reach = reach_conditions(frame, stmt)
            for row in rows:
                shown = row.shown
                shown = (
                    given[shown.id]
                    if isinstance(shown, ast.Name)
                    and shown.id in given
                    and not callee_frame.scope._may_bind(shown.id)
                    else call
                )
                for conds in reach or ():
                    found.append(
                        Row(
                            row.width,
                            row.conds | callee.conds | conds,
                            row.rows,
                            None,
                            shown,
                            None,
                            row.how,
                            row.origin or inner_call,
                            call,
                        )
                    )
    return found or None


def _maybe(node: ast.expr) -> bool:
    return True


def _plain(function) -> bool:
    """Is the function called as written: no decorator but ``staticmethod`` or
    ``classmethod``?"""
    return all(
        isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")
        for d in function.decorator_list
    )


def _the_calls_buffer(analysis: Analysis, frame: Frame, made: ast.Call) -> bool:
    """Is the tensor ``made`` in a function the one its call hands over: what
    it returns (alone, not in a tuple), a local it returns, or what it assigns
    to an attribute not named as another per-step buffer (``self.kv_indptr``)?
    A scratch local, a tuple's element, is not (which buffer it becomes is
    the caller's unpacking's). Any other statement (a row appended to a
    list) is read as it is in place."""
    stmt = analysis.statement(frame, made)
    if isinstance(stmt, ast.Return):
        return not isinstance(stmt.value, (ast.Tuple, ast.List, ast.Dict))
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AnnAssign):
        targets = [stmt.target]
    else:
        return True
    for target in targets:
        if isinstance(target, ast.Attribute):
            if other_buffer_of(target.attr):
                return False
        elif not (isinstance(target, ast.Name) and _returned(frame, target.id)):
            return False
    return True


def _returned(frame: Frame, name: str) -> bool:
    """Does the function return the local ``name`` itself (``return name``)?
    Asked only of a buffer that makes per-step rows."""
    return any(
        isinstance(node, ast.Return)
        and isinstance(node.value, ast.Name)
        and node.value.id == name
        for node in walk_nodes(frame.scope.node)
    )


def _per_step(
    analysis: Analysis, shape: _Shape, call, frame, stmt, loop
) -> tuple | None:
    """``(width, site, how)`` when the shape is per step on this path."""
    dims = shape.dims
    site = shape.width_alt.site if shape.width_alt is not None else None
    if len(dims) >= 2 and is_steps(dims[0]):
        return sy.mul(*dims[1:]), site if len(dims) == 2 else None, "steps"
    if len(dims) == 1:
        width = _without_steps(dims[0])
        if width is not None:
            return width, None, "flat"
    viewed = _view(analysis, call, frame, stmt, dims)
    if viewed is not None:
        return viewed, None, "view"
    repeated = _repeat(analysis, call, frame, stmt, dims)
    if repeated is not None:
        return repeated, None, "repeat"
    if loop and dims:
        return sy.mul(*dims), site if len(dims) == 1 else None, "loop"
    return None


def shapes(
    analysis: Analysis,
    ref: Ref,
    call: ast.Call,
    frame: Frame,
    stmt,
    any_first: bool,
    may_be_steps: StepsTest | None = None,
) -> list[_Shape]:
    """The dimensions an allocator call asks for, on each path (only those
    whose first dimension is a step count, unless ``any_first``: a single
    dimension, a loop over the steps, a view)."""
    name = ref.name
    args: list[tuple[ast.expr, Frame, object]] = []
    keywords: dict[str, tuple[ast.expr, Frame, object]] = {}
    own_args = True
    if ref.kind == "partial":
        _, partial, p_frame, p_stmt = ref.payload
        args += [(a, p_frame, p_stmt) for a in partial.args[1:]]
        keywords.update(
            (k.arg, (k.value, p_frame, p_stmt)) for k in partial.keywords if k.arg
        )
        own_args = not args
    args += [(a, frame, stmt) for a in call.args]
    keywords.update((k.arg, (k.value, frame, stmt)) for k in call.keywords if k.arg)
    if any(isinstance(a, ast.Starred) for a, _, _ in args[:1]) and len(args) == 1:
        spec = [args[0]]
        literal = None
    elif "size" in keywords:
        spec = [keywords["size"]]
        literal = literal_dims(keywords["size"][0])
    elif not args:
        return []
    elif name in SHAPE_FIRST or (name == "randint" and len(args) >= 2):
        spec = [args[-1]] if name == "randint" else [args[0]]
        literal = literal_dims(spec[0][0])
    elif len(args) == 1:
        spec = [args[0]]
        literal = literal_dims(args[0][0])
    else:
        spec = args  # varargs: each argument a dimension
        literal = (
            [a for a, _, _ in args]
            if own_args and not any(isinstance(a, ast.Starred) for a, _, _ in args)
            else None
        )
    if literal is not None:
        # Each dimension on its own: the width's path keeps its site and rows.
        where = spec[0][1:] if len(spec) == 1 else (frame, stmt)
        if not any_first and may_be_steps is not None and where[0] is frame:
            # Most allocations are not per step: their first dimension (or a
            # flat one's factors) holds no step count, often plainly so.
            if not may_be_steps(literal[0]):
                return []
            if len(literal) >= 2 and not any(
                is_steps(a.value) for a in analysis.values(literal[0], *where)
            ):
                return []
        parts = [analysis.values(d, *where) for d in literal]
        if math.prod(len(p) for p in parts) > MAX_ALTS:
            return [
                _Shape(
                    [sy.opaque_symbol("(too many paths)", "shape")] * len(literal),
                    None,
                    frozenset(),
                    (),
                    literal[-1],
                    None,
                )
            ]
        shapes = []
        for combination in itertools.product(*parts):
            width_alt = combination[1] if len(combination) >= 2 else combination[0]
            dims = [a.value for a in combination]
            if not all(map(is_int, dims)):
                continue
            conds = frozenset().union(*(a.conds for a in combination))
            shown = literal[1] if len(literal) >= 2 else literal[0]
            written = (
                literal[1]
                if len(literal) == 2
                else (literal[0] if len(literal) == 1 else None)
            )
            if width_alt.site is None and written is not None:
                # Written here: the width is made where the shape spells it.
                width_alt = Alt(
                    width_alt.value,
                    width_alt.conds,
                    width_alt.rows,
                    (written, where[0].scope),
                )
            shapes.append(
                _Shape(dims, width_alt, conds, width_alt.rows, shown, written)
            )
        return shapes
    if len(spec) == 1:
        node, where_frame, where_stmt = spec[0]
        target = node.value if isinstance(node, ast.Starred) else node
        alts = analysis.values(target, where_frame, where_stmt)
    else:
        alts = analysis._tuple([a for a, _, _ in spec], frame, stmt)
        node = call
    shapes = []
    for alt in alts:
        value = alt.value
        dims = list(value.items) if isinstance(value, Tup) else [value]
        if not dims or not all(map(is_int, dims)):
            continue
        shown = node if not isinstance(node, ast.Call) else _width_argument(call)
        shapes.append(_Shape(dims, None, alt.conds, alt.rows, shown, None))
    return shapes


def _width_argument(call: ast.Call) -> ast.expr:
    """What a message names as the width of varargs dimensions: the second
    argument (``dims`` in ``zeros(steps, *dims)``), or the first where a
    starred one comes first and the second dimension's argument is unknown."""
    first = call.args[0]
    if isinstance(first, ast.Starred) or len(call.args) < 2:
        return first.value if isinstance(first, ast.Starred) else first
    second = call.args[1]
    return second.value if isinstance(second, ast.Starred) else second


def _first_dims(call: ast.Call) -> list[ast.expr]:
    """Where a per-step allocation's step count must be, as the call is
    written: the first dimension of a shape of several, or the one dimension
    of a flat buffer (anything else, say a shape variable, whole)."""
    attr = call.func.attr  # type: ignore[attr-defined]
    shape = next((k.value for k in call.keywords if k.arg == "size"), None)
    if shape is None:
        if not call.args or any(isinstance(a, ast.Starred) for a in call.args):
            return [*call.args, *(k.value for k in call.keywords)]
        if attr in SHAPE_FIRST or len(call.args) == 1:
            shape = call.args[0]
        elif attr == "randint":
            shape = call.args[-1]
        else:
            return [call.args[0]]  # varargs: the first is the steps
    dims = literal_dims(shape)
    if dims is None:
        return [shape]
    return dims[:1]


_AFTER_WORDS = ("view", "reshape", "repeat", "expand")


def _viewed(call: ast.Call, stmt) -> bool:
    """Is the allocation the receiver of ``.view``/``.reshape`` (or of
    ``.repeat``/``.expand``)?"""
    if stmt is None or call.end_lineno is None:
        return False
    if not (
        isinstance(
            stmt, ast.Assign | ast.AnnAssign | ast.Expr | ast.Return | ast.AugAssign
        )
    ):
        return False
    return any(
        isinstance(node, ast.Attribute)
        and node.value is call
        and (node.attr in RESHAPES or node.attr in REPEATS)
        for node in walk_nodes(stmt)
    )


def _one_value(alts: list[Alt]) -> Expr | None:
    """The value every path gives (the paths of a step count unpacked with
    a width that differs by path give one), else None."""
    values = {a.value for a in alts}
    return values.pop() if len(values) == 1 else None


def _view(analysis: Analysis, call, frame: Frame, stmt, dims) -> Expr | None:
    """``alloc(n).view(steps, -1)`` (or ``.reshape``) on the allocation itself."""
    parts = _sizes(analysis, call, frame, stmt, RESHAPES)
    if parts is None:
        return None
    _, parts = parts
    if len(parts) < 2 or not is_steps(parts[0]):
        return None
    rest = parts[1:]
    if Const(-1) in rest:
        if rest != [Const(-1)]:
            return None
        return _divide(sy.mul(*dims), parts[0])
    return sy.mul(*rest)


def _repeat(analysis: Analysis, call, frame: Frame, stmt, dims) -> Expr | None:
    """The row of ``alloc(w).repeat(steps, 1)`` or ``alloc((1, w)).expand(steps,
    -1)`` on the allocation itself: its sizes from the right against the
    allocation's (``repeat`` multiplies, ``expand`` keeps a -1), a new leading
    size for each extra one; per step when the first is the step count."""
    found = _sizes(analysis, call, frame, stmt, REPEATS)
    if found is None:
        return None
    method, parts = found
    if len(parts) < max(2, len(dims)) or not is_steps(parts[0]):
        return None
    padded = [Const(1)] * (len(parts) - len(dims)) + list(dims)
    if method == "repeat":
        shape = [sy.mul(d, r) for d, r in zip(padded, parts, strict=True)]
    else:
        if Const(-1) in parts[: len(parts) - len(dims)]:
            return None  # a new leading size cannot be -1
        shape = [d if r == Const(-1) else r for d, r in zip(padded, parts, strict=True)]
    return sy.mul(*shape[1:])


# What may follow a view or a repeat of the allocation in the statement that
# keeps it: methods that keep a tensor's shape (any other, an index, `.T`,
# and the rows read are no longer the ones made).
_KEEP_SHAPE = frozenset(
    {"contiguous", "to", "cuda", "cpu", "clone", "detach", "fill_", "zero_", "int"}
)


def _sizes(
    analysis: Analysis, call, frame: Frame, stmt, methods: frozenset[str]
) -> tuple[str, list[Expr]] | None:
    """``(method, sizes)`` of the call of one of ``methods`` on the allocation
    itself, read the same on every path, where only shape-keeping methods
    follow it in ``stmt``; None otherwise."""
    if stmt is None:
        return None
    parents = {id(c): n for n in walk_nodes(stmt) for c in ast.iter_child_nodes(n)}
    for node in walk_nodes(stmt):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.value is call
            and node.func.attr in methods
            and not node.keywords
        ):
            if not _kept(node, parents):
                return None
            sizes = analysis._tuple(
                node.args[0].elts
                if len(node.args) == 1
                and isinstance(node.args[0], (ast.Tuple, ast.List))
                else node.args,
                frame,
                stmt,
            )
            value = _one_value(sizes)
            if not isinstance(value, Tup):
                return None
            return node.func.attr, list(value.items)
    return None


def _kept(node: ast.AST, parents: dict) -> bool:
    """Is what ``node`` makes what its statement keeps, up to shape-keeping
    methods (``.contiguous()``)?"""
    while True:
        parent = parents.get(id(node))
        if isinstance(parent, ast.Attribute):
            caller = parents.get(id(parent))
            if (
                parent.attr in _KEEP_SHAPE
                and isinstance(caller, ast.Call)
                and caller.func is parent
            ):
                node = caller
                continue
            return False
        return not (isinstance(parent, ast.Subscript) and parent.value is node)


def _per_step_loop(
    analysis: Analysis, frame: Frame, stmt, call: ast.Call, text: str
) -> bool:
    """Is ``call`` made once per draft step: in the body of a ``for`` loop, or
    the element of a comprehension, over ``range(steps)``?"""
    if stmt is None:
        return False
    chain = frame.scope.locate(call)
    for outer in chain:
        if (
            isinstance(outer, (ast.For, ast.AsyncFor))
            and _over_steps(analysis, outer.iter, frame, outer)
            and any(_holds(s, call) for s in outer.body)
        ):
            return True
    if type(stmt) in _COMPOUND_STATEMENTS or " for " not in text:
        return False  # a comprehension lives in a simple statement (or a header)
    for node in walk_nodes(stmt):
        if (
            isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp))
            and _holds(node.elt, call)
            and len(node.generators) == 1
            and _over_steps(analysis, node.generators[0].iter, frame, stmt)
        ):
            return True
    return False


_COMPOUND_STATEMENTS = frozenset(
    {ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith}
)


def _over_steps(analysis: Analysis, iterator: ast.expr, frame: Frame, stmt) -> bool:
    if not (
        isinstance(iterator, ast.Call)
        and last_name(iterator.func) == "range"
        and len(iterator.args) == 1
        and not iterator.keywords
    ):
        return False
    alts = analysis.values(iterator.args[0], frame, stmt)
    return bool(alts) and all(is_steps(a.value) for a in alts)


def _holds(outer: ast.AST, node: ast.AST) -> bool:
    return (outer.lineno, outer.col_offset) <= (node.lineno, node.col_offset) and (
        node.end_lineno,
        node.end_col_offset,
    ) <= (outer.end_lineno, outer.end_col_offset)


_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


class InnerCalls:
    """The allocations a function's own body makes, and its calls of the
    file's functions that allocate (below), those in the
    functions and classes nested in it left out: the walk's facts for a
    method of a class read whole, else read from the function's tree. A
    function whose name is not one that may allocate (by the file's text) is
    not looked into, so a method check left unparsed stays so."""

    def __init__(self, analysis: Analysis, facts: ModuleFacts) -> None:
        self._module = module = analysis.module
        self._aliases = file_allocator_aliases(module)
        self._found: dict[int, list[ast.Call]] = {}
        self._walked: dict[int, object] = {}
        for cls in facts.classes:
            if not cls.read_whole:
                continue
            for function in cls.functions:
                self._found.setdefault(id(function.node), [])
                self._walked[id(function.node)] = function
            for fact in (*cls.allocations, *cls.calls):
                self._found.setdefault(id(fact.function.node), []).append(fact.call)
        for calls in self._found.values():
            calls.sort(key=lambda c: (c.lineno, c.col_offset))

    def may_make_rows(self, call: ast.Call, may_be_steps) -> bool:
        """Can ``call`` make a per-step row? An allocator's call may; a call
        of a function of the file only with a step count: the function names
        one, or an argument may hold one (``may_be_steps``). Asked before the
        callee is looked up."""
        if is_allocation(call, self._aliases):
            return True
        return last_name(call.func) in self._with_steps or any(
            may_be_steps(a.value if isinstance(a, ast.Starred) else a)
            for a in (*call.args, *(k.value for k in call.keywords))
        )

    @property
    def _functions(self) -> frozenset[str]:
        return file_allocating_functions(self._module).names

    @property
    def _with_steps(self) -> frozenset[str]:
        return file_allocating_functions(self._module).with_steps

    def walked(self, node: ast.AST):
        """The walk's facts of the function ``node`` (a method of a class read
        whole), or None."""
        return self._walked.get(id(node))

    def __call__(self, node: ast.AST) -> list[ast.Call]:
        if getattr(node, "name", None) not in self._functions:
            return []
        found = self._found.get(id(node))
        if found is None:
            found = self._found[id(node)] = self._body_calls(node)
        return found

    def _body_calls(self, node: ast.AST) -> list[ast.Call]:
        found = []
        pending = list(getattr(node, "body", ()))  # its decorators run at `def`
        while pending:
            child = pending.pop()
            if isinstance(child, _NESTED):
                continue
            if isinstance(child, ast.Call) and (
                is_allocation(child, self._aliases)
                or may_call_allocating(child.func, self._functions)
            ):
                found.append(child)
            pending.extend(ast.iter_child_nodes(child))
        found.sort(key=lambda c: (c.lineno, c.col_offset))
        return found
