"""``docs/github-workflow.yml``: valid for GitHub, green on forks.

The workflow is validated against GitHub's workflow schema as check-jsonschema
ships it (vendored, so offline), and its ``if:`` lines are run, as written, for
every situation a repository meets (``gha_expressions``): the gate and its
annotations run everywhere; the SARIF steps only after the check ran and only
where the token may write (never on a pull request from a fork, whose token is
read-only).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from gha_expressions import evaluate, run_job, step_runs

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "docs" / "github-workflow.yml"
REPOSITORY = "sgl-project/sglang"


def _validate(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.github-workflows",
            str(path),
        ],
        capture_output=True,
        text=True,
    )


def test_the_workflow_is_valid_against_githubs_schema() -> None:
    done = _validate(WORKFLOW)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok -- validation done" in done.stdout


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("runs-on: ubuntu-latest", "runs-on: [[]]"),  # not a runner label
        ("    steps:\n", "    stages:\n"),  # no such key
        ("security-events: write", "security-events: all"),  # no such permission
    ],
)
def test_the_schema_check_catches_a_broken_workflow(
    tmp_path: Path, old: str, new: str
) -> None:
    text = WORKFLOW.read_text()
    assert old in text
    broken = tmp_path / "workflow.yml"
    broken.write_text(text.replace(old, new, 1))
    assert _validate(broken).returncode == 1


def _steps() -> list[dict]:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    return workflow["jobs"]["draft-kv-lint"]["steps"]


def _context(event: str, head: str | None = REPOSITORY) -> dict:
    github = {"event_name": event, "repository": REPOSITORY, "event": {}}
    if event == "pull_request":
        repo = None if head is None else {"full_name": head}
        github["event"] = {"pull_request": {"head": {"repo": repo}}}
    return {"github": github}


CHECK = "check"
SARIF_STEPS = ("sarif", "Upload SARIF to code scanning")
INSTALL = "Install draft-kv-lint (pinned git revision)"
PUSH = _context("push")
BRANCH_PR = _context("pull_request", REPOSITORY)
FORK_PR = _context("pull_request", "someone/sglang")
GONE_FORK_PR = _context("pull_request", None)  # the fork was deleted


@pytest.mark.parametrize(
    ("context", "outcomes", "cancel_after", "check_runs", "uploads"),
    [
        (PUSH, {}, None, True, True),
        (PUSH, {CHECK: "failure"}, None, True, True),  # findings are uploaded too
        (BRANCH_PR, {CHECK: "failure"}, None, True, True),
        (BRANCH_PR, {}, None, True, True),
        (FORK_PR, {CHECK: "failure"}, None, True, False),  # read-only token
        (FORK_PR, {}, None, True, False),
        (GONE_FORK_PR, {CHECK: "failure"}, None, True, False),
        (PUSH, {INSTALL: "failure"}, None, False, False),  # nothing was checked
        (FORK_PR, {INSTALL: "failure"}, None, False, False),
        (PUSH, {}, INSTALL, False, False),  # cancelled before the check
        (PUSH, {CHECK: "failure"}, CHECK, True, False),  # cancelled after it
    ],
)
def test_sarif_runs_only_after_the_check_and_where_the_token_may_write(
    context, outcomes, cancel_after, check_runs, uploads
) -> None:
    ran = run_job(_steps(), context, outcomes, cancel_after)
    assert (ran[CHECK] != "skipped") is check_runs, ran
    for step in SARIF_STEPS:
        assert (ran[step] != "skipped") is uploads, (step, ran)


def test_every_sarif_step_reads_the_fork_condition() -> None:
    """The condition itself, not only its outcome in the cases above: each SARIF
    step compares the pull request's head repository with this repository."""
    fork = "github.event.pull_request.head.repo.full_name == github.repository"
    by_name = {
        step.get("id") or step.get("name") or step["uses"]: step for step in _steps()
    }
    for name in SARIF_STEPS:
        condition = " ".join(by_name[name]["if"].split())
        assert fork in condition, condition
        assert "always()" not in condition  # it would run after a failed install
    # The gate itself is unconditional: it must run on every pull request.
    assert "if" not in by_name[CHECK]
    assert by_name[CHECK]["run"].startswith(
        "draft-kv-lint check --output-format github"
    )


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("'Sglang' == 'sglang'", True),  # GitHub compares strings ignoring case
        ("!cancelled() && (null == 'x' || 1 == 1)", True),
        ("github.event.nothing.here == null", True),
        ("'a' && ''", ""),  # && gives an operand
        ("${{ failure() }}", False),
    ],
)
def test_the_expression_reader_follows_githubs_rules(expression, expected) -> None:
    from gha_expressions import JobState

    assert evaluate(expression, _context("push"), JobState()) == expected


def test_a_step_without_a_status_function_needs_success() -> None:
    from gha_expressions import JobState

    assert step_runs("true", {}, JobState()) is True
    assert step_runs("true", {}, JobState(failed=True)) is False
    assert step_runs("always()", {}, JobState(failed=True)) is True
