"""``draft-kv-lint rule CODE``: a rule's docs."""

from __future__ import annotations

import argparse
import sys

from lint_plugin.errors import UsageError


def add_rule_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "rule", help="print a rule's documentation", description="Print rule docs."
    )
    parser.add_argument("code", nargs="?", metavar="CODE", help="e.g. KVI001")
    parser.add_argument("--all", action="store_true", help="print every rule")
    parser.set_defaults(handler=run_rule)


def run_rule(args: argparse.Namespace) -> int:
    from lint_plugin.rules import RULES

    if args.all == (args.code is not None):
        raise UsageError("give one rule CODE or --all")
    if args.all:
        sys.stdout.write("\n".join(RULES[code].render() for code in sorted(RULES)))
        return 0
    code = args.code.strip()
    if code not in RULES:
        # Codes are case-sensitive everywhere (selection, noqa), as ruff's are.
        hint = (
            f"; codes are upper case: did you mean {code.upper()!r}?"
            if code.upper() in RULES
            else ""
        )
        raise UsageError(
            f"unknown rule code {args.code!r} (known: {', '.join(sorted(RULES))}){hint}"
        )
    sys.stdout.write(RULES[code].render())
    return 0
