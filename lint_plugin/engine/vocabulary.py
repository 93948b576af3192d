"""The words each rule needs to see, and every pre-filter built from them.

A rule declares ``NEEDS`` (a :class:`Needs`): the *clauses* under which a file can
hold one of its findings (all groups of one clause present; a group is present
when one of its words is, a role standing for its anchors, see
:mod:`lint_plugin.roles`), whether it finds things in any statement or only in a
class read whole (a possible draft backend), and the call names whose rows hold
its facts there. From those alone come:

* the byte test of a whole file (:func:`could_match`, ``prefilter.could_match``);
* the words that start a region in ``check`` (:func:`region_seeds`), the words a
  region must also name to be parsed (:func:`second_words`) and the rows worth
  walking in it (:func:`row_words`), for the rules that find things anywhere;
* the rows walked in a class read whole (:func:`fact_words`);
* the helpers' common prefix, by which a class calling one is read whole.

So a new context-sized role is one entry in ``roles.ROLES``: KVI003's context group
is every context-sized role, and every filter follows.

The rules decide with the engine, so the engine never imports them: the
catalogue (``lint_plugin.rules``) hands their declarations to :func:`declare`
when it is imported, which every front end does before it asks a filter. A rule
module imports what it decides with lazily (:mod:`lint_plugin.lazy`), so the
declarations cost no engine import on a run that parses nothing.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from lint_plugin import allocators
from lint_plugin.algebra.helpers import BUFFER_WIDTH as BUFFER_WIDTH
from lint_plugin.algebra.helpers import HELPERS as HELPERS
from lint_plugin.algebra.helpers import USED_LEN as USED_LEN
from lint_plugin.records import record
from lint_plugin.roles import CONTEXT_ROLES, ROLES, Role

Word = Role | str
Group = tuple[Word, ...]


@record(frozen=True)
class Needs:
    """``clauses``: any one of them, every group of it, any word of a group.
    ``where``: ``statement`` (found in any statement) or ``class`` (only in a
    class read whole); ``facts``: names of the calls a class rule reads."""

    clauses: tuple[tuple[Group, ...], ...]
    where: str = "statement"
    facts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for clause in self.clauses:
            for group in clause:
                if not isinstance(group, tuple) or not all(
                    isinstance(w, (Role, str)) for w in group
                ):
                    raise TypeError(f"a group is a tuple of roles and words: {group!r}")


KERNEL = "generate_draft_decode_kv_indices"
GUARD = "assert_buffer_fits"
# Any context size: what KVI003 sizes a row by.
CONTEXT: Group = tuple(sorted(CONTEXT_ROLES, key=lambda role: role.value))
# What a multi-step draft backend shows besides its topk: a step count, a
# launch of the index kernel, or a name saying so (draft_backend.DRAFT_CLASS).
DRAFT_CLASS: Group = (Role.NUM_STEPS, KERNEL, "MultiStep")
# The torch allocators and the tensor methods that allocate (KVI003's facts).
ALLOCATOR_WORDS = (*allocators.TORCH_ALLOCATORS, *allocators.TENSOR_ALLOCATORS)


_DECLARED: dict[str, Needs] = {}


def declare(needs: dict[str, Needs]) -> None:
    """The rules' ``NEEDS``, by code: the catalogue (``lint_plugin.rules``)
    declares them when it is imported. The engine never imports the rules
    (they decide with it); every front end imports the catalogue first."""
    if _DECLARED and needs != _DECLARED:
        raise ValueError("the rules' NEEDS are declared once")
    _DECLARED.update(needs)


def declared() -> dict[str, Needs]:
    """Every rule's ``NEEDS``, by code, as the catalogue declared them."""
    if not _DECLARED:
        raise RuntimeError(
            "no rule declared its NEEDS: import lint_plugin.rules before the engine"
        )
    return _DECLARED


def words(group: Iterable[Word]) -> tuple[str, ...]:
    """A group's literal words: a role's anchors, a word itself."""
    found: list[str] = []
    for word in group:
        for text in ROLES[word].anchors if isinstance(word, Role) else (word,):
            if text not in found:
                found.append(text)
    return tuple(found)


def _common(texts: Iterable[str]) -> str:
    """The longest string every one of ``texts`` contains (a cheap first test)."""
    texts = sorted(set(texts), key=len)
    if not texts:
        return ""
    first = texts[0]
    for size in range(len(first), 0, -1):
        for start in range(len(first) - size + 1):
            piece = first[start : start + size]
            if all(piece in t for t in texts[1:]):
                return piece
    return ""


_FAMILY = 6  # a shared piece shorter than this rules out too few files to pay


def _families(texts: Iterable[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``texts`` in families, each with a piece all its members contain: one
    search for the piece rules the whole family out (``_kv_indices`` for the
    helpers and the kernel); a word sharing no long piece is its own family."""
    pending = list(dict.fromkeys(texts))
    found = []
    while pending:
        first = pending[0]
        piece, members = first, [first]
        for other in pending[1:]:
            shared = _common((first, other))
            if len(shared) >= _FAMILY:
                group = [t for t in pending if shared in t]
                if len(group) > len(members):
                    piece, members = shared, group
        found.append((piece, tuple(members)))
        pending = [t for t in pending if t not in members]
    return tuple(found)


@functools.lru_cache(maxsize=1)
def _byte_clauses() -> tuple[tuple[tuple[bytes, ...], ...], ...]:
    """Every rule's clauses as byte anchors."""
    clauses = []
    for needs in declared().values():
        for clause in needs.clauses:
            groups = tuple(tuple(w.encode() for w in words(g)) for g in clause)
            if groups not in clauses:
                clauses.append(groups)
    return tuple(clauses)


@functools.lru_cache(maxsize=1)
def _plan():
    """The one-group clauses' words in families (one search rules a family
    out), and the other clauses by their first group, each searched once."""
    by_first: dict[tuple[bytes, ...], list[tuple[tuple[bytes, ...], ...]]] = {}
    for groups in _byte_clauses():
        by_first.setdefault(groups[0], []).append(groups[1:])
    singles = [
        w.decode() for first, rests in by_first.items() if () in rests for w in first
    ]
    single_families = tuple(
        (piece.encode(), tuple(w.encode() for w in members))
        for piece, members in _families(singles)
    )
    many = tuple(
        (first, tuple(r for r in rests if r)) for first, rests in by_first.items()
    )
    return single_families, tuple((f, r) for f, r in many if r)


def could_match(data: bytes) -> bool:
    """Could any rule find anything in a file of these bytes? (Plain loops:
    this runs on every file, and generators cost more than the searches.)"""
    single_families, many = _plan()
    for piece, members in single_families:
        if piece in data:
            for word in members:
                if word in data:
                    return True
    for first, rests in many:
        for word in first:
            if word in data:
                break
        else:
            continue
        for rest in rests:
            for group in rest:
                for word in group:
                    if word in data:
                        break
                else:
                    break  # a group absent: not this clause
            else:
                return True
    return False


def _statement_clauses() -> list[tuple[Group, ...]]:
    return [c for n in declared().values() if n.where == "statement" for c in n.clauses]


def _pattern(texts: Iterable[str]) -> str:
    return "|".join(re.escape(t) for t in dict.fromkeys(texts))


@functools.lru_cache(maxsize=1)
def region_seed_words() -> tuple[str, ...]:
    """A word some finding needs, where a region starts: the first group of
    each clause of several groups (a class rule's clauses start with the topk a
    draft backend keeps), every word of a statement rule's one-group clause
    (the helpers, the guard), and a multi-step class's name."""
    seeds: list[str] = [helper_prefix(), "MultiStep"]  # MultiStep: a class name
    for needs in declared().values():
        for clause in needs.clauses:
            if len(clause) > 1 or needs.where == "statement":
                seeds += words(clause[0])
    # A word holding another seed adds nothing (and slows the search).
    seeds = [w for w in seeds if not any(o != w and o in w for o in seeds)]
    return tuple(dict.fromkeys(seeds))


@functools.lru_cache(maxsize=1)
def role_anchor_words() -> frozenset[str]:
    """The words every name of some role holds (``topk``, ``context_len``)."""
    return frozenset(a for spec in ROLES.values() for a in spec.anchors)


@functools.lru_cache(maxsize=1)
def region_seeds() -> re.Pattern[str]:
    """``region_seed_words`` as one pattern."""
    return re.compile(_pattern(region_seed_words()))


@functools.lru_cache(maxsize=1)
def row_word_list() -> tuple[str, ...]:
    """Rows worth walking in a region: a formula or a helper call of a
    statement rule always names one of these on one of its rows."""
    found = [w for clause in _statement_clauses() for g in clause for w in words(g)]
    return tuple(dict.fromkeys([*found, helper_prefix()]))


@functools.lru_cache(maxsize=1)
def row_words() -> re.Pattern[str]:
    """``row_word_list`` as one pattern."""
    return re.compile(_pattern(row_word_list()))


@functools.lru_cache(maxsize=1)
def second_word_list() -> tuple[str, ...]:
    """A region can hold a statement rule's finding only if it also names the
    rest of a clause (or a helper)."""
    found: list[str] = []
    for clause in _statement_clauses():
        for group in clause[1:] if len(clause) > 1 else clause:
            found += words(group)
    return tuple(dict.fromkeys([*found, helper_prefix()]))


@functools.lru_cache(maxsize=1)
def second_words() -> re.Pattern[str]:
    """``second_word_list`` as one pattern."""
    return re.compile(_pattern(second_word_list()))


@functools.lru_cache(maxsize=1)
def fact_words() -> tuple[str, ...]:
    """Names of the calls the class rules read."""
    found: list[str] = []
    for needs in declared().values():
        found += needs.facts
    return tuple(dict.fromkeys(found))


def fact_pattern(aliases: Iterable[str] = ()) -> re.Pattern[str]:
    """Rows of a class read whole whose expressions may hold facts: a fact
    word, or one of ``aliases`` (other names a file gives an allocator), as a
    whole identifier. Whatever follows it: a call is also written
    ``(torch.zeros)(...)``, or with a comment before its bracket."""
    return _fact_pattern(tuple(sorted(set(aliases))))


@functools.lru_cache(maxsize=32)
def _fact_pattern(aliases: tuple[str, ...]) -> re.Pattern[str]:
    names = _pattern([*fact_words(), *aliases])
    return re.compile(rf"\b(?:{names})(?!\w)")


def fact_rows(text: str, aliases: Iterable[str] = (), first_row: int = 1) -> list[int]:
    """The rows ``fact_pattern(aliases)`` matches on, found word by word with
    ``str.find`` (the pattern starts with ``\\b``, which ``re`` tries at every
    offset): a word with no word character on either side."""
    from lint_plugin.engine.source import rows_of

    words = [*fact_words(), *sorted(set(aliases))]
    return rows_of(text, word_offsets(text, words), first_row)


def substring_offsets(text: str, words: Iterable[str]) -> list[int]:
    """Where each of ``words`` stands in ``text``, inside an identifier or not."""
    starts = []
    for word in dict.fromkeys(words):
        at = text.find(word)
        while at >= 0:
            starts.append(at)
            at = text.find(word, at + 1)
    starts.sort()
    return starts


def identifier_around(text: str, start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` of ``text`` widened to the identifier around it."""
    size = len(text)
    while start and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    while end < size and (text[end].isalnum() or text[end] == "_"):
        end += 1
    return start, end


# `def name` / `class Name` (after a line's indentation), `async def` too.
BLOCK_HEAD = re.compile(r"(?:async[ \t]+)?(def|class)[ \t]+(\w+)")


@functools.lru_cache(maxsize=64)
def _anchors(words: frozenset[str]) -> tuple[str, ...]:
    """The words no other one holds."""
    return tuple(w for w in words if not any(o != w and o in w for o in words))


def word_offsets(text: str, words: Iterable[str]) -> list[int]:
    """Where each of ``words`` stands as a whole identifier in ``text``, in
    order. Only the words no other one holds are searched for (``zeros``
    finds ``new_zeros``): each hit is widened to the identifier around it."""
    wanted = frozenset(words)
    anchors = _anchors(wanted)
    starts = set()
    for anchor in anchors:
        at = text.find(anchor)
        while at >= 0:
            first, last = identifier_around(text, at, at + len(anchor))
            if text[first:last] in wanted:
                starts.add(first)
            at = text.find(anchor, last)
    return sorted(starts)


@functools.lru_cache(maxsize=1)
def helper_prefix() -> str:
    """What every helper's name starts with (``draft_kv_indices_``)."""
    first, *rest = HELPERS
    size = len(first)
    while rest and not all(h.startswith(first[:size]) for h in rest):
        size -= 1
    return first[:size]


def self_role_pattern(roles: Iterable[Role]) -> re.Pattern[str]:
    """``self.<name>`` for names of ``roles`` (their own patterns, ``.*`` read
    as an identifier's characters, none too: ``self._topk``). No leading
    ``\\b``: a pattern that starts with its literal is searched for that
    literal first (ten times faster on a large class); the boundary before
    ``self`` is the caller's."""
    names = "|".join(
        "(?:" + ROLES[role].pattern.replace(".*", r"\w*") + ")" for role in roles
    )
    return re.compile(
        rf"self\s*\.\s*(?!\d)({names})(?!\w)"
    )  # no identifier starts with a digit
