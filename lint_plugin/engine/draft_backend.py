"""Is this class a multi-step draft backend? The one family of answers.

A draft backend keeps a topk and a draft step count (or launches the draft index
kernel, or is named so): KVI003 reads its allocations through every assignment,
KVI006 its launches. Each question below is asked at one stage, each a superset
of the next, so no fast path loses a class the facts accept:

* ``read_whole(name, text)``: on a class's text, before anything is parsed
  (check's regions, the flake8 plugin): a class whose text *may* be one, or
  may call a helper, is parsed and walked whole.
* ``named_draft_backend(node)`` / ``may_be_draft_backend(text, attributes)``:
  in the walk, on the class statement: is it gathered whole (facts of every
  method)?
* ``ClassFacts.is_draft_backend`` (:mod:`lint_plugin.engine.facts`): on the
  facts, what a rule asks. Rules ask only this one.

The words are the rules' own (:mod:`lint_plugin.engine.vocabulary`).
"""

from __future__ import annotations

import ast
import re

from lint_plugin.contracts import class_may_write
from lint_plugin.engine import vocabulary
from lint_plugin.roles import Role, role_of_name

# A class is a multi-step draft backend when its name says so, whatever the prefix:
# FlashInferMultiStepDraftBackend, TritonMultiStepDraftBackend, a future
# FooDraftMultiStepBackend.
DRAFT_CLASS = re.compile(r"\w*(?:MultiStep\w*Draft|Draft\w*MultiStep)\w*")


# The facts' own test (ClassFacts.is_draft_backend) read on the class's text: it
# keeps a topk (`self.<...topk>`) and a draft step count (`self.<...num_steps>`)
# or names the index kernel. The class is then walked whole and the facts decide.
# A superset of what the facts accept (a launch names the kernel; a name match is
# the caller's), so that check's shortcuts lose nothing.
KERNEL = vocabulary.KERNEL
# `self.<...topk>` and `self.<...num_steps>`: the only attributes whose names the
# rules read (built from roles.py's anchors for those roles).
_SELF_ROLE_ATTRIBUTE = vocabulary.self_role_pattern((Role.TOPK, Role.NUM_STEPS))
_ROLE_WORDS = vocabulary.words((Role.TOPK, Role.NUM_STEPS))
_TOPK_WORDS = vocabulary.words((Role.TOPK,))


def role_attributes(text: str) -> set[str]:
    """The names of every ``self.<name>`` in ``text`` that is a topk or a draft
    step count."""
    found = set()
    for start in _self_before_role_words(text):
        match = _SELF_ROLE_ATTRIBUTE.match(text, start)
        if match is None:
            continue
        if start and (text[start - 1].isalnum() or text[start - 1] == "_"):
            continue  # `myself.topk`
        if role_of_name(match.group(1)) in (Role.TOPK, Role.NUM_STEPS):
            found.add(match.group(1))
    return found


def _self_before_role_words(text: str) -> list[int]:
    """Where the pattern's matches may start: each ``self`` followed by a dot
    and a name holding a role's word (every name of the role does,
    ``roles.RoleSpec``), ascending; a superset, the pattern decides. Found
    from the words with ``str.find``: the pattern itself, tried at every
    ``self`` of a backend of 3,000 lines, backtracks through each attribute's
    name (a third of a millisecond)."""
    starts = set()
    for word in _ROLE_WORDS:
        at = text.find(word)
        while at >= 0:
            # Back over `self\s*\.\s*` and the name's start, as the pattern
            # has them before the word.
            dot = text.rfind(".", 0, at)
            if dot >= 0 and _SPACE_NAME.fullmatch(text, dot + 1, at):
                end = dot
                while end > 0 and text[end - 1].isspace():
                    end -= 1
                if end >= 4 and text.startswith("self", end - 4):
                    starts.add(end - 4)
            at = text.find(word, at + 1)
    return sorted(starts)


_SPACE_NAME = re.compile(r"\s*\w*")


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


def is_draft_backend_class(name: str) -> bool:
    return DRAFT_CLASS.fullmatch(name) is not None


def named_draft_backend(node: ast.ClassDef) -> bool:
    """Is the class named like a multi-step draft backend, or does it name one
    as a base (``class EagleDraftRunner(TritonMultiStepDraftBackend)``)? Such a
    class keeps the topk and step count its bases keep."""
    if is_draft_backend_class(node.name):
        return True
    for base in node.bases:
        name = getattr(base, "id", None) or getattr(base, "attr", None)
        if name is not None and is_draft_backend_class(name):
            return True
    return False


def header_names_draft_backend(class_text: str) -> bool:
    """``named_draft_backend`` read on the class's text: a superset (any word
    of its header, up to the colon that ends it, matching the name)."""
    depth = 0
    for index, char in enumerate(class_text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char in "\"'#":
            break  # a string or comment in the header: search the whole class
        elif char == ":" and depth <= 0:
            return DRAFT_CLASS.search(class_text, 0, index) is not None
    return DRAFT_CLASS.search(class_text) is not None


_PREFIX = vocabulary.helper_prefix()


def read_whole(name: str, text: str, aliases: tuple[str, ...] = ()) -> bool:
    """Is the class ``name`` (its source ``text``) read whole by the fast paths
    (check's regions, the flake8 plugin), as by a walk of the whole file? When it
    may be a draft backend (KVI003 reads its allocations through every
    assignment), may call a helper (KVI004 reads a call's ``self.``
    arguments through the attributes the class assigns), or may write a
    contract's buffer (:mod:`lint_plugin.contracts`: its rule reads the
    allocation and the writer, in different methods); ``aliases``: see
    ``helper_aliases``."""
    return (
        is_draft_backend_class(name)
        or header_names_draft_backend(text)
        or may_be_draft_backend(text)
        or _PREFIX in text
        or any(alias in text for alias in aliases)
        or class_may_write(text)
    )
