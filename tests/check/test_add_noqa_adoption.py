"""Adopting the gate on a codebase that still has inline sites: ``--add-noqa``.

The path a project takes on day one: ``draft-kv-lint check --add-noqa`` marks every
existing site with ``# noqa: KVI00x``, so the gate passes at once; from then on a new
inline copy fails it, alone. Runs the real engine on the bundled pre-refactor
backends, in a temporary project with an (empty) ``[tool.draft-kv-lint]`` table so
that no configuration above it is picked up.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from lint_plugin.cli import main

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BACKENDS = sorted(path.name for path in FIXTURES.glob("*.py"))
NOQA = re.compile(r"\s+# noqa: (?P<codes>[A-Z0-9, ]+)$")

# A method someone adds after adoption, with one new inline site on its return line.
NEW_SITES = {
    "KVI001": (
        "    def draft_len_after_adoption(self, seq_lens_sum: int, bs: int, i: int):\n"
        "        return seq_lens_sum * self.topk + bs * (i + 1)\n"
    ),
    "KVI002": (
        "    def row_width_after_adoption(self, bs: int):\n"
        "        return bs * self.topk * self.max_context_len\n"
    ),
}
NEW_SITE_COLUMN = len("        return ") + 1  # 1-based, where the expression starts


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.draft-kv-lint]\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _check_json(capsys: pytest.CaptureFixture[str], name: str) -> tuple[int, list]:
    status = main(["check", "--output-format", "json", name])
    return status, json.loads(capsys.readouterr().out)


def _insert_into_draft_backend(path: Path, method: str) -> int:
    """Append ``method`` to the file's multi-step draft backend; its return row."""
    source = path.read_text()
    tree = ast.parse(source)
    (draft,) = [
        node
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        and node.name.endswith("MultiStepDraftBackend")
    ]
    lines = source.splitlines(keepends=True)
    end = draft.end_lineno
    assert end is not None
    lines[end:end] = ["\n", method]
    path.write_text("".join(lines))
    return end + 1 + method.count("\n")  # the method's last line: its return


@pytest.mark.parametrize("backend", BACKENDS)
def test_add_noqa_marks_each_existing_site_and_changes_nothing_else(
    project: Path, backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    original = (FIXTURES / backend).read_text()
    (project / backend).write_text(original)
    status, findings = _check_json(capsys, backend)
    assert status == 1 and findings
    wanted: dict[int, set[str]] = {}
    for finding in findings:
        wanted.setdefault(finding["noqa_row"], set()).add(finding["code"])

    assert main(["check", "--add-noqa", backend]) == 0
    noun = "directive" if len(wanted) == 1 else "directives"
    assert f"Added {len(wanted)} noqa {noun}." in capsys.readouterr().err

    before = original.splitlines()
    after = (project / backend).read_text().splitlines()
    assert len(after) == len(before)
    for row, (old, new) in enumerate(zip(before, after, strict=True), start=1):
        if row not in wanted:
            assert new == old, f"row {row} changed"
            continue
        assert new.startswith(old), f"row {row}: the code itself changed"
        match = NOQA.fullmatch(new[len(old) :])
        assert match, f"row {row}: no `# noqa: CODES` appended: {new!r}"
        codes = {code for code in re.split(r"[, ]+", match["codes"]) if code}
        assert codes == wanted[row]


def test_add_noqa_over_all_fixtures_then_check_passes(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for backend in BACKENDS:
        (project / backend).write_text((FIXTURES / backend).read_text())
    assert main(["check", "."]) == 1
    # KVI001-KVI003, and KVI006 at the three launches with no guard before them.
    assert "Found 16 errors." in capsys.readouterr().out

    assert main(["check", "--add-noqa", "."]) == 0
    assert "Added 16 noqa directives." in capsys.readouterr().err

    assert main(["check", "."]) == 0
    assert "All checks passed!" in capsys.readouterr().out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("code", sorted(NEW_SITES))
def test_new_inline_site_after_adoption_is_the_only_finding(
    project: Path, backend: str, code: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project / backend
    path.write_text((FIXTURES / backend).read_text())
    assert main(["check", "--add-noqa", backend]) == 0
    assert main(["check", backend]) == 0
    capsys.readouterr()

    row = _insert_into_draft_backend(path, NEW_SITES[code])
    status, findings = _check_json(capsys, backend)

    assert status == 1
    assert [
        (f["code"], f["location"]["row"], f["location"]["column"]) for f in findings
    ] == [(code, row, NEW_SITE_COLUMN)]
