"""``python -m lint_plugin.cli``: the command line, as the console script runs it."""

from lint_plugin.cli import run

run()
