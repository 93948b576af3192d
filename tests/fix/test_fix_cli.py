"""``draft-kv-lint fix`` end to end: golden files, modes and bad input."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from lint_plugin.cli import main
from lint_plugin.engine import formulas

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
NAMES = sorted(p.name for p in FIXTURES.glob("*.py"))
SITE = (
    "class XMultiStepDraftBackend:\n"
    "    def f(self, seq_lens_sum, bs, i):\n"
    "        return seq_lens_sum * self.topk + bs * (i + 1)\n"
)
FIXED = (
    "from sglang.srt.speculative.spec_utils import draft_kv_indices_used_len\n\n\n"
    "class XMultiStepDraftBackend:\n"
    "    def f(self, seq_lens_sum, bs, i):\n"
    "        return draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)\n"
)


@pytest.fixture
def backends(tmp_path: Path) -> Path:
    for name in NAMES:
        shutil.copy(FIXTURES / name, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize(
    ("flags", "expected"), [([], "safe"), (["--unsafe-fixes"], "unsafe")]
)
def test_fixtures_rewrite_to_the_expected_files(backends, flags, expected) -> None:
    assert main(["fix", "--no-config", *flags, str(backends)]) == 0
    for name in NAMES:
        want = (FIXTURES / "expected" / expected / name).read_text()
        assert (backends / name).read_text() == want, name


def test_second_run_changes_nothing(backends, capsys) -> None:
    main(["fix", "--no-config", "--unsafe-fixes", str(backends)])
    before = {n: (backends / n).read_bytes() for n in NAMES}
    capsys.readouterr()
    assert main(["fix", "--no-config", "--unsafe-fixes", str(backends)]) == 0
    assert "Nothing to fix." in capsys.readouterr().err
    assert {n: (backends / n).read_bytes() for n in NAMES} == before


def test_diff_prints_and_writes_nothing(backends, capsys) -> None:
    before = {n: (backends / n).read_bytes() for n in NAMES}
    assert main(["fix", "--no-config", "--diff", str(backends)]) == 1
    out = capsys.readouterr().out
    assert out.count("+++ ") == 4
    assert (
        "+                : draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)"
        in out
    )
    assert {n: (backends / n).read_bytes() for n in NAMES} == before


def test_check_is_silent_on_stdout_and_fails_until_fixed(backends, capsys) -> None:
    assert main(["fix", "--no-config", "--check", str(backends)]) == 1
    assert capsys.readouterr().out == ""
    main(["fix", "--no-config", str(backends)])
    assert main(["fix", "--no-config", "--check", str(backends)]) == 0


def write(path: Path, data: bytes, mode: int = 0o644) -> Path:
    path.write_bytes(data)
    path.chmod(mode)
    return path


def test_crlf_bom_and_mode_are_kept(tmp_path: Path) -> None:
    source = b"\xef\xbb\xbf" + SITE.replace("\n", "\r\n").encode()
    path = write(tmp_path / "crlf.py", source, 0o751)
    assert main(["fix", "--no-config", str(path)]) == 0
    data = path.read_bytes()
    assert data == b"\xef\xbb\xbf" + FIXED.replace("\n", "\r\n").encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert [p.name for p in tmp_path.iterdir()] == ["crlf.py"]  # no temporary left


def test_bad_files_are_reported_left_alone_and_others_fixed(tmp_path: Path, capsys):
    broken = write(
        tmp_path / "a_broken.py", b"def f(:\n    return seq_lens_sum * topk\n"
    )
    latin1 = write(tmp_path / "b_latin1.py", b"# caf\xe9\n" + SITE.encode())
    good = write(tmp_path / "c_good.py", SITE.encode())
    before = broken.read_bytes(), latin1.read_bytes()
    assert main(["fix", "--no-config", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert (broken.read_bytes(), latin1.read_bytes()) == before
    assert good.read_text() == FIXED
    lines = err.splitlines()
    assert any(x.startswith(str(broken)) and "cannot parse" in x for x in lines)
    assert any(x.startswith(str(latin1)) and "UTF-8" in x for x in lines)


def test_a_refused_rewrite_leaves_the_file_byte_identical(
    tmp_path, monkeypatch, capsys
):
    path = write(tmp_path / "x.py", SITE.encode())
    real = formulas.render_helper_call

    def corrupted(helper, args):  # swap two arguments: no longer the same number
        args = list(args)
        args[1], args[2] = args[2], args[1]
        return real(helper, args)

    monkeypatch.setattr(formulas, "render_helper_call", corrupted)
    assert main(["fix", "--no-config", str(path)]) == 1
    assert path.read_bytes() == SITE.encode()
    err = capsys.readouterr().err
    assert "refused, not equal to the original" in err
    assert "draft_kv_indices_used_len(seq_lens_sum, bs, self.topk, i + 1)" in err


def test_fix_never_runs_the_analysed_code(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    code = f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n" + SITE
    path = write(tmp_path / "x.py", code.encode())
    assert main(["fix", "--no-config", str(path)]) == 0
    assert not marker.exists()
    assert "draft_kv_indices_used_len(" in path.read_text()


def test_symlink_stays_a_link(tmp_path: Path) -> None:
    target = write(tmp_path / "target.py", SITE.encode())
    link = tmp_path / "link.py"
    link.symlink_to(target)
    assert main(["fix", "--no-config", str(link)]) == 0
    assert link.is_symlink() and target.read_text() == FIXED


def test_libcst_tool_runs_the_same_transform(backends: Path) -> None:
    command = [
        sys.executable, "-P", "-m", "libcst.tool", "codemod", "-x", "--no-format",
        "lint_plugin.codemod.DraftKvIndicesCommand", str(backends),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)
    assert result.returncode == 0, result.stderr
    for name in NAMES:
        want = (FIXTURES / "expected" / "safe" / name).read_text()
        assert (backends / name).read_text() == want, name


def test_an_internal_error_on_one_file_spares_the_others(tmp_path, monkeypatch, capsys):
    from lint_plugin.fix import formatting

    first = write(tmp_path / "a.py", SITE.encode())
    second = write(tmp_path / "b.py", SITE.encode())
    real = formatting.format_ranges
    calls = []

    def fail_once(text, ranges, path):
        calls.append(path)
        if len(calls) == 1:
            raise formatting.FormatError("ruff is not there")
        return real(text, ranges, path)

    monkeypatch.setattr(formatting, "format_ranges", fail_once)
    assert main(["fix", "--no-config", str(tmp_path)]) == 2
    assert first.read_bytes() == SITE.encode()  # left as it was
    assert second.read_text() == FIXED
    assert "ruff is not there" in capsys.readouterr().err


@pytest.mark.parametrize(
    "flags",
    [(), ("--ignore", "KVI006"), ("--helpers-module", "mypkg.helpers")],
)
def test_a_used_directive_for_the_launch_rule_is_kept(tmp_path, capsys, flags):
    """KVI100's fix runs the engine under the run's own settings: a directive
    that suppresses KVI006 is used (whatever is selected), and `fix` must not
    strip it."""
    from lint_plugin.rules import RULES

    source = RULES["KVI006"].invalid[0].code
    lines = source.split("\n")
    row = next(i for i, line in enumerate(lines) if "decode_kv_indices[" in line)
    lines[row] += "  # noqa: KVI006"
    path = tmp_path / "backend.py"
    path.write_text("\n".join(lines))
    before = path.read_bytes()
    assert main(["fix", "--no-config", *flags, str(path)]) == 0
    assert path.read_bytes() == before
    assert main(["check", "--no-config", str(path)]) == 0
    lines[row] = lines[row].removesuffix("  # noqa: KVI006")
    path.write_text("\n".join(lines))
    assert main(["check", "--no-config", str(path)]) == 1  # on by default
    capsys.readouterr()


@pytest.mark.parametrize(
    "text",
    [
        b"import os\n\n\ndef f(x):\n    return os.path.join(x, 'a')\n",
        b"x = 1  # noqa: KVI001\n",  # a directive of ours: the rewriter decides
        b"x = 1  # NoQA: kvi002, E501\n",
        b"# -*- coding: latin-1 -*-\nx = 'caf\xe9'\n",
        b"\xef\xbb\xbfx = 1\r\ny = 2\r\n",
    ],
)
def test_files_no_rule_can_match_are_fixed_as_the_rewriter_would(
    tmp_path: Path, capsys, text: bytes
) -> None:
    """``fix`` turns away a file that no rule can match and that holds no
    directive of ours without its rewriter: what it writes and says for it is
    what the rewriter's own path (``fix_file``) writes and says."""
    from lint_plugin.findings import FileError
    from lint_plugin.fix.command import fix_file
    from lint_plugin.fix.file_text import read_for_fix
    from lint_plugin.fix.options import Options

    path = write(tmp_path / "a.py", text)
    expected = fix_file(str(path), Options(), write=False)
    status = main(["fix", "--no-config", str(path)])
    err = capsys.readouterr().err
    if isinstance(expected, FileError):
        assert status == 1
        assert err.splitlines()[0] == str(expected)
        assert path.read_bytes() == text
    else:
        before, after, _ = expected
        assert status == 0
        assert read_for_fix(str(path))[1] == after
        if after == before:
            assert path.read_bytes() == text  # byte for byte


@pytest.mark.parametrize(
    "text",
    [
        b"def f(:\n    return 1\n",
        b"x = (" * 2000 + b")" * 2000 + b"\n",  # nested too deeply to parse
        b"def f():\n    break\n",  # what only CPython's compiler refuses
    ],
    ids=["syntax", "nested", "compiler"],
)
def test_a_file_no_rule_can_match_is_not_parsed_by_fix_as_by_check(
    tmp_path: Path, capsys, text: bytes
) -> None:
    """The byte test comes first in ``fix`` as in ``check``: a file that cannot
    hold a site is not parsed, so its syntax errors are left to ruff or flake8
    by both (exit 0, nothing said, not a byte written), while the same error in a
    file with a finding is E999 in ``check`` and a refusal in ``fix``."""
    path = write(tmp_path / "a.py", text)
    assert main(["check", "--no-config", "--no-cache", str(path)]) == 0
    assert main(["fix", "--no-config", "--no-cache", str(path)]) == 0
    assert "a.py" not in capsys.readouterr().err
    assert path.read_bytes() == text

    site = (
        b"def f(self, seq_lens_sum, bs, i):\n"
        b"    return seq_lens_sum * self.topk + bs * (i + 1)\n\n\n"
    )
    path.write_bytes(site + text)
    assert main(["check", "--no-config", "--no-cache", str(path)]) == 1
    assert "E999" in capsys.readouterr().out
    assert main(["fix", "--no-config", "--no-cache", str(path)]) == 1
    assert "cannot parse, left unchanged" in capsys.readouterr().err
    assert path.read_bytes() == site + text


def test_a_run_over_files_no_rule_can_match_imports_no_rewriter(tmp_path) -> None:
    """The commit a pre-commit hook sees most touches no backend: ``fix`` reads
    and parses its files, and imports neither the rewriter nor the engine."""
    from import_probe import imported_by

    write(tmp_path / "a.py", b"import os\n")
    write(tmp_path / "b.py", b"x = 1  # noqa: E501\n")
    body = (
        "from lint_plugin.cli import main\n_result = main(['fix', '--no-config', '.'])"
    )
    watched = ("lint_plugin.fix.rewrite", "lint_plugin.linter", "dataclasses")
    assert imported_by(body, watched, cwd=tmp_path) == ([], "0")
    write(tmp_path / "c.py", SITE.encode())
    found, status = imported_by(body, watched, cwd=tmp_path)
    assert status == "0" and {"lint_plugin.fix.rewrite", "lint_plugin.linter"} <= set(
        found
    )
