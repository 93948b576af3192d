"""Where this copy of draft-kv-lint was installed from, so a hint can say how to
add an extra (``[proof]``) the same way.

No package registry serves draft-kv-lint (the name is unclaimed there, so a
``pip install draft-kv-lint`` would fetch nothing, or someone else's code). pip
records the origin of a direct install in the ``direct_url.json`` of its metadata
(PEP 610), and that gives a command that works as printed:

* installed from git (``pip install "draft-kv-lint @ git+URL@REV"``, as the CI
  workflow does): the same URL at the very commit installed, with the extra;
* installed from a checkout (``pip install .`` or ``-e .``): that folder, with
  the extra, editable when it was;
* anything else: the extra's own requirements, read from the metadata.
"""

from __future__ import annotations

DISTRIBUTION = "draft-kv-lint"

# The versions an extra is tested with, named in every hint beside it: a bare
# ``torch`` has pip fetch the newest build, several GB of CUDA wheels, untested.
# ``.ci/run`` installs exactly these (tests/proof/test_install_origin.py).
PINNED = {"proof": ("torch==2.13.0", "triton==3.9.0")}


def _direct_url() -> dict | None:
    """The installed distribution's record. A source checkout on ``sys.path``
    (the working folder) may hold an ``.egg-info`` of the same name and no record:
    the first distribution that has one is the installed one."""
    import json
    from importlib import metadata

    for distribution in metadata.distributions(name=DISTRIBUTION):
        try:
            text = distribution.read_text("direct_url.json")
            if text:
                return json.loads(text)
        except (ValueError, OSError):
            continue
    return None


def _extra_requirements(extra: str) -> list[str]:
    from importlib import metadata

    try:
        requires = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return []
    marker = f'extra == "{extra}"'
    return [req.split(";")[0].strip() for req in requires if marker in req]


def install_command(extra: str, origin: dict | None = None) -> str | None:
    """A ``pip install`` line that adds ``extra`` to this installation, or None
    when nothing is known (no metadata). ``origin``: a ``direct_url.json``'s
    content (default: this installation's own)."""
    command = _origin_command(extra, _direct_url() if origin is None else origin)
    if command is None:
        return None
    return " ".join([command, *PINNED.get(extra, ())])


def _origin_command(extra: str, origin: dict | None) -> str | None:
    import shlex

    url = (origin or {}).get("url", "")
    vcs = (origin or {}).get("vcs_info", {})
    if vcs.get("vcs") == "git" and vcs.get("commit_id"):
        spec = f"{DISTRIBUTION}[{extra}] @ git+{url}@{vcs['commit_id']}"
        if origin.get("subdirectory"):
            spec += f"#subdirectory={origin['subdirectory']}"
        return f"pip install {shlex.quote(spec)}"
    if "dir_info" in (origin or {}) and url.startswith("file://"):
        from urllib.parse import urlsplit
        from urllib.request import url2pathname

        folder = url2pathname(urlsplit(url).path)
        editable = "-e " if origin["dir_info"].get("editable") else ""
        return f"pip install {editable}{shlex.quote(f'{folder}[{extra}]')}"
    requirements = _extra_requirements(extra)
    if not requirements:
        return None
    # The pins added after this name torch and triton: no range of them here.
    pinned = {pin.split("==")[0] for pin in PINNED.get(extra, ())}
    kept = [r for r in requirements if _name(r) not in pinned]
    return " ".join(["pip install", *(shlex.quote(r) for r in kept)])


def _name(requirement: str) -> str:
    """A requirement's project name (``torch>=2.1`` -> ``torch``)."""
    import re

    return re.split(r"[\s<>=!~\[;(]", requirement, maxsplit=1)[0].lower()
