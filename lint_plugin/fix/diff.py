"""Line diffs of a file against its rewrite, in time linear in the file's size.

``difflib.SequenceMatcher`` searches the whole remaining file for the longest
match once per changed region, so a file with changes throughout costs its size
times the number of changes: a 4 MB file with a hundred rewrites took 50 s of
``fix --diff``'s 70. A rewrite leaves most lines as they were and in order, so
lines that occur once in both texts pin them together (patience diffing); only
the short stretches between two such lines, where the rewrites are, are given
to difflib. A stretch with no such line is split further by the lines unique
within it, and one still too large to match line by line is a replacement (a
correct diff, only not the shortest).

The output is a unified diff as ``difflib.unified_diff`` writes one (three
lines of context, ``---``/``+++`` headers, no dates).
"""

from __future__ import annotations

import bisect
import difflib
from collections import Counter
from collections.abc import Iterator, Sequence

Block = tuple[int, int, int]  # (start in a, start in b, length)
Opcode = tuple[str, int, int, int, int]

# Past this many pairs of lines a stretch is not matched line by line.
_MATCH_LIMIT = 4_000_000


def matching_blocks(a: Sequence[str], b: Sequence[str]) -> list[Block]:
    """Runs of equal lines, in order, ending with ``(len(a), len(b), 0)``."""
    pairs: list[tuple[int, int]] = []
    pending = [(0, len(a), 0, len(b))]
    while pending:
        alo, ahi, blo, bhi = pending.pop()
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            pairs.append((alo, blo))
            alo, blo = alo + 1, blo + 1
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi, bhi = ahi - 1, bhi - 1
            pairs.append((ahi, bhi))
        if alo == ahi or blo == bhi:
            continue
        anchors = _unique_anchors(a, b, alo, ahi, blo, bhi)
        if not anchors:
            if (ahi - alo) * (bhi - blo) <= _MATCH_LIMIT:
                matcher = difflib.SequenceMatcher(
                    None, a[alo:ahi], b[blo:bhi], autojunk=False
                )
                for i, j, size in matcher.get_matching_blocks():
                    pairs += [(alo + i + k, blo + j + k) for k in range(size)]
            continue
        previous = (alo - 1, blo - 1)
        for i, j in anchors:
            pairs.append((i, j))
            pending.append((previous[0] + 1, i, previous[1] + 1, j))
            previous = (i, j)
        pending.append((previous[0] + 1, ahi, previous[1] + 1, bhi))
    pairs.sort()
    blocks: list[Block] = []
    for i, j in pairs:
        if (
            blocks
            and blocks[-1][0] + blocks[-1][2] == i
            and blocks[-1][1] + blocks[-1][2] == j
        ):
            start_a, start_b, size = blocks[-1]
            blocks[-1] = (start_a, start_b, size + 1)
        else:
            blocks.append((i, j, 1))
    blocks.append((len(a), len(b), 0))
    return blocks


def _unique_anchors(a, b, alo, ahi, blo, bhi) -> list[tuple[int, int]]:
    """Lines once in each stretch, paired, the longest run of pairs in order."""
    in_a = Counter(a[alo:ahi])
    in_b = Counter(b[blo:bhi])
    where_b = {b[j]: j for j in range(blo, bhi) if in_b[b[j]] == 1}
    pairs = [
        (i, where_b[a[i]])
        for i in range(alo, ahi)
        if in_a[a[i]] == 1 and a[i] in where_b
    ]
    # The longest increasing run of b positions (patience sorting).
    tails: list[int] = []  # smallest tail position in b of a run of each length
    tail_index: list[int] = []
    back: list[int] = []
    for index, (_, j) in enumerate(pairs):
        length = bisect.bisect_left(tails, j)
        if length == len(tails):
            tails.append(j)
            tail_index.append(index)
        else:
            tails[length] = j
            tail_index[length] = index
        back.append(tail_index[length - 1] if length else -1)
    chain: list[tuple[int, int]] = []
    index = tail_index[-1] if tail_index else -1
    while index >= 0:
        chain.append(pairs[index])
        index = back[index]
    return chain[::-1]


def opcodes(a: Sequence[str], b: Sequence[str]) -> list[Opcode]:
    """``difflib.SequenceMatcher.get_opcodes()`` for these matching blocks."""
    found: list[Opcode] = []
    i = j = 0
    for start_a, start_b, size in matching_blocks(a, b):
        tag = ""
        if i < start_a and j < start_b:
            tag = "replace"
        elif i < start_a:
            tag = "delete"
        elif j < start_b:
            tag = "insert"
        if tag:
            found.append((tag, i, start_a, j, start_b))
        i, j = start_a + size, start_b + size
        if size:
            found.append(("equal", start_a, i, start_b, j))
    return found


def unified_diff(
    a: Sequence[str], b: Sequence[str], fromfile: str, tofile: str, context: int = 3
) -> Iterator[str]:
    """The lines of a unified diff from ``a`` to ``b`` (lines with endings)."""
    first = True
    for group in _hunks(opcodes(a, b), context):
        if first:
            yield f"--- {fromfile}\n"
            yield f"+++ {tofile}\n"
            first = False
        _, i1, _, j1, _ = group[0]
        _, _, i2, _, j2 = group[-1]
        yield f"@@ -{_range(i1, i2)} +{_range(j1, j2)} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in a[i1:i2])
                continue
            yield from ("-" + line for line in a[i1:i2])
            yield from ("+" + line for line in b[j1:j2])


def _hunks(codes: list[Opcode], context: int) -> Iterator[list[Opcode]]:
    """Changes grouped with ``context`` equal lines around each, as difflib
    groups them (a run of more than twice that many ends a hunk)."""
    if not codes or all(code[0] == "equal" for code in codes):
        return
    codes = list(codes)
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = (tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2)
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = (tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context))
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context:
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            yield group
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group


def _range(start: int, stop: int) -> str:
    """A hunk's range as unified diffs write it (1-based; ``start,0`` when
    empty, just the line when one)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"
