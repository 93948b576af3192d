"""KVI006 on the real refactored backends: Triton's and Aiter's launches lack
upstream's guard (0.5.13 and still 0.5.23); the unsafe fix inserts it in
FlashInfer's shape, and SGLang's black and isort leave the result alone."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest
from corpus import BACKENDS, CONTRACT_SITES

from lint_plugin.config.selection import Layer, build_selection
from lint_plugin.fix.rewrite import Options, rewrite_text
from lint_plugin.linter import lint_source


@pytest.fixture(scope="module", params=["0.5.13", "0.5.23"])
def refactored(request, new_attention: Path, latest_package: Path) -> Path:
    if request.param == "0.5.13":
        return new_attention
    return latest_package / "srt/layers/attention"


def _contract_sites(folder: Path) -> set[tuple[str, int, str]]:
    """The sizing contracts' findings of the four backends in ``folder``."""
    version = "0.5.13" if "0.5.13" in str(folder) else "0.5.23"
    return {site for site in CONTRACT_SITES[version] if site[0] in BACKENDS}


def _selected(select: tuple[str, ...] | None = None):
    selection = build_selection([Layer(select=select)])
    return lambda finding: selection.is_reported(finding.code, finding.path)


def _enclosing_function(text: str, row: int) -> str:
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef) and node.lineno <= row <= node.end_lineno:
            return node.name
    raise AssertionError(row)


def test_default_finds_exactly_the_two_unguarded_launches(refactored: Path) -> None:
    found, other, contracts = [], [], set()
    default = _selected()
    without = _selected(("KVI001", "KVI002", "KVI003", "KVI004", "KVI005", "KVI007"))
    for name in BACKENDS:
        text = (refactored / name).read_text()
        for finding in lint_source(text.encode(), name):
            if finding.code in ("KVI008", "KVI009"):
                assert default(finding)
                contracts.add((name, finding.row, finding.code))
            elif default(finding):
                found.append(
                    (name, finding.code, _enclosing_function(text, finding.row))
                )
            if without(finding):
                other.append(finding)
    assert sorted(found) == [
        ("aiter_backend.py", "KVI006", "common_template"),
        ("triton_backend.py", "KVI006", "common_template"),
    ]
    assert other == []
    # The verify masks short at the context wall (tests/corpus/test_corpus_check.py).
    assert contracts == _contract_sites(refactored)


def _guard_block(text: str) -> str:
    match = re.search(
        r"\n( +required_kv_indices_len = draft_kv_indices_used_len\(.*?\n +\)\n"
        r" +assert_buffer_fits\(.*?\n +\)\n)",
        text,
        re.S,
    )
    assert match, "no guard"
    return match.group(1)


TOOLS = {
    # --fast skips only black's checks of its own output (an AST comparison and a
    # second pass): the text written is the same, in three quarters of the time.
    "black": [sys.executable, "-m", "black", "-q", "--fast"],
    "isort": [
        sys.executable,
        "-m",
        "isort",
        "-q",
        "--profile",
        "black",
        "-p",
        "sglang",
    ],
}


def _formatted(tool: str, text: str, folder: Path) -> str:
    path = folder / f"{tool}.py"
    path.write_text(text)
    subprocess.run([*TOOLS[tool], str(path)], capture_output=True, check=True)
    return path.read_text()


def test_unsafe_fix_inserts_flashinfers_guard(refactored: Path, tmp_path: Path) -> None:
    options = Options(unsafe_fixes=True, selected=_selected())
    upstream = _guard_block((refactored / "flashinfer_backend.py").read_text())
    for name in ("triton_backend.py", "aiter_backend.py"):
        text = (refactored / name).read_text()
        # By its name alone: no tree to import the masks' owner from, so only
        # the guard is inserted and the masks stay reported.
        fixed = rewrite_text(text, name, options)
        assert [f.code for f in fixed.applied] == ["KVI006"]
        masks = sorted(c for f, _, c in _contract_sites(refactored) if f == name)
        assert dedent(_guard_block(fixed.text)) == dedent(upstream)
        if name == "triton_backend.py":
            # Triton replaces a missing seq_lens_sum by an upper bound: the
            # guard sits on the branch where the sum is real.
            assert re.search(
                r"seq_lens_sum = num_seqs \* self\.max_context_len\n( +)else:\n"
                r"\1    required_kv_indices_len =",
                fixed.text,
            )
        else:
            assert _guard_block(fixed.text) == upstream
        assert "import assert_buffer_fits" in fixed.text or (
            "assert_buffer_fits," in fixed.text
        )
        assert rewrite_text(fixed.text, name, options).text == fixed.text
        assert [f.code for f in lint_source(fixed.text.encode(), name)] == masks, (
            "fixed file is clean but for the masks"
        )
        # SGLang's black 24.10 and isort keep the guard and the imports as
        # written (0.5.23's own files are not all black-clean: compare the change).
        for tool in TOOLS:
            before = _formatted(tool, text, tmp_path)
            after = _formatted(tool, fixed.text, tmp_path)
            if before == text:
                assert after == fixed.text, tool
            assert dedent(_guard_block(after)) == dedent(upstream), tool
