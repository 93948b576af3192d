"""KVI003 against an oracle nobody wrote by hand: the generated programs' own
execution (``tests/width_programs.py``).

Each generated module is a draft backend whose method computes a row width
through several statements and allocates the buffer in one of many spellings.
Its truth comes from running it (generated code only, never an analysed file)
over a grid of positive bindings of topk, the step count, the context size, the
sequence count, a page size and two flags: the row is *unsized* when it is ever
below ``max_bs * topk * context``. Then:

* a program the analysis calls unsized is unsized: on the grid, or at the
  values its message gives, run again, with the parts it cannot read given any
  value (other bodies of ``lib_width``, a function of another module; other
  lengths of ``self.slots`` and values of ``self.table[0]``);
* a program the analysis calls sized is never unsized on the grid, in any of
  those variants;
* a program that can be unsized, with nothing the analysis is allowed to leave
  opaque (a call of another module, a subscript, a size of no role), is found;
* ``check``'s regions, the whole walk and the flake8 plugin agree.

Not judged is allowed for the rest, and counted. With ``-s`` the counts are
printed. CI runs 2,000 programs, in two shards of 1,000 that pytest-xdist's
workers share (each its own programs, seeded by the shard where the profile is
derandomized); the long run::

    DRAFT_KV_LINT_ORACLE=50000 python -m pytest tests/rules/test_width_oracle.py -s
"""

from __future__ import annotations

import ast
import itertools
import os
import sys
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, seed, settings
from width_programs import (
    GRID,
    OTHER_LIB_WIDTHS,
    OTHER_OPAQUE_VALUES,
    Binding,
    Program,
    compiled,
    needed,
    programs,
    row_width,
)

from lint_plugin.engine.analysis import walk
from lint_plugin.engine.flow import row_sizing
from lint_plugin.engine.source import Source
from lint_plugin.flake8_plugin import KviChecker
from lint_plugin.linter import lint_source
from lint_plugin.rules import DECISIONS

sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))
EXAMPLES = int(os.environ.get("DRAFT_KV_LINT_ORACLE", "2000"))
SHARDS = 2
SHARE = -(-EXAMPLES // SHARDS)  # each shard's programs, rounded up
COUNTS: Counter[str] = Counter()
KEYS = {
    "role:topk": "topk",
    "role:num_steps": "steps",
    "role:max_context_len": "context",
    "role:window_size": "context",
    "role:num_seqs": "max_bs",
    "free:self.page_size": "page",
    "free:page_size": "page",
}


def _key(findings) -> list[tuple]:
    return sorted((f.row, f.column, f.code, f.message) for f in findings)


def _variants(cls, program) -> list[tuple[object, dict | None]]:
    """The program's class and opaque values as generated, then with what the
    analysis cannot read given other values: each other body of ``lib_width``
    (a function of another module) and other opaque sizes."""
    variants: list[tuple[object, dict | None]] = [(cls, None)]
    if "lib_width(" in program.source:
        variants += [(compiled(program, body), None) for body in OTHER_LIB_WIDTHS]
    if "self.slots" in program.source or "self.table" in program.source:
        variants += [(cls, values) for values in OTHER_OPAQUE_VALUES]
    return variants


def _unsized_at(cls, program, witness: dict) -> bool:
    """Run the program at the values the analysis says show it unsized, in
    each of its variants (what it cannot read may hold anything, so the branch
    it picks is any)."""
    values = {name: 1 for name in ("topk", "steps", "context", "max_bs", "page")}
    for key, value in witness.items():
        assert key in KEYS, (key, program.source)
        values[KEYS[key]] = value
    for (each, opaque), (flag_a, flag_b) in itertools.product(
        _variants(cls, program), itertools.product((False, True), repeat=2)
    ):
        binding = Binding(flag_a=flag_a, flag_b=flag_b, **values)
        width = row_width(each, program, binding, opaque)
        if width is not None and width < needed(binding):
            return True
    return False


def _unsized_in_other_variants(cls, program) -> bool:
    """Is the row ever unsized on the grid in a variant other than the
    generated one (a sized row is sized whatever the opaque parts hold)?"""
    for each, opaque in _variants(cls, program)[1:]:
        for binding in GRID:
            width = row_width(each, program, binding, opaque)
            if width is not None and width < needed(binding):
                return True
    return False


# A branch on lib_width that the generator's body (2n) never takes on the grid.
OPAQUE_BRANCH = """\
import torch


class GenMultiStepDraftBackend:
    def __init__(self, topk, speculative_num_steps, context, page_size):
        self.topk = topk
        self.speculative_num_steps = speculative_num_steps
        self.max_context_len = context
        self.page_size = page_size

    def init_cuda_graph_state(self, max_bs, flag_a, flag_b):
        width = max_bs * self.topk * self.max_context_len
        if lib_width(max_bs) > 100:
            width = max_bs
        steps = self.speculative_num_steps
        self.cuda_graph_kv_indices = torch.zeros((steps, width), dtype=torch.int32)
"""


def test_the_oracle_runs_the_other_bodies_of_lib_width() -> None:
    """The bodies the analysis cannot rule out decide both ways: unsized at
    the witness only with another body, and never sized with all of them."""
    program = Program(OPAQUE_BRANCH, "tuple", "self.max_context_len", True)
    cls = compiled(program)
    assert all(row_width(cls, program, b) >= needed(b) for b in GRID)
    witness = {"role:topk": 2, "role:num_seqs": 1, "role:max_context_len": 1}
    assert _unsized_at(cls, program, witness)
    assert _unsized_in_other_variants(cls, program)
    checker = walk(ast.parse(OPAQUE_BRANCH), Source(OPAQUE_BRANCH), "gen.py")
    (judgement,) = row_sizing.judgements(checker.facts, checker.analysis)
    assert judgement.verdict == row_sizing.UNSIZED


@pytest.mark.parametrize("shard", range(SHARDS))
def test_widths_agree_with_execution(shard: int, request) -> None:
    COUNTS.clear()

    @settings(
        max_examples=SHARE,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(programs())
    def run(program) -> None:
        text = program.source
        if os.environ.get("DRAFT_KV_LINT_ORACLE_DUMP"):  # the last program, to debug
            with open(os.environ["DRAFT_KV_LINT_ORACLE_DUMP"], "w") as handle:
                handle.write(text)
        COUNTS["programs"] += 1
        COUNTS[f"spelling {program.spelling}"] += 1
        cls = compiled(program)
        widths = [(b, row_width(cls, program, b)) for b in GRID]
        reached = [(b, w) for b, w in widths if w is not None]
        unsized = any(w < needed(b) for b, w in reached)
        COUNTS["truly unsized" if unsized else "truly sized"] += 1

        checker = walk(ast.parse(text), Source(text), "gen.py")
        found = row_sizing.judgements(checker.facts, checker.analysis)
        for _, decide in DECISIONS:
            decide(checker)
        whole = checker.findings
        if COUNTS["programs"] % 2 == 0:  # check's regions, on half of them
            assert _key(lint_source(text.encode(), "gen.py")) == _key(whole), text
        if COUNTS["programs"] % 5 == 0:  # flake8's own path, on a fifth of them
            checker = KviChecker(ast.parse(text), "gen.py", text.splitlines(True))
            flake8 = sorted((r, c + 1, m.split()[0]) for r, c, m, _ in checker.run())
            assert flake8 == sorted((f.row, f.column, f.code) for f in whole), text

        assert len(found) <= 1, [j.allocation.call.lineno for j in found]
        judgement = found[0] if found else None
        verdict = judgement.verdict if judgement is not None else "not a row"
        COUNTS[verdict] += 1
        reported = [f for f in whole if f.code == "KVI003"]
        assert bool(reported) == (verdict == row_sizing.UNSIZED), (verdict, text)
        if verdict == row_sizing.UNSIZED:
            witness = judgement.unsized[0].witness
            confirmed = unsized or _unsized_at(cls, program, witness)
            assert confirmed, f"called unsized, never unsized ({witness}):\n{text}"
            COUNTS["agree"] += 1
        elif verdict == row_sizing.SIZED:
            assert not unsized, f"called sized, unsized when run:\n{text}"
            assert not _unsized_in_other_variants(cls, program), (
                f"called sized, unsized with other opaque values:\n{text}"
            )
            COUNTS["agree"] += 1
        elif unsized:
            assert program.may_skip, f"{verdict}, unsized when run:\n{text}"
            COUNTS["unsized, not judged (opaque parts)"] += 1
        else:
            COUNTS["sized, not judged"] += 1
            if os.environ.get("DRAFT_KV_LINT_ORACLE_DUMP"):
                with open(
                    os.environ["DRAFT_KV_LINT_ORACLE_DUMP"] + ".undecided", "a"
                ) as out:
                    out.write(text + "\n#####\n")

    forced = request.config.getoption("--hypothesis-seed", None)
    if settings.default.derandomize or forced is not None:
        # Derandomized (the CI profile), a run's programs follow from the
        # function's text, and a forced seed is every test's: both are every
        # shard's, so each shard gets a seed of its own.
        run = seed(f"{forced}-{shard}")(run)
    try:
        run()
    finally:
        total = COUNTS["programs"] or 1
        judged = COUNTS[row_sizing.SIZED] + COUNTS[row_sizing.UNSIZED]
        print(
            f"\nwidth oracle (shard {shard + 1}/{SHARDS}): "
            f"{COUNTS['programs']} programs "
            f"({COUNTS['truly unsized']} unsized when run, "
            f"{COUNTS['truly sized']} sized); analysis: "
            f"{COUNTS[row_sizing.UNSIZED]} unsized, {COUNTS[row_sizing.SIZED]} sized, "
            f"{COUNTS[row_sizing.NOT_JUDGED]} not judged, {COUNTS['not a row']} not a "
            f"row ({100 * (total - judged) / total:.1f}% not judged); "
            f"{COUNTS['agree']} agree with execution, "
            f"{COUNTS['unsized, not judged (opaque parts)']} unsized left not judged "
            f"(opaque parts), {COUNTS['sized, not judged']} sized left not judged"
        )
        spellings = {k[9:]: v for k, v in COUNTS.items() if k.startswith("spelling ")}
        print(f"spellings: {dict(sorted(spellings.items()))}")
    assert COUNTS["programs"] >= min(SHARE, 2000 // SHARDS) * 0.9
    assert COUNTS[row_sizing.UNSIZED] > 0 and COUNTS[row_sizing.SIZED] > 0
