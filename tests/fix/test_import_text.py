"""The import added by text (``import_text``) is the import libcst adds, byte for
byte, on every header it does not leave to libcst; and it leaves few."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import python_source
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lint_plugin.engine.settings import DEFAULT_GUARD_MODULE, DEFAULT_HELPERS_MODULE
from lint_plugin.fix import rewrite
from lint_plugin.fix.imports.by_text import add_import

# hypothesmith compiles what it generates; its SyntaxWarnings are about that code.
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")

USED, WIDTH = "draft_kv_indices_used_len", "draft_kv_indices_buffer_width"
HELPERS = {USED, WIDTH}


def both_ways(text: str, names: set[str], module: str):
    """(by text or None, by libcst) for ``text``'s header."""
    cut, statements = rewrite._header(text)
    head = text[:cut]
    wanted = set(names)
    return (
        add_import(head, statements, wanted, module),
        rewrite._add_imports_with_libcst(head, wanted, module),
    )


# Header shapes people write, as whole lines (each ends with a newline).
LINES = [
    "",
    "   ",
    "# a comment",
    "    # an indented comment",
    '"""A docstring."""',
    '"""A docstring\n\nover lines.\n"""',
    "b'bytes'",
    'f"{x}"',
    '"a" f"{x}"',
    "'''one''' '''two'''",
    "import os",
    "import os  # why",
    "import torch.nn as nn",
    "from __future__ import annotations",
    "from typing import TYPE_CHECKING",
    "from . import sibling",
    "from .utils import helper",
    "from sglang.srt.layers import dp_attention",
    "from sglang.srt.layers.attention.utils import create_flashinfer_kv_indices_triton",
    "from sglang.srt.speculative.spec_info import SpecInput",
    "from sglang.srt.utils import is_cuda",
    "from sglang.srt.speculative.spec_utils import generate_draft_decode_kv_indices",
    "from sglang.srt.speculative.spec_utils import g as h, a  # keep",
    "from sglang.srt.speculative.spec_utils import  CONST, Klass",
    f"from sglang.srt.speculative.spec_utils import {USED}",
    "from sglang.srt.speculative.spec_utils import (g,)",
    "from sglang.srt.speculative.spec_utils import (\n    g,  # why\n    h,\n)",
    "from sglang.srt.speculative.spec_utils import *",
    "from sglang.srt.layers.attention.utils import assert_buffer_fits",
    "from zzz import last",
    "from aaa import first",
    "import sglang.srt.speculative.spec_utils",
    "logger = logging.getLogger(__name__)",
    "if TYPE_CHECKING:\n    from sglang.srt.layers.radix_attention import RadixAttention",
    "if TYPE_CHECKING:\n    import x\n    # trailing, indented",
    "try:\n    import flashinfer\nexcept ImportError:\n    flashinfer = None",
    "import a; import b",
    "x = 1; y = 2",
    "from x import \\\n    y",
    "\f",
    "# coding: utf-8",
    "#!/usr/bin/env python",
    "# héllo wörld",
    "from früh import spät",
]
TAILS = [
    "",
    "def f():\n    pass\n",
    "\n\nclass C:\n    x = 1\n",
    "@deco\ndef g(): ...\n",
]
MODULES = [DEFAULT_HELPERS_MODULE, DEFAULT_GUARD_MODULE, "aaa.helpers", "zzz.helpers"]
NAMES = [USED, WIDTH, "assert_buffer_fits", "CONST", "Klass", "g"]


# Built once, drawn from at every example: a strategy made anew in each draw is
# built and validated anew each time. The draws are the same either way.
_LINE_LISTS = st.lists(st.sampled_from(LINES), max_size=9)
_TAILS = st.sampled_from(TAILS)


@st.composite
def programs(draw):
    lines = draw(_LINE_LISTS)
    text = "".join(line + "\n" for line in lines) + draw(_TAILS)
    try:
        compile(text, "<header>", "exec", dont_inherit=True, flags=1024)
    except SyntaxError:
        text = draw(_TAILS)
    return text


@settings(
    max_examples=1500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    programs(),
    st.sets(st.sampled_from(NAMES), min_size=1),
    st.sampled_from(MODULES),
)
def test_generated_headers_get_libcsts_import(text, names, module) -> None:
    by_text, by_libcst = both_ways(text, names, module)
    if by_text is not None:
        assert by_text == by_libcst


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Among the package's imports, above other code: one blank line before it.
        ("from M.a import y\nz = 1\nimport os\n", "from M.a import y\nfrom M.b import a\n\nz = 1\nimport os\n"),
        ("from M.a import y\n\nz = 1\nimport os\n", "from M.a import y\nfrom M.b import a\n\nz = 1\nimport os\n"),
        ("from M.a import y\n# c\nz = 1\nimport os\n", "from M.a import y\nfrom M.b import a\n\n# c\nz = 1\nimport os\n"),
    ],
)  # fmt: skip
def test_examples_in_a_package(text: str, expected: str) -> None:
    by_text, by_libcst = both_ways(text, {"a"}, "M.b")
    assert by_text is not None
    assert by_text == by_libcst
    assert rewrite._add_imports(text, {"a"}, "M.b") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("import os\n\nx = 1\n", "import os\nfrom M import a\n\nx = 1\n"),
        ('"""Doc."""\n', '"""Doc."""\n\nfrom M import a\n'),
        ("from M import b  # c\n", "from M import (a, b)  # c\n"),
        ("# licence\nfrom M.z import z\n", "# licence\nfrom M import a\nfrom M.z import z\n"),
    ],
)  # fmt: skip
def test_examples(text: str, expected: str) -> None:
    by_text, by_libcst = both_ways(text, {"a"}, "M")
    assert by_text is not None
    assert by_text == by_libcst
    assert rewrite._add_imports(text, {"a"}, "M") == expected


@pytest.mark.parametrize(
    "text",
    [
        "import a; import b\n",  # two statements on a line
        "from M import (\n    b,  # why\n)\n",  # a comment libcst's merge may move
        "if x:\n    import y\n    # indented\nimport z\n",
        "x = 1\n\f\nimport y\n",
    ],
)
def test_left_to_libcst(text: str) -> None:
    assert both_ways(text, {"a"}, "M")[0] is None


def test_comments_among_the_existing_names_are_kept() -> None:
    text = "from M import (\n    b,  # why\n    c,\n)\n\nx = 1\n"
    assert both_ways(text, {"a"}, "M")[0] is None  # left to libcst
    assert rewrite._add_imports(text, {"a"}, "M") == (
        "from M import (\n    b,  # why\n    c,\n)\nfrom M import a\n\nx = 1\n"
    )


def test_four_backends_and_fixtures_are_done_by_text(old_attention) -> None:
    """fix on the four backends never imports libcst for their imports."""
    paths = [old_attention / name for name in rewrite_targets()]
    paths += sorted((Path(__file__).parents[2] / "fixtures").glob("*.py"))
    for path in paths:
        text = path.read_text()
        by_text, by_libcst = both_ways(text, HELPERS, DEFAULT_HELPERS_MODULE)
        assert by_text is not None, path
        assert by_text == by_libcst, path


def rewrite_targets() -> list[str]:
    from corpus import BACKENDS

    return list(BACKENDS)


def test_every_backend_and_worker_of_the_latest_release(latest_package) -> None:
    """Where fix works: the same output, and libcst needed for few headers."""
    checked = declined = 0
    for folder in ("srt/layers/attention", "srt/speculative"):
        for path in sorted((Path(latest_package) / folder).rglob("*.py")):
            text = path.read_text()
            for module in (DEFAULT_HELPERS_MODULE, DEFAULT_GUARD_MODULE):
                by_text, by_libcst = both_ways(text, HELPERS, module)
                if by_text is None:
                    declined += 1
                else:
                    assert by_text == by_libcst, path
                checked += 1
    assert checked > 200
    assert declined < checked // 10


def full_header_cut(text: str) -> int:
    """The header's end from a parse of the whole text (what _header shortcuts)."""
    from lint_plugin.fix.edits import header_last_row, line_starts

    last = header_last_row(ast.parse(text))
    if last == 0:
        opening = rewrite._OPENING_COMMENTS.match(text)
        return opening.end() if opening else 0
    starts = line_starts(text)
    return starts[last] if last < len(starts) else len(text)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(python_source.from_grammar())
def test_the_header_found_from_a_prefix_is_the_whole_parses(text: str) -> None:
    """_header parses only the text above the first top-level def or class."""
    assert rewrite._header(text)[0] == full_header_cut(text)


@pytest.mark.parametrize(
    "text",
    [
        'x = """\ndef not_a_def():\n"""\nimport a\n\ndef f(): ...\n',
        "import a\n@deco\nclass C: ...\nimport b\n",
        "import a\nx = f(\n1)\ndef g(): ...\n",
        "s = 'a\\\ndef f'\nimport a\ndef g(): ...\n",
        "import a\nasync def f(): ...\nimport b\n",
    ],
)
def test_the_header_found_from_a_prefix_on_tricky_layouts(text: str) -> None:
    assert rewrite._header(text)[0] == full_header_cut(text)


def test_the_header_of_every_file_of_the_latest_release(latest_package) -> None:
    checked = 0
    for folder in ("srt/layers/attention", "srt/speculative"):
        for path in sorted((Path(latest_package) / folder).rglob("*.py")):
            text = path.read_text()
            assert rewrite._header(text)[0] == full_header_cut(text), path
            checked += 1
    assert checked > 100


ALIASED = [
    f"from {DEFAULT_HELPERS_MODULE} import {USED} as used_len\n",
    f"from {DEFAULT_HELPERS_MODULE} import {WIDTH} as width_of\n",
    # isort's own shape: one statement per `as` name.
    f"from {DEFAULT_HELPERS_MODULE} import (\n    {WIDTH} as w,\n)\n"
    f"from {DEFAULT_HELPERS_MODULE} import (\n    {USED} as used_len,\n)\n",
]
SITES = (
    "\n\nclass XMultiStepDraftBackend:\n"
    "    def f(self, seq_lens_sum, bs, i, max_bs):\n"
    "        a = seq_lens_sum * self.topk + bs * (i + 1)\n"
    "        return a, max_bs * self.topk * self.max_context_len\n"
)


@pytest.mark.parametrize("header", ALIASED)
def test_helpers_imported_under_aliases_get_an_import_isort_keeps(
    header: str, tmp_path: Path
) -> None:
    """An import of ``as`` names is not merged into (isort keeps those apart):
    the helpers get their own import, where ruff's isort orders it."""
    import subprocess

    from lint_plugin.fix.formatting import _ruff
    from lint_plugin.fix.rewrite import Options, rewrite_text

    rewritten = rewrite_text(header + SITES, "m.py", Options()).text
    assert header in rewritten  # the aliases' import is left as it was
    path = tmp_path / "m.py"
    path.write_text(rewritten)
    isort = subprocess.run(
        [_ruff(), "check", "--isolated", "--select", "I", "--diff", str(path)],
        capture_output=True,
        text=True,
    )
    assert isort.returncode == 0, isort.stdout + isort.stderr
