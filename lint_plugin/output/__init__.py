"""Report writers for ``check``: one module per format, imported only when chosen.

``text`` (flake8/ruff concise lines), ``json`` (ruff's keys), ``github`` (workflow
annotations) and ``sarif`` (2.1.0). Every writer takes the already filtered, sorted
findings and returns what goes to stdout; file errors always go to stderr, one
``path: error: reason`` line each, whatever the format (the CLI prints them).

This package must stay cheap to import: ``config`` imports ``OUTPUT_FORMATS`` on every
run, so nothing here imports ``json`` or the rule catalogue at module level.
"""

from __future__ import annotations

from collections.abc import Sequence

from lint_plugin.findings import SYNTAX_ERROR_CODE, Finding

OUTPUT_FORMATS = ("text", "json", "github", "sarif")
SYNTAX_ERROR_NAME = "syntax-error"
TOOL_NAME = "draft-kv-lint"


def is_fixable(finding: Finding) -> bool:
    """Fixed by a plain ``draft-kv-lint fix`` (ruff marks exactly these with [*])."""
    return finding.fix is not None and finding.fix.applicability == "safe"


def has_unsafe_fix(finding: Finding) -> bool:
    return finding.fix is not None and finding.fix.applicability != "safe"


def rule_name(code: str) -> str:
    """The kebab-case name shown in statistics, JSON and SARIF."""
    if code == SYNTAX_ERROR_CODE:
        return SYNTAX_ERROR_NAME
    from lint_plugin.rules import RULES

    rule = RULES.get(code)
    return rule.name if rule is not None else code


def rule_url(code: str) -> str | None:
    """What ruff's ``url`` key holds; we have no web docs, so the command that
    prints them (``Rule.url``). None for syntax errors, as in ruff."""
    if code == SYNTAX_ERROR_CODE:
        return None
    from lint_plugin.rules import RULES

    rule = RULES.get(code)
    return rule.url if rule is not None else None


def render(
    output_format: str, findings: Sequence[Finding], error_count: int = 0
) -> str:
    """Everything ``check`` prints on stdout for ``findings`` in ``output_format``."""
    if output_format == "text":
        from lint_plugin.output import text

        return text.render(findings, error_count)
    if output_format == "json":
        from lint_plugin.output import json_format

        return json_format.render(findings)
    if output_format == "github":
        from lint_plugin.output import github

        return github.render(findings)
    if output_format == "sarif":
        from lint_plugin.output import sarif

        return sarif.render(findings)
    raise ValueError(f"unknown output format {output_format!r}")
