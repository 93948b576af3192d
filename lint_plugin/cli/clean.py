"""``draft-kv-lint clean``: remove the cache folder's build folders."""

from __future__ import annotations

import argparse
import sys

from lint_plugin.cli.common import PROG, print_error
from lint_plugin.errors import RunError


def add_clean_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "clean",
        help="remove the cache check keeps",
        description=(
            "Remove check's cache: .draft_kv_lint_cache in the project root (the "
            "folder of the configuration that governs the current folder, else "
            "the current folder), or --cache-dir / DRAFT_KV_LINT_CACHE_DIR. Answers "
            "for every version of every file checked accumulate there until then."
        ),
    )
    parser.add_argument("--cache-dir", metavar="DIR", help="the cache folder to remove")
    parser.set_defaults(handler=run_clean)


def run_clean(args: argparse.Namespace) -> int:
    from lint_plugin.check.cache import cache_folder, clean
    from lint_plugin.config.table import ConfigError, ConfigResolver

    try:
        root = ConfigResolver().for_path(".").root
    except ConfigError as error:
        raise RunError(str(error)) from None
    folder = cache_folder(args.cache_dir, root)
    try:
        said = clean(folder)
    except OSError as error:
        print_error(f"{folder}: cannot remove: {error.strerror or error}")
        return 1
    print(f"{PROG} clean: {said}", file=sys.stderr)
    return 0
