"""Which file of the tree an import names, and what that file defines.

KVI007 and ``fix`` ask one question of another file: does the module a file
imports a helper (or the guard) from live in the same source tree, and does it
define that name? KVI003 asks what a base class imported from the tree keeps
(:func:`module_text`). The module is looked for as Python would import it with the
tree's source root on ``sys.path``: the root is the parent of an ancestor folder
that is a regular package (has an ``__init__.py``), tried from the topmost one
down, since SGLang's own folders below ``sglang/`` are namespace packages
without one; a file in no package is its own folder's script, and its folder is
the root. A relative import goes up from the file's own folder.

Nothing is imported: a module's names are read from its ``ast``. What a file
binds at module level (a def, a class, an assignment, an import, also under
``if``/``try``/``with`` at module level, or a ``global`` declaration in one of
its functions) counts as defined, unless the binding cannot survive the run: a
later unconditional ``del``, an ``if TYPE_CHECKING:`` body, an ``except ... as
name`` (Python unbinds it), a bare annotation. A ``*`` import, a module
``__getattr__`` or a ``globals()`` call makes every name possibly defined, and
so does a file that does not parse: only a definite absence is reported.

``check``'s cache keys an answer by the file's own bytes, and these answers
depend on other files: every path consulted (each ``__init__.py`` looked for,
each candidate module file, the module's bytes) is logged to the recorders
opened with :func:`recording`, and the cache stores the log with the entry and
checks it before believing the entry.
"""

from __future__ import annotations

import os

from lint_plugin.records import record

TYPE_CHECKING = False  # not `typing`: ``check``'s cached path imports this module
if TYPE_CHECKING:
    import ast

# A state logged for a path: "-" missing, "+" present (only existence counted),
# "/-" and "/+" the same for a folder, else a digest of its bytes.
MISSING, PRESENT = "-", "+"
NO_FOLDER, FOLDER = "/-", "/+"

_recorders: list[list[tuple[str, str]]] = []


class recording:  # a context manager named like open()
    """``with recording() as log:`` collects every ``(path, state)`` consulted."""

    def __enter__(self) -> list[tuple[str, str]]:
        self.log: list[tuple[str, str]] = []
        _recorders.append(self.log)
        return self.log

    def __exit__(self, *exc: object) -> None:
        _recorders.remove(self.log)


def _note(path: str, state: str) -> None:
    for log in _recorders:
        log.append((path, state))


def _digest(data: bytes) -> str:
    from lint_plugin.digests import blake2b

    return blake2b(data, digest_size=16).hexdigest()


def state_of(path: str, kind: str) -> str:
    """The state of ``path`` as it would be logged now (``kind``: PRESENT for an
    existence check, anything else for the bytes)."""
    if kind in (PRESENT, MISSING):
        return PRESENT if os.path.isfile(path) else MISSING
    if kind in (FOLDER, NO_FOLDER):
        return FOLDER if os.path.isdir(path) else NO_FOLDER
    data = _read(path)
    return MISSING if data is None else _digest(data)


def still_valid(log: list[tuple[str, str]]) -> bool:
    """Does every path of ``log`` still have the state it was logged with?"""
    return all(state_of(path, state) == state for path, state in log)


def _exists(path: str) -> bool:
    found = os.path.isfile(path)
    _note(path, PRESENT if found else MISSING)
    return found


def _is_folder(path: str) -> bool:
    found = os.path.isdir(path)
    _note(path, FOLDER if found else NO_FOLDER)
    return found


_MAX_BYTES = 16 * 1024 * 1024


def _read(path: str) -> bytes | None:
    from lint_plugin.source_files import read_regular_file

    data = read_regular_file(path, _MAX_BYTES)
    return data if isinstance(data, bytes) else None


@record(frozen=True)
class Home:
    """The file a module resolves to: ``path`` absolute, ``shown`` as a user
    would name it (from the importing file's path as it was given)."""

    module: str  # dotted, as written (relative ones with their dots)
    path: str
    shown: str
    root: str  # the folder it was resolved against (the source root)
    # The module is missing from a package of the tree: ``path`` is where
    # Python would look for it first (``<package>/<name>.py``).
    missing: bool = False

    @property
    def creatable(self) -> bool:
        """Can the missing module be made by writing ``path``: its folder is
        there, and no folder of its name (a namespace package, which the new
        module would hide) is?"""
        return (
            self.missing
            and os.path.isdir(os.path.dirname(self.path))
            and not os.path.isdir(self.path[: -len(".py")])
        )


def source_roots(importer: str) -> list[str]:
    """Folders an absolute import from ``importer`` may resolve against, the most
    likely first (see the module docstring)."""
    folder = os.path.dirname(os.path.abspath(importer))
    packages = []
    current = folder
    while True:
        if _exists(os.path.join(current, "__init__.py")):
            packages.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    if not packages:
        return [folder]
    return [os.path.dirname(package) for package in reversed(packages)]


def module_home(module: str | None, level: int, importer: str) -> Home | None:
    """The file of the tree ``from <level dots><module> import`` in ``importer``
    names, or None when no such file is in the tree."""
    parts = module.split(".") if module else []
    if level:
        if not parts:
            return None  # `from . import name`: name may be a submodule
        bases = [_relative_base(level, importer)]
    else:
        if not parts:
            return None
        bases = source_roots(importer)
    written = "." * level + (module or "")
    for base in bases:
        stem = os.path.join(base, *parts)
        # A package shadows a module of the same name, as Python's finder has it.
        for candidate in (os.path.join(stem, "__init__.py"), stem + ".py"):
            if _exists(candidate):
                return Home(written, candidate, shown_path(candidate, importer), base)
    return None


def _relative_base(level: int, importer: str) -> str:
    """The folder ``from <level dots>`` in ``importer`` starts from."""
    base = os.path.dirname(os.path.abspath(importer))
    for _ in range(level - 1):
        base = os.path.dirname(base)
    return base


def missing_home(module: str | None, level: int, importer: str) -> Home | None:
    """Where ``from <level dots><module> import`` in ``importer`` would find its
    module when that module is missing from a package of the tree: the import's
    top-level package (or, for a relative import, the importer's own package) is
    a folder of the tree, and no file of the module is (``module_home`` found
    none). None when the package is not in the tree either (an installed sglang):
    nothing can be told of it here."""
    parts = module.split(".") if module else []
    if not parts:
        return None
    if level:
        bases = [_relative_base(level, importer)]
    else:
        bases = [
            b for b in source_roots(importer) if _is_folder(os.path.join(b, parts[0]))
        ]
        if not bases:
            return None
    base = bases[0]
    stem = os.path.join(base, *parts)
    if any(_exists(stem + suffix) for suffix in _compiled_suffixes()):
        return None  # a module without source (sourceless .pyc, an extension)
    candidate = stem + ".py"
    written = "." * level + (module or "")
    return Home(written, candidate, shown_path(candidate, importer), base, True)


def _compiled_suffixes() -> list[str]:
    """What Python also imports a module from, besides its source."""
    from importlib.machinery import BYTECODE_SUFFIXES, EXTENSION_SUFFIXES

    return [*BYTECODE_SUFFIXES, *EXTENSION_SUFFIXES]


def module_text(path: str) -> str | None:
    """The text of the module at ``path`` (read and logged as every file
    consulted is), or None when it cannot be read or decoded."""
    from lint_plugin.source_files import SourceError, decode

    data = _read(path)
    _note(path, MISSING if data is None else _digest(data))
    if data is None:
        return None
    try:
        return decode(data)
    except SourceError:
        return None


def shown_path(target: str, importer: str) -> str:
    """``target`` named the way ``importer`` was: relative to the same folder the
    importer's path is relative to (a function of the path as given, so a cached
    message stays right), absolute for an absolute importer."""
    if os.path.isabs(importer):
        return target
    given = os.path.dirname(importer)
    base = os.path.dirname(os.path.abspath(importer))
    relative = os.path.relpath(target, base)
    return os.path.normpath(os.path.join(given, relative))


# The names a module binds, by the digest of its bytes (a long-lived process
# sees a file change): None when they cannot be known.
_NAMES: dict[str, frozenset[str] | None] = {}


def defines(path: str, name: str, text: str | None = None) -> bool | None:
    """Does the module at ``path`` (or its ``text``, when given) bind ``name`` at
    module level? None when that cannot be told (it does not parse, it has a
    ``*`` import or a module ``__getattr__``, it cannot be read)."""
    names = module_names(path, text)
    if names is None:
        return None
    return name in names


def cannot_read(path: str) -> bool:
    """Is the module at ``path`` unreadable or not Python ``ast`` can parse (so
    what it defines cannot be told, unlike a ``*`` import's module)?"""
    data = _read(path)
    _note(path, MISSING if data is None else _digest(data))
    return data is None or _bound_names(data) is _BROKEN


def module_names(path: str, text: str | None = None) -> frozenset[str] | None:
    if text is None:
        data = _read(path)
        _note(path, MISSING if data is None else _digest(data))
        if data is None:
            return None
        key = _digest(data)
    else:
        data = text.encode("utf-8", "surrogatepass")
        key = _digest(data)
    if key not in _NAMES:
        _NAMES[key] = _bound_names(data)
    names = _NAMES[key]
    return None if names is _BROKEN else names


# What a module that does not parse binds: nothing can be told.
_BROKEN: frozenset[str] = frozenset({"<does not parse>"})


def _bound_names(data: bytes) -> frozenset[str] | None:
    """The names ``data`` binds at module level once it has run; None when a
    ``*`` import, a module ``__getattr__`` or ``globals()`` may bind any;
    ``_BROKEN`` when it does not parse."""
    if not _may_bind_inside(data):
        # No `global`, `globals()` or `sys.modules[__name__]`: nothing inside
        # a def or a class can bind a module name, so their bodies need no
        # tree (most of a module's text: 35 ms against 12 for the helpers'
        # home in 0.5.23, read by KVI007 on every run that imports it).
        found = _names_without_bodies(data)
        if found is not _UNREAD:
            return found
    return _names_of_tree(data)


_UNREAD: frozenset[str] = frozenset({"<not read by its skeleton>"})
# Also a backslash (it can continue a line of a def onto one the line scan
# takes for a module-level statement) and a form feed (Python counts a line's
# indentation from it).
_READ_INSIDE = (b"global", b"modules", b"\\\n", b"\\\r", b"\x0c")


def _may_bind_inside(data: bytes) -> bool:
    """May a def or a class of ``data`` bind a module name, or hide where it
    ends from the line scan? Searched in the text Python reads identifiers
    as (NFKC: a fullwidth `g` in `globals` is a `g`)."""
    if not data.isascii():
        import unicodedata

        from lint_plugin.source_files import SourceError, decode

        try:
            text = unicodedata.normalize("NFKC", decode(data))
        except SourceError:
            return True
        data = text.encode("utf-8", "surrogatepass")
    return any(word in data for word in _READ_INSIDE)


def _names_without_bodies(data: bytes) -> frozenset[str] | None:
    """``_names_of_tree`` of ``data`` with each top-level def and class a
    one-line stub: the same names when the whole text parses (``symtable``
    says so in C, without a tree); ``_UNREAD`` where the stubs do not parse
    back (a layout the line scan misreads) or the text cannot be decoded."""
    import symtable
    import warnings

    from lint_plugin.engine.lazy_methods import Deferred, is_async_def, skeleton
    from lint_plugin.engine.scan import Layout, StringSpans
    from lint_plugin.engine.source import normalised
    from lint_plugin.source_files import SourceError, decode

    try:
        text = normalised(decode(data))
    except SourceError:
        return _UNREAD
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            symtable.symtable(text, "<module>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _UNREAD  # symtable is stricter than ast: the tree decides
    lines = text.split("\n")
    layout = Layout(text, lines, StringSpans(text))
    stubs = [
        Deferred(row, end, name, is_async_def(lines[row]), kind == "class")
        for row, end, kind, name in layout.top_level_blocks()
    ]
    text = skeleton(lines, 0, len(lines), stubs)
    found = _names_of_tree(text)  # text: its cookie is read
    return _UNREAD if found is _BROKEN else found


def _names_of_tree(data: bytes | str) -> frozenset[str] | None:
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _BROKEN
    names: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, ast.Delete):
            # Unconditional and in order: gone unless a later statement binds it.
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    names.discard(target.id)
            continue
        bound = _bound_by(statement)
        if bound is None:
            return None
        names |= bound
    from lint_plugin.namespaces import with_parents

    for node, parent in with_parents(tree):
        if isinstance(node, ast.Global):
            names.update(node.names)  # a function may bind it when called
        elif _binds_any(node, parent):
            return None
    return frozenset(names)


def _bound_by(statement: ast.stmt) -> set[str] | None:
    """The module names one module-level statement may bind (its nested blocks
    included); None when it may bind any."""
    import ast

    names: set[str] = set()
    pending: list[ast.AST] = [statement]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == "__getattr__" and not isinstance(node, ast.ClassDef):
                return None
            names.add(node.name)
            continue  # its body is another scope
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add(alias.asname or alias.name.split(".")[0])
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            pending.extend(node.orelse)  # its body never runs
            continue
        if isinstance(node, ast.AnnAssign) and node.value is None:
            continue  # `name: int` annotates, binds nothing
        # `except E as name:` unbinds name when the handler ends: not added.
        for field, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else [value]
            for child in children:
                if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                    pending.append(child)
                elif isinstance(child, ast.AST) and field not in _SCOPED:
                    names.update(_stored(child))
    return names


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING``: False when the code runs."""
    import ast

    if isinstance(test, ast.Attribute):
        return test.attr == "TYPE_CHECKING"
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def _binds_any(node: ast.AST, parent: ast.AST | None) -> bool:
    """``globals()`` (the module's namespace as a dict) used other than to read
    it (``"x" in globals()`` binds nothing), or ``sys.modules[__name__]`` (the
    module itself): any name may be set."""
    import ast

    from lint_plugin.namespaces import is_globals_call, only_read

    if is_globals_call(node):
        return not only_read(node, parent)
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "modules"
        and isinstance(node.slice, ast.Name)
        and node.slice.id == "__name__"
    )


# Expression fields of a module-level statement that never bind a module name.
_SCOPED = frozenset({"decorator_list", "returns", "type_params"})


def _stored(node: ast.AST) -> set[str]:
    """Names an expression (an assignment target, a walrus, a match pattern)
    binds in the enclosing scope; lambdas and comprehensions are their own."""
    import ast

    found = set()
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, ast.Name) and isinstance(current.ctx, ast.Store):
            found.add(current.id)
        elif isinstance(current, (ast.MatchAs, ast.MatchStar)) and current.name:
            found.add(current.name)
        elif isinstance(current, ast.MatchMapping) and current.rest:
            found.add(current.rest)
        if isinstance(current, ast.Lambda):
            continue
        if isinstance(
            current, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
        ):
            # Only a walrus inside binds out here.
            found.update(
                n.target.id
                for n in ast.walk(current)
                if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name)
            )
            continue
        pending.extend(ast.iter_child_nodes(current))
    return found
