"""``draft-kv-lint check`` as a hook runs it, with the default selection (no
``--select``), on the real releases: KVI006 is on by default.

0.5.13 and 0.5.23 size their draft rows with upstream's helpers, yet their
Triton and AITER draft launches have no capacity guard before them (FlashInfer
and FlashInfer MLA have upstream's): at the context wall the index kernel writes
past a helper-sized row, and only the guard stops it. So a default run reports
exactly those two launches. 0.5.12.post1's four backends hold their inline
copies and unsized buffers (KVI001-KVI003) and no guard anywhere (KVI006 at each
launch). The sizing contracts are on by default too: every release's verify
masks short at the context wall and 0.5.12.post1's AITER target-verify
kv_indices (KVI008, KVI009: ``corpus.CONTRACT_SITES``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from corpus import BACKENDS, CONTRACT_SITES, attention_dir, available

pytestmark = pytest.mark.corpus

# (file, row, code) of every finding a default run reports.
EXPECTED = {
    "0.5.13": {
        ("aiter_backend.py", 2970, "KVI006"),
        ("triton_backend.py", 1467, "KVI006"),
    },
    "0.5.23": {
        ("aiter_backend.py", 5147, "KVI006"),
        ("triton_backend.py", 2595, "KVI006"),
    },
    # The four backends only (tests/corpus/test_corpus_check.py: nothing else
    # in the folder).
    "0.5.12.post1": {
        ("flashinfer_backend.py", 1561, "KVI006"),
        ("flashinfer_backend.py", 1589, "KVI001"),
        ("flashinfer_backend.py", 1600, "KVI002"),
        ("flashinfer_backend.py", 1619, "KVI003"),
        ("flashinfer_mla_backend.py", 960, "KVI006"),
        ("flashinfer_mla_backend.py", 984, "KVI001"),
        ("flashinfer_mla_backend.py", 992, "KVI002"),
        ("flashinfer_mla_backend.py", 1011, "KVI003"),
        ("triton_backend.py", 1302, "KVI006"),
        ("triton_backend.py", 1326, "KVI001"),
        ("triton_backend.py", 1334, "KVI002"),
        ("triton_backend.py", 1353, "KVI003"),
        ("aiter_backend.py", 3198, "KVI006"),
        ("aiter_backend.py", 3219, "KVI001"),
        ("aiter_backend.py", 3227, "KVI002"),
        ("aiter_backend.py", 3246, "KVI003"),
    },
}


def _attention(version: str) -> Path:
    return available(attention_dir, version)


def default_check(folder: Path, paths: list[str]) -> tuple[int, set]:
    """``draft-kv-lint check`` run in ``folder`` with no selection of its own
    (``--no-config``: this checkout's configuration would exclude the cache);
    its exit status and the (file, row, code) of each finding it reports."""
    result = subprocess.run(
        [sys.executable, "-m", "lint_plugin.cli", "check", "--no-config",
         "--no-cache", "--output-format", "json", *paths],
        capture_output=True, text=True, cwd=folder,
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    found = {
        (
            Path(f["filename"]).resolve().relative_to(folder.resolve()).as_posix(),
            f["location"]["row"],
            f["code"],
        )
        for f in json.loads(result.stdout)
    }
    return result.returncode, found


@pytest.mark.parametrize("version", ["0.5.13", "0.5.23"])
def test_refactored_attention_folders_report_the_two_unguarded_launches(
    version: str,
) -> None:
    folder = _attention(version)
    status, found = default_check(folder, ["."])
    assert (status, found) == (1, EXPECTED[version] | CONTRACT_SITES[version])


def test_pre_refactor_backends_report_their_sites_and_every_launch() -> None:
    folder = _attention("0.5.12.post1")
    status, found = default_check(folder, list(BACKENDS))
    contracts = {s for s in CONTRACT_SITES["0.5.12.post1"] if s[0] in BACKENDS}
    assert (status, found) == (1, EXPECTED["0.5.12.post1"] | contracts)
    codes = sorted(code for _, _, code in found - contracts)
    assert codes == [
        c for c in ("KVI001", "KVI002", "KVI003", "KVI006") for _ in BACKENDS
    ]
