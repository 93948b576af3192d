"""Whether a file can hold a finding at all, decided on its bytes.

Kept apart from the engine (:mod:`lint_plugin.engine.scan`) so that a run answered from
the cache, or a file no rule can match, never imports the parser's side.
"""

from __future__ import annotations


class SourceError(ValueError):
    """The file's bytes are not text Python reads (the reason says why, and
    ``row``/``column`` where, as for a syntax error: CPython refuses such a
    file with one)."""

    def __init__(self, reason: str, row: int = 1, column: int = 1) -> None:
        super().__init__(reason)
        self.row = row
        self.column = column


def could_match(data: bytes | str) -> bool:
    """Could any rule find anything here (a file's bytes, or its text as
    decoded, which is read as its UTF-8)? Each rule declares the words it needs
    (:mod:`lint_plugin.engine.vocabulary`): a helper's or the kernel's name, the
    guard's (KVI007: its import), or a topk beside a second role (seq_lens_sum
    for KVI001, a context size for KVI002 and KVI003); in the whole 0.5.23
    package 634 files name a topk and about 115 also a second role, 5 name the
    guard (4 of them a topk too)."""
    # Imported here: a run the cache answers decodes files, asks no byte test.
    from lint_plugin.engine import vocabulary

    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return vocabulary.could_match(data)


_BOM = b"\xef\xbb\xbf"


def decode(data: bytes) -> str:
    """The text Python reads from ``data`` (PEP 263: a BOM, a coding cookie in
    the first two lines), without a BOM; raises SourceError where Python would
    refuse the file."""
    return decoded(data)[0]


def decoded(data: bytes) -> tuple[str, str, bool]:
    """``(text, encoding, bom)`` as Python reads ``data``: the text without a
    BOM, the codec that encodes it back, whether a BOM led it."""
    # The first two lines are where a cookie may be: most files have none.
    head = data[: data.find(b"\n", data.find(b"\n") + 1) + 1 or len(data)]
    if b"coding" not in head and not data.startswith(_BOM):
        if data.isascii():
            return data.decode("ascii"), "utf-8", False
        try:
            return data.decode("utf-8"), "utf-8", False
        except UnicodeDecodeError as exc:
            raise _undecodable(data, exc, "UTF-8", "and no encoding declared") from None
    return _declared(data)


def _declared(data: bytes) -> tuple[str, str, bool]:
    import io
    import tokenize

    bom = data.startswith(_BOM)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        message = str(exc)
        if bom and message.startswith("encoding problem"):
            message = "encoding problem: the file has a UTF-8 BOM but declares another"
        raise SourceError(f"SyntaxError: {message}", _cookie_row(data)) from None
    body = data[len(_BOM) :] if bom else data
    codec = "utf-8" if encoding == "utf-8-sig" else encoding
    try:
        return body.decode(codec), codec, bom
    except UnicodeDecodeError as exc:
        raise _undecodable(body, exc, codec, "as declared") from None
    except LookupError as exc:  # `rot13`: a codec, but not for text
        raise SourceError(f"SyntaxError: {exc}", _cookie_row(data)) from None


def _undecodable(data: bytes, exc: UnicodeDecodeError, codec: str, how: str):
    row = data.count(b"\n", 0, exc.start) + 1
    column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
    byte = data[exc.start]
    return SourceError(
        f"SyntaxError: not valid {codec} {how} (byte 0x{byte:02x} at offset "
        f"{exc.start})",
        row,
        column,
    )


def _cookie_row(data: bytes) -> int:
    first = data.split(b"\n", 1)[0]
    return 1 if b"coding" in first or b"\n" not in data else 2
