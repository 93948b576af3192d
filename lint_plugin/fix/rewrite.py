"""One file's rewrite: engine edits, oracle, imports, wrapping. Writes nothing.

Shared by ``draft-kv-lint fix`` and the libcst codemod command, so both make the
same change.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from lint_plugin.engine.formulas import BUFFER_WIDTH, USED_LEN
from lint_plugin.engine.settings import (
    DEFAULT_GUARD_MODULE,
    Settings,
)
from lint_plugin.engine.source import one_line
from lint_plugin.engine.vocabulary import GUARD
from lint_plugin.findings import SYNTAX_ERROR_CODE, Edit, Finding
from lint_plugin.fix.edits import (
    apply_edits_with_rows,
    header_statements,
    iter_statements,
    line_starts,
    offsets,
    row_mapper,
    splice,
    statement_rows,
)
from lint_plugin.fix.gate.oracle import equivalent
from lint_plugin.fix.gate.verify import NotEqual, verify
from lint_plugin.fix.imports.by_text import add_import
from lint_plugin.fix.names import ModuleNames
from lint_plugin.fix.options import Options
from lint_plugin.fix.parsing import parse_module
from lint_plugin.fix.spelling import Site, Spelling, Unspellable, plan
from lint_plugin.linter import lint_source
from lint_plugin.noqa.directives import apply_noqa

_HELPERS = (USED_LEN, BUFFER_WIDTH)


class RewriteRefused(Exception):
    """A rewrite could not be shown equal to the original: nothing is written."""


@dataclass
class Rewrite:
    text: str
    applied: list[Finding] = field(default_factory=list)
    unsafe_edits: tuple[Edit, ...] = ()  # as computed on the original text
    # The original text and its tree, parsed once: the gate compares against it.
    parsed_original: tuple[str, ast.Module] | None = field(
        default=None, repr=False, compare=False
    )
    # What the original's names mean, as the rewrite found (the gate asks the
    # same questions of the same text: no second symtable of it).
    original_names: ModuleNames | None = field(default=None, repr=False, compare=False)
    # The helpers (and the guard) the rewritten text calls where the original did
    # not: ``fix`` makes sure the module they are imported from defines them.
    imported: frozenset[str] = frozenset()
    guard_module: str | None = None  # where the inserted guard is imported from
    # ``(module, name)`` a contract's owner call in an unsafe edit imports
    # (lint_plugin.contracts): left out of the gate's comparison like the guard.
    owner_imports: frozenset[tuple[str, str]] = frozenset()
    # Definitions added to the file itself (the helpers module being rewritten).
    defined: tuple[str, ...] = ()
    # Selected findings whose fix edits another file (KVI007): ``fix`` plans them.
    elsewhere: tuple[Finding, ...] = ()
    # The file is the helpers module itself: its definitions are the helpers.
    helpers_file: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.applied)


def rewrite_text(
    text: str, path: str, options: Options, *, verify_result: bool = True
) -> Rewrite:
    """The rewritten text of one file and the findings whose fixes it applied.

    Raises SyntaxError when the file does not parse and RewriteRefused when a
    rewrite is not provably equal to the original (``verify_result=False`` leaves
    that last gate to a caller who checks the bytes it writes, as ``fix`` does).

    Rounds: each applies every applicable edit that overlaps no other, then the
    result is checked again, so a formula nested in another site's argument and
    a sum holding the formula twice are both rewritten by one run (which is what
    makes a second run a no-op). Unsafe fixes are applied in the first round only,
    where their stated replacements are known against the original.
    """
    tree = parse_module(text)
    avoid: frozenset[str] = frozenset()
    for attempt in range(_RESPELLINGS):
        try:
            done = _rounds(text, tree, path, options, avoid)
            break
        except _Respell as respell:
            if attempt == _RESPELLINGS - 1:
                raise RewriteRefused(respell.reason) from None
            avoid |= {respell.callee}
    current, applied, unsafe_edits = done.text, done.applied, done.unsafe_edits
    original_names = done.original_names
    rows, plans, used, elsewhere = done.rows, done.plans, done.used, done.elsewhere
    if not applied:
        rewrite = _without_unused_directives(
            Rewrite(text, elsewhere=tuple(elsewhere)), path, options
        )
        rewrite.parsed_original = (text, tree)
        return rewrite
    helpers_file = options.settings.is_helpers_file(path)
    plain = {h for h in used if plans[h].plain}
    defined: list[str] = []
    if helpers_file:
        # The helpers' own module: importing them from itself would fail while
        # it is being imported, so it gets the definitions it lacks instead
        # (where its plan placed them: the gate proves they run before a call).
        from lint_plugin.fix.helper_homes import add_definitions, missing_definitions

        defined = missing_definitions(current, path, plain) if plain else []
        new_text = add_definitions(current, defined, path) if defined else current
        imported: set[str] = set()
    else:
        aliased = {(h, plans[h].alias) for h in used if plans[h].alias}
        new_text = _add_imports(current, plain, options.helpers_module, aliased)
        imported = set(used)
    guard_module = None
    if any(_GUARD_CALL.search(edit.content) for edit in unsafe_edits):
        from lint_plugin.fix.guard_home import guard_module_for

        guard_module = options.guard_module or guard_module_for(tree, path)
        new_text = _add_imports(new_text, {GUARD}, guard_module, skip_bound=True)
        imported.add(GUARD)
    owner_imports = _owner_imports(unsafe_edits)
    for module, name in sorted(owner_imports):
        new_text = _add_imports(new_text, {name}, module, skip_bound=True)
        imported.add(name)
    rows = _shift_for_import(current, new_text, rows)
    directives_moved = False
    if options.wrap:
        from lint_plugin.fix.formatting import format_ranges

        if new_text != current:
            # The import lines as libcst wrote them are kept unless one is too
            # long (a formatter would also drop a form feed or blank lines there).
            import_rows, rows = rows[:1], rows[1:]
            rows += _too_long(new_text, import_rows)
        wanted = _statement_ranges(new_text, _needing_format(new_text, rows))
        directives_moved = _holds_directive(new_text, wanted)
        new_text = format_ranges(new_text, wanted, Path(path))
    rewrite = Rewrite(
        new_text,
        applied,
        tuple(dict.fromkeys(unsafe_edits)),
        imported=frozenset(imported),
        defined=tuple(defined),
        guard_module=guard_module,
        owner_imports=owner_imports,
        elsewhere=tuple(elsewhere),
        helpers_file=helpers_file,
    )
    rewrite = _without_unused_directives(rewrite, path, options)
    if defined or directives_moved:
        # The rounds' findings are those of the text before its import and
        # formatting: a directive in a formatted statement may have moved off
        # its line, and added definitions are code. Held to the text as
        # written, then (KVI007, an import whose module lacks the name, is
        # fix's to plan across files).
        every = _applicable_findings(rewrite.text, path, options, False, done.settings)
        written = [f for f in every[0] if f.code != "KVI007"]
        _no_finding_gained(done.before, done.fixed_first, written)
    rewrite.parsed_original = (text, tree)
    if original_names is not None and original_names.tree is tree:
        rewrite.original_names = original_names
    if verify_result:
        check_written(text, rewrite, options)
    return rewrite


@dataclass
class _Done:
    text: str
    applied: list[Finding]
    unsafe_edits: list[Edit]
    rows: list[tuple[int, int]]
    plans: dict[str, Spelling]
    used: set[str]
    original_names: ModuleNames | None = None
    # Selected findings whose fix edits another file (KVI007): ``fix`` plans them.
    elsewhere: list[Finding] = field(default_factory=list)
    # The original's findings, the codes the first round fixed, and the settings
    # the rounds ended with: what the written text is held to.
    before: list[Finding] = field(default_factory=list)
    fixed_first: Counter[str] = field(default_factory=Counter)
    settings: Settings | None = None


class _Respell(Exception):
    """A spelling planned on earlier sites does not resolve at a later one."""

    def __init__(self, callee: str, reason: str) -> None:
        super().__init__(reason)
        self.callee = callee
        self.reason = reason


# Spellings tried for a helper before the file is refused.
_RESPELLINGS = 4


def _rounds(
    text: str, tree: ast.Module, path: str, options: Options, avoid: frozenset[str]
) -> _Done:
    """The engine's edits applied round by round (see :func:`rewrite_text`)."""
    current, current_tree = text, tree
    applied: list[Finding] = []
    unsafe_edits: list[Edit] = []
    plans: dict[str, Spelling] = {}
    used: set[str] = set()
    rows: list[tuple[int, int]] = []
    anchor = statement_rows(tree)
    settings = options.settings
    before: list[Finding] = []
    fixed_first: Counter[str] = Counter()
    original_names = None
    elsewhere: list[Finding] = []
    helpers_file = settings.is_helpers_file(path)
    for round_number in range(MAX_ROUNDS):
        first = round_number == 0
        every, findings = _applicable_findings(current, path, options, first, settings)
        before = every if first else before
        # A fix with no edit here edits another file (KVI007): ``fix`` plans
        # those across files; the rounds apply this file's own.
        if first:
            elsewhere = [f for f in findings if not f.fix.edits]
        chosen = _non_overlapping(current, findings)
        if not chosen:
            break
        if current_tree is None:  # parsed only for a round that has edits
            current_tree = parse_module(current, "a rewritten round")
            anchor = statement_rows(current_tree)
        names = ModuleNames(
            current_tree, current, options.helpers_module, own=helpers_file
        )
        original_names = original_names or names
        sites = _helper_sites(current, chosen, settings)
        if set(sites) - set(plans):
            for helper in sorted(set(sites) - set(plans)):
                try:
                    plans[helper] = plan(names, helper, sites[helper], avoid)
                except Unspellable as exc:
                    where = _first_site(chosen, helper, settings)
                    raise RewriteRefused(
                        f"{where}: cannot call {helper} there: {exc}"
                    ) from None
            spelled = tuple(
                sorted((h, p.callee) for h, p in plans.items() if p.callee != h)
            )
            if spelled != settings.spellings:
                settings = Settings(
                    settings.helpers_module, settings.guard_module, spelled
                )
                every, findings = _applicable_findings(
                    current, path, options, first, settings
                )
                before = every if first else before
                chosen = _non_overlapping(current, findings)
                sites = _helper_sites(current, chosen, settings)
        for helper, found in sites.items():
            reason = plans[helper].holds(names, found)
            if reason is not None:
                where = _first_site(chosen, helper, settings)
                raise _Respell(
                    plans[helper].callee,
                    f"{where}: cannot call {helper} there: {reason}",
                )
        used |= set(sites)
        starts = line_starts(current)
        callees = {p.callee: helper for helper, p in plans.items()}
        for finding in chosen:
            if finding.fix.applicability == "safe":
                for edit in finding.fix.edits:
                    start, end = offsets(edit, starts)
                    reason = equivalent(current[start:end], edit.content, callees)
                    if reason is not None:
                        raise RewriteRefused(
                            f"{finding.row}:{finding.column}: {finding.code} rewrite "
                            f"refused, not equal to the original: {reason}"
                        )
            else:
                unsafe_edits.extend(finding.fix.edits)
        # Two allocations sharing one width local share its fix: apply it once.
        edits = list(dict.fromkeys(e for finding in chosen for e in finding.fix.edits))
        if round_number:
            mapped = row_mapper(current, edits)
            rows = [(mapped(a), mapped(b)) for a, b in rows]
        current, new_rows = apply_edits_with_rows(current, edits, anchor)
        current_tree = None
        rows += new_rows
        applied += chosen
        fixed_first = fixed_first if round_number else Counter(f.code for f in chosen)
    else:
        every = _applicable_findings(current, path, options, False, settings)[0]
    if applied:
        _no_finding_gained(before, fixed_first, every)
    return _Done(
        current,
        applied,
        unsafe_edits,
        rows,
        plans,
        used,
        original_names,
        elsewhere,
        before,
        fixed_first,
        settings,
    )


_FORMULA_CODES = frozenset({"KVI001", "KVI002"})


def _no_finding_gained(
    before: list[Finding], fixed: Counter[str], after: list[Finding]
) -> None:
    """The rewritten text may not have more findings of any rule than the
    original, less the ones its first round fixed (a call whose arguments read
    as misplaced, KVI004; a guard no longer recognised, KVI006). A formula
    (KVI001, KVI002) still there was in the original, not fixed (the engine
    reports one formula of a sum at a time, and the next once the first is a
    call): their number may not grow past the original's."""
    counted = Counter(f.code for f in before)
    left = counted - fixed
    counts = Counter(f.code for f in after)
    for code, number in sorted(counts.items()):
        if number > (counted[code] if code in _FORMULA_CODES else left[code]):
            known = Counter(f.message for f in before if f.code == code)
            gained = [f for f in after if f.code == code]
            new = next((f for f in gained if not known[f.message]), gained[-1])
            raise RewriteRefused(
                f"rewrite refused: it would add {code} at {new.row}:{new.column} "
                f"({one_line(new.message)})"
            )


def check_written(original: str, rewrite: Rewrite, options: Options) -> ast.Module:
    """The gate: raise RewriteRefused unless ``rewrite.text`` is the original
    program (with the unsafe fixes' stated replacements, and only those).
    Returns the tree of ``rewrite.text``."""
    reference, tree = original, None
    if rewrite.unsafe_edits:
        reference = splice(original, rewrite.unsafe_edits)
    elif rewrite.parsed_original and rewrite.parsed_original[0] == original:
        tree = rewrite.parsed_original[1]
    names = rewrite.original_names if tree is not None else None
    final = rewrite.text
    if rewrite.defined:
        # Definitions added to the helpers module itself: proven on their own
        # (and the rest of the text unchanged by them), then left out of the
        # comparison by the gate, which binds their names where they stand.
        from lint_plugin.fix.helper_homes import (
            DefinitionRefused,
            check_added,
            without_definitions,
        )

        try:
            core = without_definitions(final, rewrite.defined)
            check_added(core, final, list(rewrite.defined))
        except (DefinitionRefused, SyntaxError) as exc:
            raise RewriteRefused(f"rewrite refused: {exc}") from None
    guard_module = rewrite.guard_module or options.guard_module or DEFAULT_GUARD_MODULE
    try:
        written = verify(
            reference,
            final,
            options.helpers_module,
            guard_module,
            reference_tree=tree,
            hypothetical=bool(rewrite.unsafe_edits),
            reference_names=names,
            definitions=frozenset(rewrite.defined),
            helpers_file=rewrite.helpers_file,
            owner_imports=rewrite.owner_imports,
        )
    except NotEqual as exc:
        raise RewriteRefused(f"rewrite refused: {exc}") from None
    modules = {options.helpers_module, guard_module}
    modules |= {module for module, _ in rewrite.owner_imports}
    parsed = rewrite.parsed_original
    original_tree = (
        parsed[1] if parsed and parsed[0] == original else parse_module(original)
    )
    _refuse_rebinding(original_tree, written, rewrite, modules)
    return written


def _refuse_rebinding(
    original: ast.Module, written: ast.Module, rewrite: Rewrite, modules: set[str]
) -> None:
    """The gate's premise: the names the rewrite calls are bound as the file's
    statements say. A file that can rebind one at run time is refused
    (:mod:`lint_plugin.fix.dynamic_names`), naming the line of the
    ``original`` (the names are those ``written`` imports them as)."""
    from lint_plugin.fix.dynamic_names import rebinding

    names = set(rewrite.imported) | set(rewrite.defined) | set(_HELPERS)
    for node in written.body:
        # The names the helpers are imported as (an alias, their module).
        if isinstance(node, ast.ImportFrom):
            # From any module: a relative import of the helpers' module too.
            names |= {a.asname or a.name for a in node.names if a.name in names}
        elif isinstance(node, ast.Import):
            names |= {
                a.asname or a.name.split(".")[0]
                for a in node.names
                if a.name in modules
            }
    found = rebinding(original, names, modules)
    if found is not None:
        raise RewriteRefused(f"rewrite refused: {found}, which fix cannot follow")


# More nesting than this in one expression is not worth another pass; what is left
# is reported by `check` and rewritten by the next run.
MAX_ROUNDS = 8
# Lines that fit are left as their authors wrote them: no formatter run needed.
LINE_LENGTH = 88


def _applicable_findings(
    text: str, path: str, options: Options, first_round: bool, settings: Settings
) -> tuple[list[Finding], list[Finding]]:
    """Every finding no directive suppresses, and those to apply now."""
    # The text is parsed whole before the first round and by the gate after the
    # last, so the engine's own whole-file syntax check would be a third parse.
    findings = lint_source(text, path, settings, syntax_checked=True)
    errors = [f for f in findings if f.code == SYNTAX_ERROR_CODE]
    if errors:
        where = f"{errors[0].row}:{errors[0].column}: {errors[0].message}"
        if first_round:
            raise SyntaxError(where)
        # Our own edits broke it: a refusal, never a wrong file.
        raise RewriteRefused(
            f"rewrite refused: a rewritten round does not parse: {where}"
        )
    unsuppressed = apply_noqa(findings, text)
    return unsuppressed, [
        f
        for f in unsuppressed
        if options.applies(f) and (first_round or f.fix.applicability == "safe")
    ]


def _non_overlapping(text: str, findings: list[Finding]) -> list[Finding]:
    """The findings whose edits overlap no earlier one (outer sites first: an inner
    one is found again, inside the helper call's argument, next round)."""
    starts = line_starts(text)
    spans = []
    for finding in findings:
        if not finding.fix.edits:
            continue  # its edits are in another file (KVI007)
        edge = [offsets(e, starts) for e in finding.fix.edits]
        spans.append((min(s for s, _ in edge), -max(e for _, e in edge), finding))
    spans.sort(key=lambda s: s[:2])
    chosen: list[Finding] = []
    reach = -1
    for start, negative_end, finding in spans:
        if start < reach:
            continue
        chosen.append(finding)
        reach = -negative_end
    return chosen


def _statement_ranges(text: str, rows: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``rows`` grown to whole statements (a compound one's header only): the
    formatter formats whole statements, and must change nothing else."""
    if not rows:
        return []
    spans = []  # (first row, last row) of simple statements and compound headers
    for node in iter_statements(parse_module(text, "the rewritten text")):
        first = node.lineno
        for decorator in getattr(node, "decorator_list", ()):
            first = min(first, decorator.lineno)
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            last = max(first, body[0].lineno - 1)
            if body[0].lineno == node.lineno:  # `if x: y` on one line
                last = node.end_lineno
        else:
            last = node.end_lineno
        spans.append((first, last))
    spans.sort()
    starts = [first for first, _ in spans]
    # Lines two statements share (`a = 1; b = f(x)`, `if x: y = f(x)`): a range
    # holding one is not formatted, or the other statement would change too.
    shared: list[int] = []
    reach = 0
    for first, last in spans:
        if first <= reach:
            shared.append(first)
        reach = max(reach, last)
    grown = []
    for first, last in rows:
        low, high = first, last
        index = bisect.bisect_right(starts, first) - 1
        while index >= 0 and spans[index][1] < first:
            index -= 1
        if index >= 0:
            low = min(low, spans[index][0])
            high = max(high, spans[index][1])
        index = bisect.bisect_right(starts, last) - 1
        if index >= 0 and spans[index][1] >= last:
            high = max(high, spans[index][1])
        at = bisect.bisect_left(shared, low)
        if at < len(shared) and shared[at] <= high:
            continue
        grown.append((low, high))
    return grown


_NOQA = re.compile(r"noqa", re.IGNORECASE)


def _holds_directive(text: str, ranges: list[tuple[int, int]]) -> bool:
    """Does a line of ``ranges`` (rows) hold a ``noqa`` comment?"""
    if not ranges or _NOQA.search(text) is None:
        return False
    lines = text.split("\n")
    return any(_NOQA.search(line) for a, b in ranges for line in lines[a - 1 : b])


def _too_long(text: str, rows: list[tuple[int, int]]) -> list[tuple[int, int]]:
    lines = text.split("\n")
    return [
        (first, last)
        for first, last in rows
        if any(len(line) > LINE_LENGTH for line in lines[first - 1 : last])
    ]


def _needing_format(text: str, rows: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Rows worth a formatter run: a rewrite spanning lines, or a line too long."""
    lines = text.split("\n")
    return [
        (first, last)
        for first, last in rows
        if first != last
        or first - 1 >= len(lines)
        or len(lines[first - 1]) > LINE_LENGTH
    ]


_GUARD_CALL = re.compile(rf"\b{GUARD}\(")


def _owner_imports(edits) -> frozenset[tuple[str, str]]:
    """What the contracts' owner calls in ``edits`` need imported (a rule
    offers such a fix only where the file binds none of those names)."""
    from lint_plugin.contracts import CONTRACTS

    found: set[tuple[str, str]] = set()
    for contract in CONTRACTS:
        owner = contract.owner
        if owner is None or not owner.imports:
            continue
        call = re.compile(rf"\b{re.escape(owner.name)}\(")
        if any(call.search(edit.content) for edit in edits):
            found.update(owner.imports)
    return frozenset(found)


def _helper_sites(
    text: str, chosen: list[Finding], settings: Settings
) -> dict[str, list[Site]]:
    """Helper -> the spans (rows, byte columns) of the edits that write a call
    of it as ``settings`` spell it."""
    patterns = {
        helper: re.compile(rf"(?<![\w.]){re.escape(settings.spell(helper))}\(")
        for helper in (USED_LEN, BUFFER_WIDTH)
    }
    lines = text.split("\n")
    found: dict[str, list[Site]] = {}
    for finding in chosen:
        for edit in finding.fix.edits:
            for helper, pattern in patterns.items():
                if pattern.search(edit.content):
                    start = (edit.row, _bytes(lines, edit.row, edit.column))
                    end = (edit.end_row, _bytes(lines, edit.end_row, edit.end_column))
                    found.setdefault(helper, []).append((start, end))
    return found


def _bytes(lines: list[str], row: int, column: int) -> int:
    """The UTF-8 byte offset of 1-based character ``column`` on ``row``."""
    line = lines[row - 1] if row - 1 < len(lines) else ""
    return len(line[: column - 1].encode()) if not line.isascii() else column - 1


def _first_site(chosen: list[Finding], helper: str, settings: Settings) -> str:
    callee = settings.spell(helper)
    for finding in chosen:
        if any(f"{callee}(" in edit.content for edit in finding.fix.edits):
            return f"{finding.row}:{finding.column}: {finding.code}"
    return "1:1"


def _without_unused_directives(rewrite: Rewrite, path: str, options: Options):
    # KVI100's safe fix: drop directive codes that suppress nothing (comments only).
    from lint_plugin.noqa.directives import (
        may_hold_own_directive,
        remove_unused_directives,
    )

    if not may_hold_own_directive(rewrite.text):
        return rewrite
    # The engine under the run's own settings: a directive for a custom
    # helpers module's findings is used there.
    findings = lint_source(rewrite.text, path, options.settings)
    text, fixed = remove_unused_directives(
        rewrite.text, path, options.selected, findings
    )
    if not fixed:
        return rewrite
    return replace(rewrite, text=text, applied=rewrite.applied + fixed)


def _shift_for_import(
    before: str, after: str, rows: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    """``rows`` moved past the one block of lines the import change touched, which
    is itself added to them."""
    if before == after:
        return rows
    old, new = before.split("\n"), after.split("\n")
    prefix = 0
    while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < min(len(old), len(new)) - prefix
        and old[-1 - suffix] == new[-1 - suffix]
    ):
        suffix += 1
    delta = len(new) - len(old)
    shifted = [(a + delta, b + delta) if a > prefix else (a, b) for a, b in rows]
    return [(prefix + 1, max(prefix + 1, len(new) - suffix)), *shifted]


def _header(text: str) -> tuple[int, list[ast.stmt]]:
    """Offset just past the module's docstring and top-level imports (up to the
    first def or class), and its top-level statements: all an import needs to see.

    Only the text above the first line that opens with ``def``, ``class`` or a
    decorator is parsed when that much parses on its own: then that line starts a
    statement at module level, so what is above is exactly the file's statements
    before it. libcst is never handed a huge or deep expression further down (it
    can take minutes, or crash, on those)."""
    tree = None
    first_def = _FIRST_DEF.search(text)
    if first_def is not None:
        try:
            tree = parse_module(text[: first_def.start()])
        except SyntaxError:
            tree = None  # that line is inside a string or brackets: parse it all
    if tree is None:
        tree = parse_module(text, "the rewritten text")
    last, statements = header_statements(tree)
    starts = line_starts(text)
    if last == 0:
        # Nothing to import after: the import goes below the comments that open
        # the file (a shebang, an encoding line, a licence), as libcst puts it.
        opening = _OPENING_COMMENTS.match(text)
        return (opening.end() if opening else 0), statements
    return (starts[last] if last < len(starts) else len(text)), statements


_FIRST_DEF = re.compile(r"^(?:@|class\b|def\b|async[ \t]+def\b)", re.M)
_OPENING_COMMENTS = re.compile(r"(?:[ \t\f]*(?:#[^\n]*)?\n)*")


def _add_imports(
    text: str,
    helpers: set[str],
    helpers_module: str,
    aliased: set[tuple[str, str]] = frozenset(),
    *,
    skip_bound: bool = False,
) -> str:
    """``text`` importing ``helpers`` (and each ``(helper, alias)``) from
    ``helpers_module`` at the top (``skip_bound``: not the names something below
    the top already binds)."""
    if not helpers and not aliased:
        return text
    cut, statements = _header(text)
    head, tail = text[:cut], text[cut:]
    wanted = {n for n in helpers if not (skip_bound and _bound_in(tail, n))}
    added = add_import(head, statements, wanted, helpers_module, aliased)
    if added is None:
        added = _add_imports_with_libcst(head, wanted, helpers_module, aliased)
    new_head, ends_with_import = added
    if tail and new_head != head and ends_with_import:
        if not new_head.endswith("\n"):
            new_head += "\n"
        tail = _blank_lines_before(tail)
    return new_head + tail


def _add_imports_with_libcst(
    head: str,
    wanted: set[str],
    helpers_module: str,
    aliased: set[tuple[str, str]] = frozenset(),
) -> tuple[str, bool]:
    """What :func:`add_import` does, for any header: slower (libcst's import is a
    fifth of a run), so only for the shapes it leaves."""
    import libcst as cst

    from lint_plugin.fix.imports.by_libcst import ensure_imported

    new_module = ensure_imported(
        cst.parse_module(head), wanted, helpers_module, aliased
    )
    return new_module.code, _ends_with_import(new_module)


_CODE_LINE = re.compile(r"^[ \t]*[^\s#]", re.M)
_DEF_OR_CLASS = re.compile(r"(?:async[ \t]+def|def|class|@)\b")


def _blank_lines_before(tail: str) -> str:
    """``tail`` with the blank lines black and ruff format want after an import:
    two before a def or class (comments above it included), one before other
    code. Blank lines already there are kept."""
    blank = 0
    for line in tail.split("\n"):
        if line.strip():
            break
        blank += 1
    code = _CODE_LINE.search(tail)
    if code is None:
        return tail
    wanted = 2 if _DEF_OR_CLASS.match(tail, code.end() - 1) else 1
    return "\n" * max(0, wanted - blank) + tail


def _ends_with_import(module) -> bool:
    import libcst as cst

    if not module.body or any(line.comment for line in module.footer):
        return False
    last = module.body[-1]
    return isinstance(last, cst.SimpleStatementLine) and isinstance(
        last.body[0], (cst.Import, cst.ImportFrom)
    )


def _bound_in(tail: str, name: str) -> bool:
    """Is ``name`` defined or imported at module level below the header?"""
    pattern = rf"^(?:(?:async\s+)?def\s+{name}\b|(?:from\s.*)?import\s.*\b{name}\b)"
    return re.search(pattern, tail, re.M) is not None
