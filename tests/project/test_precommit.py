"""The pre-commit hooks, run by pre-commit itself (``python -m pre_commit``).

Each test works in a throw-away git repository holding a backend fixture, as a user's
repository would, and points pre-commit at a snapshot of this project: a one-commit
git repository made from the working tree as it is now (tracked files plus untracked,
not ignored ones). ``try-repo <root>`` would do almost that, but its shadow commit
takes only changes to tracked files, so a hook manifest or test not yet committed
would be missing; the snapshot has them, and a ``repo:``/``rev:`` configuration can
name it too (``try-repo`` cannot pass ``args``).

pre-commit builds a virtualenv and pip-installs the project into it. ``try-repo``
always uses a fresh store, so each ``try-repo`` call builds one; the
``pre-commit run`` tests share one ``PRE_COMMIT_HOME`` for the session, so their
environment is built once. Building needs the package registry: outside CI an
unreachable registry skips these tests, in CI (``CI`` set) it fails them.

The commands are the user's; three settings of the environment make the builds
cheaper without touching what the hooks do (``_environ``). Python writes bytecode
in pre-commit's children, as on a user's machine (the test machines turn it off):
otherwise every pip and setuptools process of a build compiles them again. The
virtualenv's seed packages are linked from virtualenv's app data, not copied, so
that bytecode serves every environment built after. And ``try-repo``'s builds go
without build isolation, with the setuptools virtualenv seeds: an isolated build
installs setuptools into a throw-away environment each time (about a third of a
build's CPU). The session's own environment (``home``) is built with isolation,
as a user's pip builds it, so the isolated build of this checkout is still run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from project_snapshot import Snapshot
from project_snapshot import commit_all as _commit_all
from project_snapshot import git as _git

# One worker runs them all under pytest-xdist: the hook environment (the session's
# PRE_COMMIT_HOME) is then built once, not once per worker.
pytestmark = pytest.mark.xdist_group("pre-commit")
ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
BACKEND = "flashinfer_backend.py"  # KVI001 x2, KVI002, KVI003
CHECK_HOOK = "draft-kv-lint"
FIX_HOOK = "draft-kv-lint-fix"
MODIFIED = "files were modified by this hook"
FINDING = re.compile(r"^\S+:\d+:\d+: (KVI\d{3}) ", re.M)

INSTALL_TIMEOUT = 600  # seconds: a cold pip install of the project and its deps
RUN_TIMEOUT = 300


@dataclass
class Outcome:
    returncode: int
    output: str  # stdout and stderr together, as a user sees them

    @property
    def codes(self) -> list[str]:
        return FINDING.findall(self.output)

    def hook_result(self, hook_id: str) -> str:
        """``Passed``/``Failed``/... from the hook's status line (dots after the name)."""
        match = re.search(rf"^{re.escape(hook_id)}\.+(\w+)", self.output, flags=re.M)
        assert match, f"no status line for {hook_id}:\n{self.output}"
        return match.group(1)


def _environ(home: Path, isolated_build: bool = True) -> dict[str, str]:
    """The caller's environment, minus what would steer git or pre-commit elsewhere,
    plus the settings that make hook environments cheaper (see the module doc)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GIT_", "PRE_COMMIT"))
        and key not in ("SKIP", "PYTHONDONTWRITEBYTECODE")
    }
    env["PRE_COMMIT_HOME"] = str(home)
    env["VIRTUALENV_SYMLINK_APP_DATA"] = "1"
    if not isolated_build:
        env["PIP_NO_BUILD_ISOLATION"] = "0"  # pip reads this as "isolation: off"
        # The build's setuptools, which virtualenv seeds only on request from 3.12.
        env["VIRTUALENV_SETUPTOOLS"] = "bundle"
    return env


def _init_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True)
    _git(path, "init", "-q")
    _git(path, "config", "user.name", "draft-kv-lint tests")
    _git(path, "config", "user.email", "tests@draft-kv-lint.invalid")
    for name, text in files.items():
        (path / name).write_text(text, encoding="utf-8")
    _commit_all(path, "initial")
    return path


def _pre_commit(
    cwd: Path,
    home: Path,
    *args: str,
    timeout: int = RUN_TIMEOUT,
    isolated_build: bool = True,
):
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=cwd,
        env=_environ(home, isolated_build),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )
    return Outcome(done.returncode, done.stdout)


def _registry_unreachable(scratch: Path) -> str | None:
    """Why pip cannot fetch what the hook environment needs, or None if it can."""
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "download", "--no-deps"),
            *("--dest", str(scratch), "setuptools>=64", "libcst", "ruff"),
        ],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
    )
    if done.returncode == 0:
        return None
    return (done.stderr.strip().splitlines() or ["pip download failed"])[-1]


def _config(snapshot: Snapshot, hooks: list[dict]) -> str:
    return yaml.safe_dump(
        {"repos": [{"repo": str(snapshot.path), "rev": snapshot.rev, "hooks": hooks}]},
        sort_keys=False,
    )


@pytest.fixture(scope="session")
def home(tmp_path_factory: pytest.TempPathFactory, snapshot: Snapshot) -> Path:
    """A PRE_COMMIT_HOME whose hook environment is built once for the session."""
    home = tmp_path_factory.mktemp("pre-commit-home")
    scratch = tmp_path_factory.mktemp("install")
    config = scratch / "config.yaml"
    config.write_text(
        _config(snapshot, [{"id": CHECK_HOOK}, {"id": FIX_HOOK}]), encoding="utf-8"
    )
    repo = _init_repo(scratch / "repo", {"README": "scratch\n"})
    built = _pre_commit(
        repo, home, "install-hooks", "-c", str(config), timeout=INSTALL_TIMEOUT
    )
    if built.returncode == 0:
        return home
    log = home / "pre-commit.log"
    detail = log.read_text(errors="replace")[-3000:] if log.exists() else built.output
    reason = _registry_unreachable(scratch / "probe")
    if reason is not None and not os.environ.get("CI"):
        pytest.skip(f"package registry unreachable, no hook environment: {reason}")
    pytest.fail(f"pre-commit could not build the hook environment:\n{detail}")


def _try_repo(repo: Path, home: Path, snapshot: Snapshot, hook_id: str) -> Outcome:
    return _pre_commit(
        repo,
        home,
        "try-repo",
        str(snapshot.path),
        hook_id,
        "--all-files",
        "--color=never",
        isolated_build=False,
    )


def _run(repo: Path, home: Path, config: str) -> Outcome:
    path = repo.parent / f"{repo.name}-pre-commit-config.yaml"
    path.write_text(config, encoding="utf-8")
    return _pre_commit(
        repo, home, "run", "--all-files", "--color=never", "-c", str(path)
    )


def _fixture(*parts: str) -> str:
    return FIXTURES.joinpath(*parts).read_text(encoding="utf-8")


# --- the manifest -----------------------------------------------------------------


def test_manifest_validates() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pre_commit",
            "validate-manifest",
            ".pre-commit-hooks.yaml",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("hook_id", "entry", "require_serial"),
    [
        (CHECK_HOOK, "draft-kv-lint check --force-exclude", True),
        (FIX_HOOK, "draft-kv-lint fix --force-exclude", True),
    ],
)
def test_manifest_declares_hook(hook_id: str, entry: str, require_serial: bool) -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert [hook["id"] for hook in hooks] == [CHECK_HOOK, FIX_HOOK]
    hook = next(hook for hook in hooks if hook["id"] == hook_id)
    assert hook["entry"] == entry
    assert hook["language"] == "python"
    assert hook["types_or"] == ["python", "pyi"]
    assert hook["args"] == []
    assert hook["require_serial"] is require_serial
    assert hook["description"]


# --- the hooks, run by pre-commit -------------------------------------------------


def test_try_repo_check_fails_then_fix_leaves_only_kvi003(
    tmp_path: Path, home: Path, snapshot: Snapshot
) -> None:
    repo = _init_repo(tmp_path / "repo", {BACKEND: _fixture(BACKEND)})

    check = _try_repo(repo, home, snapshot, CHECK_HOOK)
    assert check.returncode == 1, check.output
    assert check.hook_result(CHECK_HOOK) == "Failed"
    assert sorted(check.codes) == ["KVI001", "KVI001", "KVI002", "KVI003"]

    fix = _try_repo(repo, home, snapshot, FIX_HOOK)
    assert fix.returncode == 1, fix.output
    assert MODIFIED in fix.output
    assert (repo / BACKEND).read_text() == _fixture("expected", "safe", BACKEND)

    recheck = _try_repo(repo, home, snapshot, CHECK_HOOK)
    assert recheck.returncode == 1, recheck.output
    assert recheck.codes == ["KVI003"]


def test_unsafe_fixes_in_hook_args_then_check_passes(
    tmp_path: Path, home: Path, snapshot: Snapshot
) -> None:
    repo = _init_repo(tmp_path / "repo", {BACKEND: _fixture(BACKEND)})
    config = _config(
        snapshot, [{"id": FIX_HOOK, "args": ["--unsafe-fixes"]}, {"id": CHECK_HOOK}]
    )

    first = _run(repo, home, config)
    assert first.returncode == 1, first.output
    assert first.hook_result(FIX_HOOK) == "Failed"
    assert MODIFIED in first.output
    assert (repo / BACKEND).read_text() == _fixture("expected", "unsafe", BACKEND)
    # the check hook runs after the fix hook, on the rewritten file
    assert first.hook_result(CHECK_HOOK) == "Passed"

    second = _run(repo, home, config)
    assert second.returncode == 0, second.output
    assert second.hook_result(FIX_HOOK) == "Passed"
    assert second.hook_result(CHECK_HOOK) == "Passed"


@pytest.mark.parametrize("hook_id", [CHECK_HOOK, FIX_HOOK])
def test_clean_repository_passes(
    tmp_path: Path, home: Path, snapshot: Snapshot, hook_id: str
) -> None:
    # The refactored backend: helper calls only, plus the plain decode backend's
    # `max_bs * self.max_context_len`, which is no finding.
    clean = _fixture("expected", "unsafe", BACKEND)
    repo = _init_repo(tmp_path / "repo", {BACKEND: clean})

    outcome = _run(repo, home, _config(snapshot, [{"id": hook_id}]))
    assert outcome.returncode == 0, outcome.output
    assert outcome.hook_result(hook_id) == "Passed"
    assert (repo / BACKEND).read_text() == clean


# --- the documented configuration for SGLang ----------------------------------------


def test_documented_config_validates_and_runs_fix_before_isort_and_black() -> None:
    path = ROOT / "docs" / "pre-commit-config.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-config", str(path)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr

    config = yaml.safe_load(path.read_text())
    order = [hook["id"] for repo in config["repos"] for hook in repo["hooks"]]
    assert set(order) >= {FIX_HOOK, CHECK_HOOK, "isort", "black"}
    assert order.index(FIX_HOOK) < order.index("isort") < order.index("black")
