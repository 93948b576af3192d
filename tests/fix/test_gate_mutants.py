"""KVI003 as a gate: every sized buffer of the refactored backends (0.5.13 and
0.5.23), regressed in every plausible style, is exactly one KVI003; sized variants
in other spellings are none. The mutants are generated from the downloaded wheels
(see ``mutants.py``); the counts per style are printed with ``-s``."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pytest
from corpus import BACKENDS
from mutants import REGRESSIONS, SIZED, all_mutants, mutate, sites
from shared_results import SharedResults

from lint_plugin.findings import SYNTAX_ERROR_CODE
from lint_plugin.fix.rewrite import Options, rewrite_text
from lint_plugin.linter import lint_source


@pytest.fixture(scope="module", params=["0.5.13", "0.5.23"])
def refactored(request, new_attention: Path, latest_package: Path) -> dict[str, str]:
    folder = (
        new_attention
        if request.param == "0.5.13"
        else latest_package / "srt/layers/attention"
    )
    return {name: (folder / name).read_text() for name in BACKENDS}


# The refactored releases' draft launches with no guard before them: KVI006,
# whose unsafe fix inserts upstream's guard there.
UNGUARDED = ("triton_backend.py", "aiter_backend.py")


def _fast(text: str, name: str, shared: SharedResults | None = None) -> list[tuple]:
    """check's findings in ``text`` as (row, column, code, message), sorted.
    ``shared``: computed once per session (a regression is checked by two tests)."""

    def compute() -> list[tuple]:
        findings = lint_source(text.encode(), name)
        return sorted((f.row, f.column, f.code, f.message) for f in findings)

    if shared is None:
        return compute()
    digest = hashlib.sha256(text.encode()).hexdigest()
    return shared.get(f"gate-mutant check {name} {digest}", compute)


# The sizing contracts of other buffers (the verify masks: KVI008) are pinned
# site by site in tests/corpus/test_corpus_check.py; the draft rows' gate is here.
CONTRACT_CODES = ("KVI008", "KVI009")


def _codes(text: str, name: str, shared: SharedResults | None = None) -> list[str]:
    codes = [code for _, _, code, _ in _fast(text, name, shared)]
    assert SYNTAX_ERROR_CODE not in codes, "a mutant must be valid Python"
    return [code for code in codes if code not in CONTRACT_CODES]


def test_each_backend_has_two_sized_buffers(refactored: dict[str, str]) -> None:
    for name, text in refactored.items():
        assert len(sites(text)) == 2, name
        assert _codes(text, name) == (["KVI006"] if name in UNGUARDED else [])
        masks = [code for _, _, code, _ in _fast(text, name) if code in CONTRACT_CODES]
        assert masks == (["KVI008"] if name in UNGUARDED else []) or (
            name == "triton_backend.py" and masks == []  # 0.5.23: VerifyMask's
        ), (name, masks)


def test_every_regression_is_one_kvi003(
    refactored: dict[str, str], shared_results: SharedResults
) -> None:
    caught: Counter[str] = Counter()
    for name, text in refactored.items():
        for index, style, mutant in all_mutants(text, REGRESSIONS):
            codes = _codes(mutant, name, shared_results)
            assert codes.count("KVI003") == 1, (name, index, style, codes)
            caught[style] += 1
    print("\nregressions caught per style:", dict(sorted(caught.items())))
    assert set(caught) == set(REGRESSIONS)
    assert all(count == 8 for count in caught.values())


def test_no_sized_variant_is_kvi003(refactored: dict[str, str]) -> None:
    quiet: Counter[str] = Counter()
    for name, text in refactored.items():
        for index, style, mutant in all_mutants(text, SIZED):
            codes = _codes(mutant, name)
            assert "KVI003" not in codes, (name, index, style, codes)
            quiet[style] += 1
    print("\nsized variants left alone per style:", dict(sorted(quiet.items())))
    assert all(count == 8 for count in quiet.values())


def test_unsafe_fix_of_a_local_width_regression_is_upstream_again(
    refactored: dict[str, str],
) -> None:
    """``w = max_bs * self.max_context_len`` is sized where it is made: the
    rewritten file is byte for byte the refactored release again (with
    upstream's guard before the launch where the release has none, as the
    same run on the release itself writes)."""
    options = Options(unsafe_fixes=True)
    for name, text in refactored.items():
        guarded = rewrite_text(text, name, options)
        launch = ["KVI006"] if name in UNGUARDED else []
        assert [f.code for f in guarded.applied] == launch
        for site in sites(text):
            mutant = mutate(text, site, REGRESSIONS["local"])
            assert mutant != text
            fixed = rewrite_text(mutant, name, options)
            assert sorted(f.code for f in fixed.applied) == ["KVI003", *launch]
            assert fixed.text == guarded.text, (name, site.width_rows)


@pytest.mark.parametrize(
    "style",
    ["annotated-local", "int-wrapper", "chain-of-locals", "self-attribute", "inline"],
)
def test_unsafe_fix_sizes_every_fixable_style(
    refactored: dict[str, str], style: str
) -> None:
    name, text = "triton_backend.py", refactored["triton_backend.py"]
    for site in sites(text):
        mutant = mutate(text, site, REGRESSIONS[style])
        fixed = rewrite_text(mutant, name, Options(unsafe_fixes=True))
        applied = [f.code for f in fixed.applied if f.code not in CONTRACT_CODES]
        assert sorted(applied) == ["KVI003", "KVI006"]
        assert _codes(fixed.text, name) == []
        assert "draft_kv_indices_buffer_width(" in fixed.text.replace(
            mutant, ""
        ) or fixed.text.count("self.topk") > mutant.count("self.topk")


def test_fast_path_equals_a_full_walk_on_mutants(
    refactored: dict[str, str], shared_results: SharedResults
) -> None:
    """check's regions and row pruning never cost a finding on a regression."""
    import ast

    from lint_plugin.engine.source import Source
    from lint_plugin.linter import lint_tree

    compared = 0
    for name, text in refactored.items():
        site = sites(text)[compared % 2]
        for style in REGRESSIONS.values():
            mutant = mutate(text, site, style)
            fast = _fast(mutant, name, shared_results)
            slow = lint_tree(ast.parse(mutant), Source(mutant), name, rows=None)
            key = lambda f: (f.row, f.column, f.code, f.message)  # noqa: E731
            assert fast == sorted(map(key, slow)), (name, style)
            compared += 1
    print(f"\nfast path equals a full walk on {compared} mutants")


def test_flake8_reports_what_check_reports_on_mutants(
    new_attention: Path, tmp_path: Path
) -> None:
    """One flake8 run over every regression of one backend: same rows, columns
    and codes as check."""
    import subprocess
    import sys

    text = (new_attention / "triton_backend.py").read_text()
    expected = set()
    for index, style, mutant in all_mutants(text, REGRESSIONS):
        path = tmp_path / f"m{index}_{style.replace('-', '_')}.py"
        path.write_text(mutant)
        expected |= {
            (path.name, f.row, f.column, f.code)
            for f in lint_source(mutant.encode(), str(path))
        }
    result = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "KVI",
         "--format", "%(path)s|%(row)d|%(col)d|%(code)s", str(tmp_path)],
        capture_output=True, text=True,
    )  # fmt: skip
    found = set()
    for line in result.stdout.split():
        path, row, col, code = line.split("|")
        found.add((Path(path).name, int(row), int(col), code))
    assert found == expected
    assert sum(code == "KVI003" for *_, code in found) == 2 * len(REGRESSIONS)
