"""KVI003's vocabulary: draft backend classes, torch allocators and buffer shapes."""

from __future__ import annotations

import ast
import re

from lint_plugin.roles import Role, role_of_name

# A class is a multi-step draft backend when its name says so, whatever the prefix:
# FlashInferMultiStepDraftBackend, TritonMultiStepDraftBackend, a future
# FooDraftMultiStepBackend.
DRAFT_CLASS = re.compile(r"\w*(?:MultiStep\w*Draft|Draft\w*MultiStep)\w*")

_TORCH_ALLOCATORS = frozenset({"empty", "zeros", "ones", "full", "empty_strided"})
_TENSOR_ALLOCATORS = frozenset({"new_empty", "new_zeros", "new_ones", "new_full"})
# Allocators whose second positional argument is not a dimension.
_SHAPE_THEN_VALUE = frozenset({"full", "empty_strided", "new_full"})


def is_draft_backend_class(name: str) -> bool:
    return DRAFT_CLASS.fullmatch(name) is not None


def is_allocation(call: ast.Call) -> bool:
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in _TORCH_ALLOCATORS:
        return isinstance(func.value, ast.Name) and func.value.id == "torch"
    return func.attr in _TENSOR_ALLOCATORS


# The facts' own test (ClassFacts.is_draft_backend) read on the class's text: it
# keeps a topk (`self.<...topk>`) and a draft step count (`self.<...num_steps>`)
# or names the index kernel. The class is then walked whole and the facts decide.
# A superset of what the facts accept (a launch names the kernel; a name match is
# the caller's), so that check's shortcuts lose nothing.
KERNEL = "generate_draft_decode_kv_indices"
# `self.<...topk>` and `self.<...num_steps>`: the only attributes whose names the
# rules read (roles.py's patterns for those roles). No leading `\b`: a pattern that
# starts with its literal is searched for that literal first (ten times faster on
# a large class); the boundary before `self` is checked per match.
_SELF_ROLE_ATTRIBUTE = re.compile(
    r"self\s*\.\s*((?:[A-Za-z_]\w*_|_)?(?:topk|num_steps))(?!\w)"
)


def role_attributes(text: str) -> set[str]:
    """The names of every ``self.<name>`` in ``text`` that is a topk or a draft
    step count."""
    found = set()
    for match in _SELF_ROLE_ATTRIBUTE.finditer(text):
        start = match.start()
        if start and (text[start - 1].isalnum() or text[start - 1] == "_"):
            continue  # `myself.topk`
        found.add(match.group(1))
    return found


def may_be_draft_backend(class_text: str, attributes: set[str] | None = None) -> bool:
    """``attributes``: the text's ``role_attributes``, when the caller has them."""
    if "topk" not in class_text:
        return False
    if attributes is None:
        attributes = role_attributes(class_text)
    roles = {role_of_name(a) for a in attributes}
    if Role.TOPK not in roles:
        return False
    return Role.NUM_STEPS in roles or KERNEL in class_text


def allocation_shape(call: ast.Call) -> list[ast.expr] | None:
    """The dimensions a torch allocation call asks for, or None if it is not one.

    Accepts ``torch.zeros((a, b))``, ``torch.zeros(a, b)``, ``torch.zeros(size=(a, b))``
    and the ``Tensor.new_*`` forms.
    """
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr in _TORCH_ALLOCATORS:
        if not (isinstance(func.value, ast.Name) and func.value.id == "torch"):
            return None
    elif func.attr not in _TENSOR_ALLOCATORS:
        return None
    for keyword in call.keywords:
        if keyword.arg == "size":
            return _dims(keyword.value)
    if not call.args or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    first = call.args[0]
    if isinstance(first, (ast.Tuple, ast.List)):
        return _dims(first)
    if func.attr in _SHAPE_THEN_VALUE:
        return [first]
    return list(call.args)


def _dims(node: ast.expr) -> list[ast.expr] | None:
    if isinstance(node, (ast.Tuple, ast.List)):
        if any(isinstance(e, ast.Starred) for e in node.elts):
            return None
        return list(node.elts)
    return [node]
