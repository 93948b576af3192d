"""The documentation holds together: every relative link in README.md, the
CHANGELOG and docs/*.md reaches a file (and, with ``#anchor``, a heading of it, as
GitHub names headings), each docs page opens with a one-paragraph summary, and the
README and docs/index.md each link every page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import user_docs

ROOT = user_docs.ROOT
PAGES = [*user_docs.pages(), ROOT / "CHANGELOG.md"]

FENCE = re.compile(r"^```.*?^```[ \t]*$", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def _prose(text: str) -> str:
    """The text less fenced blocks and code spans: what GitHub renders as links."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation but
    ``-`` and ``_`` dropped, spaces as ``-``, a repeat suffixed ``-1``, ``-2``."""
    seen: dict[str, int] = {}
    names = set()
    for _, title in HEADING.findall(FENCE.sub("", text)):
        slug = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        names.add(slug if count == 0 else f"{slug}-{count}")
    return names


def links(page: Path) -> list[str]:
    return [
        target
        for target in LINK.findall(_prose(page.read_text()))
        if not re.match(r"[a-z][a-z0-9+.-]*:", target)  # https:, mailto:
    ]


def test_the_anchor_names_are_githubs() -> None:
    text = "# A: b\n\n## `--against REV` x\n\n```\n# not a heading\n```\n## A: b\n"
    assert anchors(text) == {"a-b", "--against-rev-x", "a-b-1"}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_reaches_its_file_and_heading(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or ROOT not in (file, *file.parents):
            broken.append(f"{target}: no such file")
        elif anchor and (
            file.suffix != ".md" or anchor not in anchors(file.read_text())
        ):
            broken.append(f"{target}: no such heading")
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"


DOC_PAGES = sorted(user_docs.DOCS.glob("*.md"))


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda page: page.name)
def test_each_page_opens_with_a_summary(page: Path) -> None:
    """One title, then a paragraph of prose (not a list, table, code or heading)."""
    blocks = page.read_text().split("\n\n")
    assert re.fullmatch(r"# \S.*", blocks[0]), blocks[0]
    assert "\n" not in blocks[0]
    summary = blocks[1]
    assert summary.strip() and not re.match(r"[#|`<>\-*]|\d+\.", summary), summary
    titles = HEADING.findall(FENCE.sub("", page.read_text()))
    assert sum(1 for level, _ in titles if level == "#") == 1


def _linked_pages(page: Path) -> set[Path]:
    return {
        (page.parent / target.partition("#")[0]).resolve()
        for target in links(page)
        if target.partition("#")[0]
    }


@pytest.mark.parametrize("index", [user_docs.README, user_docs.DOCS / "index.md"])
def test_the_readme_and_the_index_link_every_page(index: Path) -> None:
    pages = {path.resolve() for path in user_docs.DOCS.iterdir()} - {index.resolve()}
    assert pages <= _linked_pages(index), sorted(
        path.name for path in pages - _linked_pages(index)
    )


def test_the_license_is_apache_2_0_as_pyproject_says() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text
    assert 'license = { text = "Apache-2.0" }' in (ROOT / "pyproject.toml").read_text()
