"""One file to findings: the regions, the walk, each rule's decision.

The pipeline above the engine and the rules, as ruff's ``linter``: the engine
finds the regions of a file that can match (:mod:`lint_plugin.engine.scan`),
parses them and walks each for facts (:mod:`lint_plugin.engine.analysis`); then
each rule decides through the rule API (``rules/``, ``decide(checker)``:
:mod:`lint_plugin.engine.checker`). Every front end comes here: ``check``'s
pipeline over files, ``fix``'s rounds, the flake8 plugin (with its own tree),
``noqa``'s callers.

One verb for this step: ``lint_source`` (a file's bytes or text), ``lint_text``
(its decoded text, which the byte test let through: what ``check``'s pipeline
has by then) and ``lint_tree`` (a parsed tree) give the engine's findings, before
noqa and selection; ``check.pipeline.check_file`` is what ``check`` reports for
one file (this, then selection and noqa).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Sequence

from lint_plugin.engine import lazy_methods, scan, syntax
from lint_plugin.engine.allocations import file_allocator_aliases
from lint_plugin.engine.analysis import Walker, module_of
from lint_plugin.engine.checker import Checker
from lint_plugin.engine.facts import helper_aliases
from lint_plugin.engine.facts import helper_names as _helper_names
from lint_plugin.engine.module_scope import ModuleScope, TextModuleScope
from lint_plugin.engine.settings import DEFAULT_SETTINGS, Settings
from lint_plugin.engine.source import Source, normalised
from lint_plugin.findings import Finding
from lint_plugin.prefilter import could_match
from lint_plugin.records import record
from lint_plugin.rules import DECISIONS
from lint_plugin.source_files import decode


def lint_source(
    data: bytes | str,
    path: str,
    settings: Settings = DEFAULT_SETTINGS,
    *,
    syntax_checked: bool = False,
    notes: list[Finding] | None = None,
) -> list[Finding]:
    """All findings in one file's bytes (or text already decoded, as fix has
    it); noqa and selection are the caller's. Raises SourceError for bytes
    Python would not read. A caller that has decoded the file and asked the
    byte test already calls ``lint_text``.
    """
    text = data if isinstance(data, str) else decode(data)
    if not could_match(data):
        return []
    return lint_text(text, path, settings, syntax_checked=syntax_checked, notes=notes)


def lint_text(
    text: str,
    path: str,
    settings: Settings = DEFAULT_SETTINGS,
    *,
    syntax_checked: bool | Callable[[], bool] = False,
    notes: list[Finding] | None = None,
) -> list[Finding]:
    """All findings in a file's decoded ``text``, which the byte test let
    through (``prefilter.could_match``).

    ``syntax_checked``: the whole text's syntax is checked elsewhere (fix parses
    it with ``ast`` itself, before it rewrites and in its gate; check skips it
    where CPython's bytecode cache proves the file compiles,
    :mod:`lint_plugin.check.compiled`, asked only of a file with findings: a
    callable), so the whole-file syntax check that findings otherwise need is
    skipped; the regions are still parsed.
    ``notes`` receives what a rule could not judge (see ``lint_tree``).
    """
    # Python ends lines at CRLF and at a lone CR: so do the rows here.
    text = normalised(text)
    if sys.getrecursionlimit() < syntax.RECURSION_LIMIT:
        sys.setrecursionlimit(syntax.RECURSION_LIMIT)
    lines = text.split("\n")
    aliases = helper_aliases(text)
    layout = scan.Layout(text, lines, scan.StringSpans(text), aliases)
    regions = scan.regions(text, lines, aliases, layout)
    if regions is not None and _most_of(regions, len(lines)):
        # The regions are most of the file (a draft backend's module): one
        # parse of the whole is about their cost, and is the syntax check a
        # file with findings needs besides (``syntax.error_of``, half a parse).
        regions = None
    if regions is not None:
        findings: list[Finding] = []
        # The names the helpers go by (trusted import aliases) hold for the
        # regions after the import, as they do in a walk of the whole file;
        # a name something else binds in any region is trusted in none: every
        # region is walked before any is decided.
        helper_names = _helper_names()
        rebound: set[str] = set()
        # What a width can flow from outside the regions (module constants and
        # functions, imports, base classes), parsed only if a value asks.
        module = TextModuleScope(text, lines, layout.top_level_blocks)
        whole = _WholeFile(
            lines, path, settings, (helper_names, rebound), aliases, module, layout
        )
        try:
            walked = [whole.walk_region(*region) for region in regions]
            for one in walked:
                findings += decide_tree(one, notes)
        except SyntaxError:
            findings = None  # misread layout or a real error: the whole file decides
        if findings is not None and not findings:
            return findings
        if findings and (
            syntax_checked() if callable(syntax_checked) else syntax_checked
        ):
            return findings
        if findings:
            # Something to report: the whole file must parse first, as flake8
            # (E999) and fix (which rewrites the file) require. Parsing only files
            # with findings keeps the common case a few regions.
            error = syntax.error_of(text, path)
            return findings if error is None else [error]
    try:
        tree = syntax.parse(text, path)
    except SyntaxError as exc:
        return [syntax.error_finding(exc, path, text)]
    if notes is not None:
        del notes[:]  # the regions' notes, if any: the whole walk gives its own
    findings = lint_tree(
        tree,
        Source(text),
        path,
        scan.interesting_rows(text, aliases),
        settings,
        notes=notes,
    )
    if findings and not (
        syntax_checked() if callable(syntax_checked) else syntax_checked
    ):
        # It parses; what CPython's compiler refuses is an E999 still.
        error = syntax.error_of(text, path)
        return findings if error is None else [error]
    return findings


# Regions covering this share of a file's lines are parsed as the whole file.
WHOLE_SHARE = 0.8


def _most_of(regions: list[tuple[int, int, bool]], rows: int) -> bool:
    return sum(end - start for start, end, _ in regions) >= WHOLE_SHARE * rows


@record(frozen=True)
class _WholeFile:
    """What check found of a file before its regions are walked, handed to each
    region: its lines, the names the helpers go by (and those something else
    binds), the helpers' aliases, its module-level statements and its layout."""

    lines: list[str]
    path: str
    settings: Settings
    names: tuple[dict[str, str], set[str]]
    aliases: tuple[str, ...]
    module: TextModuleScope
    layout: scan.Layout

    def walk_region(self, start: int, end: int, indent: bool) -> Walked:
        """The walk of the region ``[start, end)`` (0-based rows; ``indent``:
        its first line is indented)."""
        snippet = "\n".join(self.lines[start:end]) + "\n"
        if indent:
            # An indented block parses as the body of an `if`, columns untouched.
            snippet = "if 1:\n" + snippet
            start -= 1
        # The file's rows of the region (without the `if` it is wrapped in).
        first = start + 1 if indent else start
        tree = lazy_methods.parse_region(
            snippet,
            self.path,
            self.layout,
            first,
            end,
            indent,
            self.aliases,
            file_allocator_aliases(self.module),
        )
        return walk_tree(
            tree,
            Source(snippet, start),
            self.path,
            scan.interesting_rows(snippet, self.aliases),
            self.settings,
            self.names,
            self.module,
            self.aliases,
        )


def lint_tree(
    tree: ast.AST,
    source: Source,
    path: str,
    rows: Sequence[int] | None = None,
    settings: Settings = DEFAULT_SETTINGS,
    helper_names: dict[str, str] | None = None,
    module: ModuleScope | None = None,
    notes: list[Finding] | None = None,
) -> list[Finding]:
    """All KVI findings in ``tree`` (not filtered by noqa or selection).

    ``rows`` (sorted, in the tree's numbering) are the rows that mention a word a
    finding needs; statements touching none of them are skipped, except in a
    function with aliases (``k = self.topk``), whose formulas may name none, and
    in a class that may be a draft backend. ``helper_names``: the names the
    helpers go by so far in the file. ``module``: the file's module-level
    statements, for values that flow from them (``tree`` itself when it is the
    whole module). ``notes`` receives what the rules could not judge (KVI003's
    opaque widths), as findings of their code. Several trees of one file
    (check's regions, the flake8 plugin's statements) are walked each with
    ``walk_tree`` first, then decided each with ``decide_tree``.
    """
    names = None if helper_names is None else (helper_names, set())
    return decide_tree(
        walk_tree(tree, source, path, rows, settings, names, module), notes
    )


Walked = tuple[Walker, Checker]


def walk_tree(
    tree: ast.AST,
    source: Source,
    path: str,
    rows: Sequence[int] | None = None,
    settings: Settings = DEFAULT_SETTINGS,
    names: tuple[dict[str, str], set[str]] | None = None,
    module: ModuleScope | None = None,
    aliases: tuple[str, ...] | None = None,
) -> Walked:
    """The facts of ``tree`` (see ``lint_tree``), nothing decided yet.
    ``names``: the names the helpers go by so far in the file and the names
    something else binds, shared by the trees of one file, each walked in
    order before any is decided (a name rebound anywhere is trusted
    nowhere). ``aliases``: the names the file may import a helper under
    (``helper_aliases`` of its whole text; None: of ``source``'s)."""
    module = module_of(tree, source, module)
    walker = Walker(source, path, rows, settings, module, aliases)
    if names is not None:  # shared by the trees of one file, in order
        walker.facts.helper_names, walker.facts.rebound = names
    walker.walk(tree)
    return walker, Checker(tree, source, path, settings, module, walker.facts)


def decide_tree(walked: Walked, notes: list[Finding] | None = None) -> list[Finding]:
    """Every rule's decision on a walked tree: its findings (``notes``
    receives what the rules could not judge)."""
    walker, checker = walked
    for _code, decide in DECISIONS:
        decide(checker)
    if notes is not None:
        notes += checker.notes
    walker.release()
    checker.release()
    return checker.findings
