"""``fix`` across files: the helpers (and the guard) defined where the rewritten
files import them from, proven, atomic, shown by --diff and --check."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lint_plugin.cli import main
from lint_plugin.engine.package_tree import defines
from lint_plugin.fix import definitions
from lint_plugin.fix.helper_homes import DefinitionRefused, check_added

SPEC_UTILS = "python/sglang/srt/speculative/spec_utils.py"
BACKEND = "python/sglang/srt/layers/attention/foo_backend.py"
INLINE = (
    "class FooMultiStepDraftBackend:\n"
    "    def f(self, forward_batch, seq_lens_sum, bs, max_bs, i):\n"
    "        n = seq_lens_sum * self.topk + bs * (i + 1)\n"
    "        w = max_bs * self.topk * self.max_context_len\n"
    "        return n, w\n"
)
SPEC = '"""Speculative decoding utilities."""\n\nimport os\n\nLIMIT = 1\n'


def tree(root: Path, spec_utils: str | None = SPEC, backend: str = INLINE) -> Path:
    (root / "python/sglang").mkdir(parents=True)
    (root / "python/sglang/__init__.py").write_text("")
    (root / BACKEND).parent.mkdir(parents=True)
    (root / BACKEND).write_text(backend)
    if spec_utils is not None:
        (root / SPEC_UTILS).parent.mkdir(parents=True)
        (root / SPEC_UTILS).write_bytes(spec_utils.encode())
    return root


def fix(root: Path, capsys, *flags: str) -> tuple[int, str, str]:
    status = main(["fix", "--no-config", *flags, str(root / BACKEND)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def imports_resolve(root: Path, path: Path) -> bool:
    """Every helper imported by ``path`` is defined at module level of its
    module in the tree (read by ``ast``, nothing imported)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module.startswith("sglang."):
            module = root / "python" / (node.module.replace(".", "/") + ".py")
            for alias in node.names:
                if defines(str(module), alias.name) is not True:
                    return False
    return True


def test_fix_defines_the_helpers_it_imports(tmp_path, capsys) -> None:
    tree(tmp_path)
    status, _, err = fix(tmp_path, capsys)
    assert status == 0, err
    assert (
        "Added draft_kv_indices_buffer_width, draft_kv_indices_used_len to "
        f"{tmp_path / SPEC_UTILS} (imported there by 1 file(s))"
    ) in err
    assert "Added 2 definition(s) to 1 file(s)." in err
    text = (tmp_path / SPEC_UTILS).read_text()
    # After the imports, before the module's other code, black's blank lines.
    assert text.startswith(SPEC.split("LIMIT")[0].rstrip("\n") + "\n\n\ndef ")
    assert text.endswith("\n\n\nLIMIT = 1\n")
    assert imports_resolve(tmp_path, tmp_path / BACKEND)
    namespace: dict = {}
    exec(compile(text, "spec_utils.py", "exec"), namespace)
    assert namespace["draft_kv_indices_used_len"](10, 2, 6, 3) == 10 * 2 + 6 * 3
    assert namespace["draft_kv_indices_buffer_width"](4, 2, 100) == 800
    with pytest.raises(AssertionError, match="overflow int32"):
        namespace["draft_kv_indices_buffer_width"](2**16, 2**8, 2**7)
    assert main(["check", "--no-config", str(tmp_path / "python")]) == 0
    capsys.readouterr()
    before = (tmp_path / SPEC_UTILS).read_bytes()
    status, _, err = fix(tmp_path, capsys)
    assert (status, err) == (0, "Nothing to fix.\n")
    assert (tmp_path / SPEC_UTILS).read_bytes() == before


@pytest.mark.parametrize("mode", ["--diff", "--check"])
def test_dry_runs_show_the_definitions_and_write_nothing(tmp_path, capsys, mode):
    tree(tmp_path)
    status, out, err = fix(tmp_path, capsys, mode)
    assert status == 1
    assert (tmp_path / SPEC_UTILS).read_text() == SPEC
    assert (tmp_path / BACKEND).read_text() == INLINE
    assert (
        f"Would add draft_kv_indices_buffer_width, draft_kv_indices_used_len to {tmp_path / SPEC_UTILS}"
        in err
    )
    if mode == "--diff":
        assert f"+++ {tmp_path / SPEC_UTILS}" in out
        assert "+def draft_kv_indices_used_len(" in out
    else:
        assert out == ""


def test_a_broken_import_alone_is_fixed_by_kvi007(tmp_path, capsys) -> None:
    backend = (
        "from sglang.srt.speculative.spec_utils import draft_kv_indices_used_len\n"
    )
    tree(tmp_path, backend=backend)
    status, _, err = fix(tmp_path, capsys, "--ignore", "KVI007")
    assert (status, err) == (0, "Nothing to fix.\n")  # not selected: left alone
    status, _, err = fix(tmp_path, capsys)
    assert status == 0, err
    assert "Added draft_kv_indices_used_len to" in err
    assert "draft_kv_indices_buffer_width" not in (tmp_path / SPEC_UTILS).read_text()
    assert imports_resolve(tmp_path, tmp_path / BACKEND)


def test_a_module_outside_the_tree_gets_nothing_and_is_named(tmp_path, capsys):
    # A plugin's own package: sglang is installed, not in the tree.
    backend = tmp_path / "myplugin" / "backend.py"
    backend.parent.mkdir()
    (backend.parent / "__init__.py").write_text("")
    backend.write_text(INLINE)
    status = main(["fix", "--no-config", str(backend)])
    err = capsys.readouterr().err
    assert status == 0
    assert (
        "note: draft_kv_indices_buffer_width, draft_kv_indices_used_len must come "
        "from sglang.srt.speculative.spec_utils, which is not in the tree being fixed"
    ) in err
    assert not (tmp_path / "sglang").exists()


def test_a_missing_module_is_created_in_its_package(tmp_path, capsys) -> None:
    # sglang before 0.5.3: speculative/ is there, spec_utils.py is not.
    tree(tmp_path, spec_utils=None)
    (tmp_path / SPEC_UTILS).parent.mkdir(parents=True)
    (tmp_path / SPEC_UTILS).with_name("eagle_utils.py").write_text("X = 1\n")
    status, _, err = fix(tmp_path, capsys)
    assert status == 0, err
    assert (
        f"Created {tmp_path / SPEC_UTILS} with draft_kv_indices_buffer_width, "
        "draft_kv_indices_used_len (imported there by 1 file(s))"
    ) in err
    assert "Added 2 definition(s) to 1 file(s) (1 created)." in err
    assert imports_resolve(tmp_path, tmp_path / BACKEND)
    namespace: dict = {}
    exec(
        compile((tmp_path / SPEC_UTILS).read_text(), "spec_utils.py", "exec"), namespace
    )
    assert namespace["draft_kv_indices_used_len"](10, 2, 6, 3) == 10 * 2 + 6 * 3
    assert main(["check", "--no-config", str(tmp_path / "python")]) == 0
    capsys.readouterr()
    status, _, err = fix(tmp_path, capsys)
    assert (status, err) == (0, "Nothing to fix.\n")


@pytest.mark.parametrize(
    "present",
    ["spec_utils.pyc", "spec_utils.cpython-311-x86_64-linux-gnu.so", "spec_utils.so"],
)
def test_a_module_without_source_is_not_missing(tmp_path, capsys, present) -> None:
    """Python imports a sourceless or compiled module: nothing is created over
    it, and KVI007 does not call it missing."""
    tree(tmp_path, spec_utils=None)
    (tmp_path / SPEC_UTILS).parent.mkdir(parents=True)
    (tmp_path / SPEC_UTILS).with_name(present).write_bytes(b"\0")
    status, _, err = fix(tmp_path, capsys)
    assert status == 0, err
    assert not (tmp_path / SPEC_UTILS).exists()
    assert main(["check", "--no-config", "--select", "KVI007", str(tmp_path)]) == 0


def test_a_namespace_folder_of_the_modules_name_is_not_shadowed(tmp_path, capsys):
    tree(tmp_path, spec_utils=None)
    folder = (tmp_path / SPEC_UTILS).with_suffix("")
    folder.mkdir(parents=True)
    (folder / "extra.py").write_text("X = 1\n")
    status, _, err = fix(tmp_path, capsys)
    assert status == 1
    assert "a folder of that name is there (a namespace package)" in err
    assert not (tmp_path / SPEC_UTILS).exists()
    assert (tmp_path / BACKEND).read_text() == INLINE


def test_an_import_that_closes_a_cycle_is_refused(tmp_path, capsys) -> None:
    """The helpers' module imports the rewritten module before it defines the
    helpers: a module-level import of them there would fail while both load."""
    spec = (
        "from sglang.srt.layers.attention import foo_backend\n\n\n"
        + definitions.DEFINITIONS["draft_kv_indices_used_len"]
        + "\n\n"
        + definitions.DEFINITIONS["draft_kv_indices_buffer_width"]
    )
    tree(tmp_path, spec_utils=spec)
    status, _, err = fix(tmp_path, capsys)
    assert status == 1
    assert (
        f"{tmp_path / BACKEND}: error: left unchanged: {tmp_path / SPEC_UTILS} "
        "imports this module at its top level: importing the helpers from it here "
        "would close an import cycle"
    ) in err
    assert (tmp_path / BACKEND).read_text() == INLINE


def test_a_missing_module_whose_folder_is_missing_is_refused(tmp_path, capsys):
    tree(tmp_path, spec_utils=None)
    status, _, err = fix(tmp_path, capsys)
    assert status == 1
    assert (
        f"{tmp_path / SPEC_UTILS}: error: cannot create it to define "
        "draft_kv_indices_buffer_width, draft_kv_indices_used_len: its folder "
        f"{(tmp_path / SPEC_UTILS).parent} does not exist"
    ) in err
    assert f"{tmp_path / BACKEND}: error: left unchanged: its rewrite imports" in err
    assert (tmp_path / BACKEND).read_text() == INLINE
    assert not (tmp_path / SPEC_UTILS).parent.exists()


def test_the_bundled_runtime_needs_no_note(tmp_path, capsys) -> None:
    tree(tmp_path, spec_utils=None)
    status, _, err = fix(tmp_path, capsys, "--helpers-module", "lint_plugin.runtime")
    assert status == 0 and "note:" not in err


def test_a_module_that_cannot_take_them_leaves_its_importers_alone(tmp_path, capsys):
    tree(tmp_path, spec_utils="def broken(:\n")
    status, _, err = fix(tmp_path, capsys)
    assert status == 1
    assert f"{tmp_path / SPEC_UTILS}: error: cannot parse, so cannot add" in err
    assert f"{tmp_path / BACKEND}: error: left unchanged: its rewrite imports" in err
    assert (tmp_path / BACKEND).read_text() == INLINE
    assert (tmp_path / SPEC_UTILS).read_text() == "def broken(:\n"


def test_a_module_that_cannot_be_written_leaves_its_importers_alone(
    tmp_path, capsys, monkeypatch
) -> None:
    # fix imports its atomic write when it first writes: patched where it lives.
    from lint_plugin.fix import atomic as fix_module

    real = fix_module.write_atomic

    def failing(path, data, **kwargs):
        if path.endswith("spec_utils.py"):
            raise PermissionError(13, "Permission denied")
        real(path, data, **kwargs)

    monkeypatch.setattr(fix_module, "write_atomic", failing)
    tree(tmp_path)
    status, _, err = fix(tmp_path, capsys)
    assert status == 1
    assert f"{tmp_path / SPEC_UTILS}: error: cannot write: Permission denied" in err
    assert f"{tmp_path / BACKEND}: error: left unchanged" in err
    assert (tmp_path / BACKEND).read_text() == INLINE
    assert (tmp_path / SPEC_UTILS).read_text() == SPEC


def test_a_wrong_definition_is_refused_by_the_gate(tmp_path, capsys, monkeypatch):
    wrong = definitions.DEFINITIONS[definitions.USED_LEN].replace(
        "return seq_lens_sum * topk + bs * num_steps",
        "return seq_lens_sum + bs * num_steps",
    )
    monkeypatch.setitem(definitions.DEFINITIONS, definitions.USED_LEN, wrong)
    tree(tmp_path)
    status, _, err = fix(tmp_path, capsys)
    assert status == 1
    assert "draft_kv_indices_used_len does not return seq_lens_sum * topk" in err
    assert (tmp_path / SPEC_UTILS).read_text() == SPEC
    assert (tmp_path / BACKEND).read_text() == INLINE


@pytest.mark.parametrize(
    ("after", "reason"),
    [
        (
            SPEC.replace("LIMIT = 1", "LIMIT = 2")
            + definitions.DEFINITIONS[definitions.USED_LEN],
            "the rest of the module",
        ),
        (
            SPEC
            + "\n\n"
            + definitions.DEFINITIONS[definitions.USED_LEN].replace(
                "bs * num_steps", "bs * num_steps + 0 * topk - 1"
            ),
            "does not return",
        ),
        (
            SPEC
            + "\n\n"
            + definitions.DEFINITIONS[definitions.USED_LEN].replace(
                "num_steps: int\n", "num_steps: int = 1\n"
            ),
            "does not take",
        ),
        (SPEC, "not one per name"),
    ],
)
def test_check_added_refuses(after: str, reason: str) -> None:
    with pytest.raises(DefinitionRefused, match=reason):
        check_added(SPEC, after, [definitions.USED_LEN])


def test_check_added_accepts_an_equal_spelling() -> None:
    """The proof is about values, not text: any spelling of the formula."""
    spelled = (
        "def draft_kv_indices_used_len(seq_lens_sum, topk, bs, num_steps):\n"
        "    prefix = topk * seq_lens_sum\n"
        "    return num_steps * bs + prefix\n"
    )
    check_added(SPEC, SPEC + "\n\n" + spelled, [definitions.USED_LEN])


def test_line_endings_bom_and_indentation_of_the_module_are_kept(tmp_path, capsys):
    spec = "\ufeffimport os\r\n\r\n\r\nclass A:\r\n  x = 1\r\n"
    tree(tmp_path, spec_utils=spec)
    assert fix(tmp_path, capsys)[0] == 0
    data = (tmp_path / SPEC_UTILS).read_bytes()
    assert data.startswith("\ufeffimport os\r\n\r\n\r\ndef ".encode())
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert b"\r\n  return seq_lens_sum * topk + bs * num_steps\r\n" in data
    assert data.endswith(b"\r\n\r\n\r\nclass A:\r\n  x = 1\r\n")


@pytest.mark.parametrize(
    "spec",
    ["", "# licence\n", '"""Doc."""\n', "#!/usr/bin/env python\n# licence\n\nX = 1\n"],
)
def test_modules_without_imports(tmp_path, capsys, spec: str) -> None:
    tree(tmp_path, spec_utils=spec)
    assert fix(tmp_path, capsys)[0] == 0
    text = (tmp_path / SPEC_UTILS).read_text()
    assert text.startswith(spec.split("X = 1")[0].rstrip("\n"))
    assert imports_resolve(tmp_path, tmp_path / BACKEND)
    if "X = 1" in spec:
        assert text.endswith("\n\n\nX = 1\n")


def test_a_module_both_rewritten_and_given_definitions(tmp_path, capsys) -> None:
    """spec_utils holding an inline formula of its own: one diff, one file."""
    spec = (
        SPEC
        + "\n\ndef used(seq_lens_sum, topk, bs, i):\n    return seq_lens_sum * topk + bs * (i + 1)\n"
    )
    tree(tmp_path, spec_utils=spec)
    paths = [str(tmp_path / BACKEND), str(tmp_path / SPEC_UTILS)]
    assert main(["fix", "--no-config", "--diff", *paths]) == 1
    out = capsys.readouterr().out
    assert out.count(f"+++ {tmp_path / SPEC_UTILS}") == 1
    assert main(["fix", "--no-config", *paths]) == 0
    capsys.readouterr()
    text = (tmp_path / SPEC_UTILS).read_text()
    assert "return draft_kv_indices_used_len(seq_lens_sum, topk, bs, i + 1)" in text
    assert "\ndef draft_kv_indices_used_len(\n" in text
    assert main(["check", "--no-config", str(tmp_path / "python")]) == 0


def test_the_added_definitions_compute_the_formulas_when_run() -> None:
    """Executed, not only proven: each added definition against the formula
    computed here, over many bindings, the width's refusal exactly at 2**31
    and the guard exactly at used > capacity (upstream's message)."""
    import random

    namespace: dict = {}
    for text in definitions.DEFINITIONS.values():
        exec(compile(text, "definitions", "exec"), namespace)
    width = namespace["draft_kv_indices_buffer_width"]
    used_len = namespace["draft_kv_indices_used_len"]
    guard = namespace["assert_buffer_fits"]
    rng = random.Random(21)
    for _ in range(2000):
        s, k, b, n = (rng.randint(-(10**6), 10**6) for _ in range(4))
        assert used_len(s, k, b, n) == s * k + b * n
        a, k, c = (rng.randint(0, 2**11) for _ in range(3))
        if a * k * c < 2**31:
            assert width(a, k, c) == a * k * c
        else:
            with pytest.raises(AssertionError):
                width(a, k, c)
    assert width(1, 1, 2**31 - 1) == 2**31 - 1
    with pytest.raises(AssertionError):
        width(1, 1, 2**31)
    guard(5, 5, "row")
    with pytest.raises(AssertionError) as raised:
        guard(6, 5, "row", bs=2, seq_lens_sum=3)
    assert str(raised.value) == "row: used 6 > capacity 5 (bs=2, seq_lens_sum=3)"
