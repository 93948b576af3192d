"""Does a file parse? The whole-file syntax check, and running it ahead on a spare core.

A file with findings must parse as a whole before they are reported (flake8's
E999, and fix rewrites the file), but the engine parses only regions. The check
needs nothing the engine computes, so ``check`` runs it in a forked child on
another core while the engine works (:class:`AheadCheck`), and the engine asks
for the answer only for files with findings. Kept apart from the engine so the
child imports neither the engine nor the rules.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

from lint_plugin.engine.source import normalised
from lint_plugin.findings import SYNTAX_ERROR_CODE, Finding

SyntaxCheck = Callable[[str, str], "Finding | None"]


TYPE_CHECKING = False  # not `typing`: its import costs milliseconds every run
if TYPE_CHECKING:
    import ast


def parse(text: str, path: str) -> ast.Module:
    # Imported here: a run the cache answers asks for no parse and imports
    # this module all the same (to check ahead what the cache cannot answer).
    import ast

    # A SyntaxWarning about the analysed file (an invalid escape in a string) is
    # the file's own business, not noise for the person running the checker.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(text, filename=path)
        except (RecursionError, MemoryError):
            # Too deep for the parser: the file's own problem, one E999 for it.
            raise SyntaxError("too deeply nested to parse", (path, 1, 1, "")) from None


def error_of(text: str, path: str) -> Finding | None:
    """The file's syntax error, if any, as ``ast.parse`` (and flake8) reports it.

    ``symtable`` parses in C without building Python AST objects: half the time
    of ``ast.parse`` on the four backends (21 ms against 45 ms). It also rejects
    a few programs ``ast.parse`` accepts (``nonlocal`` at module level), so its
    errors are confirmed by ``ast.parse`` before they are reported.
    """
    import symtable

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            symtable.symtable(text, path, "exec")
            return None
        except SyntaxError:
            pass
        except (ValueError, RecursionError, MemoryError):
            pass  # the confirming parse below decides
    try:
        parse(text, path)
    except SyntaxError as exc:
        return error_finding(exc, path, text)
    return None


def error_finding(exc: SyntaxError, path: str, text: str) -> Finding:
    from lint_plugin.engine.source import syntax_error_position

    row, column = syntax_error_position(exc, text)
    return Finding(
        path,
        row,
        column,
        exc.end_lineno or row,
        exc.end_offset or column,
        SYNTAX_ERROR_CODE,
        f"SyntaxError: {exc.msg}",
    )


# Below this many bytes of candidate files the fork costs about what it saves.
_AHEAD_MIN_BYTES = 64 * 1024


class AheadCheck:
    """The syntax check of each candidate file of a serial run, done by a forked
    child on a spare core, one answer streamed back per file, in order.

    ``for_file(i)`` gives the check for file ``i``: it waits for the child's
    answer, or checks here when the child skipped the file or cannot answer
    (it died, or was never started). A child still working when the run ends
    is killed: its answers for files without findings are never needed.
    """

    def __init__(
        self,
        datas: Sequence[bytes | None],
        paths: Sequence[str],
        could_match: Callable[[bytes], bool],
    ) -> None:
        self._answers: dict[int, tuple | None] = {}
        self._pid = 0
        self._stream = None
        self._done = True
        self._started = False
        wanted = [
            i for i, data in enumerate(datas) if data is not None and could_match(data)
        ]
        if sum(len(datas[i]) for i in wanted) >= _AHEAD_MIN_BYTES and spare_core():
            self._start(datas, paths, wanted)

    def _start(
        self, datas: Sequence[bytes | None], paths: Sequence[str], wanted: list[int]
    ) -> None:
        import os

        read_end, write_end = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read_end)
            os.close(write_end)
            return
        if pid == 0:  # the child: answer in order, leave without cleanup
            status = 1
            try:
                os.close(read_end)
                _answer(datas, paths, wanted, write_end)
                status = 0
            finally:
                os._exit(status)
        os.close(write_end)
        self._pid, self._done, self._started = pid, False, True
        self._stream = os.fdopen(read_end, "rb")

    def for_file(self, index: int) -> SyntaxCheck | None:
        """The check of file ``index``; None when no child was started (the
        engine then checks in place, as it does by default)."""
        if not self._started:
            return None

        def check(text: str, path: str) -> Finding | None:
            found = self._answer_for(index)
            if found is _UNKNOWN:
                return error_of(text, path)
            if found is None:
                return None
            row, column, end_row, end_column, message = found
            return Finding(
                path, row, column, end_row, end_column, SYNTAX_ERROR_CODE, message
            )

        return check

    def _answer_for(self, index: int):
        import marshal

        while index not in self._answers and not self._done:
            try:
                record = marshal.load(self._stream)
            except (EOFError, ValueError, TypeError, OSError):
                self._finish()
                break
            if record is None:  # the child's last word: every answer sent
                self._finish()
                break
            self._answers[record[0]] = record[1]
        return self._answers.get(index, _UNKNOWN)

    def close(self) -> None:
        """Stop the child if it still works (nothing more will be asked)."""
        if not self._done:
            import contextlib
            import os

            with contextlib.suppress(OSError):
                os.kill(self._pid, _SIGKILL)
            self._finish()

    def _finish(self) -> None:
        import os

        self._done = True
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        if self._pid:
            import contextlib

            with contextlib.suppress(OSError):
                os.waitpid(self._pid, 0)
            self._pid = 0


_UNKNOWN = object()
# signal.SIGKILL where the child is forked (Linux), without importing `signal`.
_SIGKILL = 9


def _answer(
    datas: Sequence[bytes | None], paths: Sequence[str], wanted: list[int], pipe: int
) -> None:
    """In the child: the answer for each wanted file, as ``lint_source`` would
    compute it (the text it decodes, with its line ends), then ``None``."""
    import marshal
    import os
    import sys

    from lint_plugin.source_files import SourceError, decode

    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
    with os.fdopen(pipe, "wb", buffering=0) as stream:
        for index in wanted:
            try:
                text = normalised(decode(datas[index]))
            except SourceError:
                continue  # the engine reports it; no answer is asked for
            found = error_of(text, paths[index])
            answer = (
                None
                if found is None
                else (
                    found.row,
                    found.column,
                    found.end_row,
                    found.end_column,
                    found.message,
                )
            )
            stream.write(marshal.dumps((index, answer)))
        stream.write(marshal.dumps(None))


def spare_core() -> bool:
    import os
    import sys

    if sys.platform != "linux":
        return False  # fork is only cheap and safe enough where it is the default
    return len(os.sched_getaffinity(0)) >= 2


# The engine walks trees recursively: a 1000-term sum is valid code and must not
# hit Python's default limit of 1000 frames (3.11+ frames are cheap).
RECURSION_LIMIT = 20_000
