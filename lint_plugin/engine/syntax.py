"""Does a file parse? The whole-file syntax check of a file with findings.

A file with findings must parse as a whole before they are reported (flake8's
E999, and fix rewrites the file), but the engine parses only regions: the check
runs in place, only for a file with findings, with ``compile`` (what CPython
refuses to compile is E999 too; less than ``ast.parse`` costs, see
:func:`error_of`).
"""

from __future__ import annotations

import warnings

from lint_plugin.findings import SYNTAX_ERROR_CODE, Finding

TYPE_CHECKING = False  # not `typing`: its import costs milliseconds every run
if TYPE_CHECKING:
    import ast


def parse(text: str, path: str) -> ast.Module:
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
    """The file's syntax error, if any, as CPython reports it when it compiles
    the file: ``ast.parse``'s (flake8's E999) and the compiler's own (``break``
    outside a loop, an unbound ``nonlocal``, or-patterns binding different
    names, an expression too deep to compile). Nothing is run: ``compile``
    makes a code object and it is dropped.

    ``compile`` from the text builds no Python AST objects: 20 ms on the four
    pre-refactor backends, against 17 for ``symtable`` alone and 27 for
    ``ast.parse``.
    """
    error = _compile_error(text, path)
    return None if error is None else error_finding(error, path, text)


def _compile_error(text: str, path: str) -> SyntaxError | None:
    """Why CPython would not compile ``text`` (see :func:`error_of`), or None."""
    import contextlib
    import sys

    # Under the limit an `import` meets (the interpreter's default), not this
    # process's raised one: a 10,000-term sum compiles here and not there.
    limit = sys.getrecursionlimit()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with contextlib.suppress(RecursionError):  # called deeper than that
                # Counted from here: the frames below this call are the
                # checker's, where an import's would be few.
                sys.setrecursionlimit(IMPORT_RECURSION_LIMIT + _depth())
            compile(text, path, "exec", dont_inherit=True)
            return None
        except SyntaxError as exc:
            return exc
        except (RecursionError, MemoryError):
            return SyntaxError("too deeply nested to compile", (path, 1, 1, ""))
        except ValueError:
            pass  # the confirming parse below decides
        finally:
            sys.setrecursionlimit(limit)
    try:
        parse(text, path)
    except SyntaxError as exc:
        return exc
    return None


def _depth() -> int:
    """How many frames are below the caller's."""
    import sys

    frame, depth = sys._getframe(1), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


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


# CPython's default recursion limit: what compiling a module on import meets.
IMPORT_RECURSION_LIMIT = 1000
# The engine walks trees recursively: a 1000-term sum is valid code and must not
# hit Python's default limit of 1000 frames (3.11+ frames are cheap).
RECURSION_LIMIT = 20_000
