"""The flake8 front end, run through real flake8: same findings, flake8's noqa."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lint_plugin import runtime
from lint_plugin.linter import lint_source
from lint_plugin.noqa.directives import review

SOURCE = """\
class XMultiStepDraftBackend:
    def f(self, forward_batch, seq_lens_sum, bs, i):
        a = seq_lens_sum * self.topk + bs * (i + 1)
        b = seq_lens_sum * self.topk + bs * (i + 1)  # noqa: KVI001
        c = forward_batch.batch_size * self.topk * self.max_context_len  # noqa
        d = (
            forward_batch.batch_size * self.topk * self.max_context_len  # noqa: KVI004
        )
        return a, b, c, d
"""


def flake8(path: Path) -> list[tuple[int, int, str]]:
    result = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "KVI",
         "--format", "%(row)d|%(col)d|%(code)s", str(path)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    return [
        (int(row), int(col), code)
        for row, col, code in (line.split("|") for line in result.stdout.splitlines())
    ]


@pytest.fixture
def snippet(tmp_path: Path) -> Path:
    path = tmp_path / "backend.py"
    path.write_text(SOURCE)
    return path


def test_flake8_honours_noqa_on_the_reported_row(snippet: Path) -> None:
    # Row 7's directive names KVI004, so KVI002 stays and the directive is unused.
    assert flake8(snippet) == [(3, 13, "KVI001"), (7, 13, "KVI002"), (7, 74, "KVI100")]


def test_check_reports_what_flake8_reports(snippet: Path, capsys) -> None:
    import json

    from lint_plugin.cli import main

    assert main(["check", "--no-config", "--output-format", "json", str(snippet)]) == 1
    reported = json.loads(capsys.readouterr().out)
    found = [
        (f["location"]["row"], f["location"]["column"], f["code"]) for f in reported
    ]
    assert found == flake8(snippet)


def test_check_and_flake8_positions_agree(snippet: Path) -> None:
    found = review(lint_source(SOURCE.encode(), "x"), SOURCE, "x")
    unfiltered = {(f.row, f.column, f.code) for f in found}
    assert set(flake8(snippet)) <= unfiltered


def test_the_bundled_runtime_is_not_a_finding() -> None:
    path = Path(runtime.__file__)
    assert lint_source(path.read_bytes(), str(path)) == []
    assert flake8(path) == []


SHADOWING = "from mypkg.sizes import draft_kv_indices_buffer_width\n"


def test_helpers_module_option_decides_which_import_is_trusted(tmp_path: Path) -> None:
    path = tmp_path / "backend.py"
    path.write_text(SHADOWING)
    assert [code for _, _, code in flake8(path)] == ["KVI005"]
    result = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "KVI",
         "--kvi-helpers-module", "mypkg.sizes", str(path)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert (result.returncode, result.stdout) == (0, "")


def test_the_launch_rule_is_on_by_default_in_flake8_too(tmp_path: Path) -> None:
    from lint_plugin.rules import RULES

    path = tmp_path / "backend.py"
    path.write_text(RULES["KVI006"].invalid[0].code)
    found = lint_source(path.read_bytes(), str(path))
    expected = [(f.row, f.column, f.code) for f in found]
    assert [code for _, _, code in expected] == ["KVI006"]
    assert flake8(path) == expected  # --select KVI
    for flags in ([], ["--select", "KVI00"], ["--extend-select", "KVI006"]):
        result = subprocess.run(
            [sys.executable, "-m", "flake8", "--isolated", *flags,
             "--format", "%(code)s", str(path)],
            capture_output=True, text=True,
        )  # fmt: skip
        # (flake8's own defaults report the snippet's unused names too)
        kvi = [code for code in result.stdout.split() if code.startswith("KVI")]
        assert kvi == ["KVI006"], flags
    ignored = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "KVI",
         "--extend-ignore", "KVI006", "--format", "%(code)s", str(path)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert (ignored.returncode, ignored.stdout) == (0, "")


# Each spelling on a site's own row, and a directive that black moved to the last
# row of the statement: flake8 (with the plugin) and check report the same.
SPELLINGS = [
    "# noqa", "#noqa", "# NOQA", "# noqa:KVI001", "# noqa: kvi001", "# noqa : KVI002",
    "# noqa: KVI00", "# noqa: KVI", "# noqa:  KVI001", "# noqa: E501",
    "# noqa: KVI002  # noqa: KVI001", '"# noqa"',
]  # fmt: skip


def _site(comment: str) -> str:
    return (
        "class XMultiStepDraftBackend:\n"
        "    def f(self, seq_lens_sum, bs, i):\n"
        f"        return seq_lens_sum * self.topk + bs * (i + 1)  {comment}\n"
    )


def _moved(comment: str) -> str:
    return (
        "class XMultiStepDraftBackend:\n"
        "    def f(self, seq_lens_sum, bs, i):\n"
        "        return g(\n"
        "            seq_lens_sum * self.topk + bs * (i + 1),\n"
        f"        )  {comment}\n"
    )


@pytest.mark.parametrize("layout", [_site, _moved])
@pytest.mark.parametrize("comment", SPELLINGS)
def test_flake8_and_check_agree_on_every_spelling(
    tmp_path: Path, capsys, layout, comment: str
) -> None:
    import json

    from lint_plugin.cli import main

    path = tmp_path / "backend.py"
    path.write_text(layout(comment).replace('  "# noqa"', '; s = "# noqa"'))
    main(["check", "--no-config", "--output-format", "json", str(path)])
    reported = json.loads(capsys.readouterr().out)
    found = [
        (f["location"]["row"], f["location"]["column"], f["code"]) for f in reported
    ]
    assert found == flake8(path)


def test_disable_noqa_turns_off_both_passes(tmp_path: Path) -> None:
    path = tmp_path / "backend.py"
    path.write_text(_site("# noqa: KVI001"))
    assert flake8(path) == []
    result = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "KVI",
         "--disable-noqa", "--format", "%(row)d|%(code)s", str(path)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.stdout.split() == ["3|KVI001"]  # no KVI100 either


STRING_CLOSES_THE_ROW = (
    "class XMultiStepDraftBackend:\n"
    "    def f(self, seq_lens_sum, bs, i):\n"
    '        return seq_lens_sum * self.topk + bs * (i + 1) + len("""\n'
    'text""")\n'
)


def test_a_site_on_a_row_that_opens_a_string(tmp_path: Path, capsys, monkeypatch):
    """The site's row ends inside a string: the directive goes on the statement's
    last row (JSON's noqa_row says so), once; check and flake8 then agree."""
    import json

    from lint_plugin.cli import main

    monkeypatch.chdir(tmp_path)
    path = tmp_path / "backend.py"
    path.write_text(STRING_CLOSES_THE_ROW)
    main(["check", "--no-config", "--output-format", "json", "backend.py"])
    (finding,) = json.loads(capsys.readouterr().out)
    assert (finding["location"]["row"], finding["noqa_row"]) == (3, 4)
    for _ in range(2):
        assert main(["check", "--no-config", "--add-noqa", "backend.py"]) == 0
    assert path.read_text().count("# noqa: KVI001") == 1
    assert path.read_text().splitlines()[3].endswith('""")  # noqa: KVI001')
    assert main(["check", "--no-config", "backend.py"]) == 0
    assert flake8(path) == []


@pytest.mark.parametrize("code", ["KVI001", "kvi001", "Kvi001", "kVI001"])
def test_an_unused_directive_in_a_file_without_findings_in_any_case(
    tmp_path: Path, capsys, code: str
) -> None:
    import json

    from lint_plugin.cli import main

    path = tmp_path / "plain.py"
    path.write_text(f"x = 1  # noqa: {code}\n")
    main(["check", "--no-config", "--output-format", "json", str(path)])
    reported = [
        (f["location"]["row"], f["location"]["column"], f["code"])
        for f in json.loads(capsys.readouterr().out)
    ]
    assert reported == [(1, 8, "KVI100")]
    assert flake8(path) == reported


@pytest.mark.parametrize(
    "text",
    [
        # A formula in a method's decorator, in a class not read whole: the
        # decorator's rows come before the def's own.
        "class Base:\n    @d(a * self.topk * self.max_context_len)\n"
        "    def f(self):\n        pass\n",
        "@d(a * topk * max_context_len)\ndef f():\n    pass\n",
        "@d(\n    a * topk * max_context_len,\n)\nclass C:\n    pass\n",
        "class C(Base[a * topk * max_context_len], n=a * topk * max_context_len):\n"
        "    pass\n",
    ],
)
def test_the_plugin_reads_decorators_as_check_does(text: str) -> None:
    """In process, against ``check``'s engine (found by a review: the plugin
    looked only at the rows from the ``def`` on)."""
    import ast

    from lint_plugin.flake8_plugin import KviChecker

    KviChecker.disable_noqa = True
    found = KviChecker(ast.parse(text), "x.py", text.splitlines(True)).run()
    plugin = sorted((row, column + 1, message[:6]) for row, column, message, _ in found)
    check = sorted((f.row, f.column, f.code) for f in lint_source(text, "x.py"))
    assert plugin == check != []


@pytest.mark.parametrize(
    ("text", "imported"),
    [
        ("import os\n", []),
        (SOURCE, ["lint_plugin.engine.analysis", "lint_plugin.linter"]),
    ],
)
def test_the_engine_is_imported_by_the_first_file_that_can_match(
    text: str, imported: list[str], tmp_path: Path
) -> None:
    """flake8 loads every installed plugin on every run: loading ours, and
    running it on a file no rule can match, imports no engine (the rules'
    declarations are read; what they decide with is not run)."""
    from import_probe import imported_by

    body = (
        "import ast\n"
        "from lint_plugin.flake8_plugin import KviChecker\n"
        f"text = {text!r}\n"
        "lines = text.splitlines(keepends=True)\n"
        "checker = KviChecker(ast.parse(text), 'a.py', lines)\n"
        "_result = len(list(checker.run()))"
    )
    watched = ("lint_plugin.engine.analysis", "lint_plugin.linter")
    found, count = imported_by(body, watched, cwd=tmp_path)
    assert found == imported
    assert (count == "0") == (not imported)


@pytest.mark.parametrize(
    "line",
    [
        # Python reads the fullwidth name as `topk` (NFKC); the row's other
        # words are ASCII, so a row filter alone would let it through.
        "n = seq_lens_sum * self.\uff54\uff4f\uff50\uff4b + bs * (i + 1)\n",
        "n = seq_lens_sum * self.\uff54\uff4f\uff50\uff4b + bs * (i + 1)  # noqa: KVI001\n",
    ],
)
def test_flake8_and_check_agree_on_names_python_folds(
    line: str, tmp_path: Path, capsys
) -> None:
    """Both front ends read words as written, so they agree on a name spelled
    with characters Python folds to ASCII (docs/sglang.md says neither matches it)."""
    from lint_plugin.cli import main

    path = tmp_path / "nfkc.py"
    path.write_text(line, encoding="utf-8")
    main(["check", "--no-config", "--output-format", "concise", str(path)])
    out = capsys.readouterr().out
    checked = {
        (int(row), int(column), rest.split()[0])
        for row, column, rest in (
            line.split(":", 3)[1:]
            for line in out.splitlines()
            if line.startswith(str(path))
        )
    }
    assert set(flake8(path)) == checked
