"""``fix`` never writes a wrong file (issue 9).

* The gate: the text to be written is parsed and proved equal to the original
  (each helper call expanded back, the inserted import dropped); anything else is
  a refusal for that file, exit 1, bytes untouched.
* Valid code that used to be refused or broken is rewritten, to the same value
  (our own interpreter, never ``eval``), in one run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from interpreter import run_function

from lint_plugin.cli import main
from lint_plugin.fix import edits, formatting, rewrite
from lint_plugin.fix.command import fix_file
from lint_plugin.fix.gate.oracle import equivalent
from lint_plugin.fix.rewrite import Options
from lint_plugin.linter import lint_source

# The minimal case: two rewrites on neighbouring lines, the lower one
# moving a comment.
MINIMAL = """\
def sizes(self, seq_lens_sum, bs, num_steps, max_bs):
    used, width = (seq_lens_sum * self.topk
                   + bs * num_steps), (max_bs  # rows
                                       * self.topk * self.max_context_len)
    return used, width
"""
HELPERS = "lint_plugin.runtime"


def values(text: str, name: str = "f") -> list[object]:
    module = ast.parse(text)
    return [run_function(module, name, seed) for seed in (1, 2, 3)]


def fix(tmp_path: Path, text: str, *args: str, newline: str = "") -> Path:
    path = tmp_path / "m.py"
    path.write_bytes(text.encode())
    assert main(
        ["fix", "--no-config", "--helpers-module", HELPERS, *args, str(path)]
    ) in (0, 1)
    return path


# ---- the gate -----------------------------------------------------------------


def test_minimal_case_is_rewritten_to_the_same_value(tmp_path: Path, capsys) -> None:
    path = fix(tmp_path, MINIMAL)
    written = path.read_text()
    assert (
        "draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, num_steps)" in written
    )
    assert "+ bs * num_steps" not in written  # the old wrong splice kept this term
    assert values(written, "sizes") == values(MINIMAL, "sizes")
    assert "# rows" in written
    assert "Fixed 2 site(s)" in capsys.readouterr().err


def test_a_wrong_splice_is_refused_and_the_file_untouched(
    tmp_path, monkeypatch, capsys
):
    real = edits.apply_edits_with_rows

    def corrupt(text, found, anchor=None):  # a splice bug: the count is swapped
        out, rows = real(text, found, anchor)
        return out.replace("(max_bs, self.topk", "(bs, self.topk"), rows

    monkeypatch.setattr(rewrite, "apply_edits_with_rows", corrupt)
    path = tmp_path / "m.py"
    path.write_text(MINIMAL)
    assert main(["fix", "--no-config", str(path)]) == 1
    assert path.read_text() == MINIMAL
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"{path}: error: left unchanged: rewrite refused: ")
    assert "line 2" in err[0]


def test_a_formatter_returning_nothing_empties_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(formatting, "_run_ruff", lambda *args: "")
    path = tmp_path / "m.py"
    path.write_text(MINIMAL)
    assert main(["fix", "--no-config", "--helpers-module", HELPERS, str(path)]) == 0
    written = path.read_text()  # rewritten, left unwrapped
    assert "draft_kv_indices_used_len(" in written
    assert values(written, "sizes") == values(MINIMAL, "sizes")


def _swapping_formatter(monkeypatch) -> None:
    real = formatting._run_ruff

    def wrong(text, *args):  # a formatter bug: one operand swapped
        return real(text, *args).replace("(max_bs,", "(bs,")

    monkeypatch.setattr(formatting, "_run_ruff", wrong)


def test_a_formatter_changing_the_program_is_not_taken(tmp_path, monkeypatch):
    """Each statement the formatter returns must be the same tree with the same
    comments, or it is left as the rewrite wrote it."""
    _swapping_formatter(monkeypatch)
    path = fix(tmp_path, MINIMAL)
    written = path.read_text()
    assert "draft_kv_indices_buffer_width(max_bs," in written
    assert values(written, "sizes") == values(MINIMAL, "sizes")


def test_a_formatter_change_that_slips_through_is_refused(
    tmp_path, monkeypatch, capsys
):
    _swapping_formatter(monkeypatch)
    monkeypatch.setattr(formatting, "_same_program", lambda before, after: True)
    path = tmp_path / "m.py"
    path.write_text(MINIMAL)
    assert main(["fix", "--no-config", str(path)]) == 1
    assert path.read_text() == MINIMAL
    (line,) = capsys.readouterr().err.splitlines()[:1]
    assert "rewrite refused" in line


def test_a_call_left_without_its_import_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(rewrite, "_add_imports", lambda text, *args: text)
    path = tmp_path / "m.py"
    path.write_text(MINIMAL)
    assert main(["fix", "--no-config", str(path)]) == 1
    assert path.read_text() == MINIMAL
    assert "is not imported from" in capsys.readouterr().err


def test_the_gate_reads_the_original_tree_it_is_given_and_keeps_it() -> None:
    """fix parses the original once; the gate must not change that tree (a second
    check against it would compare with a different program)."""
    original = f"from {HELPERS} import draft_kv_indices_used_len, other\n" + MINIMAL
    result = rewrite.rewrite_text(original, "m.py", Options(helpers_module=HELPERS))
    kept, tree = result.parsed_original
    assert kept == original
    fresh = ast.dump(ast.parse(original), include_attributes=True)
    assert ast.dump(tree, include_attributes=True) == fresh  # after the first gate
    rewrite.check_written(original, result, Options(helpers_module=HELPERS))
    assert ast.dump(tree, include_attributes=True) == fresh


def test_a_tree_of_another_text_is_not_used_by_the_gate() -> None:
    result = rewrite.rewrite_text(MINIMAL, "m.py", Options(helpers_module=HELPERS))
    assert result.changed
    other = MINIMAL.replace("return used, width", "return width, used")
    with pytest.raises(rewrite.RewriteRefused):
        rewrite.check_written(other, result, Options(helpers_module=HELPERS))


# ---- the exact oracle -----------------------------------------------------------


@pytest.mark.parametrize(
    ("original", "rewritten"),
    [
        ("seq_lens_sum * t.topk + bs * (i + 1)", "draft_kv_indices_used_len(seq_lens_sum, t.topk, bs, i + 1)"),
        ("(i + 1) * bs + t.topk * seq_lens_sum", "draft_kv_indices_used_len(seq_lens_sum, t.topk, bs, i + 1)"),
        ("n * t.topk * m", "draft_kv_indices_buffer_width(n, t.topk, m)"),
        ("a - b + c * 2", "c + a + c - b"),
        ("x + (y - y) * z", "x"),
    ],
)  # fmt: skip
def test_oracle_proves_equal_forms(original: str, rewritten: str) -> None:
    assert equivalent(original, rewritten) is None


@pytest.mark.parametrize(
    ("original", "rewritten"),
    [
        ("seq_lens_sum * k + bs * s", "draft_kv_indices_used_len(k, seq_lens_sum, s, s)"),
        ("n * k * m", "draft_kv_indices_buffer_width(n, k, n)"),
        # Zero at every edge value the sampler tries first: a polynomial all the same.
        ("a * b", "a * b + a * (a - 1) * (a - 2) * (a - 3) * (a - 7)"),
    ],
)  # fmt: skip
def test_oracle_refuses_different_forms(original: str, rewritten: str) -> None:
    assert equivalent(original, rewritten) is not None


# ---- valid code is rewritten, in one run, to the same value ---------------------

FUNCTION = "def f(self, forward_batch, seq_lens_sum, bs, num_steps, max_bs, i):\n"
VALID = {
    "nested": "    return seq_lens_sum * self.topk + abs(max_bs * self.topk * self.max_context_len) * num_steps\n",
    "repeated": "    return seq_lens_sum * self.topk + bs * num_steps + seq_lens_sum * self.topk + bs * num_steps\n",
    "repeated-apart": "    return seq_lens_sum * self.topk + 1 + bs * num_steps + 2 + self.topk * seq_lens_sum + num_steps * bs\n",
    "comment-after-string": '    x = ("""kv used:\n""", seq_lens_sum * self.topk  # c\n        + bs * num_steps)\n    return x\n',
    "backslash-comment": "    x = seq_lens_sum * self.topk \\\n        + bs * num_steps  # c\n    return x\n",
    "backslash-then-parens": "    x = 1 + \\\n        (seq_lens_sum * self.topk  # c\n        + bs * num_steps)\n    return x\n",
    "comment-after-operator": "    x = (seq_lens_sum * self.topk +  # c\n        bs * num_steps)\n    return x\n",
    "two-per-statement": "    a, b = (max_bs  # m\n        * self.topk * self.max_context_len), (seq_lens_sum * self.topk  # s\n        + bs * num_steps)\n    return a, b\n",
    "alias": "    k = self.topk\n    return seq_lens_sum * k + bs * k * (i + 1)\n",
    "long-sum": "    return " + " + ".join(["bs"] * 1000) + " + seq_lens_sum * self.topk + bs * num_steps\n",
}  # fmt: skip


@pytest.mark.parametrize("body", VALID.values(), ids=VALID.keys())
def test_valid_code_is_rewritten_to_the_same_value(tmp_path: Path, body: str) -> None:
    source = FUNCTION + body
    path = fix(tmp_path, source)
    written = path.read_text()
    assert written != source
    assert lint_source(written.encode(), "m.py") == []  # nothing left, one run
    assert values(written) == values(source)
    again = fix_file(str(path), Options(helpers_module=HELPERS), write=False)
    assert not again[2].changed  # a second run changes nothing


def test_code_in_strings_is_neither_reported_nor_rewritten(tmp_path: Path) -> None:
    source = (
        'def g():\n    """Example:\n\n    def f(seq_lens_sum, topk, bs, num_steps):\n'
        '        return seq_lens_sum * topk + bs * num_steps\n    """\n\n\n'
        'X = """\ndef f(seq_lens_sum, topk, bs, num_steps):\n'
        '    return seq_lens_sum * topk + bs * num_steps\n"""\n'
    )
    assert lint_source(source.encode(), "m.py") == []
    assert fix(tmp_path, source).read_text() == source


def test_no_fix_writes_a_kvi004_call(tmp_path: Path) -> None:
    source = FUNCTION + "    return seq_lens_sum * self.topk + self.topk * num_steps\n"
    (finding,) = lint_source(source.encode(), "m.py")
    assert finding.code == "KVI001" and finding.fix is None  # reported, not fixed
    assert fix(tmp_path, source).read_text() == source


SITE = (
    FUNCTION
    + "    return (\n        seq_lens_sum * self.topk  # c\n        + bs * num_steps\n    )\n"
)


@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("lone-cr", SITE.replace("\n", "\r")),
        ("crlf", SITE.replace("\n", "\r\n")),
        ("crlf-header-line", "# header\r\n" + SITE),
        ("form-feed", "import os\n\f\n" + SITE),
        ("tabs", "class C:\n\t" + SITE.replace("    ", "\t").replace("\n", "\n\t").rstrip("\t")),
        ("two-spaces", "class C:\n  " + SITE.replace("    ", "  ").replace("\n", "\n  ").rstrip(" ")),
    ],
)  # fmt: skip
def test_line_endings_and_indentation_are_kept(tmp_path: Path, name: str, source: str):
    path = fix(tmp_path, source)
    data = path.read_bytes().decode()
    assert "draft_kv_indices_used_len(" in data
    kept = [line for line in source.splitlines(keepends=True) if "seq_lens" not in line]
    old_lines = source.splitlines(keepends=True)
    # Every line the rewrite did not touch is still there, ending and all.
    for line in kept:
        if line.strip() not in ("return (", ")", "+ bs * num_steps"):
            assert line in data.splitlines(keepends=True) or line == old_lines[-1], line
    if name == "lone-cr":
        assert "\n" not in data
    if name == "crlf":
        assert "\n" not in data.replace("\r\n", "")
    if name == "crlf-header-line":
        assert data.count("\r\n") == 1
    if name == "form-feed":
        assert "\f" in data
    if name in ("tabs", "two-spaces"):
        # The call and the moved comment sit where the formula's first line did.
        indent = next(
            line[: len(line) - len(line.lstrip())]
            for line in source.splitlines()
            if "seq_lens_sum *" in line
        )
        lines = data.splitlines()
        call = next(line for line in lines if "draft_kv_indices_used_len(" in line)
        assert call.startswith(indent + "draft_kv_indices_used_len(")
        assert f"{indent}# c" in lines
