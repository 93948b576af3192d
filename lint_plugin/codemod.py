"""The rewrite as a libcst codemod, for ``python -P -m libcst.tool codemod``.

    python -P -m libcst.tool codemod -x --no-format \\
        lint_plugin.codemod.DraftKvIndicesCommand path/to/backends

``-P``: a plain ``python -m`` would import packages from the working folder.
``--no-format`` because libcst.tool otherwise runs black over the whole file (and
fails per file when black is missing); the rewritten statements are already
wrapped the way black would, and the transform's whole output has passed the gate
of :mod:`lint_plugin.fix.gate.verify`. ``draft-kv-lint fix`` is the main entry: it adds
``--diff``, ``--check`` and atomic writes around the same transform.
"""

from __future__ import annotations

import argparse

import libcst as cst
from libcst.codemod import CodemodContext, SkipFile, VisitorBasedCodemodCommand

from lint_plugin.engine.settings import DEFAULT_HELPERS_MODULE
from lint_plugin.engine.source import normalised
from lint_plugin.fix.collection import released
from lint_plugin.fix.rewrite import (
    Options,
    RewriteRefused,
    rewrite_text,
)


class DraftKvIndicesCommand(VisitorBasedCodemodCommand):
    DESCRIPTION: str = (
        "Rewrite inline EAGLE draft kv_indices sizing formulas into "
        "draft_kv_indices_used_len / draft_kv_indices_buffer_width calls."
    )

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument(
            "--unsafe-fixes",
            action="store_true",
            help="also size unsized draft buffers (KVI003; changes allocations)",
        )
        arg_parser.add_argument(
            "--helpers-module",
            default=DEFAULT_HELPERS_MODULE,
            help="module the helpers are imported from",
        )

    def __init__(
        self,
        context: CodemodContext,
        unsafe_fixes: bool = False,
        helpers_module: str = DEFAULT_HELPERS_MODULE,
    ) -> None:
        super().__init__(context)
        self.options = Options(unsafe_fixes=unsafe_fixes, helpers_module=helpers_module)

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        path = self.context.filename or "<module>"
        original = tree.code
        text = normalised(original)
        try:
            result = rewrite_text(text, path, self.options)
        except (RewriteRefused, SyntaxError) as exc:
            self.warn(str(exc))
            raise SkipFile(str(exc)) from None
        finally:
            released()  # the file's trees
        for finding in result.applied:
            if finding.fix.applicability == "unsafe":
                self.warn(f"{finding.row}:{finding.column}: {finding.fix.message}")
        from lint_plugin.fix.helper_homes import refusal, unmet_needs

        needs = unmet_needs(path, text, result, self.options.settings)
        why = refusal(needs)
        if why is not None:
            # One file at a time, libcst.tool cannot add a definition to
            # another module: the rewrite would leave an import that fails.
            self.warn(why)
            raise SkipFile(why)
        for need in needs:
            self.warn(
                f"{need.home.shown} does not define {need.name}: "
                "`draft-kv-lint fix` adds it there"
            )
        if not result.changed:
            return tree
        from lint_plugin.fix.file_text import restore_line_endings

        return cst.parse_module(restore_line_endings(original, text, result.text))
