"""What ``fix`` refuses because a helper's name can change at run time
(:mod:`lint_plugin.fix.dynamic_names`), snippet by snippet, and the refusal as a
user sees it. Behaviour against CPython is the generated-module oracle's
(``DYNAMIC`` in generated_modules.py)."""

from __future__ import annotations

import ast

import pytest

from lint_plugin.cli import main
from lint_plugin.fix.dynamic_names import rebinding

HELPER = "draft_kv_indices_used_len"
NAMES = {HELPER, "draft_kv_indices_buffer_width"}
MODULES = {"sglang.srt.speculative.spec_utils"}

REFUSED = [
    f'globals()["{HELPER}"] = max',
    "globals()[name] = max",
    f"globals().update({HELPER}=max)",
    "globals().update(table)",
    "globals().clear()",
    f'globals().setdefault("{HELPER}", max)',
    "namespace = globals()",
    "register(globals())",
    f'vars()["{HELPER}"] = max',
    f'class A:\n    locals()["{HELPER}"] = max',
    f'sys._getframe().f_globals["{HELPER}"] = max',
    f'setattr(sys.modules[__name__], "{HELPER}", max)',
    "setattr(sys.modules[__name__], name, max)",
    f'delattr(sys.modules[__name__], "{HELPER}")',
    f"sys.modules[__name__].{HELPER} = max",
    f'sys.modules[__name__].__dict__["{HELPER}"] = max',
    f'exec("def {HELPER}(*a): return 1")',
    "exec(source)",
    "exec(source, globals())",
    'exec("globals().update(x=1)")',
    'eval("(draft_kv_indices_used_len := max)")',
    'sys.modules["sglang.srt.speculative.spec_utils"] = stub',
    'sys.modules["sglang"] = stub',
    "sys.modules[name] = stub",
    'sys.modules.pop("sglang.srt.speculative.spec_utils")',
    "modules = sys.modules",
    f"import sglang.srt.speculative.spec_utils as su\nsu.{HELPER} = max",
    "import sglang.srt.speculative\nsglang.srt.speculative.spec_utils = stub",
    f'from sglang.srt.speculative import spec_utils\nsetattr(spec_utils, "{HELPER}", max)',
    f'HAS = "{HELPER}" in globals()',
    f'f = globals().get("{HELPER}")',
    "NAMES = sorted(globals())",
    "for name in globals():\n    pass",
    "NAMES = dir()",
    # Found by an outside review: a function's globals, a module kept in a
    # variable, a dict read from sys.modules, object.__setattr__, exec under
    # another name, and reads through the module object.
    f'def f():\n    pass\nf.__globals__["{HELPER}"] = max',
    f"B.used.__globals__.update({HELPER}=max)",
    f'mod = sys.modules[__name__]\nmod.__dict__["{HELPER}"] = max',
    "mod = sys.modules[__name__]\nsetattr(mod, name, max)",
    f'sys.modules.get(__name__).__dict__["{HELPER}"] = max',
    f'object.__setattr__(sys.modules[__name__], "{HELPER}", max)',
    "e = exec",
    f'import builtins\nbuiltins.exec("{HELPER} = max")',
    f'mod = sys.modules[__name__]\nprint(hasattr(mod, "{HELPER}"))',
    "mod = sys.modules[__name__]\nNAMES = dir(mod)",
    "import importlib\nmod = importlib.import_module(__name__)\nsetattr(mod, name, 1)",
]

KEPT = [
    'globals()["OTHER"] = 1',
    "globals().update(OTHER=1, MORE=2)",
    'HAS = "tree_speculative_sampling_target_only" in globals()',
    'f = globals().get("OTHER")',
    "for m in model.modules():\n    pass",
    "self.__dict__[name] = value",
    'setattr(self, "topk", 3)',
    "setattr(obj, name, value)",
    'exec("x = 1")',
    "exec(source, {})",
    'sys.modules["other.module"] = stub',
    'mod = sys.modules["sglang.srt.speculative.spec_utils"]',
    "x = vars(self)",
    "NAMES = dir(obj)",
    'x = getattr(self, "topk")',
    "mod = sys.modules[__name__]\nprint(mod.__name__)",
    "run = functools.partial(print)",
    # Another module's attributes are not this module's names (0.5.2's
    # FlashInfer backend: `getattr(torch, q_data_type)`).
    "import torch\ndtype = getattr(torch, name)",
    "import torch\nsetattr(torch, name, value)",
    'mod = sys.modules["torch"]\nsetattr(mod, name, value)',
]


def _found(snippet: str) -> str | None:
    tree = ast.parse("import sys\n" + snippet + "\n")
    found = rebinding(tree, NAMES, MODULES)
    return None if found is None else str(found)


@pytest.mark.parametrize("snippet", REFUSED)
def test_refused(snippet: str) -> None:
    found = _found(snippet)
    assert found is not None and found.startswith("line ") and "\n" not in found


@pytest.mark.parametrize("snippet", KEPT)
def test_kept(snippet: str) -> None:
    assert _found(snippet) is None


def test_the_refusal_names_the_statement_and_leaves_the_file(tmp_path, capsys) -> None:
    source = (
        "def f(self, seq_lens_sum, bs, i):\n"
        "    return seq_lens_sum * self.topk + bs * (i + 1)\n"
        "\n\n"
        f'globals()["{HELPER}"] = max\n'
    )
    path = tmp_path / "backend.py"
    path.write_text(source)
    assert main(["fix", "--no-config", str(path)]) == 1
    err = capsys.readouterr().err
    assert (
        f"{path}: error: left unchanged: rewrite refused: line 5 writes "
        f"globals()['{HELPER}'] at run time, which fix cannot follow\n"
    ) in err
    assert path.read_text() == source
