"""The ecosystem check: the real sglang releases, downloaded at test time."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from corpus import BACKENDS, CONTRACT_SITES, LATEST, NEW, OLD, contract_codes

from lint_plugin.linter import lint_source

# (file, row, code) of every site in 0.5.12.post1's four backends: the inline
# copies and unsized buffers, and every draft launch (no guard in the release).
EXPECTED_OLD = {
    ("flashinfer_backend.py", 1561, "KVI006"),
    ("flashinfer_mla_backend.py", 960, "KVI006"),
    ("triton_backend.py", 1302, "KVI006"),
    ("aiter_backend.py", 3198, "KVI006"),
    ("flashinfer_backend.py", 1589, "KVI001"),
    ("flashinfer_backend.py", 1600, "KVI002"),
    ("flashinfer_backend.py", 1619, "KVI003"),
    ("flashinfer_mla_backend.py", 984, "KVI001"),
    ("flashinfer_mla_backend.py", 992, "KVI002"),
    ("flashinfer_mla_backend.py", 1011, "KVI003"),
    ("triton_backend.py", 1326, "KVI001"),
    ("triton_backend.py", 1334, "KVI002"),
    ("triton_backend.py", 1353, "KVI003"),
    ("aiter_backend.py", 3219, "KVI001"),
    ("aiter_backend.py", 3227, "KVI002"),
    ("aiter_backend.py", 3246, "KVI003"),
}


def findings_in(folder: Path) -> set[tuple[str, int, str]]:
    found = set()
    for path in sorted(folder.rglob("*.py")):
        for finding in lint_source(path.read_bytes(), str(path)):
            found.add((str(path.relative_to(folder)), finding.row, finding.code))
    return found


# The sizing contracts' findings of the four backends (the rest are Wave's).
CONTRACTS_OLD = {site for site in CONTRACT_SITES[OLD] if site[0] in BACKENDS}


def test_old_backends_have_exactly_the_sixteen_sites(old_attention: Path) -> None:
    found = set()
    for name in BACKENDS:
        path = old_attention / name
        found |= {(name, f.row, f.code) for f in lint_source(path.read_bytes(), name)}
    assert found == EXPECTED_OLD | CONTRACTS_OLD
    assert Counter(code for _, _, code in found) == {
        "KVI001": 4,
        "KVI002": 4,
        "KVI003": 4,
        "KVI006": 4,
        "KVI008": 2,
        "KVI009": 1,
    }


def test_old_attention_folder_has_nothing_else(old_attention: Path) -> None:
    assert findings_in(old_attention) == EXPECTED_OLD | CONTRACT_SITES[OLD]


# Every finding in 0.5.13's attention folder: the two draft launches upstream
# left without a guard (tests/corpus/test_default_selection.py), and the verify
# masks short at the context wall (corpus.CONTRACT_SITES).
EXPECTED_NEW = {
    ("aiter_backend.py", 2970, "KVI006"),
    ("triton_backend.py", 1467, "KVI006"),
}


def test_new_attention_folder_has_only_the_unguarded_launches(
    new_attention: Path,
) -> None:
    assert findings_in(new_attention) == EXPECTED_NEW | CONTRACT_SITES[NEW]


def test_new_speculative_folder_is_clean(new_attention: Path) -> None:
    # spec_utils.py holds the helpers' own definitions: never findings.
    speculative = new_attention.parent.parent / "speculative"
    assert (speculative / "spec_utils.py").exists()
    assert findings_in(speculative) == set()


def _flake8(paths: list[Path], cwd: Path) -> set[tuple[str, int, int, str]]:
    result = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "KVI",
         "--format", "%(path)s|%(row)d|%(col)d|%(code)s", *map(str, paths)],
        capture_output=True, text=True, cwd=cwd,
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    rows = set()
    for line in result.stdout.splitlines():
        path, row, col, code = line.split("|")
        rows.add((Path(path).name, int(row), int(col), code))
    return rows


@pytest.mark.parametrize("version", ["old", "new"])
def test_flake8_reports_what_check_reports(
    version: str, old_attention: Path, new_attention: Path
) -> None:
    folder = old_attention if version == "old" else new_attention
    paths = [folder / name for name in BACKENDS]
    expected = set()
    for path in paths:
        for f in lint_source(path.read_bytes(), str(path)):
            expected.add((path.name, f.row, f.column, f.code))
    assert _flake8(paths, folder) == expected
    # With the contracts' findings of the four backends: 3 in 0.5.12.post1, 2 in 0.5.13.
    assert len(expected) == (16 + 3 if version == "old" else 2 + 2)


# The longest tests of the suite: halves of a package keep both of pytest-xdist's
# workers busy until the end of the run.
SHARDS = 2
WHOLE_PACKAGES = ("0.5.12.post1", "0.5.13", "0.5.23")


@pytest.fixture(scope="module", params=WHOLE_PACKAGES)
def whole_package(request, old_attention, new_attention) -> Path:
    from corpus import tree

    return tree(request.param, whole=True) / "sglang"


def fast_path_equals_whole_walk(paths: list[Path], monkeypatch) -> list[str]:
    """For each file: the region-and-pruning fast path finds exactly what a plain
    walk of the whole parsed file finds, and never crashes. The methods it
    leaves unparsed (``lazy_methods``) are walked once everything is decided:
    none holds a fact the rules would have read (that is a Misread). Returns
    the names of the methods so walked."""
    import ast
    import warnings

    from lint_plugin.engine.analysis import Walker
    from lint_plugin.engine.facts import LazyFunctionFacts
    from lint_plugin.engine.source import Source
    from lint_plugin.linter import lint_tree

    deferred = []
    release = Walker.release

    def walk_the_rest(walker: Walker) -> None:
        for function in walker._functions:
            if isinstance(function, LazyFunctionFacts):
                deferred.append(function.node.name)
                function.gathered()
        release(walker)

    monkeypatch.setattr(Walker, "release", walk_the_rest)
    for path in paths:
        data = path.read_bytes()
        fast = lint_source(data, str(path))
        text = data.decode("utf-8-sig")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the package's own invalid escapes
            tree = ast.parse(text)
        slow = lint_tree(tree, Source(text), str(path), rows=None)
        key = lambda f: (f.row, f.column, f.code, f.message)  # noqa: E731
        assert sorted(map(key, fast)) == sorted(map(key, slow)), path
    return deferred


@pytest.mark.parametrize("shard", range(SHARDS))
def test_shortcuts_never_cost_a_finding(
    whole_package: Path, shard: int, monkeypatch
) -> None:
    """Every file of the whole package (every other one in sorted order, from
    ``shard`` on), as ``fast_path_equals_whole_walk`` says."""
    paths = sorted(whole_package.rglob("*.py"))[shard::SHARDS]
    assert len(paths) > 1500 // SHARDS
    deferred = fast_path_equals_whole_walk(paths, monkeypatch)
    assert len(deferred) > 50  # the shortcut was taken, and walked here


def test_shortcuts_never_cost_a_finding_in_any_release(monkeypatch) -> None:
    """The attention and speculative folders of every pinned release, as
    ``fast_path_equals_whole_walk`` says: each distinct file once (by content),
    but those of the packages read whole above."""
    import hashlib

    from corpus import RELEASES, attention_dir, speculative_dir, tree

    def digest(path: Path) -> bytes:
        return hashlib.sha256(path.read_bytes()).digest()

    read = {
        digest(path)
        for version in WHOLE_PACKAGES
        for path in (tree(version, whole=True) / "sglang").rglob("*.py")
    }
    paths, releases = [], set()
    for version in RELEASES:
        for folder in (attention_dir(version), speculative_dir(version)):
            for path in sorted(folder.rglob("*.py")):
                key = digest(path)
                if key not in read:
                    read.add(key)
                    paths.append(path)
                    releases.add(version)
    # 591 files of 40 releases when written: a release that adds no file of
    # its own to the ones before it has its backends checked all the same.
    assert len(paths) > 500 and len(releases) > 30
    deferred = fast_path_equals_whole_walk(paths, monkeypatch)
    assert len(deferred) > 50


def test_refactored_whole_packages_have_only_the_unguarded_launches(
    new_attention: Path, latest_package: Path
) -> None:
    """Every file of 0.5.13 and 0.5.23: the gate stays quiet on the refactor, on
    every other multi-step backend, and on draft classes keeping no topk; only
    the Triton and Aiter draft launches, which have no guard, are reported, and
    the verify masks short at the context wall (Wave's and AITER's in 0.5.23;
    FlashInfer's packed mask and every VerifyMask are quiet)."""
    from corpus import tree

    attention = "srt/layers/attention"
    for package, expected in (
        (tree("0.5.13", whole=True) / "sglang", EXPECTED_NEW | CONTRACT_SITES[NEW]),
        (
            latest_package,
            {
                ("aiter_backend.py", 5147, "KVI006"),
                ("triton_backend.py", 2595, "KVI006"),
            }
            | CONTRACT_SITES[LATEST],
        ),
    ):
        found = findings_in(package)
        assert found == {(f"{attention}/{n}", r, c) for n, r, c in expected}, found


def test_old_whole_package_has_only_the_sixteen_sites(old_attention: Path) -> None:
    from corpus import tree

    package = tree("0.5.12.post1", whole=True) / "sglang"
    found = {(Path(p).name, row, code) for p, row, code in findings_in(package)}
    assert found == EXPECTED_OLD | CONTRACT_SITES[OLD]


def test_every_pre_refactor_release_has_one_site_of_each_kind_per_backend(
    old_attention: Path,
) -> None:
    """Every pinned release from 0.4.6.post5 to 0.5.12.post1: in its attention and
    speculative folders, exactly one KVI001, one KVI002, one KVI003 and one
    KVI006 (no release before 0.5.13 guards its launch) in each multi-step draft
    backend it ships (three before Aiter's, four after), one finding of each
    sizing contract the release breaks (``corpus.contract_codes``), and no
    other finding anywhere."""
    import hashlib

    from corpus import PRE_REFACTOR, tree

    # Most files are byte for byte the previous release's, at the same place in
    # the package (their findings then are too): each is checked once.
    codes: dict[tuple[bytes, str], list[str]] = {}
    for version in PRE_REFACTOR:
        root = tree(version) / "sglang/srt"
        found = Counter()
        contracts = Counter()
        for path in sorted(root.rglob("*.py")):
            data = path.read_bytes()
            key = (hashlib.sha256(data).digest(), str(path.relative_to(root)))
            if key not in codes:
                codes[key] = [f.code for f in lint_source(data, str(path))]
            for code in codes[key]:
                if code in ("KVI008", "KVI009"):
                    contracts[(path.name, code)] += 1
                    continue
                assert path.name in BACKENDS, (version, path, code)
                found[(path.name, code)] += 1
        assert contracts == dict.fromkeys(contract_codes(version), 1), version
        backends = {name for name, _ in found}
        assert len(backends) in (3, 4), (version, backends)
        assert set(found.values()) == {1}, (version, found)
        assert len(found) == 4 * len(backends), (version, found)
    print(
        f"\n{len(PRE_REFACTOR)} pre-refactor releases: one site of each kind per backend"
    )
