"""Source read as Python reads it (PEP 263): a coding cookie in the first two
lines, a UTF-8 BOM. ``fix`` writes a file back in its own encoding; a file
CPython refuses for its encoding is an E999 in ``check`` and left unchanged by
``fix``, as a syntax error is, each with CPython's reason."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lint_plugin.cli import main

SITE = (
    'NAME = "caf\u00e9"\n\n\n'
    "def f(self, seq_lens_sum, bs, i):\n"
    "    return seq_lens_sum * self.topk + bs * (i + 1)\n"
)
CALL = "draft_kv_indices_used_len(seq_lens_sum, self.topk, bs, i + 1)"

# Files CPython reads: the bytes, and the encoding to read the result with.
READ = {
    "latin-1 cookie": ("# -*- coding: latin-1 -*-\n" + SITE, "latin-1", b""),
    "cookie on line 2": (
        "#!/usr/bin/env python\n# vim: set fileencoding=iso-8859-1 :\n" + SITE,
        "latin-1",
        b"",
    ),
    "cp1252 cookie": ("# coding: cp1252\n" + SITE, "cp1252", b""),
    "utf-8 BOM": (SITE, "utf-8", b"\xef\xbb\xbf"),
    "utf-8 BOM and cookie": ("# coding: utf-8\n" + SITE, "utf-8", b"\xef\xbb\xbf"),
    "utf-8": (SITE, "utf-8", b""),
}
# Files CPython refuses, and the reason each is refused.
REFUSED = {
    "unknown encoding": (b"# coding: klingon\n" + SITE.encode(), "unknown encoding"),
    "BOM with another cookie": (
        b"\xef\xbb\xbf# coding: latin-1\n" + SITE.encode("latin-1"),
        "BOM but declares another",
    ),
    "not a text codec": (b"# coding: rot13\n" + SITE.encode(), "not a text encoding"),
    "not what it declares": (
        b"# coding: ascii\n" + SITE.encode("latin-1"),
        "not valid ascii as declared",
    ),
    "no cookie, not UTF-8": (SITE.encode("latin-1"), "no encoding declared"),
    "cookie on line 3": (
        b"#!/usr/bin/env python\n\n# coding: latin-1\n" + SITE.encode("latin-1"),
        "no encoding declared",
    ),
}


def cpython_reads(data: bytes) -> bool:
    try:
        compile(data, "m.py", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError:
        return False
    return True


@pytest.mark.parametrize(("text", "encoding", "bom"), READ.values(), ids=READ.keys())
def test_a_file_python_reads_is_fixed_and_written_back_in_its_encoding(
    tmp_path: Path, text: str, encoding: str, bom: bytes, capsys
) -> None:
    data = bom + text.encode(encoding)
    assert cpython_reads(data)
    path = tmp_path / "m.py"
    path.write_bytes(data)
    assert main(["check", "--no-config", str(path)]) == 1
    assert "KVI001" in capsys.readouterr().out
    assert main(["fix", "--no-config", str(path)]) == 0
    written = path.read_bytes()
    assert written.startswith(bom) and cpython_reads(written)
    decoded = written[len(bom) :].decode(encoding)
    assert CALL in decoded and "caf\u00e9" in decoded
    old, new = text.split("\n"), decoded.split("\n")
    cookie = [i for i, line in enumerate(old[:2]) if line.startswith("#")]
    assert [new[i] for i in cookie] == [old[i] for i in cookie]  # still lines 1-2


@pytest.mark.parametrize(("data", "reason"), REFUSED.values(), ids=REFUSED.keys())
def test_a_file_python_refuses_is_e999_and_left_unchanged(
    tmp_path: Path, data: bytes, reason: str, capsys
) -> None:
    assert not cpython_reads(data)
    path = tmp_path / "m.py"
    path.write_bytes(data)
    assert main(["check", "--no-config", str(path)]) == 1
    out = capsys.readouterr().out
    (line,) = [line for line in out.splitlines() if "E999" in line]
    assert line.startswith(f"{path}:") and reason in line
    assert main(["fix", "--no-config", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}: error: cannot parse, left unchanged: SyntaxError: " in err
    assert reason in err
    assert path.read_bytes() == data


@pytest.mark.parametrize(("text", "encoding", "bom"), READ.values(), ids=READ.keys())
def test_add_noqa_writes_back_in_the_files_encoding(
    tmp_path: Path, text: str, encoding: str, bom: bytes, capsys
) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(bom + text.encode(encoding))
    assert main(["check", "--no-config", "--add-noqa", str(path)]) == 0
    written = path.read_bytes()
    assert written.startswith(bom) and cpython_reads(written)
    decoded = written[len(bom) :].decode(encoding)
    assert "# noqa: KVI001" in decoded and "caf\u00e9" in decoded
    assert main(["check", "--no-config", str(path)]) == 0
