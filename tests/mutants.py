"""Single-site regressions of the refactored backends, generated from the real
files at test time (nothing of SGLang is committed).

Each sized buffer of a refactored backend is a ``width = draft_kv_indices_buffer_width(
COUNT, self.topk, self.max_context_len)`` statement followed by the allocation that
uses it. A *style* rewrites that pair of statements as a person plausibly would:
regressions drop the topk factor (``check`` must report exactly one KVI003), sized
variants keep it in another spelling (``check`` must stay quiet about KVI003).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from lint_plugin.engine.formulas import BUFFER_WIDTH


@dataclass(frozen=True)
class Site:
    """One sized buffer: the width statement and the allocation, as line ranges."""

    width_rows: tuple[int, int]  # 0-based [start, end) lines of ``w = helper(...)``
    alloc_rows: tuple[int, int]
    indent: str
    width_name: str
    count: str  # the helper's first argument, as written
    alloc: str  # the allocation statement's text, dedented


def sites(text: str) -> list[Site]:
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    found = []
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for stmt, following in itertools.pairwise(body):
            if not (
                isinstance(stmt, ast.Assign)
                and isinstance(stmt.value, ast.Call)
                and isinstance(stmt.value.func, ast.Name)
                and stmt.value.func.id == BUFFER_WIDTH
                and isinstance(stmt.targets[0], ast.Name)
            ):
                continue
            name = stmt.targets[0].id
            alloc = ast.get_source_segment(text, following)
            if f"(self.speculative_num_steps, {name})" not in alloc:
                continue
            indent = lines[stmt.lineno - 1][: stmt.col_offset]
            found.append(
                Site(
                    (stmt.lineno - 1, stmt.end_lineno),
                    (following.lineno - 1, following.end_lineno),
                    indent,
                    name,
                    ast.get_source_segment(text, stmt.value.args[0]),
                    alloc,
                )
            )
    return found


Style = Callable[[Site], tuple[str, str]]  # -> (width statement(s), allocation)
STEPS = "self.speculative_num_steps"
CTX = "self.max_context_len"


def _shape(site: Site, shape: str) -> str:
    return site.alloc.replace(f"({STEPS}, {site.width_name})", shape)


def _alloc(site: Site, old: str, new: str) -> str:
    for allocator in ("torch.zeros(", "torch.empty("):
        if allocator in site.alloc:
            return _shape(site, old).replace(allocator, new, 1)
    raise AssertionError(site.alloc)


def _w(site: Site, value: str) -> str:
    return f"{site.width_name} = {value}"


def _keep(site: Site) -> str:
    return f"{site.width_name} = {BUFFER_WIDTH}({site.count}, self.topk, {CTX})"


REGRESSIONS: dict[str, Style] = {
    "local": lambda s: (_w(s, f"{s.count} * {CTX}"), s.alloc),
    "annotated-local": lambda s: (
        f"{s.width_name}: int = {s.count} * {CTX}",
        s.alloc,
    ),
    "chain-of-locals": lambda s: (
        f"ctx = {CTX}\nrows = {s.count}\n" + _w(s, "rows * ctx"),
        s.alloc,
    ),
    "int-wrapper": lambda s: (_w(s, f"int({s.count} * {CTX})"), s.alloc),
    "self-attribute": lambda s: (
        f"self.{s.width_name} = {s.count} * {CTX}",
        _shape(s, f"({STEPS}, self.{s.width_name})"),
    ),
    "inline": lambda s: (_keep(s), _shape(s, f"({STEPS}, {s.count} * {CTX})")),
    "shape-local": lambda s: (
        _w(s, f"{s.count} * {CTX}") + f"\nshape = ({STEPS}, {s.width_name})",
        _shape(s, "shape"),
    ),
    "list-shape": lambda s: (
        _w(s, f"{s.count} * {CTX}"),
        _shape(s, f"[{STEPS}, {s.width_name}]"),
    ),
    "size-keyword": lambda s: (
        _w(s, f"{s.count} * {CTX}"),
        _shape(s, f"size=({STEPS}, {s.width_name})"),
    ),
    "varargs": lambda s: (
        _w(s, f"{s.count} * {CTX}"),
        _shape(s, f"{STEPS}, {s.width_name}"),
    ),
    "steps-alias": lambda s: (
        f"num_steps = {STEPS}\n" + _w(s, f"{s.count} * {CTX}"),
        _shape(s, f"(num_steps, {s.width_name})"),
    ),
    "steps-alias-plain-name": lambda s: (
        f"n = {STEPS}\n" + _w(s, f"{s.count} * {CTX}"),
        _shape(s, f"(n, {s.width_name})"),
    ),
    "full": lambda s: (
        _w(s, f"{s.count} * {CTX}"),
        _alloc(s, f"({STEPS}, {s.width_name}), -1", "torch.full("),
    ),
    "ones": lambda s: (
        _w(s, f"{s.count} * {CTX}"),
        _alloc(s, f"({STEPS}, {s.width_name})", "torch.ones("),
    ),
    "empty-strided": lambda s: (
        _w(s, f"{s.count} * {CTX}"),
        _alloc(
            s, f"({STEPS}, {s.width_name}), ({s.width_name}, 1)", "torch.empty_strided("
        ),
    ),
    "new-zeros": lambda s: (
        _w(s, f"{s.count} * {CTX}"),
        _alloc(s, f"({STEPS}, {s.width_name})", "self.kv_indptr.new_zeros("),
    ),
    "new-full": lambda s: (
        _w(s, f"{s.count} * {CTX}"),
        _alloc(s, f"({STEPS}, {s.width_name}), 0", "self.kv_indptr.new_full("),
    ),
    "flat": lambda s: (
        _w(s, f"{s.count} * {CTX}"),
        _shape(s, f"({STEPS} * {s.width_name},)"),
    ),
    "three-d": lambda s: (_keep(s), _shape(s, f"({STEPS}, {s.count}, {CTX})")),
    "literal-topk": lambda s: (
        _w(s, f"{BUFFER_WIDTH}({s.count}, 1, {CTX})"),
        s.alloc,
    ),
    "non-topk-name": lambda s: (
        _w(s, f"{BUFFER_WIDTH}({s.count}, self.page_size, {CTX})"),
        s.alloc,
    ),
}

# Issue 17's classes of misses, in spellings named nowhere before: a branch, a
# default kept on one path, sound operators, every way to state the buffer.
_HELPER = "{h}({c}, self.topk, " + CTX + ")"
_IF = "if self.speculative_num_steps > 1:"


def _helper(site: Site) -> str:
    return _HELPER.format(h=BUFFER_WIDTH, c=site.count)


REGRESSIONS.update(
    {
        "branch-keeps-unsized": lambda s: (
            _keep(s) + f"\n{_IF}\n    " + _w(s, f"{s.count} * {CTX}"),
            s.alloc,
        ),
        "else-branch": lambda s: (
            f"{_IF}\n    {_keep(s)}\nelse:\n    " + _w(s, f"{s.count} * {CTX}"),
            s.alloc,
        ),
        "conditional": lambda s: (
            _w(
                s,
                f"{_helper(s)} if self.speculative_num_steps > 1 else {s.count} * {CTX}",
            ),
            s.alloc,
        ),
        "count-minus-one": lambda s: (
            _w(s, f"({s.count} - 1) * self.topk * {CTX}"),
            s.alloc,
        ),
        "max-count": lambda s: (_w(s, f"max({s.count}, 1) * {CTX}"), s.alloc),
        "count-plus-one": lambda s: (_w(s, f"({s.count} + 1) * {CTX}"), s.alloc),
        "floor-half": lambda s: (_w(s, f"{_helper(s)} // 2"), s.alloc),
        "page-rounded": lambda s: (
            _w(s, f"({s.count} * {CTX} + 63) // 64 * 64"),
            s.alloc,
        ),
        "walrus": lambda s: (
            f"if ({s.width_name} := {s.count} * {CTX}) < 0:\n    " + _w(s, "0"),
            s.alloc,
        ),
        "min-topk": lambda s: (
            _w(s, f"{s.count} * min(self.topk, 1) * {CTX}"),
            s.alloc,
        ),
        "local-topk-one": lambda s: (
            "topk = 1\n" + _w(s, f"{BUFFER_WIDTH}({s.count}, topk, {CTX})"),
            s.alloc,
        ),
        "torch-size": lambda s: (
            _w(s, f"{s.count} * {CTX}"),
            _shape(s, f"torch.Size([{STEPS}, {s.width_name}])"),
        ),
        "starred": lambda s: (
            _w(s, f"{s.count} * {CTX}") + f"\nprefix = ({STEPS},)",
            _shape(s, f"(*prefix, {s.width_name})"),
        ),
        "concatenated": lambda s: (
            _w(s, f"{s.count} * {CTX}"),
            _shape(s, f"({STEPS},) + ({s.width_name},)"),
        ),
        "allocator-alias": lambda s: (
            _w(s, f"{s.count} * {CTX}") + "\nalloc = torch.empty",
            _alloc(s, f"({STEPS}, {s.width_name})", "alloc("),
        ),
        "allocator-partial": lambda s: (
            _w(s, f"{s.count} * {CTX}")
            + "\nalloc = functools.partial(torch.zeros, pin_memory=False)",
            _alloc(s, f"({STEPS}, {s.width_name})", "alloc("),
        ),
    }
)

SIZED: dict[str, Style] = {
    "upstream": lambda s: (_keep(s), s.alloc),
    "topk-first": lambda s: (_w(s, f"self.topk * {s.count} * {CTX}"), s.alloc),
    "topk-last": lambda s: (_w(s, f"{CTX} * {s.count} * self.topk"), s.alloc),
    "topk-alias": lambda s: (
        "k = self.topk\n" + _w(s, f"({s.count} * k) * {CTX}"),
        s.alloc,
    ),
    "topk-later": lambda s: (
        _w(s, f"{s.count} * {CTX}") + f"\n{s.width_name} *= self.topk",
        s.alloc,
    ),
    "helper-keywords": lambda s: (
        _w(
            s,
            f"{BUFFER_WIDTH}(num_seqs={s.count}, topk=self.topk, max_context_len={CTX})",
        ),
        s.alloc,
    ),
    "helper-module-attribute": lambda s: (
        _w(s, f"spec_utils.{BUFFER_WIDTH}({s.count}, self.topk, {CTX})"),
        s.alloc,
    ),
    "helper-padded": lambda s: (
        _w(s, f"{BUFFER_WIDTH}({s.count}, self.topk, {CTX}) + 256"),
        s.alloc,
    ),
    "helper-through-self": lambda s: (
        f"self.{s.width_name} = {BUFFER_WIDTH}({s.count}, self.topk, {CTX})",
        _shape(s, f"({STEPS}, self.{s.width_name})"),
    ),
    "sized-flat": lambda s: (_keep(s), _shape(s, f"({STEPS} * {s.width_name},)")),
    "sized-three-d": lambda s: (
        _keep(s),
        _shape(s, f"({STEPS}, {s.count} * self.topk, {CTX})"),
    ),
    "branches-sized": lambda s: (
        f"{_IF}\n    {_keep(s)}\nelse:\n    " + _w(s, f"{s.count} * self.topk * {CTX}"),
        s.alloc,
    ),
    "topk-at-least-one": lambda s: (
        _w(s, f"{s.count} * max(self.topk, 1) * {CTX}"),
        s.alloc,
    ),
    "topk-or-one": lambda s: (_w(s, f"{s.count} * (self.topk or 1) * {CTX}"), s.alloc),
    "page-rounded-helper": lambda s: (
        _w(s, f"({_helper(s)} + 63) // 64 * 64"),
        s.alloc,
    ),
    "ceil-multiple": lambda s: (_w(s, f"-(-{_helper(s)} // 64) * 64"), s.alloc),
    "token-count-of-the-topk": lambda s: (
        f"num_tokens = {s.count} * self.topk\n" + _w(s, f"num_tokens * {CTX}"),
        s.alloc,
    ),
    "count-plus-one-sized": lambda s: (
        _w(s, f"({s.count} + 1) * self.topk * {CTX}"),
        s.alloc,
    ),
    "max-of-helper": lambda s: (
        _w(s, f"max({_helper(s)}, {s.count} * {CTX})"),
        s.alloc,
    ),
    "min-of-sized": lambda s: (
        _w(s, f"min({_helper(s)} + 64, 2 * {_helper(s)})"),
        s.alloc,
    ),
    "augmented-chain": lambda s: (
        _w(s, s.count) + f"\n{s.width_name} *= self.topk\n{s.width_name} *= {CTX}",
        s.alloc,
    ),
    "tuple-unpacked": lambda s: (
        f"steps, {s.width_name} = {STEPS}, {_helper(s)}",
        _shape(s, f"(steps, {s.width_name})"),
    ),
    "allocator-alias-sized": lambda s: (
        _keep(s) + "\nalloc = torch.empty",
        _alloc(s, f"({STEPS}, {s.width_name})", "alloc("),
    ),
}


def mutate(text: str, site: Site, style: Style) -> str:
    """``text`` with ``site``'s two statements rewritten in ``style``."""
    width, alloc = style(site)
    lines = text.splitlines(keepends=True)

    def indented(block: str) -> list[str]:
        return [site.indent + line + "\n" for line in block.split("\n")]

    (w0, w1), (a0, a1) = site.width_rows, site.alloc_rows
    assert w1 <= a0
    # The allocation's continuation lines keep their own indentation.
    alloc_lines = [site.indent + alloc.split("\n")[0] + "\n"] + [
        line + "\n" for line in alloc.split("\n")[1:]
    ]
    return "".join(
        lines[:w0] + indented(width) + lines[w1:a0] + alloc_lines + lines[a1:]
    )


def all_mutants(text: str, styles: dict[str, Style]) -> Iterator[tuple[int, str, str]]:
    for index, site in enumerate(sites(text)):
        for name, style in styles.items():
            yield index, name, mutate(text, site, style)
