"""Which codes are reported: select, extend-select, ignore and per-file-ignores.

Selectors are codes or prefixes (``KVI``, ``KVI00``, ``KVI003``) or ``ALL``, resolved
the way ruff resolves them, so its users meet no surprises:

* Codes are case-sensitive, as ruff's are (``--select f401`` is an error there) and
  as ``# noqa`` directives read them (``lint_plugin.noqa.directives``): one rule for
  both, so ``kvi001`` is an unknown selector here and suppresses nothing in a directive.

* Settings come in layers, defaults, then the configuration file, then the command
  line. A layer that sets ``select`` replaces everything before it (the command line
  beats the configuration); a layer with only ``extend-select``/``ignore`` adjusts the
  set it inherits.
* Within a layer the more specific selector wins (``select = ["KVI"]`` with
  ``ignore = ["KVI003"]`` drops KVI003; ``ignore = ["KVI"]`` with
  ``extend-select = ["KVI003"]`` keeps KVI003); at equal specificity ``ignore`` wins.
* ``per-file-ignores`` then removes codes for files matching a pattern (``**``,
  anchored and bare-name patterns; a ``!`` key means files *not* matching it).
* Each file has the selection of its own configuration (``PerFileSelection``); the
  command line's layer is applied on top of each.

Syntax errors (E999) are not a rule: they are always reported, because a file that
does not parse was not checked at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from lint_plugin.findings import SYNTAX_ERROR_CODE
from lint_plugin.records import record

ALL = "ALL"


class SelectorError(ValueError):
    """A selector matching no known code (a typo would silently disable the gate).
    ``origin`` names where it was written (``command line``, a configuration)."""

    def __init__(self, message: str, origin: str) -> None:
        super().__init__(message)
        self.origin = origin


@record(frozen=True)
class Layer:
    """One source of settings (configuration file or command line)."""

    select: Sequence[str] | None = None
    extend_select: Sequence[str] = ()
    ignore: Sequence[str] = ()
    origin: str = "command line"  # named in error messages


def known_codes() -> tuple[str, ...]:
    # The codes alone, not the rule catalogue, which imports the whole engine.
    from lint_plugin.codes import CODES

    return tuple(sorted(CODES))


def _specificity(selector: str) -> int:
    return -1 if selector == ALL else len(selector)


def expand(
    selector: str, codes: Iterable[str], origin: str = "command line"
) -> set[str]:
    """The codes a selector stands for; raises SelectorError when it matches none."""
    stripped = selector.strip()
    codes = tuple(codes)
    matched = _matches(stripped, codes)
    # "E999"/"E9" are accepted (ruff users write them) but change nothing: syntax
    # errors are always reported.
    syntax_error = bool(stripped) and SYNTAX_ERROR_CODE.startswith(stripped)
    if matched is None or not (matched or syntax_error):
        hint = "prefixes such as KVI00 also work"
        if (
            stripped
            and stripped != stripped.upper()
            and _matches(stripped.upper(), codes)
        ):
            hint = f"codes are upper case: did you mean {stripped.upper()!r}?"
        raise SelectorError(
            f"{origin}: unknown rule selector {selector!r} "
            f"(known codes: {', '.join(codes)}; {hint})",
            origin,
        )
    return matched


def _matches(selector: str, codes: tuple[str, ...]) -> set[str] | None:
    """The codes ``selector`` (exact case) stands for; None for an empty one."""
    if not selector:
        return None
    if selector == ALL:
        return set(codes)
    return {code for code in codes if code.startswith(selector)}


def resolve(
    layers: Sequence[Layer], codes: Sequence[str] | None = None
) -> frozenset[str]:
    """The codes enabled after applying ``layers`` in order over the default (all)."""
    codes = tuple(codes) if codes is not None else known_codes()
    # Default: every KVI code, KVI003 (the gate) and KVI006 (the guard) included.
    enabled = set(codes)
    for layer in layers:
        # Apply selectors from least to most specific so the most specific one has
        # the last word; at equal specificity the ignores come last and win.
        actions = [(s, True) for s in (*(layer.select or ()), *layer.extend_select)]
        actions += [(s, False) for s in layer.ignore]
        actions.sort(
            key=lambda action: (_specificity(action[0].strip()), not action[1])
        )
        updates: dict[str, bool] = {}
        for selector, on in actions:
            updates.update(dict.fromkeys(expand(selector, codes, layer.origin), on))
        if layer.select is not None:
            enabled = {code for code, on in updates.items() if on}
        else:
            for code, on in updates.items():
                (enabled.add if on else enabled.discard)(code)
    return frozenset(enabled)


@record(frozen=True)
class Selection:
    """The resolved selection plus per-file ignores; answers "report this finding?"."""

    enabled: frozenset[str]
    # (pattern, codes) pairs; gitignore-style patterns, "!" negates (globs.py).
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    root: str = "."

    def enabled_for(self, path: str) -> frozenset[str]:
        """Codes enabled for ``path`` (before its per-file ignores)."""
        return self.enabled

    def codes_for(self, path: str) -> frozenset[str]:
        """Codes reported in ``path`` after per-file ignores."""
        if not self.per_file_ignores:
            return self.enabled
        from lint_plugin.config.globs import key_matches

        ignored: set[str] = set()
        for pattern, codes in self.per_file_ignores:
            if key_matches(pattern, path, self.root):
                ignored |= codes
        return self.enabled - ignored

    def is_reported(self, code: str, path: str) -> bool:
        return code == SYNTAX_ERROR_CODE or code in self.codes_for(path)


def build_selection(
    layers: Sequence[Layer],
    per_file_ignores: Iterable[tuple[str, Sequence[str]]] = (),
    root: str = ".",
    *,
    codes: Sequence[str] | None = None,
    per_file_origin: str = "per-file-ignores",
) -> Selection:
    """Resolve everything once per run (and validate every selector up front)."""
    codes = tuple(codes) if codes is not None else known_codes()
    resolved_per_file = tuple(
        (
            pattern,
            frozenset().union(
                *(expand(selector, codes, per_file_origin) for selector in selectors)
            ),
        )
        for pattern, selectors in per_file_ignores
    )
    return Selection(resolve(layers, codes), resolved_per_file, root)


class PerFileSelection:
    """The selection of each file's own configuration, built once per configuration.
    Answers like ``Selection`` (``codes_for``, ``is_reported``)."""

    def __init__(self, build: Callable[[str], Selection], key: Callable[[str], object]):
        self._build = build
        self._key = key
        self._built: dict[object, Selection] = {}

    def for_path(self, path: str) -> Selection:
        """Raises SelectorError (or the configuration's error) on first use."""
        key = self._key(path)
        if key not in self._built:
            self._built[key] = self._build(path)
        return self._built[key]

    def enabled_for(self, path: str) -> frozenset[str]:
        return self.for_path(path).enabled

    def codes_for(self, path: str) -> frozenset[str]:
        return self.for_path(path).codes_for(path)

    def is_reported(self, code: str, path: str) -> bool:
        return code == SYNTAX_ERROR_CODE or code in self.codes_for(path)
