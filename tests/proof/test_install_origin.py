"""``lint_plugin.install_origin``: the command that adds an extra to this install,
for each origin pip records (PEP 610's ``direct_url.json``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lint_plugin.install_origin import PINNED, install_command

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(
    ("origin", "command"),
    [
        (
            {
                "url": "https://example.org/kvi.git",
                "vcs_info": {"vcs": "git", "commit_id": SHA},
            },
            f"pip install 'draft-kv-lint[proof] @ git+https://example.org/kvi.git@{SHA}'",
        ),
        (  # a tag was asked for: the commit it named is what was reviewed
            {
                "url": "file://localhost/srv/kvi",
                "vcs_info": {
                    "vcs": "git",
                    "commit_id": SHA,
                    "requested_revision": "v1",
                },
            },
            f"pip install 'draft-kv-lint[proof] @ git+file://localhost/srv/kvi@{SHA}'",
        ),
        (
            {
                "url": "https://example.org/mono.git",
                "vcs_info": {"vcs": "git", "commit_id": SHA},
                "subdirectory": "tools/kvi",
            },
            "pip install 'draft-kv-lint[proof] @ git+https://example.org/mono.git"
            f"@{SHA}#subdirectory=tools/kvi'",
        ),
        (
            {"url": "file:///home/me/draft-kv-lint", "dir_info": {"editable": True}},
            "pip install -e '/home/me/draft-kv-lint[proof]'",
        ),
        (
            {"url": "file:///home/me/my%20tools/kvi", "dir_info": {}},
            "pip install '/home/me/my tools/kvi[proof]'",
        ),
    ],
)
def test_the_command_names_the_same_origin(origin: dict, command: str) -> None:
    assert install_command("proof", origin) == f"{command} {PINS}"


PINS = "torch==2.13.0 triton==3.9.0"


def test_the_pins_are_what_ci_installs() -> None:
    """The hint names the versions the suite proves with, as ``.ci/run`` has them."""
    ci = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text()
    assert " ".join(PINNED["proof"]) == PINS
    assert f"{PINS} &&" in ci


@pytest.mark.parametrize(
    "origin",
    [
        {},  # installed from an index or a wheel: pip records nothing
        {"url": "https://example.org/kvi-0.1.0.tar.gz", "archive_info": {}},
        {"url": "https://example.org/kvi", "vcs_info": {"vcs": "hg", "commit_id": "1"}},
    ],
)
def test_otherwise_the_extras_own_requirements(origin: dict) -> None:
    """Read from this install's metadata, so they follow pyproject.toml."""
    from importlib import metadata

    command = install_command("proof", origin)
    wanted = [
        req.split(";")[0].strip()
        for req in metadata.requires("draft-kv-lint")
        if 'extra == "proof"' in req
    ]
    assert {"torch", "triton", "numpy"} <= {req.split(">")[0] for req in wanted}
    others = [r for r in wanted if r.split(">")[0] not in ("torch", "triton")]
    assert command == " ".join(
        ["pip install", *(f"'{r}'" if ">" in r else r for r in others), PINS]
    )
