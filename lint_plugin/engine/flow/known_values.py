"""What the width analysis knows of names it does not read: torch's allocators,
the functions of math, functools, operator, triton and the builtins that
compute a size, and the modules holding them. A name is known by what it is
bound to (an import, a module's attribute), so ``alloc = torch.zeros`` or
``from math import prod as p`` are known too; anything else is read as code
or left opaque.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable

from lint_plugin import allocators
from lint_plugin.algebra import symbolic as sy
from lint_plugin.algebra.symbolic import Expr, Sym
from lint_plugin.engine.flow.alternatives import Alt, Ref
from lint_plugin.roles import CONTEXT_ROLES, Role, role_of_name

# Roles whose `self.` attribute is the class's own, by its name: the kernel is
# launched with it, whatever it was assigned from (the draft-token count too:
# the verify kernels write the spec's, which SGLang keeps under that name).
NAMED_ATTRIBUTES = (
    frozenset({Role.TOPK, Role.NUM_STEPS, Role.NUM_DRAFT_TOKENS}) | CONTEXT_ROLES
)


TORCH_ALLOCATORS = frozenset(allocators.TORCH_ALLOCATORS)


TENSOR_ALLOCATORS = frozenset(allocators.TENSOR_ALLOCATORS)


ALLOCATORS = TORCH_ALLOCATORS | TENSOR_ALLOCATORS


SHAPE_FIRST = frozenset({"full", "empty_strided", "new_full"})


RESHAPES = frozenset({"view", "reshape"})


# Tensor methods whose result holds the same elements (a view of the storage,
# or a copy of it, element for element): the value is that tensor still.
SAME_ELEMENTS = frozenset(
    {"flatten", "contiguous", "detach", "to", "cuda", "cpu", "clone", "narrow"}
    | {"view_as", "as_strided", "squeeze", "unsqueeze", "ravel", "pin_memory"}
)


# A tensor made per step from one row: `row.repeat(steps, 1)`,
# `row.expand(steps, -1)` (read where they make a buffer, not as values).
REPEATS = frozenset({"repeat", "expand"})


# Functions known by what they compute, wherever a file imports them from.
KNOWN_FUNCTIONS = {
    "max": "max",
    "min": "min",
    "int": "int",
    "abs": "abs",
    "sum": "sum",
    "tuple": "tuple",
    "list": "tuple",
    "Size": "tuple",
    "prod": "prod",
    "ceil": "ceil",
    "index": "int",
    "partial": "partial",
    "cdiv": "cdiv",
    "ceil_div": "cdiv",
    "next_power_of_2": "np2",
}


MODULES = frozenset({"torch", "math", "functools", "operator", "triton"})


BUILTIN_NAMES = frozenset({"max", "min", "int", "abs", "sum", "tuple", "list"})


# Attributes whose owner's value decides what they are (torch.zeros, x.view).
MEMBERS = (
    ALLOCATORS
    | RESHAPES
    | SAME_ELEMENTS
    | frozenset(KNOWN_FUNCTIONS)
    | frozenset({"int32", "int64", "cuda", "language"})
)


PASSING = frozenset({"max", "min", "int", "abs", "sum", "tuple", "list"})


# Builtins taken at their word where a function does not rebind them: what a
# call of one returns is opaque (len(...)), and none of them is an integer.
OPAQUE_BUILTINS = (
    frozenset(n for n in dir(builtins) if not n.startswith("_") and n[0].islower())
    - PASSING
)


def literal_int(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return -node.operand.value
    return None


def dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def last_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def named_value(name: str, text: str) -> Sym:
    """A parameter or an unknown name: its role's symbol, else a free symbol."""
    role = role_of_name(name)
    return sy.role_symbol(role, text) if role is not None else sy.free_symbol(text)


def global_value(name: str) -> Expr:
    """A name the module does not bind: a builtin, or nothing known."""
    if name in BUILTIN_NAMES:
        return Ref("known", KNOWN_FUNCTIONS[name])
    if name in MODULES:  # used without its import: read as the module
        return Ref("module", name)
    return named_value(name, name)


def imported_value(stmt: ast.AST, alias: ast.alias) -> Expr:
    if isinstance(stmt, ast.Import):
        module = alias.name if alias.asname else alias.name.split(".")[0]
        return Ref("module", module)
    module = stmt.module or ""
    name = alias.name
    top = module.split(".")[0]
    if top == "torch" and name in TORCH_ALLOCATORS:
        return Ref("alloc", name)
    if name in ("next_power_of_2", "cdiv", "ceil_div") and (
        top in ("triton", "sglang") or module.endswith("utils")
    ):
        return Ref("known", KNOWN_FUNCTIONS[name])
    if (top, name) in (
        ("torch", "Size"),
        ("math", "ceil"),
        ("math", "prod"),
        ("functools", "partial"),
        ("operator", "index"),
    ):
        return Ref("known", KNOWN_FUNCTIONS[name])
    if (
        top in ("torch", "math", "functools", "operator", "triton")
        and "." not in module
    ):
        return Ref("module", f"{module}.{name}")
    return sy.opaque_symbol(f"{module}.{name}", str(id(alias)))


def member(ref: Ref, attr: str, base: Alt, opaque: Callable[[], Expr]) -> Alt:
    """``ref.attr``: a module's function, a tensor's method, a class's method;
    ``opaque()`` for anything else."""
    conds = base.conds
    if ref.kind == "module":
        module = ref.name
        if module == "torch" and attr in TORCH_ALLOCATORS:
            return Alt(Ref("alloc", attr), conds)
        if (module, attr) in (
            ("torch", "Size"),
            ("math", "ceil"),
            ("math", "prod"),
            ("functools", "partial"),
            ("operator", "index"),
            ("triton", "cdiv"),
            ("triton", "next_power_of_2"),
        ):
            return Alt(Ref("known", KNOWN_FUNCTIONS[attr]), conds)
        if module in ("torch", "triton") and attr in (
            "int32",
            "int64",
            "cuda",
            "language",
        ):
            return Alt(Ref("module", f"{module}.{attr}"), conds)
        return Alt(opaque(), conds)
    if ref.kind == "tensor":
        if attr in TENSOR_ALLOCATORS:
            return Alt(Ref("alloc", attr), conds)
        if attr in RESHAPES or attr in SAME_ELEMENTS:
            return Alt(Ref("tensor_method", attr, ref.payload), conds)
        return Alt(opaque(), conds)
    if ref.kind == "class":
        info = ref.payload
        method = info.methods.get(attr)
        if method is not None:
            return Alt(Ref("function", attr, (method, info.outer)), conds)
    return Alt(opaque(), conds)


def literal_dims(node: ast.expr) -> list[ast.expr] | None:
    """The dimension nodes of a shape written out (``(a, b)``, ``[a, b]``,
    ``torch.Size((a, b))``); None for anything else."""
    if (
        isinstance(node, ast.Call)
        and last_name(node.func) == "Size"
        and len(node.args) == 1
        and not node.keywords
    ):
        node = node.args[0]
    if isinstance(node, (ast.Tuple, ast.List)):
        if any(isinstance(e, ast.Starred) for e in node.elts) or not node.elts:
            return None
        return list(node.elts)
    return None
