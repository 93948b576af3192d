"""The user documentation the tests read: README.md and the pages in docs/.

A snippet a test runs is marked ``<!-- readme-test: NAME -->`` above its fenced
block, wherever it is written (the README or a docs page); the tests find it by
its name, so moving it between pages moves nothing in the tests.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"

MARKER = "<!-- readme-test: "
SNIPPET = re.compile(
    r"<!-- readme-test: (?P<name>\S+) -->\n```\w*\n(?P<body>.*?)```", re.S
)


def pages() -> list[Path]:
    """README.md, then every docs/*.md page, in name order."""
    return [README, *sorted(DOCS.glob("*.md"))]


def snippets() -> dict[str, list[tuple[Path, str]]]:
    """Each named snippet's bodies, with the page holding each (one, when right)."""
    found: dict[str, list[tuple[Path, str]]] = {}
    for page in pages():
        for match in SNIPPET.finditer(page.read_text()):
            found.setdefault(match["name"], []).append((page, match["body"]))
    return found


def markers() -> int:
    """How many snippet markers the pages hold (each must mark a fenced block)."""
    return sum(page.read_text().count(MARKER) for page in pages())


def lines_starting(prefix: str) -> list[tuple[Path, str]]:
    """Every line of the pages that starts with ``prefix``, with its page."""
    return [
        (page, line)
        for page in pages()
        for line in page.read_text().splitlines()
        if line.startswith(prefix)
    ]
