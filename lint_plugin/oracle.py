"""The rewrite oracle: is a rewritten expression equal to the original?

Both texts are parsed with ``ast`` (parsing runs nothing). The verdict is exact:
both sides are polynomials over their atoms (names, attributes, anything that is
not ``+ - *`` of integers) once the helpers are expanded into their formulas, and
:mod:`lint_plugin.poly` compares their canonical forms, so "equal" is proved.
A second opinion evaluates both by a small interpreter of the arithmetic subset
(the helpers run on the reference runtime) over many integer bindings; it also
supplies the counterexample shown when the forms differ. Nothing from the
analysed code is imported, executed or ``eval``-ed.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Callable, Mapping

from lint_plugin import runtime
from lint_plugin.poly import Canonicalizer

_HELPERS: Mapping[str, Callable[..., int]] = {
    "draft_kv_indices_buffer_width": runtime.draft_kv_indices_buffer_width,
    "draft_kv_indices_used_len": runtime.draft_kv_indices_used_len,
}
_SIGNATURES = {
    "draft_kv_indices_buffer_width": ("num_seqs", "topk", "max_context_len"),
    "draft_kv_indices_used_len": ("seq_lens_sum", "topk", "bs", "num_steps"),
}
# Small enough that no product of three reaches the int32 refusal, varied enough
# that a missing or extra factor or a different constant shows.
_EDGE_VALUES = (0, 1, 2, 3, 7)
_MAX_VALUE = 97


class NotArithmetic(ValueError):
    """The text is not an expression of the arithmetic subset."""


def equivalent(
    original: str, rewritten: str, trials: int = 40, seed: int = 0
) -> str | None:
    """None when both texts are proved equal over the integers, else why not."""
    try:
        before = _parse(original)
        after = _parse(rewritten)
    except NotArithmetic as exc:
        return str(exc)
    canon = Canonicalizer()
    proved = canon.canonical(before) == canon.canonical(after)
    witness = _sampled_difference(original, rewritten, before, after, trials, seed)
    if proved and witness is None:
        return None
    if proved:  # the two opinions disagree: trust neither
        return f"proved equal but the sampled evaluation says: {witness}"
    return witness or (
        f"`{original}` and `{rewritten}` are different polynomials "
        "(no counterexample sampled)"
    )


def _sampled_difference(
    original: str,
    rewritten: str,
    before: ast.expr,
    after: ast.expr,
    trials: int,
    seed: int,
) -> str | None:
    """The second opinion: a binding where the two differ, or None."""
    try:
        atoms = sorted(_atoms(before) | _atoms(after))
    except RecursionError:  # too deep for the recursive interpreter: it abstains
        return None
    rng = random.Random(seed)
    for trial in range(trials):
        if trial < len(_EDGE_VALUES):
            bindings = {a: _EDGE_VALUES[trial] for a in atoms}
        else:
            bindings = {a: rng.randint(0, _MAX_VALUE) for a in atoms}
        try:
            left, right = evaluate(before, bindings), evaluate(after, bindings)
        except NotArithmetic as exc:
            return str(exc)
        except RecursionError:
            return None
        if left != right:
            shown = ", ".join(f"{a}={v}" for a, v in sorted(bindings.items()))
            return f"`{original}` is {left} but `{rewritten}` is {right} at {shown}"
    return None


def evaluate(node: ast.expr, bindings: Mapping[str, int]) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left = evaluate(node.left, bindings)
        return _OPS[type(node.op)](left, evaluate(node.right, bindings))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -evaluate(node.operand, bindings)
    if isinstance(node, ast.Call) and _callee(node) in _HELPERS:
        return _call_helper(node, bindings)
    return bindings[_atom_key(node)]


_OPS: dict[type, Callable[[int, int], int]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
}


def _call_helper(node: ast.Call, bindings: Mapping[str, int]) -> int:
    name = _callee(node)
    params = _SIGNATURES[name]
    if any(isinstance(a, ast.Starred) for a in node.args) or len(node.args) > len(
        params
    ):
        raise NotArithmetic(f"cannot read the arguments of {name}(...)")
    values = {p: evaluate(a, bindings) for p, a in zip(params, node.args, strict=False)}
    for keyword in node.keywords:
        if keyword.arg not in params or keyword.arg in values:
            raise NotArithmetic(f"bad keyword {keyword.arg!r} in {name}(...)")
        values[keyword.arg] = evaluate(keyword.value, bindings)
    if set(values) != set(params):
        raise NotArithmetic(f"{name}(...) is missing arguments")
    return _HELPERS[name](**values)


def _parse(text: str) -> ast.expr:
    try:
        # Parenthesised, a span that crosses lines or holds comments parses alone.
        return ast.parse(f"(\n{text}\n)", mode="eval").body
    except SyntaxError as exc:
        raise NotArithmetic(f"`{text}` does not parse: {exc.msg}") from None


def _callee(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _atom_key(node: ast.expr) -> str:
    # Text only: unparsing runs nothing. Kept on the node: a hundred bindings
    # are tried over the same tree.
    key = getattr(node, "_oracle_key", None)
    if key is None:
        key = node._oracle_key = ast.unparse(node)  # type: ignore[attr-defined]
    return key


def _atoms(node: ast.expr) -> set[str]:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return set()
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _atoms(node.left) | _atoms(node.right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _atoms(node.operand)
    if isinstance(node, ast.Call) and _callee(node) in _HELPERS:
        found: set[str] = set()
        for arg in (*node.args, *(k.value for k in node.keywords)):
            found |= _atoms(arg)
        return found
    return {_atom_key(node)}
