"""Report writers for ``check``: one module per format, imported only when chosen.

``text``/``concise`` (flake8/ruff concise lines), ``full`` (the lines with the code
they point at and the fix), ``json`` and ``json-lines`` (ruff's keys), ``github``
(workflow annotations) and ``sarif`` (2.1.0). Every writer takes the already
filtered, sorted findings and returns what goes to stdout; file errors always go to
stderr, one ``path: error: reason`` line each, whatever the format (the CLI prints
them).

The formats are the configuration's (``config.table.OUTPUT_FORMATS``). This package
must stay cheap to import: nothing here imports ``json`` or the rule catalogue at
module level.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lint_plugin.findings import Finding


def render(
    output_format: str,
    findings: Sequence[Finding],
    error_count: int = 0,
    *,
    sources: Mapping[str, bytes] | None = None,
    show_fixes: bool = False,
    color: bool = False,
    helpers_module: str | None = None,
) -> str:
    """Everything ``check`` prints on stdout for ``findings`` in ``output_format``.

    ``sources`` (path to bytes) lets ``full`` show the code and lets the machine
    formats complete each fix with its import edit, from ``helpers_module``
    (None: the default, sglang's)."""
    sources = sources or {}
    if output_format in ("json", "json-lines", "sarif") and sources:
        from lint_plugin.output.complete_fixes import HELPERS_MODULE, complete

        findings = complete(findings, sources, helpers_module or HELPERS_MODULE)
    if output_format in ("text", "concise", "full"):
        from lint_plugin.output import text

        return text.render(
            findings,
            error_count,
            sources=sources if output_format == "full" else None,
            show_fixes=show_fixes or output_format == "full",
            color=color,
        )
    if output_format == "json":
        from lint_plugin.output import json_format

        return json_format.render(findings, sources)
    if output_format == "json-lines":
        from lint_plugin.output import json_format

        return json_format.render_lines(findings, sources)
    if output_format == "github":
        from lint_plugin.output import github

        return github.render(findings)
    if output_format == "sarif":
        from lint_plugin.output import sarif

        return sarif.render(findings)
    raise ValueError(f"unknown output format {output_format!r}")
