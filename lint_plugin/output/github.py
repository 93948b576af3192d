"""``--output-format github``: GitHub Actions workflow commands, one per finding.

::

    ::error title=draft-kv-lint (CODE),file=PATH,line=R,col=C,endLine=R2,\
endColumn=C2::CODE message

(one line; wrapped here).

GitHub's escaping rules: in the message (data) ``%``, CR and LF become ``%25``,
``%0D``, ``%0A``; in property values ``:`` and ``,`` are escaped too (``%3A``,
``%2C``), since they delimit the properties. ``%`` goes first so the escapes
themselves are not escaped again. GitHub resolves ``file`` against the repository
root, so paths are written relative to the enclosing git work tree (whatever the
folder the tool ran from: ``python/`` in SGLang), with ``/``; a file outside it is
written absolute, as ruff writes every path.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from lint_plugin.findings import Finding
from lint_plugin.output.common import TOOL_NAME


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation_path(path: str, root: str | None = None) -> str:
    from lint_plugin.output.sarif import repository_root

    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, root or repository_root())
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return absolute.replace(os.sep, "/")
    return relative.replace(os.sep, "/")


def format_finding(finding: Finding, root: str | None = None) -> str:
    properties = {
        "title": f"{TOOL_NAME} ({finding.code})",
        "file": annotation_path(finding.path, root),
        "line": str(finding.row),
        "col": str(finding.column),
        "endLine": str(finding.end_row),
        "endColumn": str(finding.end_column),
    }
    joined = ",".join(
        f"{key}={escape_property(value)}" for key, value in properties.items()
    )
    return f"::error {joined}::{escape_data(f'{finding.code} {finding.message}')}"


def render(findings: Sequence[Finding]) -> str:
    from lint_plugin.output.sarif import repository_root

    root = repository_root()
    return "".join(format_finding(f, root) + "\n" for f in findings)
