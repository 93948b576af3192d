"""What every front end reports: findings, their fixes and per-file errors."""

from __future__ import annotations

from lint_plugin.records import record

SYNTAX_ERROR_CODE = "E999"


@record(frozen=True)
class Edit:
    """Replace the text between two 1-based (row, column) points with ``content``."""

    content: str
    row: int
    column: int
    end_row: int
    end_column: int


@record(frozen=True)
class Fix:
    applicability: str  # "safe" or "unsafe", as ruff spells it
    message: str
    edits: tuple[Edit, ...]


@record(frozen=True)
class Finding:
    """One diagnostic; rows and columns are 1-based, columns count characters."""

    path: str
    row: int
    column: int
    end_row: int
    end_column: int
    code: str
    message: str
    fix: Fix | None = None

    @property
    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.row, self.column, self.code)


@record(frozen=True)
class FileError:
    """A file that could not be checked at all (unreadable, not UTF-8, ...)."""

    path: str
    reason: str

    def __str__(self) -> str:
        # One line whatever the path or the reason holds (a newline, an escape).
        from lint_plugin.printable import printable

        return printable(f"{self.path}: error: {self.reason}")
