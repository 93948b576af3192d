"""A whole file's ``ast`` tree for ``fix``, every failure one line.

Apart from the gate, so that a ``fix`` run over files no rule can match (the
commit a pre-commit hook sees most) parses them without importing the gate.
"""

from __future__ import annotations

import ast
import warnings

from lint_plugin.fix.collection import keep_out_of_sight, paused


def parse_module(text: str, what: str | None = None) -> ast.Module:
    """``ast`` tree of a whole file; every failure is a one-line SyntaxError
    (``what`` names the text when it is not the file itself)."""
    prefix = f"{what} does not parse: " if what else ""
    try:
        with warnings.catch_warnings(), paused():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
        keep_out_of_sight()
        return tree
    except SyntaxError as exc:
        from lint_plugin.engine.source import syntax_error_position

        row, column = syntax_error_position(exc, text)
        raise SyntaxError(f"{prefix}{row}:{column}: SyntaxError: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise SyntaxError(f"{prefix}nested too deeply to parse") from None
