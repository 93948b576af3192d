"""KVI008 and KVI009 against the generated backends' own execution.

Each program (``tests/contract_programs.py``) allocates a contract's buffer in
one of many spellings and writes it as the contract's writer does; its truth
comes from running the allocation over a grid of bindings (a stub ``torch``
counts the elements) against what the writer writes at the context wall. Then:

* a program the rule reports is short: on the grid, or at the values its
  message names;
* a program the rule passes (no finding, nothing it could not judge) is never
  short on the grid;
* a program that is short is reported (every spelling generated is one the
  analysis reads);
* ``check``'s regions and the whole walk agree;
* the unsafe fix, where offered, makes a program that is never short.

With ``-s`` the counts are printed. The long run:
``DRAFT_KV_LINT_CONTRACT_ORACLE=20000 python -m pytest tests/rules/test_contract_oracle.py -s``.
"""

from __future__ import annotations

import os
import random
import re
from collections import Counter

import pytest
from contract_programs import BACKEND_PATH, GRID, TREE, least, program, short_at
from rule_snippets import full_walk_codes

from lint_plugin.contracts import TARGET_VERIFY_KV_INDICES, VERIFY_CUSTOM_MASK
from lint_plugin.fix.rewrite import Options, rewrite_text
from lint_plugin.linter import lint_source

EXAMPLES = int(os.environ.get("DRAFT_KV_LINT_CONTRACT_ORACLE", "1000"))
COUNTS: Counter[str] = Counter()
# The names a message's values are given by, as the grid calls them.
WITNESS_NAMES = {
    "max_bs": "max_bs",
    "self.num_draft_tokens": "num_draft_tokens",
    "spec_info.draft_token_num": "num_draft_tokens",
    "self.max_context_len": "max_context_len",
    "self.page_size": "page_size",
}


def _witness(message: str) -> dict | None:
    """The binding a message's ``(name=value, ... gives a < b)`` names."""
    match = re.search(r"\(([^()]*=[^()]*) gives \d+ < \d+\)", message)
    if match is None:
        return None
    found = {}
    for part in match.group(1).split(", "):
        name, _, value = part.rpartition("=")
        if name not in WITNESS_NAMES:
            return None
        found[WITNESS_NAMES[name]] = int(value)
    return found


def _short_at_witness(code: str, source: str, witness: dict) -> bool:
    """Run the program at the message's values (the rest: 1, and the flag
    either way) and compare with the writes."""
    from contract_programs import sizes

    saved = dict(GRID)
    try:
        for key in GRID:
            if key == "flag":
                continue
            GRID[key] = (witness.get(key, 1),)
        for values, numel in sizes(source).items():
            binding = dict(zip(GRID, values, strict=True))
            if numel < least(code, binding):
                return True
        return False
    finally:
        GRID.update(saved)


def _tree(folder) -> str:
    for name, text in TREE:
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    path = folder / BACKEND_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    return str(path)


@pytest.mark.parametrize(
    "code", [VERIFY_CUSTOM_MASK.code, TARGET_VERIFY_KV_INDICES.code]
)
def test_contract_rules_agree_with_execution(code: str, tmp_path) -> None:
    rng = random.Random(f"{code}-{EXAMPLES}")
    path = _tree(tmp_path)
    options = Options(unsafe_fixes=True)
    for index in range(EXAMPLES):
        generated = program(code, rng)
        source = generated.source
        notes: list = []
        findings = [
            f for f in lint_source(source.encode(), path, notes=notes) if f.code == code
        ]
        judged = not [n for n in notes if n.code == code]
        short = short_at(code, source)
        where = f"program {index} ({generated.parts}):\n{source}"
        assert full_walk_codes(source).count(code) == len(findings), where
        assert len(findings) <= 1, where
        if findings:
            COUNTS[f"{code} reported"] += 1
            if not short:
                witness = _witness(findings[0].message)
                assert witness is not None, findings[0].message
                assert _short_at_witness(code, source, witness), (
                    f"{where}\nreported, never short: {findings[0].message}"
                )
        elif judged:
            COUNTS[f"{code} sized"] += 1
            assert not short, f"{where}\npassed, short at {short[0]}"
        else:
            COUNTS[f"{code} not judged"] += 1
        if short:
            assert findings, f"{where}\nshort at {short[0]}, not reported: {notes}"
        if findings and findings[0].fix is not None:
            COUNTS[f"{code} fixed"] += 1
            fixed = rewrite_text(source, path, options).text
            assert fixed != source, where
            assert not short_at(code, fixed), f"{where}\nfixed, still short:\n{fixed}"
            assert code not in full_walk_codes(fixed), fixed


def test_print_counts() -> None:
    print(dict(sorted(COUNTS.items())))
