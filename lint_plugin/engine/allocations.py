"""KVI003's vocabulary: draft backend classes, torch allocators and their aliases."""

from __future__ import annotations

import ast
import bisect
import functools
import re

from lint_plugin.engine import vocabulary
from lint_plugin.records import record
from lint_plugin.roles import Role

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lint_plugin.engine.module_scope import ModuleScope

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


def file_allocator_aliases(module: ModuleScope) -> frozenset[str]:
    """Other names the file calls an allocator by (its whole text's), found
    once per file: the regions share the module."""
    found = getattr(module, "allocator_aliases", None)
    if found is None:
        found = module.allocator_aliases = allocator_aliases(module.source.text)
    return found


def file_allocating_functions(module: ModuleScope) -> AllocatingFunctions:
    """``allocating_functions`` of the file."""
    return allocating_functions(module.source.text, file_allocator_aliases(module))


@functools.lru_cache(maxsize=4)  # once per file: the walk's and the regions' plans
def allocating_functions(
    text: str, aliases: frozenset[str] = frozenset()
) -> AllocatingFunctions:
    """The functions and methods of ``text`` whose call in a draft backend
    KVI003 judges (with the values the call gives), by name, read on the text
    (a superset: a function runs from its ``def`` to the next ``def`` or
    ``class`` at its indentation or less, the functions nested in it
    included): ``names``, those of at most ``HELPER_LINES`` rows whose body
    names an allocator (torch's, a tensor's ``new_*``, one of ``aliases``) or
    one of ``names``; ``with_steps``, those of them that name a draft step
    count or one of ``with_steps``."""
    every = _function_spans(text)
    short = [
        span for span in every if text.count("\n", span[0], span[1]) <= HELPER_LINES
    ]
    names = _closure(text, short, [*vocabulary.ALLOCATOR_WORDS, *aliases])
    callers = _closure(text, every, sorted(names), rounds=1) | names
    spans = [span for span in short if span[2] in names]
    with_steps = _closure(text, spans, vocabulary.words((Role.NUM_STEPS,)), True)
    return AllocatingFunctions(names, with_steps, callers)


# The most rows a function whose buffers are judged at its call may span: an
# allocation helper is short; a method building a whole metadata set (hundreds
# of rows, called from every path) is not read at its calls.
HELPER_LINES = 50


@record(frozen=True)
class AllocatingFunctions:
    names: frozenset[str]
    with_steps: frozenset[str]
    # Every function naming one of ``names`` (any length): check reads each
    # such method, for its calls.
    callers: frozenset[str]


# How many calls deep a function is found to allocate (or name a step count):
# the width analysis follows calls as deep (flow.call_values.MAX_DEPTH).
_CALLS_DEEP = 4


def _closure(
    text: str, spans, words, substring: bool = False, rounds: int = _CALLS_DEEP
) -> frozenset[str]:
    """The functions whose span names one of ``words`` (as a whole identifier,
    or inside one: ``substring``), or one of these functions, ``rounds``
    calls deep."""
    found: set[str] = set()
    for _ in range(rounds):
        if not (words and spans):
            break
        offsets = (
            vocabulary.substring_offsets(text, words)
            if substring
            else vocabulary.word_offsets(text, words)
        )
        new = {
            name
            for start, end, name in spans
            if bisect.bisect_left(offsets, start) < bisect.bisect_left(offsets, end)
        }
        words, substring = sorted(new - found), False
        found |= new
        spans = [span for span in spans if span[2] not in found]
    return frozenset(found)


def _function_spans(text: str) -> list[tuple[int, int, str]]:
    spans: list[tuple[int, int, str]] = []
    blocks: list[tuple[int, int, str | None]] = []  # open: (indent, start, name)
    for at in vocabulary.word_offsets(text, ("def", "class")):
        line = text.rfind("\n", 0, at) + 1
        indent = len(text[line:at]) - len(text[line:at].lstrip(" \t"))
        match = vocabulary.BLOCK_HEAD.match(text, line + indent)
        if (
            match is None
            or match.start(1) != at
            or text[match.end() : match.end() + 80].lstrip(" \t")[:1] not in "(:["
        ):
            continue  # not a block's head: `x = def_(...)`, prose
        while blocks and blocks[-1][0] >= indent:
            _, start, name = blocks.pop()
            if name is not None:
                spans.append((start, line, name))
        blocks.append((indent, match.end(), match[2] if match[1] == "def" else None))
    spans += [(start, len(text), name) for _, start, name in blocks if name]
    return spans


def may_call_allocating(func: ast.expr, names: frozenset[str]) -> bool:
    """``f(...)`` or ``self.f(...)`` (an owner that is a name), ``f`` one of the
    file's functions that may allocate (``AllocatingFunctions.names``); a
    method of another object (``self.backends[i].f(...)``) is not read."""
    if isinstance(func, ast.Name):
        return func.id in names
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.attr in names
    )


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
