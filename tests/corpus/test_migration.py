"""The one-shot migration leaves a working tree: the real releases laid out as
SGLang's repository (``python/sglang/...``, the wheel's own ``__init__.py``
files), fixed with the command a maintainer runs, then every helper (and guard)
a fixed backend imports is defined in the tree where the import says (read by
``ast``; nothing is imported) and ``check`` reports nothing. Also trees from before the helpers' module existed (0.5.2 and
two forks), where fix creates it."""

from __future__ import annotations

import ast
import json
import shutil
import zipfile
from pathlib import Path

import pytest
from corpus import (
    ATTENTION,
    BACKENDS,
    CONTRACT_SITES,
    SPECULATIVE,
    available,
    tree,
    wheel,
)

from lint_plugin.cli import main
from lint_plugin.engine.formulas import HELPER_SLOTS
from lint_plugin.engine.package_tree import defines
from lint_plugin.fix.rewrite import Options, rewrite_text

pytestmark = pytest.mark.corpus
NAMES = {*HELPER_SLOTS, "assert_buffer_fits"}


def sglang_layout(version: str, root: Path, folders: tuple[str, ...]) -> Path:
    """``root/python/sglang/...`` from the pinned wheel: ``folders`` whole, and
    every ``__init__.py`` on the way to them (SGLang's own folders below
    ``sglang/`` are namespace packages: the wheel has what it has)."""
    python = root / "python"
    ancestors = {
        "/".join(folder.split("/")[:depth])
        for folder in folders
        for depth in range(1, folder.count("/") + 1)
    }
    with zipfile.ZipFile(wheel(version)) as archive:
        for member in archive.namelist():
            inside = member.startswith(tuple(f + "/" for f in folders))
            init = (
                member.endswith("/__init__.py")
                and member[: -len("/__init__.py")] in ancestors
            )
            if member.endswith(".py") and (inside or init):
                archive.extract(member, python)
    return python


def unresolved_imports(python: Path, path: Path) -> list[str]:
    """Helper or guard names ``path`` imports from a module of the tree that
    does not define them, or from a module missing from the tree."""
    missing = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom) or node.level:
            continue
        names = [a.name for a in node.names if a.name in NAMES]
        if not names:
            continue
        stem = python / node.module.replace(".", "/")
        module = stem.with_suffix(".py")
        if not module.exists():
            module = stem / "__init__.py"
        for name in names:
            if not module.exists() or defines(str(module), name) is not True:
                missing.append(f"{node.module}.{name}")
    return missing


def test_fix_on_0512_in_sglangs_layout_leaves_a_working_tree(
    tmp_path, capsys, monkeypatch
) -> None:
    python = sglang_layout("0.5.12.post1", tmp_path, (ATTENTION, SPECULATIVE))
    attention = python / ATTENTION
    originals = {name: (attention / name).read_text() for name in BACKENDS}
    spec_utils = python / SPECULATIVE / "spec_utils.py"
    monkeypatch.chdir(tmp_path)
    # Before: KVI001..KVI003 and the unguarded launches, no broken import yet.
    assert main(["check", "--no-config", "--statistics", "python/sglang/srt"]) == 1
    before = capsys.readouterr().out
    assert "KVI007" not in before
    assert "KVI006" in before

    status = main(["fix", "--no-config", "--unsafe-fixes", f"python/{ATTENTION}"])
    err = capsys.readouterr().err
    assert status == 0, err
    assert (
        "Added draft_kv_indices_buffer_width, draft_kv_indices_used_len to "
        f"python/{SPECULATIVE}/spec_utils.py (imported there by 4 file(s))"
    ) in err
    # The four guards too (KVI006, on by default), whose definition fix adds
    # to the default guard module in the tree (0.5.12.post1 has none).
    assert f"Added assert_buffer_fits to python/{ATTENTION}/utils.py" in err
    assert "Fixed 16 site(s) (8 unsafe) in 4 file(s)." in err
    for name in HELPER_SLOTS:
        assert defines(str(spec_utils), name) is True
    assert defines(str(attention / "utils.py"), "assert_buffer_fits") is True
    for name in BACKENDS:
        assert unresolved_imports(python, attention / name) == [], name
        # The rewrites are those of one file alone (0.5.13's call sites,
        # tests/corpus/test_corpus_fix.py): the tree only adds the definitions.
        alone = rewrite_text(originals[name], name, Options(unsafe_fixes=True)).text
        assert (attention / name).read_text() == alone, name
    # Left: the sizing contracts' findings, which 0.5.12.post1's tree has no
    # owner to fix with (tree_mask_numel came in 0.5.23; KVI009 has no fix).
    assert main(["check", "--no-config", "--output-format", "json", "python"]) == 1
    left = {
        (Path(f["filename"]).name, f["code"])
        for f in json.loads(capsys.readouterr().out)
    }  # the rows moved with the rewrite
    assert left == {(name, code) for name, _, code in CONTRACT_SITES["0.5.12.post1"]}
    assert main(["fix", "--no-config", "--unsafe-fixes", f"python/{ATTENTION}"]) == 0
    assert capsys.readouterr().err == "Nothing to fix.\n"


def test_the_guard_on_0512_gets_a_definition_too(tmp_path, capsys, monkeypatch):
    """0.5.12.post1 has no assert_buffer_fits: KVI006's fix imports it from the
    default module, which is in the tree, and fix defines it there."""
    python = sglang_layout("0.5.12.post1", tmp_path, (ATTENTION, SPECULATIVE))
    monkeypatch.chdir(tmp_path)
    flags = ["--no-config", "--unsafe-fixes", "--select", "KVI006"]
    assert main(["fix", *flags, f"python/{ATTENTION}"]) == 0
    err = capsys.readouterr().err
    utils = python / ATTENTION / "utils.py"
    assert f"Added assert_buffer_fits to python/{ATTENTION}/utils.py" in err
    assert defines(str(utils), "assert_buffer_fits") is True
    for name in BACKENDS:
        assert unresolved_imports(python, python / ATTENTION / name) == [], name
    assert main(["check", "--no-config", "--select", "KVI006,KVI007", "python"]) == 0


def test_kvi006_on_0523_imports_the_guard_from_where_0523_defines_it(
    tmp_path, capsys, monkeypatch, latest_package: Path
) -> None:
    root = tmp_path / "python" / "sglang"
    for folder in ("srt/layers/attention", "srt/speculative", "kernels/ops/attention"):
        shutil.copytree(latest_package / folder, root / folder)
    for init in ("__init__.py", "kernels/__init__.py", "kernels/ops/__init__.py"):
        shutil.copy(latest_package / init, root / init)
    monkeypatch.chdir(tmp_path)
    attention = root / "srt/layers/attention"
    flags = ["--no-config", "--unsafe-fixes"]  # KVI006 is on by default
    assert main(["check", *flags[:1], "python"]) == 1
    assert capsys.readouterr().out.count(": KVI006 ") == 2
    assert main(["fix", *flags, "python/sglang/srt/layers/attention"]) == 0
    err = capsys.readouterr().err
    # The two guards, and the Wave and AITER verify masks (KVI008), sized by
    # 0.5.23's own owner, imported from where 0.5.23 defines it.
    assert "Fixed 4 site(s) (4 unsafe) in 3 file(s)." in err
    assert "Added" not in err and "note:" not in err  # 0.5.23 defines them all
    for name in ("wave_backend.py", "aiter_backend.py"):
        text = (attention / name).read_text()
        assert (
            "\nfrom sglang.srt.layers.attention.verify_mask import tree_mask_numel\n"
            in text
        )
        assert "\nfrom sglang.srt.speculative.eagle_utils import TreeMaskMode\n" in text
        assert "tree_mask_numel(\n" in text and "TreeMaskMode.FULL_MASK," in text
    triton = (attention / "triton_backend.py").read_text()
    assert (
        "\nfrom sglang.kernels.ops.attention.utils import assert_buffer_fits\n"
        in triton
    )
    assert "sglang.srt.layers.attention.utils import assert_buffer_fits" not in triton
    # Triton's missing seq_lens_sum becomes an upper bound: the guard is on
    # the branch where the sum is real, never after the bound.
    common = triton[triton.index("    def common_template(") :]
    bound = common.index("seq_lens_sum = num_seqs * self.max_context_len\n")
    assert common[bound:].split("\n")[1].strip() == "else:"
    assert (
        "assert_buffer_fits(" in common[bound : common.index("generate_draft_decode")]
    )
    for name in ("triton_backend.py", "aiter_backend.py", "wave_backend.py"):
        assert unresolved_imports(tmp_path / "python", attention / name) == []
    assert main(["check", *flags[:1], "python"]) == 0
    assert main(["fix", *flags, "python/sglang/srt/layers/attention"]) == 0
    assert capsys.readouterr().err.endswith("Nothing to fix.\n")


# --- trees from before the helpers' module existed (issue 45) ----------------------
#
# sglang's speculative/spec_utils.py first appears in 0.5.3: a tree of 0.5.2 (or a
# fork of it) has no module to import the helpers from. fix must create it (in
# upstream's place, sglang.srt.speculative.spec_utils) and give the guard's module
# its definition. Judged with a resolver of this test's own (files and top-level
# bindings read with ast, nothing of lint_plugin asked), the definitions run from
# the text written, check on the result, and a second run. The trees: 0.5.2's
# wheel as installed (sglang/ at the root) and as a repository keeps it
# (python/sglang/, the layout of forks on GitHub), and two forks published under
# their own names (tests/corpus.py FORK_WHEELS).

# (the release or fork's requirement, the folder the package sits in)
LAYOUTS = [
    ("0.5.2", ""),
    ("0.5.2", "python"),
    ("sglang-usf==0.5.1.post6", ""),
    ("sgltmp==0.5.1.post4", ""),
]


def _copy(version: str, under: str, root: Path) -> Path:
    source = available(tree, version, True) / "sglang"
    target = root / under / "sglang" if under else root / "sglang"
    shutil.copytree(source, target)
    return target.parent


def _snapshot(root: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in root.rglob("*.py")}


def _top_level_names(module: Path) -> set[str]:
    """What a module binds at its top level, its ``if``/``try`` bodies included."""
    names: set[str] = set()
    pending = list(ast.parse(module.read_bytes()).body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(a.asname or a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.If, ast.Try)):
            pending += node.body + node.orelse + getattr(node, "finalbody", [])
    return names


def _unresolved(root: Path, path: Path) -> list[str]:
    """The helpers and guard ``path`` imports that its tree does not define."""
    problems = []
    for node in ast.walk(ast.parse(path.read_bytes())):
        if not (isinstance(node, ast.ImportFrom) and node.module and not node.level):
            continue
        wanted = [a.name for a in node.names if a.name in NAMES]
        if not wanted or node.module.split(".")[0] != "sglang":
            continue
        stem = root.joinpath(*node.module.split("."))
        module = stem / "__init__.py"
        if not module.is_file():
            module = stem.with_suffix(".py")
        if not module.is_file():
            problems.append(f"{path}: {node.module} does not exist")
            continue
        for name in set(wanted) - _top_level_names(module):
            problems.append(f"{path}: {node.module} does not define {name}")
    return problems


def _definition(module: Path, name: str):
    """The function ``name`` of ``module``, made from its text alone (the rest
    of the module needs torch)."""
    text = module.read_text()
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            namespace: dict = {}
            exec(compile(ast.Module([node], []), str(module), "exec"), namespace)
            return namespace[name]
    raise AssertionError(f"{module} has no {name}")


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
@pytest.mark.parametrize(("version", "under"), LAYOUTS)
def test_fix_on_a_tree_without_spec_utils_leaves_imports_that_resolve(
    version: str, under: str, unsafe: bool, tmp_path: Path, capsys
) -> None:
    root = _copy(version, under, tmp_path)
    srt = root / "sglang" / "srt"
    spec_utils = srt / "speculative" / "spec_utils.py"
    assert not spec_utils.exists() and spec_utils.parent.is_dir()
    flags = ["--unsafe-fixes"] if unsafe else []
    before = _snapshot(root)

    status = main(["fix", "--no-config", *flags, str(srt)])
    err = capsys.readouterr().err
    assert status == 0, err
    assert f"Created {spec_utils} with draft_kv_indices_buffer_width" in err
    after = _snapshot(root)
    written = [p for p in after if before.get(p) != after[p]]
    rewritten = [p for p in written if p != spec_utils]
    assert len(rewritten) >= 4, written  # the four multi-step draft backends
    for path in written:
        compile(path.read_bytes(), str(path), "exec")
        assert _unresolved(root, path) == []

    used = _definition(spec_utils, "draft_kv_indices_used_len")
    width = _definition(spec_utils, "draft_kv_indices_buffer_width")
    assert used(10, 2, 6, 3) == 10 * 2 + 6 * 3
    assert width(4, 2, 100) == 800
    with pytest.raises(AssertionError):
        width(2**16, 2**8, 2**7)
    if unsafe:
        guard_home = srt / "layers" / "attention" / "utils.py"
        assert guard_home in written
        guard = _definition(guard_home, "assert_buffer_fits")
        guard(3, 3, "kv_indices")
        with pytest.raises(AssertionError, match="used 4 > capacity 3"):
            guard(4, 3, "kv_indices")

    main(["check", "--no-config", "--no-cache", str(srt)])
    out = capsys.readouterr().out
    fixed = ("KVI001", "KVI002", "KVI007") + (
        ("KVI003", "KVI004", "KVI005", "KVI006") if unsafe else ()
    )
    left = [line for line in out.splitlines() if any(f": {c} " in line for c in fixed)]
    assert left == []

    status = main(["fix", "--no-config", *flags, str(srt)])
    err = capsys.readouterr().err
    assert (status, err) == (0, "Nothing to fix.\n")
    assert _snapshot(root) == after
