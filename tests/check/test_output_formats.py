"""The four report formats, on hand-made findings (no engine involved)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lint_plugin.findings import SYNTAX_ERROR_CODE, Edit, Finding, Fix
from lint_plugin.output import github, json_format, render, sarif, statistics, text
from lint_plugin.rules import RULES

SAFE = Fix("safe", "Replace with `helper(...)`", (Edit("helper(a, b)", 3, 5, 4, 9),))
UNSAFE = Fix("unsafe", "Size the row", (Edit("w", 7, 1, 7, 2),))


def finding(path="pkg/a.py", row=3, column=5, code="KVI001", fix=None, message="msg"):
    return Finding(path, row, column, row + 1, column + 4, code, message, fix)


FINDINGS = [
    finding("pkg/b.py", 7, 1, "KVI003", UNSAFE, "no topk factor"),
    finding("pkg/a.py", 3, 5, "KVI001", SAFE, "inline `a * b`"),
    finding("pkg/a.py", 1, 2, SYNTAX_ERROR_CODE, None, "SyntaxError: invalid syntax"),
    finding("pkg/a.py", 9, 1, "KVI004", None, "`topk` passed as `bs`"),
]

# --- JSON ---------------------------------------------------------------------

RUFF_KEYS = {
    "cell",
    "code",
    "end_location",
    "filename",
    "fix",
    "location",
    "message",
    "name",
    "noqa_row",
    "severity",
    "url",
}


def test_json_has_ruffs_keys_and_round_trips():
    items = json.loads(json_format.render(FINDINGS))
    assert all(set(item) == RUFF_KEYS for item in items)
    by_code = {item["code"]: item for item in items}
    kvi001 = by_code["KVI001"]
    assert kvi001 == {
        "cell": None,
        "code": "KVI001",
        "end_location": {"column": 9, "row": 4},
        "filename": os.path.abspath("pkg/a.py"),
        "fix": {
            "applicability": "safe",
            "edits": [
                {
                    "content": "helper(a, b)",
                    "end_location": {"column": 9, "row": 4},
                    "location": {"column": 5, "row": 3},
                }
            ],
            "message": "Replace with `helper(...)`",
        },
        "location": {"column": 5, "row": 3},
        "message": "inline `a * b`",
        "name": RULES["KVI001"].name,
        "noqa_row": 3,
        "severity": "error",
        "url": None,  # no public docs page is known: null, never a command
    }
    assert by_code["KVI004"]["fix"] is None
    assert by_code["KVI003"]["fix"]["applicability"] == "unsafe"


def test_json_syntax_error_has_no_noqa_row_and_no_url():
    (item,) = json.loads(json_format.render([FINDINGS[2]]))
    assert (item["code"], item["noqa_row"], item["url"]) == ("E999", None, None)


def test_json_is_sorted_by_file_then_position():
    items = json.loads(json_format.render(FINDINGS))
    keys = [(item["filename"], item["location"]["row"]) for item in items]
    assert keys == sorted(keys)
    assert [item["code"] for item in items] == ["E999", "KVI001", "KVI004", "KVI003"]


def test_json_empty_is_an_empty_list():
    assert json.loads(json_format.render([])) == []
    assert render("json", []) == "[]\n"


# --- SARIF --------------------------------------------------------------------


def assert_valid_sarif(log: dict) -> None:
    """The SARIF 2.1.0 properties a consumer (GitHub code scanning) requires."""
    assert log["version"] == "2.1.0"
    assert log["$schema"].endswith("sarif-2.1.0.json")
    assert isinstance(log["runs"], list) and len(log["runs"]) == 1
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "draft-kv-lint"
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert len(rule_ids) == len(set(rule_ids))
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"]
        assert rule["fullDescription"]["text"]
        assert "helpUri" not in rule  # no web docs: it would not be a valid URI
    for result in run["results"]:
        assert result["message"]["text"]
        assert result["level"] in {"none", "note", "warning", "error"}
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"]
        region = physical["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
        assert (region["endLine"], region["endColumn"]) >= (
            region["startLine"],
            region["startColumn"],
        )


def test_sarif_has_the_required_fields(tmp_path):
    log = json.loads(sarif.render(FINDINGS, root=str(tmp_path)))
    assert_valid_sarif(log)
    assert len(log["runs"][0]["results"]) == len(FINDINGS)


def test_sarif_rules_carry_the_catalogue_docs():
    rules = {rule["id"]: rule for rule in sarif.rule_descriptors()}
    assert set(rules) == {*RULES, SYNTAX_ERROR_CODE}
    for code, rule in RULES.items():
        descriptor = rules[code]
        assert descriptor["name"] == rule.name
        assert descriptor["help"]["markdown"] == rule.render()
        assert descriptor["properties"]["docs"] == f"draft-kv-lint rule {code}"
        assert not descriptor["shortDescription"]["text"].startswith("#")


def test_sarif_uris_are_relative_to_the_git_root(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "src" / "my pkg").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "src")
    log = json.loads(sarif.render([finding(os.path.join("my pkg", "a.py"))]))
    run = log["runs"][0]
    location = run["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {
        "uri": "src/my%20pkg/a.py",
        "uriBaseId": "%SRCROOT%",
    }
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"


def test_sarif_file_outside_the_root_gets_an_absolute_uri(tmp_path):
    outside = tmp_path / "elsewhere" / "a.py"
    log = json.loads(sarif.render([finding(str(outside))], root=str(tmp_path / "repo")))
    location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": outside.as_uri()}


def test_sarif_without_findings_is_still_a_valid_log(tmp_path):
    log = json.loads(sarif.render([], root=str(tmp_path)))
    assert_valid_sarif(log)
    assert log["runs"][0]["results"] == []


def test_repository_root_falls_back_to_the_start_folder(tmp_path):
    assert sarif.repository_root(str(tmp_path)) in {
        str(tmp_path),
        # tmp_path could itself sit inside a git work tree; then that is the root
        *(str(p) for p in tmp_path.parents if (p / ".git").exists()),
    }


# --- GitHub annotations ------------------------------------------------------


def test_github_annotation_line():
    line = github.format_finding(finding("pkg/a.py", 3, 5, "KVI001", SAFE, "use it"))
    assert line == (
        "::error title=draft-kv-lint (KVI001),file=pkg/a.py,"
        "line=3,col=5,endLine=4,endColumn=9::KVI001 use it"
    )


@pytest.mark.parametrize(
    ("raw", "data", "prop"),
    [
        ("100%", "100%25", "100%25"),
        ("a\r\nb", "a%0D%0Ab", "a%0D%0Ab"),
        ("a:b,c", "a:b,c", "a%3Ab%2Cc"),
        ("%3A", "%253A", "%253A"),  # escapes are not double-decoded
    ],
)
def test_github_escaping(raw, data, prop):
    assert github.escape_data(raw) == data
    assert github.escape_property(raw) == prop


def test_github_escapes_message_and_file_property():
    item = finding("we,ird:dir/a.py", message="50% of\nrows")
    line = github.format_finding(item)
    assert "file=we%2Cird%3Adir/a.py," in line
    assert line.endswith("::KVI001 50%25 of%0Arows")
    assert "\n" not in line


# --- text and statistics --------------------------------------------------------


@pytest.mark.parametrize(
    ("fix", "expected"),
    [
        (SAFE, "pkg/a.py:3:5: KVI001 [*] msg"),
        (UNSAFE, "pkg/a.py:3:5: KVI001 msg"),
        (None, "pkg/a.py:3:5: KVI001 msg"),
    ],
)
def test_text_line_marks_only_safe_fixes(fix, expected):
    assert text.format_finding(finding(fix=fix)) == expected


@pytest.mark.parametrize(
    ("findings", "errors", "expected"),
    [
        ([], 0, ["All checks passed!"]),
        ([], 1, ["Found 1 error."]),
        ([finding(fix=None)], 0, ["Found 1 error."]),
        (
            [finding(fix=SAFE), finding(fix=SAFE)],
            0,
            ["Found 2 errors.", "[*] 2 fixable with `draft-kv-lint fix`."],
        ),
        (
            [finding(fix=UNSAFE)],
            1,
            [
                "Found 2 errors.",
                "No fixes available (1 unsafe fix available with "
                "`draft-kv-lint fix --unsafe-fixes`).",
            ],
        ),
    ],
)
def test_text_summary(findings, errors, expected):
    assert text.summary(findings, errors) == expected


def test_statistics_align_counts_and_codes():
    many = [finding(code="KVI002", fix=SAFE)] * 10 + [finding(code=SYNTAX_ERROR_CODE)]
    assert statistics.render_text(many).splitlines() == [
        "10\tKVI002\t[*] inline-draft-kv-indices-buffer-width",
        " 1\tE999  \t[ ] syntax-error",
    ]


def test_statistics_without_fixes_has_no_marker_column():
    assert statistics.render_text([finding(code="KVI004")]) == (
        "1\tKVI004\tmisplaced-draft-kv-indices-helper-argument\n"
    )


@pytest.mark.parametrize("output_format", ["text", "json", "github", "sarif"])
def test_render_dispatches_every_format(output_format, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = render(output_format, FINDINGS)
    assert out.endswith("\n")
    if output_format in ("json", "sarif"):
        json.loads(out)


def test_render_rejects_an_unknown_format():
    with pytest.raises(ValueError, match="xml"):
        render("xml", [])


def test_paths_in_text_and_github_use_what_was_given():
    item = finding(str(Path("pkg") / "a.py"))
    assert text.format_finding(item).startswith(str(Path("pkg") / "a.py") + ":3:5:")
    assert "file=pkg/a.py," in github.format_finding(item)
