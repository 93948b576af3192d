"""Modules as ``fix`` meets them, for the execution oracle (test_fix_generated.py).

Each module is drawn from one seed. It holds the two formulas (and near misses,
longer sums, formulas nested in another's argument or repeated in one sum) in the
layouts people write (random groupings, line breaks, comments before and after
operators, backslash continuations, semicolons, one-line compound statements,
string literals quoting a formula), and around them the names, scopes,
placements and side effects real modules have:

* the helpers' names taken in a scope: a local (before or after the formula), a
  parameter, a loop or comprehension variable, a lambda's parameter, an enclosing
  function's local, a class attribute, a ``global`` rebinding, a spelling that is
  the same identifier after NFKC normalisation, and the names ``fix`` might pick
  for an alias or the helpers' module taken too;
* the module-level name taken or given: the helpers imported at the top, under an
  alias, as a module, after a top-level use, only inside ``if``, from another
  module (also by ``*``), behind a ``try``/``except ImportError`` fallback (one
  whose import fails), a module-level ``def`` or assignment, ``del``;
* the name bound or seen at run time (``DYNAMIC``): written through
  ``globals()``, ``vars()``, a frame's ``f_globals``, a class body's
  ``locals()``, ``setattr`` on the module, ``exec``; the helpers' module stubbed
  in ``sys.modules`` or its attribute patched before the import; ``globals()``
  read for the helper's name, scanned whole, or read and written for other
  names only;
* formulas run at import time (module level, class bodies, annotations) before
  or after an import ``fix`` may add or reuse, and a function called at import
  time;
* operands and neighbouring terms with effects: a walrus, calls that change a
  global the formula reads, subscripts of what they change;
* annotations under ``from __future__ import annotations`` and without it;
  docstrings; a coding cookie (latin-1), a BOM, CRLF or lone-CR line endings,
  tab or two-space indentation.

Nothing here runs code: ``oracle_child.py`` does, in a child process.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

HELPERS_MODULE = "stubpkg.spec_utils"
OTHER_MODULE = "stubpkg.other"
USED = "draft_kv_indices_used_len"
WIDTH = "draft_kv_indices_buffer_width"
HELPERS = (USED, WIDTH)
# The same identifiers after NFKC (a fullwidth first letter).
NFKC = {name: "\uff44" + name[1:] for name in HELPERS}
# Names fix may choose for an alias, or the helpers' module goes by.
ALIASES = {name: f"_{name}" for name in HELPERS}
MODULE_ALIAS = "spec_utils"

Node = str | tuple  # a leaf's text, or (op, [operands]) / ("call", f, node)


@dataclass
class Module:
    seed: int
    text: str
    encoding: str = "utf-8"
    bom: bool = False
    ending: str = "\n"
    tags: set[str] = field(default_factory=set)

    def data(self) -> bytes:
        text = self.text.replace("\n", self.ending)
        return (b"\xef\xbb\xbf" if self.bom else b"") + text.encode(self.encoding)


# ---- leaves -------------------------------------------------------------------

# Names a module defines at the top: formulas at module level read these.
GLOBALS = {
    "seq_lens_sum": 11,
    "topk": 3,
    "eagle_topk": 2,
    "bs": 4,
    "num_seqs": 5,
    "max_bs": 6,
    "num_steps": 2,
    "max_context_len": 7,
    "pad": 1,
    "i": 1,
}


@dataclass(frozen=True)
class Place:
    """Where an expression is written: which leaves exist there, which effects
    may be written there."""

    function: bool  # a function body: parameters and ``self`` exist
    walrus: bool = True  # an assignment expression is allowed here


def seq_lens_sum(rng, place: Place) -> Node:
    options = ["seq_lens_sum"]
    if place.function:
        options += ["forward_batch.seq_lens_sum", "self.seq_lens_sum"]
    return rng.choice(options)


def topk(rng, place: Place) -> Node:
    options = ["topk", "eagle_topk"]
    if place.function:
        options += ["self.topk", "self.topk", "k"]
    return rng.choice(options)


def context(rng, place: Place) -> Node:
    options = ["max_context_len"]
    if place.function:
        options += ["self.max_context_len", "self.model.context_len"]
    return rng.choice(options)


def count(rng, place: Place) -> Node:
    options = ["bs", "num_seqs", "max_bs"]
    if place.function:
        options += ["forward_batch.batch_size"]
    if rng.random() < 0.15:
        options = ["nxt()", "STATE[0]"]
        if place.walrus:
            options.append("(bs := bs + 1)")
    return rng.choice(options)


def steps(rng, place: Place) -> Node:
    options = ["num_steps", ("+", ["i", "1"])]
    if place.function:
        options.append("self.speculative_num_steps")
    return rng.choice(options)


def extra(rng, place: Place) -> Node:
    options = ["pad", "16", ("*", ["2", "pad"])]
    if place.function:
        options.append("self.page_size")
    if rng.random() < 0.25:
        options = ["bump()", "nxt()", "STATE[0]"]
        if place.walrus:
            options.append("(pad := pad + 1)")
    return rng.choice(options)


# ---- expressions ----------------------------------------------------------------


def used_len(rng, place: Place) -> Node:
    prefix = ("*", shuffled(rng, [seq_lens_sum(rng, place), topk(rng, place)]))
    bs: list[Node] = [count(rng, place)]
    if rng.random() < 0.4:
        bs.append(topk(rng, place))  # bs spelled num_seqs * topk
    if rng.random() < 0.15:
        bs = [("call", "abs", buffer_width(rng, place))]  # nested in an argument
    drafts = ("*", shuffled(rng, [*bs, steps(rng, place)]))
    return (
        "+",
        shuffled(rng, [prefix, drafts]) if rng.random() < 0.5 else [prefix, drafts],
    )


def buffer_width(rng, place: Place) -> Node:
    factors = [count(rng, place), topk(rng, place), context(rng, place)]
    return ("*", shuffled(rng, factors))


def near_miss(rng, place: Place) -> Node:
    sls, k, n = seq_lens_sum(rng, place), topk(rng, place), count(rng, place)
    s, mcl = steps(rng, place), context(rng, place)
    return rng.choice(
        [
            ("+", [sls, ("*", [n, s])]),
            ("+", [("*", [sls, k]), ("*", [k, s])]),  # bs would be a topk
            ("-", [("*", [sls, k]), ("*", [n, s])]),
            ("*", [n, mcl]),
            ("*", [n, k, mcl, "2"]),
            ("+", [("*", [n, k]), "1"]),
        ]
    )


def formula(rng, place: Place) -> Node:
    kind = rng.randrange(10)
    if kind < 5:
        return used_len(rng, place)
    if kind < 8:
        return buffer_width(rng, place)
    return near_miss(rng, place)


def expression(rng, place: Place) -> Node:
    """A formula alone, in a longer sum, or twice in one sum."""
    shape = rng.randrange(6)
    if shape <= 2:
        return formula(rng, place)
    terms: list[Node] = [formula(rng, place)]
    if shape == 5:
        terms.append(formula(rng, place))
    terms += [extra(rng, place) for _ in range(rng.randint(0 if shape == 5 else 1, 2))]
    flat: list[Node] = []
    for term in shuffled(rng, terms):
        flat += term[1] if isinstance(term, tuple) and term[0] == "+" else [term]
    return ("+", shuffled(rng, flat) if rng.random() < 0.5 else flat)


def shuffled(rng, items: list) -> list:
    items = list(items)
    rng.shuffle(items)
    return items


# ---- layout ----------------------------------------------------------------------


def render(rng, node: Node, layout: str, indent: str) -> str:
    """Source text for ``node``; ``layout`` says what may separate operands:
    ``paren`` (inside brackets: line breaks and comments), ``backslash``,
    ``flat``."""
    if isinstance(node, str):
        return node
    if node[0] == "call":
        return f"{node[1]}({render(rng, node[2], 'paren', indent)})"
    op, operands = node
    parts = [_operand(rng, operand, op, layout, indent) for operand in operands]
    if op == "-" or len(parts) < 2:
        return f" {op} ".join(parts)
    while len(parts) > 1:
        index = rng.randrange(len(parts) - 1)
        grouped = rng.random() < 0.5
        here = "paren" if grouped else layout
        joined = parts[index] + separator(rng, op, here, indent) + parts[index + 1]
        if grouped:
            joined = f"({joined})"
        parts[index : index + 2] = [joined]
    return parts[0]


def _operand(rng, operand: Node, op: str, layout: str, indent: str) -> str:
    compound = isinstance(operand, tuple) and operand[0] in ("+", "-", "*")
    wrap = compound and (
        operand[0] == "-" or (operand[0] == "+" and op == "*") or rng.random() < 0.5
    )
    if wrap:
        return f"({render(rng, operand, 'paren', indent)})"
    return render(rng, operand, layout, indent)


def separator(rng, op: str, layout: str, indent: str) -> str:
    choices = [f" {op} "]
    if layout == "paren":
        choices += [
            f"\n{indent}    {op} ",
            f"  # before {op}\n{indent}    {op} ",
            f" {op}  #after {op}  \n{indent}    ",
        ]
    elif layout == "backslash":
        choices += [f" \\\n{indent}    {op} ", f" {op} \\\n{indent}    "]
    return rng.choice(choices)


def written(rng, place: Place, indent: str) -> str:
    """One expression's text, parenthesised when its layout needs it."""
    layout = rng.choice(["flat", "flat", "paren", "backslash"])
    text = render(rng, expression(rng, place), layout, indent)
    if layout == "paren":
        text = f"(\n{indent}    {text}\n{indent})" if "\n" in text else f"({text})"
    if rng.random() < 0.1:
        text = f'("""kv used:\n""", {text})[1]'  # a string spanning lines before it
    return text


# ---- modules ---------------------------------------------------------------------

FUNCTION_PARAMS = "self, forward_batch, seq_lens_sum, bs, num_seqs, max_bs, i, pad"


class _Writer:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.tags: set[str] = set()
        self.postponed = False

    def tag(self, name: str) -> None:
        self.tags.add(name)

    # -- what the helpers' names mean at module level --

    def helper_binding(self, helper: str) -> tuple[str, list[str], list[str]]:
        """A kind, the lines that go with the imports, and lines for later."""
        rng = self.rng
        kind = rng.choice(
            ["none"] * 5
            + ["top"] * 3
            + ["alias", "module", "late", "late", "only-if", "other", "star"]
            + ["fallback", "fallback-missing", "def", "assign", "del", "nfkc-def"]
        )
        if rng.random() < 0.12:
            kind = rng.choice(list(DYNAMIC))
        self.tag(f"module:{kind}")
        signature = "*args, **kwargs"
        if kind in DYNAMIC:
            return self.dynamic(kind, helper)
        if kind == "top":
            return kind, [f"from {HELPERS_MODULE} import {helper}"], []
        if kind == "alias":
            alias = rng.choice(["used", ALIASES[helper], f"{helper}_"])
            lines = [f"from {HELPERS_MODULE} import {helper} as {alias}"]
            if rng.random() < 0.5:
                lines.append(f"from {HELPERS_MODULE} import {helper}")
            return kind, lines, []
        if kind == "module":
            line = rng.choice(
                [
                    f"import {HELPERS_MODULE} as {MODULE_ALIAS}",
                    f"from stubpkg import spec_utils as {MODULE_ALIAS}",
                ]
            )
            return kind, [line], []
        if kind == "late":
            return kind, [], [f"from {HELPERS_MODULE} import {helper}"]
        if kind == "only-if":
            return (
                kind,
                ["if TYPE_CHECKING:", f"    from {HELPERS_MODULE} import {helper}"],
                [],
            )
        if kind == "other":
            return kind, [f"from {OTHER_MODULE} import {helper}"], []
        if kind == "star":
            return kind, [f"from {OTHER_MODULE} import *"], []
        if kind in ("fallback", "fallback-missing"):
            module = HELPERS_MODULE if kind == "fallback" else "stubpkg.missing"
            return (
                kind,
                [
                    "try:",
                    f"    from {module} import {helper}",
                    "except ImportError:",
                    f"    def {helper}({signature}):",
                    "        return -2",
                ],
                [],
            )
        if kind == "def":
            return kind, [], [f"def {helper}({signature}):", "    return -3"]
        if kind == "nfkc-def":
            return kind, [], [f"def {NFKC[helper]}({signature}):", "    return -4"]
        if kind == "assign":
            return kind, [], [f"{helper} = max"]
        if kind == "del":
            return kind, [f"from {HELPERS_MODULE} import {helper}"], [f"del {helper}"]
        return kind, [], []

    def dynamic(self, kind: str, helper: str) -> tuple[str, list[str], list[str]]:
        """The name bound, rebound or observed at run time (issue 45): the
        kind, lines that go with the imports, and lines for later."""
        other = USED if helper == WIDTH else WIDTH
        split = f'"".join(["{helper[:6]}", "{helper[6:]}"])'
        early, late = DYNAMIC[kind]
        fill = {
            "helper": helper,
            "other": other,
            "split": split,
            "module": HELPERS_MODULE,
        }
        return (
            kind,
            [line.format(**fill) for line in early],
            [line.format(**fill) for line in late],
        )

    # -- what a scope does with the helpers' names --

    def scope_binder(self) -> str:
        rng = self.rng
        kind = rng.choice(
            ["none"] * 8
            + ["local-before", "local-after", "param", "loop", "comprehension"]
            + ["lambda", "nested", "global", "nfkc-local", "alias-local"]
            + ["module-local"]
        )
        self.tag(f"scope:{kind}")
        return kind

    def statements(
        self, place: Place, indent: str, targets: list[str], prefix: str = "v"
    ) -> list[str]:
        """Assignments of one or more expressions, in various statement shapes."""
        rng = self.rng
        lines = []
        for _ in range(1 if rng.random() < 0.7 else 2):
            name = f"{prefix}{len(targets)}"
            targets.append(name)
            text = written(rng, place, indent)
            shape = rng.randrange(10)
            if shape == 0:
                lines.append(f"{indent}_unused = 1; {name} = {text}")
            elif shape == 1 and "\n" not in text:
                lines.append(f"{indent}if True: {name} = {text}")
            elif shape == 2 and place.function:
                # A local annotation is never evaluated, nor kept.
                text = written(rng, Place(True, walrus=False), indent)
                lines.append(f"{indent}{name}: {text} = 0")
            elif shape == 3:
                other = f"{prefix}{len(targets)}"
                targets.append(other)
                second = written(rng, place, indent)
                lines.append(f"{indent}{name}, {other} = {text}, {second}")
            else:
                lines.append(f"{indent}{name} = {text}")
        return lines

    def function(self, name: str, helper: str) -> list[str]:
        rng = self.rng
        binder = self.scope_binder()
        params = FUNCTION_PARAMS + (f", {helper}" if binder == "param" else "")
        annotation = ""
        if rng.random() < 0.15:
            annotation = f" -> {written(rng, Place(False, walrus=False), '')}"
            self.tag("annotation:return")
        if rng.random() < 0.1:
            params = params.replace(
                "bs,", f"bs: {written(rng, Place(False, walrus=False), '')},"
            )
            self.tag("annotation:param")
        lines = [f"def {name}({params}){annotation}:"]
        if rng.random() < 0.3:
            lines.append(
                '    """Sizes, as `seq_lens_sum * self.topk + bs * num_steps` says."""'
            )
        lines.append("    k = self.topk" if rng.random() < 0.5 else "    k = 3")
        targets: list[str] = []
        plain = Place(True)
        if binder == "local-before":
            lines.append(f"    {helper} = 7")
        elif binder == "nfkc-local":
            lines.append(f"    {NFKC[helper]} = 7")
        elif binder == "alias-local":
            lines.append(f"    {ALIASES[helper]} = 7")
        elif binder == "module-local":
            lines.append(f"    {MODULE_ALIAS} = 7")
        elif binder == "global":
            lines += [f"    global {helper}", f"    {helper} = min"]
        if binder == "loop":
            lines.append(f"    for {helper} in range(1):")
            lines += self.statements(plain, "        ", targets)
        elif binder == "comprehension":
            target = f"v{len(targets)}"
            targets.append(target)
            text = written(rng, Place(True, walrus=False), "    ")
            lines.append(f"    {target} = [{text} for {helper} in range(1)][0]")
        elif binder == "lambda":
            target = f"v{len(targets)}"
            targets.append(target)
            text = written(rng, Place(True, walrus=False), "    ")
            lines.append(f"    {target} = (lambda {helper}: {text})(0)")
        elif binder == "nested":
            lines.append(f"    {helper} = 5")
            lines.append("    def inner():")
            inner: list[str] = []
            lines += self.statements(Place(True, walrus=False), "        ", inner)
            lines.append(f"        return ({', '.join(inner)},)")
            targets.append("inner()")
        lines += self.statements(plain, "    ", targets)
        if binder == "local-after":
            lines.append(f"    {helper} = 7")
        lines.append(f"    return ({', '.join(targets)},)")
        return lines

    def zero_argument_function(self, name: str) -> list[str]:
        targets: list[str] = []
        lines = [f"def {name}():"]
        lines += self.statements(Place(False, walrus=False), "    ", targets)
        lines.append(f"    return ({', '.join(targets)},)")
        return lines

    def klass(self, helper: str) -> list[str]:
        rng = self.rng
        lines = ["class Backend:"]
        if rng.random() < 0.4:
            lines.append(f"    {helper} = 3")
            self.tag("scope:class-attribute")
        elif rng.random() < 0.1:
            lines.append(f'    locals()["{helper}"] = max')
            self.tag("scope:class-locals")
        targets: list[str] = []
        lines += self.statements(Place(False, walrus=False), "    ", targets)
        if rng.random() < 0.3 and not self.postponed:
            lines.append(
                f"    annotated: {written(rng, Place(False, walrus=False), '    ')} = 1"
            )
            self.tag("annotation:class")
        lines.append("")
        lines += [
            "    " + line if line else "" for line in self.function("method", helper)
        ]
        return lines

    def module(self) -> tuple[str, set[str]]:
        rng = self.rng
        helper = rng.choice(HELPERS)
        top: list[str] = []
        if rng.random() < 0.4:
            top += ['"""Kv sizes: `seq_lens_sum * topk + bs * num_steps`."""', ""]
            self.tag("docstring:module")
        if rng.random() < 0.35:
            top.append("from __future__ import annotations")
            self.postponed = True
            self.tag("future-annotations")
        imports = ["import os"] if rng.random() < 0.5 else []
        later: list[str] = []
        for name in rng.sample(HELPERS, rng.randint(1, 2)):
            _, early, late = self.helper_binding(name)
            imports += early
            later += late
        if any("TYPE_CHECKING" in line for line in imports):
            imports.insert(0, "from typing import TYPE_CHECKING")
        body = [*top, *imports, ""]
        body += [f"{name} = {value}" for name, value in GLOBALS.items()]
        body += ["STATE = [0]", "", "", *_EFFECTS]
        eager: list[str] = []
        if rng.random() < 0.5:
            eager = self.statements(Place(False), "", [], prefix="MODULE_V")
            self.tag("eager:module")
        if rng.random() < 0.3 and not self.postponed:
            text = written(rng, Place(False, walrus=False), "")
            eager.append(f"ANNOTATED: {text} = 1")
            self.tag("annotation:module")
        if rng.random() < 0.15:
            eager += ["import math"]  # an import below code run at import time
            self.tag("import-after-code")
        functions = []
        for index in range(1 if rng.random() < 0.7 else 2):
            functions += [*self.function(f"f{index}", helper), "", ""]
        calls = rng.random() < 0.5  # a function run at import time
        if calls:
            functions += [*self.zero_argument_function("g0"), "", ""]
        if rng.random() < 0.35:
            functions += [*self.klass(helper), "", ""]
        if calls and rng.random() < 0.4:
            functions += ["EARLY = g0()", ""]
            self.tag("eager:call")
        # Placement: what fix may reuse or add, before or after what runs first.
        order = rng.randrange(3)
        if order == 0:
            body += [*eager, "", *later, "", *functions]
        elif order == 1:
            body += [*later, "", *eager, "", *functions]
        else:
            body += [*functions, *eager, "", *later, ""]
        if calls and rng.random() < 0.4:
            body += ["", "LATE = g0()", ""]
        return "\n".join(body).rstrip("\n") + "\n", self.tags


# Names bound, rebound or looked at while the module runs, out of sight of a
# static reading: (lines with the imports, lines for later), formatted with the
# helper, the other helper, the helper's name computed, and the helpers module.
DYNAMIC = {
    "dyn-globals": ([], ['globals()["{helper}"] = max']),
    "dyn-computed": ([], ["globals()[{split}] = max"]),
    "dyn-vars": ([], ['vars()["{helper}"] = min']),
    "dyn-update": ([], ["globals().update({helper}=max)"]),
    "dyn-setattr": (
        ["import sys"],
        ['setattr(sys.modules[__name__], "{helper}", max)'],
    ),
    "dyn-exec": ([], ['exec("def {helper}(*args, **kwargs):\\n    return -5")']),
    "dyn-frame": (["import sys"], ['sys._getframe().f_globals["{helper}"] = max']),
    "sys-stub": (
        [
            "import sys",
            "import types",
            'sys.modules["{module}"] = types.SimpleNamespace({other}=max)',
            "from {module} import {other}",
        ],
        [],
    ),
    "patched": (
        ["import {module} as _patched", "_patched.{helper} = max"],
        ["from {module} import {helper}"],
    ),
    "globals-read": (['HAS_HELPER = "{helper}" in globals()'], []),
    "globals-scan": (
        [],
        ["NAMES = sorted(n for n in globals() if n.startswith('draft'))"],
    ),
    "globals-other": (['HAS_OTHER = "unrelated_name" in globals()'], []),
    "globals-harmless": ([], ['globals()["UNRELATED"] = 5']),
}

_EFFECTS = [
    "def bump():",
    "    global num_steps",
    "    num_steps += 1",
    "    STATE[0] += 1",
    "    return STATE[0]",
    "",
    "",
    "def nxt():",
    "    STATE[0] += 3",
    "    return STATE[0]",
    "",
    "",
]


def generate(seed: int) -> Module:
    writer = _Writer(seed)
    text, tags = writer.module()
    rng = writer.rng
    module = Module(seed, text, tags=tags)
    style = rng.randrange(12)
    if style == 0 and "\uff44" not in text:
        module.encoding = "latin-1"
        module.text = "# -*- coding: latin-1 -*-\n# caf\u00e9\n" + module.text
        module.tags.add("encoding:latin-1")
    elif style == 1:
        module.bom = True
        module.tags.add("encoding:bom")
    elif style == 2:
        module.ending = "\r\n"
        module.tags.add("ending:crlf")
    elif style == 3:
        module.ending = "\r"
        module.tags.add("ending:cr")
    elif style == 4:
        module.text = _reindent(module.text, "\t")
        module.tags.add("indent:tab")
    elif style == 5:
        module.text = _reindent(module.text, "  ")
        module.tags.add("indent:two")
    return module


def _reindent(text: str, unit: str) -> str:
    """Statement indentation in ``unit``s (continuation lines keep theirs: any
    indentation will do inside brackets and after a backslash)."""
    out = []
    continued = in_string = False
    depth = 0
    for line in text.split("\n"):
        stripped = line.lstrip(" ")
        width = len(line) - len(stripped)
        if not continued and stripped:
            out.append(unit * (width // 4) + " " * (width % 4) + stripped)
        else:
            out.append(line)
        code = line.split("#")[0]
        depth += code.count("(") + code.count("[") - code.count(")") - code.count("]")
        in_string ^= line.count('"""') % 2 == 1
        continued = depth > 0 or line.endswith("\\") or in_string
    return "\n".join(out)
