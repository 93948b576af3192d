"""What the contract rules share: a contract's writes, its allocations, a verdict.

A sizing contract (:mod:`lint_plugin.contracts`) names a buffer by its writer,
not by its name: KVI008's buffer is whatever a backend copies the spec's tree
mask into, KVI009's whatever ``create_flashinfer_kv_indices_triton`` fills with
lengths that hold the draft tokens. Each rule finds its writes in a class read
whole (``find_writes``), follows the written buffer by its values on every path
to the allocations it may be (locals, ``self.`` attributes through every
assignment of the class, slices and views), and judges each by value (:func:`lint_plugin.engine.flow.buffer_sizing.judge_buffer`).
"""

from __future__ import annotations

from lint_plugin.contracts import Contract
from lint_plugin.lazy import lazy
from lint_plugin.records import record
from lint_plugin.roles import CONTEXT_ROLES, SEQUENCE_COUNT_NAMES, Role

TYPE_CHECKING = False  # not `typing`: the catalogue is read on every run
if TYPE_CHECKING:
    from lint_plugin.engine.checker import Checker
    from lint_plugin.engine.facts import Allocation, ClassFacts, FunctionFacts
    from lint_plugin.engine.flow.row_sizing import PathVerdict

ast = lazy("ast")
alternatives = lazy("lint_plugin.engine.flow.alternatives")
buffer_sizing = lazy("lint_plugin.engine.flow.buffer_sizing")
lazy_methods = lazy("lint_plugin.engine.lazy_methods")
row_sizing = lazy("lint_plugin.engine.flow.row_sizing")
symbolic = lazy("lint_plugin.algebra.symbolic")
roles = lazy("lint_plugin.roles")

# Methods that give the same storage another shape or a part of it.
_SAME_STORAGE = frozenset(
    {"view", "reshape", "flatten", "narrow", "contiguous", "view_as", "as_strided"}
    | {"detach", "squeeze", "unsqueeze", "ravel"}
)
# And those that copy it, element for element (what matters is the count).
_SAME_SIZE = _SAME_STORAGE | {"to", "cuda", "cpu", "clone", "pin_memory", "type"}


@record(eq=False)
class Write:
    """A statement writing a contract's buffer: ``node`` the write (a copy, a
    launch), ``function`` the facts of the method holding it, ``buffer`` the
    expression written, ``sizes`` the contract's names the write fixes (the
    draft-token count its lengths add)."""

    node: ast.AST
    function: FunctionFacts
    buffer: ast.expr
    sizes: dict
    per_request: object = None  # an Expr: buffer_sizing.judge_buffer's


@record(eq=False)
class Method:
    """A function of the class whose text names a writer's word: its facts,
    its text and the tree row of the text's first line."""

    function: FunctionFacts
    text: str
    first_row: int

    def assigned_on(self, rows: set[int]) -> set[str]:
        """Names a line of ``rows`` assigns (``mask = spec_info.custom_mask``,
        ``a = b = ...``): read from the text, nothing parsed."""
        import re

        lines = self.text.split("\n")
        assigns = re.compile(r"(?:^|[\s,(])(\w+)\s*(?::[^=]*)?=(?!=)")
        found: set[str] = set()
        for row in rows:
            index = row - self.first_row
            # A statement over several lines: its first line, a few above.
            for back in range(index, max(index - 6, -1), -1):
                if 0 <= back < len(lines) and "=" in lines[back]:
                    found.update(assigns.findall(lines[back]))
                    break
        return found

    def rows_of(self, word: str) -> set[int]:
        """The tree rows on which ``word`` stands (as a word) in the text:
        found with ``str.find``, each hit's row by counting the line ends
        since the previous hit (in C: a backend's method is thousands of
        lines, and a word stands on few of them)."""
        text, size = self.text, len(word)
        rows = set()
        row, counted = self.first_row, 0
        at = text.find(word)
        while at >= 0:
            end = at + size
            before = text[at - 1] if at else " "
            after = text[end] if end < len(text) else " "
            if not (
                before.isalnum() or before == "_" or after.isalnum() or after == "_"
            ):
                row += text.count("\n", counted, at)
                counted = at
                rows.add(row)
            at = text.find(word, end)
        return rows


def methods_naming(checker: Checker, cls: ClassFacts, word: str) -> list[Method]:
    """The class's functions whose text holds ``word`` (``Method.rows_of``
    says where): a method check left unparsed is read as text first, and
    parsed only when it does."""
    found = []
    for function in cls.functions:
        # Nested functions too: own_nodes walks each function's own body.
        node = function.node
        if lazy_methods.is_pending(node):
            text = lazy_methods.pending_text(node)
            # The text may start with decorators: the def line is the node's row.
            first = next(
                i
                for i, line in enumerate(text.split("\n"))
                if line.lstrip().startswith(("def ", "async def "))
            )
        else:
            text, first = checker.source.segment(node), 0
        if word not in text:
            continue
        found.append(Method(function, text, node.lineno - first))
    return found


def own_nodes(function: FunctionFacts, rows: set[int] | None = None):
    """The nodes of a method's body, not of the functions and classes nested
    in it (their values are read in frames of their own); with ``rows``, only
    the nodes spanning one of them (a write names its anchor on its rows)."""
    import bisect

    # Sorted, a node's rows are asked by one bisection, not a scan of them all
    # (a method naming the word on many rows has thousands of nodes).
    ordered = None if rows is None else sorted(rows)
    kept = (ast.expr, ast.stmt)
    nested = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    stack = list(function.node.body)
    push = stack.append
    while stack:
        node = stack.pop()
        if ordered is not None:
            at = bisect.bisect_left(ordered, node.lineno)
            if at == len(ordered) or ordered[at] > (node.end_lineno or node.lineno):
                continue
        yield node
        # `ast.iter_child_nodes` inlined (two generators a node), its order kept.
        for name in node._fields:
            value = getattr(node, name, None)
            for child in value if isinstance(value, list) else (value,):
                if isinstance(child, kept) and not isinstance(child, nested):
                    push(child)


def allocations_of(checker: Checker, cls: ClassFacts, write: Write) -> list:
    """The class's allocations the written buffer may be, by its values on
    every path at the write (every definition that reaches it, ``self.``
    attributes through every assignment of the class): a tensor an
    allocation call makes, or a slice, a view or a copy of one (``.to(...)``,
    ``.clone()``: the same number of elements)."""
    # The class's own: check decides a class read whole on its own region, so
    # an allocation in a base class is not followed (the whole walk agrees).
    calls = {id(a.call): a for a in cls.allocations}
    found: list = []

    def made_by(made) -> None:
        allocation = _allocation_under(made, calls)
        if allocation is not None and allocation not in found:
            found.append(allocation)

    for node in _written(write.buffer, write.function):
        for alt in checker.values(node, write.function, at=write.node):
            value = alt.value
            if isinstance(value, alternatives.Ref) and value.kind == "tensor":
                made_by(value.payload)
    return found


def _allocation_under(made, calls: dict):
    """The allocation ``made`` is, through slices, views and copies."""
    while True:
        made = _strip(made)
        allocation = calls.get(id(made))
        if allocation is not None:
            return allocation
        if not (
            isinstance(made, ast.Call)
            and isinstance(made.func, ast.Attribute)
            and made.func.attr in _SAME_SIZE
        ):
            return None
        made = made.func.value


def _strip(node):
    """``node`` without the slices and same-storage views around it."""
    while True:
        if isinstance(node, ast.Subscript):
            node = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _SAME_STORAGE
        ):
            node = node.func.value
        else:
            return node


def _written(node, function: FunctionFacts, depth: int = 0) -> list:
    """The expressions whose values the written buffer is: ``node`` without
    its slices and views (``buf.view(-1)[:n]`` writes ``buf``), and for a
    local bound to a slice or a view of something (``dst = self.buf[:n]``,
    whose value the analysis does not follow) what it is bound to."""
    node = _strip(node)
    if isinstance(node, ast.Name) and depth < 4:
        bindings = function.locals.all(node.id)
        if len({ast.dump(b.value) if b.value else "" for b in bindings}) != 1:
            return [node]  # bound to several things: the values analysis's
        views = [
            b.value
            for b in bindings[:1]
            if b.value is not None and _strip(b.value) is not b.value
        ]
        if views:
            found = [node]
            for value in views:
                found += _written(value, function, depth + 1)
            return found
    return [node]


def class_size(cls: ClassFacts, checker: Checker, role: Role, default: str):
    """The role's symbol as the class spells it (``self.num_draft_tokens``),
    else ``default``: what a message names."""
    import re

    text = checker.source.segment(cls.node)
    for match in re.finditer(r"self\.(\w+)", text):
        if roles.role_of_name(match.group(1)) is role:
            return symbolic.role_symbol(role, match.group(0))
    return symbolic.role_symbol(role, default)


def argument(call, position: int, keyword: str):
    """A call's argument by keyword, else by position (None: not given, or
    behind a starred argument)."""
    for item in call.keywords:
        if item.arg == keyword:
            return item.value
    if 0 <= position < len(call.args) and not any(
        isinstance(a, ast.Starred) for a in call.args[: position + 1]
    ):
        return call.args[position]
    return None


def judge(checker: Checker, contract: Contract, cls, write: Write) -> list:
    """``(allocation, judgement)`` for each allocation of the written buffer."""
    found = []
    for allocation in allocations_of(checker, cls, write):
        judgement = buffer_sizing.judge_buffer(
            allocation, checker.analysis, contract, write.sizes, write.per_request
        )
        if judgement is not None and not _owner_sized(checker, contract, judgement):
            found.append((allocation, judgement))
    return found


def _owner_sized(checker: Checker, contract: Contract, judgement) -> bool:
    """Is every path's size a call of the contract's owner helper, imported by
    its own name from its own module (``tree_mask_numel(mode, ...)``: the size
    of what the tree kernel writes in that mode, by SGLang's definition)?"""
    import re

    owner = contract.owner
    if owner is None or not owner.imports:
        return False
    for path in judgement.paths:
        syms = list(symbolic.symbols(path.row.width))
        if not (
            len(syms) == 1
            and syms[0].opaque
            and syms[0].text.startswith(f"{owner.name}(")
            and path.row.width == syms[0]
        ):
            return False
    return bool(
        re.search(
            rf"^from {re.escape(owner.module)} import [^#\n]*\b{owner.name}\b(?! as)",
            checker.module.source.text,
            re.M,
        )
    )


def decide_contract(checker: Checker, contract: Contract, writes_in, report) -> None:
    """Every allocation of a buffer some write of the class fills, judged once
    (by the first write that reaches it): ``report(allocation, judgement,
    write)`` for an unsized one, a note for one not judged."""
    for cls in checker.facts.classes:
        if not cls.read_whole:
            continue
        seen: set[int] = set()
        for write in writes_in(checker, cls):
            for allocation, judgement in judge(checker, contract, cls, write):
                if id(allocation.call) in seen:
                    continue
                seen.add(id(allocation.call))
                verdict = judgement.verdict
                if verdict == row_sizing.SIZED:
                    continue
                if verdict == row_sizing.NOT_JUDGED:
                    reasons = "; ".join(
                        dict.fromkeys(p.reason for p in judgement.paths if p.reason)
                    )
                    checker.note(
                        contract.code,
                        checker.span(judgement.paths[0].row.shown),
                        f"{contract.buffer} not judged: {reasons}",
                    )
                    continue
                report(allocation, judgement, write, cls)


def context_text(path: PathVerdict) -> str:
    """The context size the goal was built of, as spelt (``max_context_len``)."""
    return next(
        (
            s.text.split(".")[-1]
            for s in symbolic.symbols(path.goal)
            if s.role in CONTEXT_ROLES
        ),
        "max_context_len",
    )


def tokens_note(judgement, contract: Contract) -> str:
    """What the contract took a token count in the size to be, when it holds one."""
    tokens = judgement.tokens
    if not tokens:
        return ""
    return (
        f"; `{tokens[0]}` taken as {contract.tokens.replace('num_seqs', 'max_bs')}, "
        f"what SGLang passes in {contract.phase}"
    )


def sequence_count(scope, allocation: Allocation) -> str | None:
    """A sequence count the allocation's method can name (a fix's argument)."""
    known = set(scope.params) if scope is not None else set()
    known |= set(allocation.function.params)
    return next((n for n in SEQUENCE_COUNT_NAMES if n in known), None)
