"""The rewrite oracle: is a rewritten expression equal to the original?

Both texts are parsed with ``ast`` (parsing runs nothing). The verdict is exact:
both sides are polynomials over their atoms (names, attributes, anything that is
not ``+ - *`` of integers) once the helpers are expanded into their formulas, and
:mod:`lint_plugin.fix.gate.poly` compares their canonical forms, so "equal" is proved.
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
from lint_plugin.engine.source import one_line
from lint_plugin.fix.gate.poly import Canonicalizer

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
    original: str,
    rewritten: str,
    callees: Mapping[str, str] | None = None,
    trials: int = 40,
    seed: int = 0,
) -> str | None:
    """None when both texts are proved equal over the integers, else why not.

    ``callees``: callee text -> helper, for a helper spelled otherwise than by
    its name (an alias, ``module.helper``)."""
    try:
        before = _parse(original)
        after = _parse(rewritten)
    except NotArithmetic as exc:
        return one_line(str(exc))
    spelled = {**{h: h for h in _HELPERS}, **(callees or {})}

    def resolve(call: ast.Call) -> str | None:
        return spelled.get(_callee_text(call.func))

    canon = Canonicalizer(resolve=resolve)
    proved = canon.canonical(before) == canon.canonical(after)
    witness = _sampled_difference(
        original, rewritten, before, after, trials, seed, spelled
    )
    if witness is not None:
        witness = one_line(witness)
    if proved and witness is None:
        return None
    if proved:  # the two opinions disagree: trust neither
        return f"proved equal but the sampled evaluation says: {witness}"
    return witness or (
        f"`{one_line(original)}` and `{one_line(rewritten)}` are different "
        "polynomials (no counterexample sampled)"
    )


def _sampled_difference(
    original: str,
    rewritten: str,
    before: ast.expr,
    after: ast.expr,
    trials: int,
    seed: int,
    spelled: Mapping[str, str] | None = None,
) -> str | None:
    """The second opinion: a binding where the two differ, or None."""
    try:
        atoms = sorted(_atoms(before, spelled) | _atoms(after, spelled))
    except RecursionError:  # too deep for the recursive interpreter: it abstains
        return None
    rng = random.Random(seed)
    for trial in range(trials):
        if trial < len(_EDGE_VALUES):
            bindings = {a: _EDGE_VALUES[trial] for a in atoms}
        else:
            bindings = {a: rng.randint(0, _MAX_VALUE) for a in atoms}
        try:
            left = evaluate(before, bindings, spelled)
            right = evaluate(after, bindings, spelled)
        except NotArithmetic as exc:
            return str(exc)
        except RecursionError:
            return None
        if left != right:
            shown = ", ".join(f"{a}={v}" for a, v in sorted(bindings.items()))
            return f"`{original}` is {left} but `{rewritten}` is {right} at {shown}"
    return None


def evaluate(
    node: ast.expr,
    bindings: Mapping[str, int],
    spelled: Mapping[str, str] | None = None,
) -> int:
    """``node``'s value; ``spelled``: callee text -> helper (default: a helper
    by its name, or any ``x.<helper>``)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left = evaluate(node.left, bindings, spelled)
        return _OPS[type(node.op)](left, evaluate(node.right, bindings, spelled))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -evaluate(node.operand, bindings, spelled)
    if isinstance(node, ast.Call) and _callee(node, spelled) in _HELPERS:
        return _call_helper(node, bindings, spelled)
    return bindings[_atom_key(node)]


_OPS: dict[type, Callable[[int, int], int]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
}


def _call_helper(node: ast.Call, bindings: Mapping[str, int], spelled) -> int:
    name = _callee(node, spelled)
    params = _SIGNATURES[name]
    if any(isinstance(a, ast.Starred) for a in node.args) or len(node.args) > len(
        params
    ):
        raise NotArithmetic(f"cannot read the arguments of {name}(...)")
    values = {
        p: evaluate(a, bindings, spelled)
        for p, a in zip(params, node.args, strict=False)
    }
    for keyword in node.keywords:
        if keyword.arg not in params or keyword.arg in values:
            raise NotArithmetic(f"bad keyword {keyword.arg!r} in {name}(...)")
        values[keyword.arg] = evaluate(keyword.value, bindings, spelled)
    if set(values) != set(params):
        raise NotArithmetic(f"{name}(...) is missing arguments")
    return _HELPERS[name](**values)


def _parse(text: str) -> ast.expr:
    try:
        # Parenthesised, a span that crosses lines or holds comments parses alone.
        return ast.parse(f"(\n{text}\n)", mode="eval").body
    except SyntaxError as exc:
        raise NotArithmetic(f"`{text}` does not parse: {exc.msg}") from None


def _callee_text(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}"
    return None


def _callee(node: ast.Call, spelled: Mapping[str, str] | None = None) -> str | None:
    if spelled is not None:
        return spelled.get(_callee_text(node.func) or "")
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


def _atoms(node: ast.expr, spelled: Mapping[str, str] | None = None) -> set[str]:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return set()
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _atoms(node.left, spelled) | _atoms(node.right, spelled)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _atoms(node.operand, spelled)
    if isinstance(node, ast.Call) and _callee(node, spelled) in _HELPERS:
        found: set[str] = set()
        for arg in (*node.args, *(k.value for k in node.keywords)):
            found |= _atoms(arg, spelled)
        return found
    return {_atom_key(node)}
