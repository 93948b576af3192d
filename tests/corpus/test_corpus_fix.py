"""``fix`` over sglang 0.5.12.post1's four backends reproduces 0.5.13's call sites
(and, with ``--unsafe-fixes``, upstream's guard before each draft launch)."""

from __future__ import annotations

import ast
import difflib
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from corpus import BACKENDS, CONTRACT_SITES, OLD

from lint_plugin.engine.formulas import BUFFER_WIDTH, USED_LEN
from lint_plugin.fix.rewrite import Options, rewrite_text
from lint_plugin.linter import lint_source

HELPERS = (USED_LEN, BUFFER_WIDTH)
# The length KVI006's guard checks: upstream's own in 0.5.13's FlashInfer and
# FlashInfer MLA; its Triton and Aiter launch with no guard.
GUARD_ARGS = ("seq_lens_sum", "self.topk", "bs", "self.speculative_num_steps")
UNGUARDED_IN_0513 = ("triton_backend.py", "aiter_backend.py")


def helper_calls(text: str) -> Counter:
    """(class.method, helper, argument texts) of every helper call."""
    calls: Counter = Counter()
    for cls in ast.walk(ast.parse(text)):
        if not isinstance(cls, ast.ClassDef):
            continue
        for fn in cls.body:
            if not isinstance(fn, ast.FunctionDef):
                continue
            for node in ast.walk(fn):
                if (
                    isinstance(node, ast.Call)
                    and getattr(node.func, "id", None) in HELPERS
                ):
                    args = tuple(ast.unparse(a) for a in node.args)
                    calls[(f"{cls.name}.{fn.name}", node.func.id, args)] += 1
    return calls


@pytest.fixture(scope="module")
def rewritten(old_attention: Path, new_attention: Path):
    out = {}
    for name in BACKENDS:
        text = (old_attention / name).read_text()
        safe = rewrite_text(text, name, Options())
        unsafe = rewrite_text(text, name, Options(unsafe_fixes=True))
        out[name] = (text, safe, unsafe, (new_attention / name).read_text())
    return out


def test_safe_fix_makes_eight_rewrites(rewritten) -> None:
    applied = [f.code for _, safe, _, _ in rewritten.values() for f in safe.applied]
    assert Counter(applied) == {"KVI001": 4, "KVI002": 4}


def test_unsafe_fix_makes_sixteen_rewrites(rewritten) -> None:
    applied = [f.code for _, _, unsafe, _ in rewritten.values() for f in unsafe.applied]
    assert Counter(applied) == {"KVI001": 4, "KVI002": 4, "KVI003": 4, "KVI006": 4}


@pytest.mark.parametrize("name", BACKENDS)
def test_each_call_site_is_upstreams(rewritten, name: str) -> None:
    original, _, unsafe, upstream = rewritten[name]
    ours = helper_calls(unsafe.text) - helper_calls(original)
    theirs = helper_calls(upstream)
    assert sum(ours.values()) == 4
    guard = [s for s in ours if s[1:] == (USED_LEN, GUARD_ARGS)]
    assert [s[0].rsplit(".", 1)[1] for s in guard] == ["common_template"]
    for site in ours:
        if site in guard and name in UNGUARDED_IN_0513:
            assert site not in theirs  # upstream's guard, where 0.5.13 has none
            continue
        assert site in theirs, f"{site} is not a call site of sglang 0.5.13"
    graph = [s for s in ours if s[0].endswith("init_cuda_graph_state")]
    assert [s[1:] for s in graph] == [
        (BUFFER_WIDTH, ("max_bs", "self.topk", "self.max_context_len"))
    ]


@pytest.mark.parametrize("name", BACKENDS)
def test_rewritten_files_are_clean_compile_and_are_stable(rewritten, name: str) -> None:
    _, safe, unsafe, _ = rewritten[name]
    # The sizing contracts' findings stay: 0.5.12.post1's tree has no owner
    # helper (tree_mask_numel) to size a mask with, and KVI009 has no fix.
    contracts = sorted(code for file, _, code in CONTRACT_SITES[OLD] if file == name)
    safe_codes = sorted(f.code for f in lint_source(safe.text.encode(), name))
    assert safe_codes == sorted(["KVI003", "KVI006", *contracts])  # unsafe fixes
    unsafe_codes = sorted(f.code for f in lint_source(unsafe.text.encode(), name))
    assert unsafe_codes == contracts
    compile(unsafe.text, name, "exec")
    assert not rewrite_text(unsafe.text, name, Options(unsafe_fixes=True)).changed


def _lines_a_formatter_changes(before: str, after: str) -> list[tuple[int, int]]:
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines())
    return [
        (i1 + 1, max(i1 + 1, i2))
        for tag, i1, i2, _, _ in matcher.get_opcodes()
        if tag != "equal"
    ]


@pytest.mark.parametrize("name", BACKENDS)
def test_formatters_leave_rewritten_statements_alone(rewritten, name: str) -> None:
    original, _, unsafe, _ = rewritten[name]
    ours = _lines_a_formatter_changes(unsafe.text, original)
    for tool in (
        [sys.executable, "-m", "ruff", "format", "--stdin-filename", name, "-"],
        [sys.executable, "-m", "black", "-q", "--target-version", "py310", "-"],
    ):
        result = subprocess.run(tool, input=unsafe.text, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        theirs = _lines_a_formatter_changes(unsafe.text, result.stdout)
        touched = [
            (a, b) for a, b in theirs for c, d in ours if a <= d and c <= b
        ]  # formatter changes that overlap a rewritten statement
        assert touched == [], f"{tool[2]} would reformat rewritten lines {touched}"
