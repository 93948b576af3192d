"""What every report format says the same way: the tool's name, a rule's name
and URL, what counts as fixable."""

from __future__ import annotations

from lint_plugin.findings import SYNTAX_ERROR_CODE, Finding

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
    """ruff's ``url`` key: a web page of the rule's docs. This project has no
    public hosting known to it, so there is none to give (``null``, as ruff gives
    for a code without a page) rather than something that is not a URL; the docs
    are ``draft-kv-lint rule CODE`` and the README's rule section."""
    return None


def severity(code: str) -> str:
    return "error"
