"""The README is what a newcomer follows: its rule table, commands and CI line.

The snippets it (or a docs page) marks ``<!-- readme-test: NAME -->`` are run as
written, wherever they are (``user_docs`` gathers them from README.md and docs/)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import user_docs

from lint_plugin.rules import RULES

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
PAGES = {page: page.read_text() for page in user_docs.pages()}
SAFETY = {"safe": "safe", "unsafe": "unsafe", None: "none"}


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_table_row_matches_the_catalogue(code: str) -> None:
    rule = RULES[code]
    rows = [line for line in README.splitlines() if line.startswith(f"| [{code}]")]
    assert len(rows) == 1, rows
    (row,) = rows
    # The README's table is the one: no docs page holds a second copy to drift.
    assert not user_docs.lines_starting(f"| [{code}]")[1:]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1] == f"`{rule.name}`"
    assert cells[-1] == SAFETY[rule.fix_safety]


README_QUICKSTART = "pip install . && draft-kv-lint check fixtures/"


def test_ci_runs_the_readme_test_command() -> None:
    commands = re.findall(r"```sh\n(.+?)\n```", README)
    assert commands[0] == README_QUICKSTART
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci == commands[1]


def test_the_readme_says_which_version_it_describes() -> None:
    import lint_plugin

    said = re.findall(
        r"describes draft-kv-lint (\S+) \(`lint_plugin.__version__`\)", README
    )
    assert said == [lint_plugin.__version__]


def test_the_readme_says_what_the_tests_download() -> None:
    """The count is the pinned list's; the size is measured on the wheels when
    they are here (any corpus run leaves them), to the megabyte as written."""
    from corpus import CACHE, WHEELS

    sentence = r"(\d+) of them, every\s+release.*?(\d+) MB in all"
    where = [page for page, text in PAGES.items() if re.search(sentence, text, re.S)]
    assert len(where) == 1, f"the download sentence should be on one page: {where}"
    said = re.search(sentence, PAGES[where[0]], re.S)
    assert int(said[1]) == len(WHEELS)
    paths = [CACHE / name for name, _ in WHEELS.values()]
    if all(path.exists() for path in paths):
        total = sum(path.stat().st_size for path in paths)
        assert round(total / 1e6) == int(said[2]), total


# --- SGLang's layout, end to end: the README's snippets, copied as they are -----------

FOUND = user_docs.snippets()
SNIPPETS = {name: bodies[0][1] for name, bodies in FOUND.items()}
ATTENTION = Path("python/sglang/srt/layers/attention")


def test_every_snippet_is_written_once() -> None:
    """Each marker marks a fenced block, and no snippet is written twice (a test
    would run one copy while the other drifts)."""
    assert sum(len(bodies) for bodies in FOUND.values()) == user_docs.markers()
    where = {name: [str(page) for page, _ in bodies] for name, bodies in FOUND.items()}
    assert all(len(pages) == 1 for pages in where.values()), where


def test_the_layout_section_has_every_snippet() -> None:
    assert set(SNIPPETS) == {
        "install",
        "python/pyproject.toml",
        ".flake8",
        ".isort.cfg",
        ".pre-commit-config.yaml",
        "commands",
        "prove",
    }
    assert "select = KVI\n" in SNIPPETS[".flake8"]  # never extend-select


def _run(line: str, cwd: Path) -> subprocess.CompletedProcess:
    import shlex

    bin_dir = Path(sys.executable).parent
    argv = shlex.split(line)
    argv[0] = str(bin_dir / argv[0])
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True)


def _positions(output: str) -> set[tuple[str, str, str]]:
    return set(re.findall(r"^(\S+?):(\d+):\d+: (KVI\d+)", output, flags=re.M))


def test_sglang_layout_snippets_work_as_copied(tmp_path: Path) -> None:
    import shutil

    repo = tmp_path / "sglang"
    (repo / ATTENTION).mkdir(parents=True)
    for backend in sorted((ROOT / "fixtures").glob("*.py")):
        shutil.copy(backend, repo / ATTENTION / backend.name)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "python" / "pyproject.toml").write_text(
        '[project]\nname = "sglang"\n\n' + SNIPPETS["python/pyproject.toml"]
    )
    for name in (".flake8", ".isort.cfg"):
        (repo / name).write_text(SNIPPETS[name])

    check, flake8, fix, isort, black = SNIPPETS["commands"].strip().splitlines()
    checked = _run(check, repo)
    assert checked.returncode == 1 and "Found 16 errors." in checked.stdout
    flaked = _run(flake8, repo)
    assert flaked.returncode == 1
    # Only KVI results (select = KVI), the same ones check reports.
    assert all(": KVI" in line for line in flaked.stdout.splitlines())
    assert _positions(flaked.stdout) == _positions(checked.stdout)

    assert _run(fix, repo).returncode == 0
    assert _run(isort, repo).returncode == 0  # the added import is where isort wants it
    assert _run(black, repo).returncode == 0
    left = _run(check, repo)
    assert {code for _, _, code in _positions(left.stdout)} == {"KVI003", "KVI006"}


def test_precommit_snippet_order_and_validity(tmp_path: Path) -> None:
    import yaml

    text = SNIPPETS[".pre-commit-config.yaml"]
    config = yaml.safe_load(text)
    order = [hook["id"] for repo in config["repos"] for hook in repo["hooks"]]
    assert order == ["draft-kv-lint-fix", "isort", "black", "draft-kv-lint"]
    path = tmp_path / ".pre-commit-config.yaml"
    path.write_text(
        text.replace("<DRAFT_KV_LINT_REPO_URL>", str(ROOT)).replace("<REV>", "HEAD")
    )
    result = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-config", str(path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_workflow_installs_a_pinned_git_revision_and_watches_what_the_rules_read() -> (
    None
):
    import yaml

    text = (ROOT / "docs" / "github-workflow.yml").read_text()
    workflow = yaml.safe_load(text)
    steps = workflow["jobs"]["draft-kv-lint"]["steps"]
    runs = [step.get("run", "") for step in steps]
    assert 'pip install "draft-kv-lint @ git+<DRAFT_KV_LINT_REPO_URL>@<REV>"' in runs
    for placeholder in ("<DRAFT_KV_LINT_REPO_URL>", "<REV>"):
        assert f"#   {placeholder}" in text  # each placeholder is explained
    assert not any(re.search(r"pip install draft-kv-lint\b", run) for run in runs)
    checked = [run for run in runs if run.startswith("draft-kv-lint check")]
    assert checked
    for event in ("pull_request", "push"):
        watched = workflow[True][event]["paths"]  # YAML 1.1 reads `on` as True
        for path in _what_the_rules_read():
            assert any(_glob_matches(pattern, path) for pattern in watched), path
            for run in checked:  # each check run names a folder holding it
                folders = [w for w in run.split() if w.startswith("python/")]
                assert any(path.startswith(f.rstrip("/") + "/") for f in folders)


def _what_the_rules_read() -> list[str]:
    """SGLang's backends (where 0.5.12.post1 keeps them) and the modules of the
    tree the rules read beside them, from the tool's own defaults: the helpers'
    module and every release's home of the guard (0.5.23's in kernels/ops)."""
    from lint_plugin.engine.settings import Settings
    from lint_plugin.fix.guard_home import RELEASE_GUARD_MODULES

    modules = (Settings().helpers_module, *RELEASE_GUARD_MODULES)
    assert "sglang.kernels.ops.attention.utils" in modules
    return [
        "python/sglang/srt/layers/attention/flashinfer_backend.py",
        "python/sglang/srt/hardware_backend/npu/attention/ascend_backend.py",
        *(f"python/{module.replace('.', '/')}.py" for module in modules),
    ]


def _glob_matches(pattern: str, path: str) -> bool:
    # GitHub's paths filter: ** spans folders, * stays within one.
    regex = re.escape(pattern).replace(r"\*\*", ".*").replace(r"\*", "[^/]*")
    return re.fullmatch(regex, path) is not None


# --- installing without a registry entry: every install command, run as printed ---

PROOF_EXTRA = ("torch", "triton", "numpy", "functorch", "torchgen")


def _placed(line: str, snapshot) -> str:
    """A README line with the placeholders filled: a ``file://`` URL to a snapshot
    of this repository stands in for the remote, its commit for ``<REV>``."""
    return line.replace("<DRAFT_KV_LINT_REPO_URL>", snapshot.url).replace(
        "<REV>", snapshot.rev
    )


def _install_lines() -> tuple[str, str]:
    plain, proof = SNIPPETS["install"].strip().splitlines()
    return plain, proof


def test_every_install_command_names_a_git_revision_or_the_checkout() -> None:
    """No command anywhere tells a user to fetch draft-kv-lint by name from a
    registry; the README, the workflow and ``prove``'s section say the same."""
    import yaml

    from lint_plugin.install_origin import PINNED

    plain, proof = _install_lines()
    assert plain == 'pip install "draft-kv-lint @ git+<DRAFT_KV_LINT_REPO_URL>@<REV>"'
    assert proof == (
        'pip install "draft-kv-lint[proof] @ git+<DRAFT_KV_LINT_REPO_URL>@<REV>" '
        + " ".join(PINNED["proof"])
    )
    assert SNIPPETS["prove"].splitlines()[0] == proof
    workflow = yaml.safe_load((ROOT / "docs" / "github-workflow.yml").read_text())
    runs = [step.get("run", "") for step in workflow["jobs"]["draft-kv-lint"]["steps"]]
    assert plain in runs
    # `pip install draft-kv-lint`, `'draft-kv-lint[proof]'`: a name, no `@ URL`.
    by_name = re.compile(
        r"pip install\s+['\"]?draft-kv-lint(\[[\w,]+\])?(?!\s*@)['\"]?(['\"\s]|$)", re.M
    )
    for path in [
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        *ROOT.glob("docs/*"),
        *ROOT.glob("lint_plugin/*.py"),
    ]:
        assert not by_name.search(path.read_text()), path


def test_every_install_of_the_proof_extra_pins_torch_and_triton() -> None:
    """An unpinned torch is the newest CUDA build (several GB, untested): every
    command in the docs that installs the [proof] extra names the tested pins."""
    from lint_plugin.install_origin import PINNED

    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md", *ROOT.glob("docs/*.md")]
    lines = [
        line
        for page in pages
        for line in page.read_text().replace("`", "\n").splitlines()
        if "pip install" in line and ("proof" in line or "torch" in line)
    ]
    assert len(lines) >= 3
    for line in lines:
        assert all(pin in line for pin in PINNED["proof"]), line


def test_the_install_commands_work_as_printed(tmp_path: Path, snapshot) -> None:
    """The quickstart's ``pip install .``, the README's and the workflow's git
    installs, and the command ``prove`` prints without the ``[proof]`` extra, each
    run as printed in an environment of its own (``install_env``), offline."""
    import shlex

    from install_env import Environment

    env = Environment(tmp_path / "venv")
    env.see(exclude=PROOF_EXTRA)  # what the plain install needs, no torch
    plain, proof = _install_lines()

    def expect_the_fixtures_findings() -> None:
        checked = env.run("draft-kv-lint check fixtures/", cwd=snapshot.path)
        assert checked.returncode == 1, checked.stderr
        assert {"KVI001", "KVI002", "KVI003", "KVI006"} <= {
            code for _, _, code in _positions(checked.stdout)
        }

    # The quickstart, from a clean checkout (the snapshot is one).
    install, check = (part.strip() for part in README_QUICKSTART.split("&&"))
    done = env.run(install, cwd=snapshot.path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert env.run(check, cwd=snapshot.path).returncode == 1
    expect_the_fixtures_findings()
    assert env.run("pip uninstall -y draft-kv-lint").returncode == 0

    # From git, as the README and the workflow say.
    done = env.run(_placed(plain, snapshot), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    expect_the_fixtures_findings()

    # prove without the extra: exit 2 and the README's own command for this install.
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text("x = 1\n")
    hinted = env.run("draft-kv-lint prove a.py b.py", cwd=tmp_path)
    assert hinted.returncode == 2, hinted.stderr
    needs, _, command = hinted.stderr.strip().partition(": ")
    assert "needs torch, triton and numpy" in needs
    assert shlex.split(command) == shlex.split(_placed(proof, snapshot))

    # That command, as printed, once torch and triton are at hand: prove runs.
    env.see()
    assert env.run("pip uninstall -y draft-kv-lint").returncode == 0
    done = env.run(command, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    proved = env.run("draft-kv-lint prove a.py b.py", cwd=tmp_path)
    assert proved.returncode == 0, proved.stderr
    assert "nothing to prove" in proved.stdout
