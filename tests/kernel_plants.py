"""Wrong kernels planted in a copy of upstream's source (the source is never
committed: the plants are edits applied at test time to the pinned release's text).

Each plant is an ``ast`` edit of ``generate_draft_decode_kv_indices``, so the same
edit lands in every release's spelling of the kernel (one line in 0.5.12.post1, a
wrapped call in 0.5.23):

- ``one_more_entry``: every branch's draft entries store one lane more
  (``mask=extend_offset < iters + 1``);
- ``step_written_twice``: the draft entries are stored a second time, one entry
  further on (a second ``tl.store`` of the same data at ``... + 1``);
- ``stride_without_topk``: the sequences' stride in the row loses its topk factor
  (``cum_seq_len * num_seqs + bid * iters * num_seqs``: another count in its place).
"""

from __future__ import annotations

import ast
import copy

KERNEL = "generate_draft_decode_kv_indices"


def _kernel(tree: ast.Module) -> ast.FunctionDef:
    return next(
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == KERNEL
    )


def _is_store(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "store"
    )


def _mask(call: ast.Call) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == "mask":
            return kw.value
    return call.args[2] if len(call.args) > 2 else None


def _draft_store(fn: ast.FunctionDef) -> ast.Expr:
    """The statement storing the draft entries: the last store with a lane mask
    (the copy loop's comes first; kv_indptr's store has no mask)."""
    found = [
        node
        for node in ast.walk(fn)
        if isinstance(node, ast.Expr)
        and _is_store(node.value)
        and isinstance(_mask(node.value), ast.Compare)
    ]
    if not found:
        raise LookupError("no store of the draft entries")
    return max(found, key=lambda node: node.lineno)


def one_more_entry(fn: ast.FunctionDef) -> None:
    mask = _mask(_draft_store(fn).value)
    assert isinstance(mask, ast.Compare), ast.unparse(mask)
    mask.comparators = [ast.BinOp(mask.comparators[0], ast.Add(), ast.Constant(1))]


def step_written_twice(fn: ast.FunctionDef) -> None:
    store = _draft_store(fn)
    again = copy.deepcopy(store)
    again.value.args[0] = ast.BinOp(again.value.args[0], ast.Add(), ast.Constant(1))
    for parent in ast.walk(fn):
        for name in ("body", "orelse"):
            body = getattr(parent, name, None)
            if isinstance(body, list) and store in body:
                body.insert(body.index(store) + 1, again)
                return
    raise LookupError("the draft store has no enclosing block")


def _terms(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _terms(node.left) + _terms(node.right)
    return [node]


def stride_without_topk(fn: ast.FunctionDef) -> None:
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Assign)
            and [ast.unparse(t) for t in node.targets] == ["kv_offset"]
            and "cum_seq_len" in ast.unparse(node.value)
        ):
            for term in _terms(node.value)[:2]:  # the sequence's part, not the branch's
                for name in ast.walk(term):
                    if isinstance(name, ast.Name) and name.id == "topk":
                        name.id = "num_seqs"
            return
    raise LookupError("no kv_offset assignment")


PLANTS = {
    "one_more_entry": one_more_entry,
    "step_written_twice": step_written_twice,
    "stride_without_topk": stride_without_topk,
}


def plant(text: str, name: str) -> str:
    """``text`` with the kernel changed by plant ``name`` (the rest unparsed as is)."""
    tree = ast.parse(text)
    PLANTS[name](_kernel(tree))
    return ast.unparse(ast.fix_missing_locations(tree))
