"""Engine settings every front end passes down: where the helpers are trusted from."""

from __future__ import annotations

import os

from lint_plugin.records import record

DEFAULT_HELPERS_MODULE = "sglang.srt.speculative.spec_utils"
DEFAULT_GUARD_MODULE = "sglang.srt.layers.attention.utils"
# The bundled reference runtime defines the helpers too, and is trusted like upstream.
RUNTIME_MODULE = "lint_plugin.runtime"


@record(frozen=True)
class Settings:
    helpers_module: str = DEFAULT_HELPERS_MODULE
    guard_module: str = DEFAULT_GUARD_MODULE
    # How a fix spells a helper's call where its own name is taken: helper ->
    # callee text (an alias, ``module.helper``). Only ``fix`` sets it.
    spellings: tuple[tuple[str, str], ...] = ()

    def spell(self, helper: str) -> str:
        return dict(self.spellings).get(helper, helper)

    @property
    def trusted_modules(self) -> tuple[str, ...]:
        return (self.helpers_module, RUNTIME_MODULE)

    def trusts(self, module: str | None) -> bool:
        """Is ``module`` (dotted, possibly resolved from a relative import) one the
        helpers may be imported from?"""
        if not module:
            return False
        return any(
            module == trusted or module.endswith("." + trusted)
            for trusted in self.trusted_modules
        )

    def is_helpers_file(self, path: str) -> bool:
        """Is ``path`` the source of a trusted module (where the helpers live)?"""
        normalized = path.replace(os.sep, "/")
        if normalized.endswith(".pyi"):
            normalized = normalized[:-1]
        for module in self.trusted_modules:
            tail = module.replace(".", "/")
            for ending in (f"{tail}.py", f"{tail}/__init__.py"):
                if normalized == ending or normalized.endswith("/" + ending):
                    return True
        return False


DEFAULT_SETTINGS = Settings()


def resolve_module(module: str | None, level: int, path: str) -> str | None:
    """The dotted name ``from <level dots><module> import`` refers to in ``path``
    (as far as the path's folders tell; absolute imports are returned as they are)."""
    if level == 0:
        return module
    folders = os.path.dirname(os.path.abspath(path)).replace(os.sep, "/").split("/")
    folders = [f for f in folders if f]
    base = folders[: len(folders) - (level - 1)] if level > 1 else folders
    return ".".join([*base, *([module] if module else [])])
