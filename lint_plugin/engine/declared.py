"""Each rule's ``NEEDS``, read from its module's text without importing it.

The byte test runs on every file of every run, and a run answered from the cache
must not import the rules (they import the engine they decide with). So the
declarations are read here, as :mod:`lint_plugin.codes` reads the codes from the
modules' names: the ``NEEDS = Needs(...)`` statement of each ``rules/kviNNN_*.py``
is parsed by a reader of its own over a literal subset (calls of ``Needs``,
tuples, ``*`` splices, strings, ``Role.X`` and the vocabulary's named words), and
never executed. The catalogue checks at import that what was read is what each
module holds, so a statement outside the subset fails loudly, naming its file.
"""

from __future__ import annotations

import os
import re

from lint_plugin import codes
from lint_plugin.engine import vocabulary
from lint_plugin.engine.roles import Role

# One token per match, its kind read from its first character (named groups
# double the pattern's compile time, paid on every run): a name, a string, an
# operator, a line end, blanks or a comment; any other character is not read.
_TOKEN = re.compile(r"""\n|[ \t\r\f]+|#[^\n]*|[A-Za-z_]\w*|'[^'\\\n]*'|"[^"\\\n]*"|.""")
_OPERATORS = frozenset("(),.=*")
_START = "\nNEEDS = "  # ruff format writes the statement so
# The names a declaration may use: the vocabulary's words and its record.
_NAMES = {
    name: getattr(vocabulary, name)
    for name in (
        "Needs",
        "USED_LEN",
        "BUFFER_WIDTH",
        "KERNEL",
        "GUARD",
        "HELPERS",
        "CONTEXT",
        "DRAFT_CLASS",
        "ALLOCATOR_WORDS",
    )
}


class DeclarationError(ValueError):
    """A rule module whose ``NEEDS`` this reader cannot read."""


class _Reader:
    def __init__(self, tokens: list[tuple[str, str]], where: str) -> None:
        self.tokens = tokens
        self.at = 0
        self.where = where

    def fail(self, what: str) -> DeclarationError:
        return DeclarationError(f"{self.where}: NEEDS {what}")

    def peek(self) -> str | None:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        if self.at >= len(self.tokens):
            raise self.fail("ends too early")
        kind, text = self.tokens[self.at]
        if expected is not None and text != expected:
            raise self.fail(f"has {text!r} where {expected!r} belongs")
        self.at += 1
        return kind, text

    def value(self):
        kind, text = self.take()
        if kind == "text":
            return text[1:-1]
        if text == "(":
            return self.parenthesised()
        if kind != "name":
            raise self.fail(f"has {text!r} where a value belongs")
        if text == "Role":
            self.take(".")
            _, member = self.take()
            if member not in Role.__members__:
                raise self.fail(f"names no role {member!r}")
            return Role[member]
        if text not in _NAMES:
            raise self.fail(f"uses {text!r}, which is not a vocabulary word")
        found = _NAMES[text]
        if self.peek() == "(":
            if found is not vocabulary.Needs:
                raise self.fail(f"calls {text!r}: only Needs(...) is read")
            self.take("(")
            return self.call()
        return found

    def parenthesised(self):
        """A tuple, or one value in brackets (no comma)."""
        items: list = []
        comma = False
        while self.peek() != ")":
            if self.peek() == "*":
                self.take("*")
                spliced = self.value()
                if not isinstance(spliced, tuple):
                    raise self.fail(f"splices {spliced!r}, which is not a tuple")
                items.extend(spliced)
                comma = True
            else:
                items.append(self.value())
            if self.peek() == ",":
                self.take(",")
                comma = True
            elif self.peek() != ")":
                raise self.fail(f"has {self.peek()!r} where ',' or ')' belongs")
        self.take(")")
        if len(items) == 1 and not comma:
            return items[0]
        return tuple(items)

    def call(self) -> vocabulary.Needs:
        positional: list = []
        keywords: dict = {}
        while self.peek() != ")":
            if self.peek() is None:
                raise self.fail("ends too early")
            kind, text = self.tokens[self.at]
            following = (
                self.tokens[self.at + 1][1] if self.at + 1 < len(self.tokens) else None
            )
            if kind == "name" and following == "=":
                if text in keywords:
                    raise self.fail(f"repeats the keyword {text!r}")
                self.take()
                self.take("=")
                keywords[text] = self.value()
            elif keywords:
                raise self.fail("has a positional argument after a keyword")
            else:
                positional.append(self.value())
            if self.peek() == ",":
                self.take(",")
            elif self.peek() != ")":
                raise self.fail(f"has {self.peek()!r} where ',' or ')' belongs")
        self.take(")")
        try:
            return vocabulary.Needs(*positional, **keywords)
        except TypeError as error:
            raise self.fail(f"is not a Needs: {error}") from None


def _statement(text: str, start: int, where: str) -> list[tuple[str, str]]:
    """The tokens from ``start`` to the end of the statement: the first line end
    outside brackets (after at least one token)."""
    tokens: list[tuple[str, str]] = []
    depth = 0
    for match in _TOKEN.finditer(text, start):
        token = match.group()
        first = token[0]
        if first == "\n":
            if depth == 0 and tokens:
                return tokens
        elif first in " \t\r\f#":
            continue  # blanks and comments
        elif first.isalpha() or first == "_":
            tokens.append(("name", token))
        elif first in "'\"" and len(token) > 1:
            tokens.append(("text", token))
        elif token in _OPERATORS:
            depth += (token == "(") - (token == ")")
            tokens.append(("op", token))
        else:
            raise DeclarationError(f"{where}: NEEDS has {token!r}, not read")
    return tokens


def read_needs(text: str, where: str = "<rule>") -> vocabulary.Needs:
    """The ``NEEDS`` a rule module's ``text`` declares (one statement at the
    module's top level, starting its line)."""
    text = "\n" + text  # the statement may start the file
    count = text.count(_START)
    if count != 1:
        raise DeclarationError(f"{where}: {count} NEEDS statements, not one")
    start = text.index(_START) + len(_START)
    reader = _Reader(_statement(text, start, where), where)
    needs = reader.value()
    if reader.peek() is not None or not isinstance(needs, vocabulary.Needs):
        raise reader.fail("is not one Needs(...) call")
    return needs


def read_declared() -> dict[str, vocabulary.Needs]:
    """Every rule's ``NEEDS``, by code, in code order."""
    folder = codes.rules_folder()
    found = {}
    for name in codes.RULE_MODULES:
        path = os.path.join(folder, f"{name}.py")
        with open(path, "rb") as handle:
            text = handle.read().decode()
        found[codes.code_of(name)] = read_needs(text, path)
    return found
