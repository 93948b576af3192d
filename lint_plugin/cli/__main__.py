"""``python -m lint_plugin.cli``: the command line, as the console script runs it."""

import sys

from lint_plugin.cli import main

sys.exit(main())
