"""``--output-format sarif``: SARIF 2.1.0 for GitHub code scanning and other viewers.

One run; ``tool.driver`` carries the catalogue (every KVI rule plus E999) with its
docs as markdown, so a viewer shows the same text as ``draft-kv-lint rule CODE``.
Rules have no web page, so there is no ``helpUri`` (it must be a real URI); the
command that prints the docs is in the rule's ``properties``. A result with a safe
fix carries it in ``fixes`` (every edit, the helper's import included), as ruff's
SARIF does; the log validates against the official 2.1.0 schema (tested).

Locations are repository-relative (``uriBaseId`` ``%SRCROOT%``, POSIX separators,
percent-encoded): code scanning matches them to the checkout, and the report stays
the same whoever produced it. The root is the enclosing git work tree of the current
folder (found by looking for ``.git``, no subprocess), else the current folder; a
file outside it gets an absolute ``file://`` URI instead.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from lint_plugin import __version__
from lint_plugin.findings import SYNTAX_ERROR_CODE, Finding
from lint_plugin.output.common import SYNTAX_ERROR_NAME, TOOL_NAME, is_fixable

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
VERSION = "2.1.0"
SRCROOT = "%SRCROOT%"


def repository_root(start: str = ".") -> str:
    """The enclosing git work tree (``.git`` folder or file), else ``start``."""
    folder = os.path.abspath(start)
    current = folder
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return folder
        current = parent


def _first_sentence(doc: str, fallback: str) -> str:
    # The first paragraph under "## What it does" is the rule's one-line summary.
    lines = doc.strip().splitlines()
    if "## What it does" in lines:
        start = lines.index("## What it does") + 1
        paragraph = []
        for line in lines[start:]:
            if not line.strip() or line.startswith("#"):
                if paragraph:
                    break
                continue
            paragraph.append(line.strip())
        text = " ".join(paragraph)
        if text:
            return text.split(". ")[0].rstrip(".") + "."
    return fallback


def rule_descriptors() -> list[dict[str, object]]:
    from lint_plugin.rules import RULES

    descriptors: list[dict[str, object]] = []
    for code in sorted(RULES):
        rule = RULES[code]
        doc = rule.render()
        descriptors.append(
            {
                "id": code,
                "name": rule.name,
                "shortDescription": {"text": _first_sentence(rule.doc, rule.name)},
                "fullDescription": {"text": doc, "markdown": doc},
                "help": {"text": doc, "markdown": doc},
                "defaultConfiguration": {"level": "error"},
                "properties": {
                    "fixSafety": rule.fix_safety or "none",
                    "docs": f"draft-kv-lint rule {code}",
                },
            }
        )
    syntax = "The file does not parse as Python, so it was not checked."
    descriptors.append(
        {
            "id": SYNTAX_ERROR_CODE,
            "name": SYNTAX_ERROR_NAME,
            "shortDescription": {"text": syntax},
            "fullDescription": {"text": syntax},
            "help": {"text": syntax},
            "defaultConfiguration": {"level": "error"},
            "properties": {"fixSafety": "none"},
        }
    )
    return descriptors


def artifact_location(path: str, root: str) -> dict[str, str]:
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, root)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return {"uri": Path(absolute).as_uri()}
    return {"uri": quote(relative.replace(os.sep, "/")), "uriBaseId": SRCROOT}


def _fix(finding: Finding, root: str) -> dict[str, object]:
    """A SARIF ``fix``: the safe fix's edits as replacements (import included)."""
    replacements = []
    for edit in finding.fix.edits:
        replacement: dict[str, object] = {
            "deletedRegion": {
                "startLine": edit.row,
                "startColumn": edit.column,
                "endLine": edit.end_row,
                "endColumn": edit.end_column,
            }
        }
        if edit.content:
            replacement["insertedContent"] = {"text": edit.content}
        replacements.append(replacement)
    return {
        "description": {"text": finding.fix.message},
        "artifactChanges": [
            {
                "artifactLocation": artifact_location(finding.path, root),
                "replacements": replacements,
            }
        ],
    }


def build_log(
    findings: Sequence[Finding], root: str | None = None
) -> dict[str, object]:
    root = os.path.abspath(root or repository_root())
    rules = rule_descriptors()
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    results = []
    for finding in sorted(findings, key=lambda f: f.sort_key):
        result: dict[str, object] = {
            "ruleId": finding.code,
            "level": "error",
            "message": {"text": finding.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": artifact_location(finding.path, root),
                        "region": {
                            "startLine": finding.row,
                            "startColumn": finding.column,
                            "endLine": finding.end_row,
                            "endColumn": finding.end_column,
                        },
                    }
                }
            ],
        }
        if finding.code in index:
            result["ruleIndex"] = index[finding.code]
        # A fix with no edit in this file (KVI007's edits another) has no
        # replacement to give: SARIF wants at least one.
        if is_fixable(finding) and finding.fix.edits:
            result["fixes"] = [_fix(finding, root)]
        results.append(result)
    return {
        "$schema": SCHEMA,
        "version": VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": TOOL_NAME,
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {
                    SRCROOT: {"uri": Path(root).as_uri().rstrip("/") + "/"}
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def render(findings: Sequence[Finding], root: str | None = None) -> str:
    return json.dumps(build_log(findings, root), indent=2) + "\n"
