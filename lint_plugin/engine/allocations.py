"""KVI003's vocabulary: draft backend classes, torch allocators and their aliases."""

from __future__ import annotations

import ast
import functools
import re

from lint_plugin.engine import vocabulary
from lint_plugin.engine.roles import Role, role_of_name

# A class is a multi-step draft backend when its name says so, whatever the prefix:
# FlashInferMultiStepDraftBackend, TritonMultiStepDraftBackend, a future
# FooDraftMultiStepBackend.
DRAFT_CLASS = re.compile(r"\w*(?:MultiStep\w*Draft|Draft\w*MultiStep)\w*")

_TORCH_ALLOCATORS = frozenset(vocabulary.ALLOCATOR_WORDS) - {
    n for n in vocabulary.ALLOCATOR_WORDS if n.startswith("new_")
}
_TENSOR_ALLOCATORS = frozenset(vocabulary.ALLOCATOR_WORDS) - _TORCH_ALLOCATORS
# Other names a file may give an allocator: `alloc = torch.zeros`, `self._alloc =
# functools.partial(torch.empty, ...)`, `from torch import zeros as z`. A superset
# (the width analysis decides what a name holds); it only widens the rows read.
_TARGET = re.compile(r"[ \t]*(?:\w+\s*\.\s*)*(\w+)\s*(?::[^=\n]*)?=(?!=)")
_TORCH_AS = re.compile(r"import torch as (\w+)")
_AS = re.compile(r" as (\w+)")
_PARTIAL = re.compile(r"partial\s*\(")
_METHOD_REFERENCE = re.compile(
    rf"new_(?:{'|'.join(n[4:] for n in sorted(_TENSOR_ALLOCATORS))})\b(?!\s*\()"
)


@functools.lru_cache(maxsize=8)
def _torch_reference(modules: tuple[str, ...]) -> re.Pattern[str]:
    names = "|".join(sorted(_TORCH_ALLOCATORS))
    return re.compile(
        rf"(?:{'|'.join(map(re.escape, modules))})\s*\.\s*(?:{names})\b(?!\s*\()"
    )


def allocator_aliases(text: str) -> frozenset[str]:
    """Names ``text`` may call an allocator by, besides the allocators' own: the
    target of a line naming an allocator of torch (or a tensor's ``new_*``) it
    does not call, or a ``partial``; an import's ``as`` name of one. Every
    pattern starts with a literal: one of alternatives, or a ``\\b``, is tried
    at every offset (10 ms on a backend of 3,000 lines)."""
    found = set()
    modules = ("torch", *_TORCH_AS.findall(text))
    references = [*_torch_reference(modules).finditer(text)]
    references += _METHOD_REFERENCE.finditer(text)
    references += _PARTIAL.finditer(text)
    for match in references:
        start = text.rfind("\n", 0, match.start()) + 1
        target = _TARGET.match(text, start)
        if target is not None and target.end() <= match.start():
            found.add(target.group(1))
    for match in _AS.finditer(text):
        start = match.start()
        word_start = start
        while word_start > 0 and (
            text[word_start - 1].isalnum() or text[word_start - 1] == "_"
        ):
            word_start -= 1
        if text[word_start:start] in _TORCH_ALLOCATORS:
            found.add(match.group(1))
    return frozenset(found)


def is_draft_backend_class(name: str) -> bool:
    return DRAFT_CLASS.fullmatch(name) is not None


def is_allocation(call: ast.Call, aliases: frozenset[str] = frozenset()) -> bool:
    """May ``call`` allocate a tensor (the width analysis reads what it calls):
    ``torch.zeros``, ``th.empty``, ``buf.new_zeros``, ``zeros`` (imported), an
    alias (``alloc``, ``self._alloc``)."""
    func = call.func
    if isinstance(func, ast.Attribute):
        return (
            func.attr in _TORCH_ALLOCATORS
            or func.attr in _TENSOR_ALLOCATORS
            or (func.attr in aliases)
        )
    if isinstance(func, ast.Name):
        return func.id in _TORCH_ALLOCATORS or func.id in aliases
    return False


# The facts' own test (ClassFacts.is_draft_backend) read on the class's text: it
# keeps a topk (`self.<...topk>`) and a draft step count (`self.<...num_steps>`)
# or names the index kernel. The class is then walked whole and the facts decide.
# A superset of what the facts accept (a launch names the kernel; a name match is
# the caller's), so that check's shortcuts lose nothing.
KERNEL = vocabulary.KERNEL
# `self.<...topk>` and `self.<...num_steps>`: the only attributes whose names the
# rules read (built from roles.py's anchors for those roles).
_SELF_ROLE_ATTRIBUTE = vocabulary.self_role_pattern((Role.TOPK, Role.NUM_STEPS))
_TOPK_WORDS = vocabulary.words((Role.TOPK,))


def role_attributes(text: str) -> set[str]:
    """The names of every ``self.<name>`` in ``text`` that is a topk or a draft
    step count."""
    found = set()
    for match in _SELF_ROLE_ATTRIBUTE.finditer(text):
        start = match.start()
        if start and (text[start - 1].isalnum() or text[start - 1] == "_"):
            continue  # `myself.topk`
        if role_of_name(match.group(1)) in (Role.TOPK, Role.NUM_STEPS):
            found.add(match.group(1))
    return found


def inherited_role_attributes(node: ast.ClassDef, module) -> set[str]:
    """The topk and step-count attributes that the classes ``node`` names as
    its bases keep, for bases defined at the top of the file (``module``, a
    ``ModuleScope``), and their bases in turn: every class of that name, as a
    class statement may be run again."""
    found: set[str] = set()
    pending = [base.id for base in node.bases if isinstance(base, ast.Name)]
    seen = {node.name}
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        for statement in module.statements(name):
            block = module.block(statement)
            if isinstance(block, ast.ClassDef) and block.name == name:
                found |= role_attributes(module.source.segment(block))
                pending += [b.id for b in block.bases if isinstance(b, ast.Name)]
    return found


def may_be_draft_backend(class_text: str, attributes: set[str] | None = None) -> bool:
    """``attributes``: the text's ``role_attributes``, when the caller has them."""
    if not any(word in class_text for word in _TOPK_WORDS):
        return False
    if attributes is None:
        attributes = role_attributes(class_text)
    roles = {role_of_name(a) for a in attributes}
    if Role.TOPK not in roles:
        return False
    return Role.NUM_STEPS in roles or KERNEL in class_text
