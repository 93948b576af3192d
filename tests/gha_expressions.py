"""GitHub Actions' expression language, enough to run a workflow's ``if:`` lines.

The workflow test reads the conditions as written in ``docs/github-workflow.yml``
and runs them for each situation a repository meets (a push, a pull request from
a branch, one from a fork, a failed install, a cancelled run), so what is tested
is the text users copy, not a restatement of it.

What GitHub documents and this follows: ``${{ }}`` is optional in ``if:``; an
``if:`` without a status function is ``success() && (...)``; operators ``!``,
``==``, ``!=``, ``&&``, ``||`` and parentheses; string comparison ignores case;
``&&``/``||`` give an operand, not a boolean; ``false``, ``0``, ``''`` and ``null``
are falsy; a missing property is ``null``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_TOKEN = re.compile(
    r"\s*(?:(?P<string>'(?:[^']|'')*')|(?P<number>-?\d+(?:\.\d+)?)"
    r"|(?P<op>&&|\|\||==|!=|<=|>=|[!()<>.,\[\]])|(?P<name>[A-Za-z_][\w-]*))"
)
STATUS_FUNCTIONS = ("success", "failure", "cancelled", "always")


@dataclass
class JobState:
    """What the status functions see: has a step before failed, was it cancelled."""

    failed: bool = False
    cancelled: bool = False


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    text = text.strip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise SyntaxError(f"cannot read {text[position:]!r}")
        kind = match.lastgroup
        tokens.append((kind, match.group(kind)))
        position = match.end()
    return tokens


class _Parser:
    def __init__(self, text: str, context: Mapping, state: JobState) -> None:
        self.tokens = _tokens(text)
        self.index = 0
        self.context = context
        self.state = state

    def peek(self) -> str | None:
        return self.tokens[self.index][1] if self.index < len(self.tokens) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        token = self.tokens[self.index]
        if expected is not None and token[1] != expected:
            raise SyntaxError(f"expected {expected!r}, got {token[1]!r}")
        self.index += 1
        return token

    def parse(self):
        value = self.or_()
        if self.index != len(self.tokens):
            raise SyntaxError(f"unexpected {self.peek()!r}")
        return value

    def or_(self):
        # `a || b` is a if a is truthy, else b; `a && b` is b if a is truthy, else a.
        return self._chain(
            "||", self.and_, lambda left, right: left if truthy(left) else right
        )

    def and_(self):
        return self._chain(
            "&&", self.comparison, lambda left, right: right if truthy(left) else left
        )

    def _chain(self, op: str, operand, combine):
        value = operand()
        while self.peek() == op:
            self.take()
            value = combine(value, operand())
        return value

    def comparison(self):
        value = self.unary()
        while self.peek() in ("==", "!="):
            op = self.take()[1]
            right = self.unary()
            equal = _loose(value) == _loose(right)
            value = equal if op == "==" else not equal
        return value

    def unary(self):
        if self.peek() == "!":
            self.take()
            return not truthy(self.unary())
        return self.primary()

    def primary(self):
        kind, text = self.take()
        if text == "(":
            value = self.or_()
            self.take(")")
            return value
        if kind == "string":
            return text[1:-1].replace("''", "'")
        if kind == "number":
            return float(text)
        if kind != "name":
            raise SyntaxError(f"unexpected {text!r}")
        if text in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[text]
        if self.peek() == "(":
            self.take("(")
            self.take(")")
            return self.status(text)
        value = self.context.get(text)
        while self.peek() in (".", "["):
            if self.take()[1] == ".":
                key = self.take()[1]
            else:
                key = self.or_()
                self.take("]")
            value = value.get(key) if isinstance(value, Mapping) else None
        return value

    def status(self, name: str) -> bool:
        if name == "success":
            return not (self.state.failed or self.state.cancelled)
        if name == "failure":
            return self.state.failed and not self.state.cancelled
        if name == "cancelled":
            return self.state.cancelled
        if name == "always":
            return True
        raise SyntaxError(f"unknown function {name}()")


def truthy(value) -> bool:
    return value not in (False, None, 0, "")  # 0 == 0.0 == False


def _loose(value):
    return value.casefold() if isinstance(value, str) else value


def _unwrapped(expression: str) -> str:
    text = expression.strip()
    if text.startswith("${{") and text.endswith("}}"):
        text = text[3:-2]
    return text


def evaluate(expression: str, context: Mapping, state: JobState):
    return _Parser(_unwrapped(expression), context, state).parse()


def step_runs(condition: str | None, context: Mapping, state: JobState) -> bool:
    """Does a step with this ``if:`` run? (GitHub adds ``success() &&`` unless a
    status function is used.)"""
    condition = _unwrapped(condition or "") or "success()"
    if not re.search(rf"\b(?:{'|'.join(STATUS_FUNCTIONS)})\s*\(", condition):
        condition = f"success() && ({condition})"
    return truthy(evaluate(condition, context, state))


def run_job(
    steps: list[dict], context: Mapping, outcomes: Mapping[str, str], cancel_after=None
) -> dict[str, str]:
    """Each step's outcome (``success``/``failure``/``skipped``) when the steps
    named in ``outcomes`` end that way (the others succeed); ``cancel_after``: the
    run is cancelled once that step has run. ``steps.<id>.outcome`` is filled in
    as the job goes, as GitHub does."""
    state = JobState()
    seen: dict[str, dict] = {}
    result = {}
    for step in steps:
        name = step.get("id") or step.get("name") or step["uses"]
        scope = {**context, "steps": seen}
        if step_runs(step.get("if"), scope, state):
            outcome = outcomes.get(name, "success")
        else:
            outcome = "skipped"
        result[name] = outcome
        if "id" in step:
            seen[step["id"]] = {"outcome": outcome, "conclusion": outcome}
        state.failed = state.failed or outcome == "failure"
        if cancel_after == name:
            state.cancelled = True
    return result
