"""``fix`` against a generator of our own: whole functions, run before and after.

Each generated module holds one function with one or more formulas per statement
(both helpers' formulas, near misses, longer sums), in random operand orders and
groupings, with line breaks, comments before and after operators, backslash
continuations, string literals (a docstring and a multi-line string quoting a
formula), aliases (``k = self.topk``), formulas nested in another site's argument
and repeated in one sum. ``fix`` runs on the file; then:

* the file compiles, and a second run changes nothing;
* our own interpreter (``tests/interpreter.py``, never ``eval``) gives the function
  the same value before and after, for several input bindings.

A refusal is allowed (it is counted); a wrong value, an internal error or a second
run that changes the file fails the test. With ``-s`` the counts are printed.

CI runs 2,000 functions, in four shards of 500 that pytest-xdist's workers share
(each shard draws its own functions). The long run::

    DRAFT_KV_LINT_GENERATED=50000 python -m pytest tests/test_fix_generated.py -s
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from interpreter import run_function

from lint_plugin.findings import FileError
from lint_plugin.fix import fix_file
from lint_plugin.rewrite import Options

# The engine raises the limit itself; doing it first keeps hypothesis quiet.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))
EXAMPLES = int(os.environ.get("DRAFT_KV_LINT_GENERATED", "2000"))
SHARDS = 4
SHARE = -(-EXAMPLES // SHARDS)  # each shard's functions, rounded up
# Formatting runs ruff once per wrapped statement: a fifth of the functions go
# through it, the rest are checked unwrapped (the gate is the same either way).
WRAPPED_SHARE = 5
SEEDS = (1, 2, 3)

SEQ_LENS_SUM = ["seq_lens_sum", "forward_batch.seq_lens_sum", "self.seq_lens_sum"]
TOPK = ["self.topk", "topk", "eagle_topk", "k"]  # k: an alias of self.topk
MAX_CONTEXT_LEN = ["self.max_context_len", "max_context_len", "self.model.context_len"]
COUNT = ["bs", "num_seqs", "max_bs", "forward_batch.batch_size"]
STEPS = ["num_steps", "self.speculative_num_steps", ("+", ["i", "1"])]
EXTRA = ["pad", "16", "self.page_size", ("*", ["2", "pad"])]

Node = str | tuple  # a leaf's text, or (op, [operands])


# ---- expressions -------------------------------------------------------------


def used_len(draw) -> Node:
    prefix = ("*", draw(st.permutations([pick(draw, SEQ_LENS_SUM), pick(draw, TOPK)])))
    bs: list[Node] = [pick(draw, COUNT)]
    if draw(st.booleans()):
        bs.append(pick(draw, TOPK))  # bs spelled num_seqs * topk
    if draw(st.integers(0, 5)) == 0:
        bs = [("call", "abs", buffer_width(draw))]  # a formula nested in an argument
    drafts = ("*", draw(st.permutations([*bs, pick(draw, STEPS)])))
    return ("+", [prefix, drafts])


def buffer_width(draw) -> Node:
    factors = [pick(draw, COUNT), pick(draw, TOPK), pick(draw, MAX_CONTEXT_LEN)]
    return ("*", draw(st.permutations(factors)))


def near_miss(draw) -> Node:
    sls, topk, count = pick(draw, SEQ_LENS_SUM), pick(draw, TOPK), pick(draw, COUNT)
    steps, mcl = pick(draw, STEPS), pick(draw, MAX_CONTEXT_LEN)
    return draw(
        st.sampled_from(
            [
                ("+", [sls, ("*", [count, steps])]),
                ("+", [("*", [sls, topk]), ("*", [topk, steps])]),  # bs is a topk
                ("-", [("*", [sls, topk]), ("*", [count, steps])]),
                ("*", [count, mcl]),
                ("*", [count, topk, mcl, "2"]),
                ("+", [("*", [count, topk]), "1"]),
            ]
        )
    )


def formula(draw) -> Node:
    kind = draw(st.integers(0, 9))
    if kind < 4:
        return used_len(draw)
    if kind < 7:
        return buffer_width(draw)
    return near_miss(draw)


def expression(draw) -> Node:
    """A formula alone, in a longer sum, or twice in one sum."""
    shape = draw(st.integers(0, 5))
    if shape <= 2:
        return formula(draw)
    terms: list[Node] = [formula(draw)]
    if shape == 5:
        terms.append(formula(draw))  # two formulas, maybe the same one twice
    extra = draw(st.integers(0 if shape == 5 else 1, 2))
    terms += [pick(draw, EXTRA) for _ in range(extra)]
    flat: list[Node] = []
    for term in draw(st.permutations(terms)):
        # Spread a sum's own terms so its pair can sit among the others.
        flat += term[1] if isinstance(term, tuple) and term[0] == "+" else [term]
    return ("+", draw(st.permutations(flat)))


def pick(draw, options: list) -> Node:
    return draw(st.sampled_from(options))


# ---- layout -----------------------------------------------------------------

INDENT = "        "


def render(draw, node: Node, layout: str) -> str:
    """Source text for ``node``: ``layout`` says what may separate operands here:
    ``paren`` (inside brackets: line breaks and comments), ``backslash`` (a
    backslash continuation), ``flat``."""
    if isinstance(node, str):
        return node
    if node[0] == "call":
        inner = render(draw, node[2], "paren")
        return f"{node[1]}({inner})"
    op, operands = node
    parts = [_operand(draw, operand, op, layout) for operand in operands]
    if op == "-" or len(parts) < 2:
        return f" {op} ".join(parts)
    # A random grouping: join neighbours, maybe in parentheses, until one is left.
    while len(parts) > 1:
        index = draw(st.integers(0, len(parts) - 2))
        grouped = draw(st.booleans())
        here = "paren" if grouped else layout
        joined = parts[index] + separator(draw, op, here) + parts[index + 1]
        if grouped:
            joined = f"({joined})"
        parts[index : index + 2] = [joined]
    return parts[0]


def _operand(draw, operand: Node, op: str, layout: str) -> str:
    compound = isinstance(operand, tuple) and operand[0] in ("+", "-", "*")
    wrap = compound and (
        operand[0] == "-" or (operand[0] == "+" and op == "*") or draw(st.booleans())
    )
    if wrap:
        return f"({render(draw, operand, 'paren')})"
    return render(draw, operand, layout)


def separator(draw, op: str, layout: str) -> str:
    choices = [f" {op} "]
    if layout == "paren":
        choices += [
            f"\n{INDENT}{op} ",
            f"  # before {op}\n{INDENT}{op} ",
            f" {op}  # after {op}\n{INDENT}",
        ]
    elif layout == "backslash":
        choices += [f" \\\n{INDENT}{op} ", f" {op} \\\n{INDENT}"]
    return draw(st.sampled_from(choices))


@st.composite
def function(draw) -> str:
    lines = ["def f(self, forward_batch, seq_lens_sum, bs, num_seqs, max_bs, i):"]
    if draw(st.booleans()):
        lines.append(
            '    """Sizes, as `seq_lens_sum * self.topk + bs * num_steps` says."""'
        )
    if draw(st.booleans()):
        lines.append("    k = self.topk")
    else:
        lines.append("    k = 3")  # a plain local: `k` is no topk then
    names: list[str] = []
    for index in range(draw(st.integers(1, 4))):
        count = draw(st.integers(1, 3))  # formulas in this statement
        texts = []
        for _ in range(count):
            layout = draw(st.sampled_from(["flat", "paren", "backslash"]))
            text = render(draw, expression(draw), layout)
            if layout == "paren" or (count > 1 and layout != "backslash"):
                text = f"(\n{INDENT}{text}\n    )" if "\n" in text else f"({text})"
            texts.append(text)
        targets = [f"v{index}_{n}" for n in range(count)]
        if draw(st.integers(0, 5)) == 0:
            # A string literal spanning lines right before the formula.
            texts[0] = f'("""kv used:\n""", {texts[0]})'
        lines.append(f"    {', '.join(targets)} = {', '.join(texts)}")
        names += targets
    lines.append(f"    return ({', '.join(names)},)")
    return "\n".join(lines) + "\n"


# ---- the property -------------------------------------------------------------


# Most files are LF with four spaces; the rest say whether their style survives.
ENDINGS = ["\n"] * 6 + ["\r\n", "\r"]
UNITS = ["    "] * 6 + ["  ", "\t"]
_LINE_END = re.compile(r"\r\n|\r|\n")


def restyle(source: str, ending: str, unit: str) -> str:
    """``source`` with ``ending`` line endings and ``unit`` for its statement
    indentation (continuation lines keep theirs: inside brackets any will do)."""
    if unit != "    ":
        source = re.sub(r"^    (?=\S)", unit, source, flags=re.M)
    return source.replace("\n", ending)


COUNTS: Counter[str] = Counter()
HELPERS = "lint_plugin.runtime"


def _values(text: str) -> list[object]:
    module = ast.parse(text)
    return [run_function(module, "f", seed) for seed in SEEDS]


@pytest.mark.parametrize("shard", range(SHARDS))
def test_generated_functions_keep_their_values(shard: int) -> None:
    COUNTS.clear()
    # A memory-backed folder where there is one: every rewrite is an fsync'd write.
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    folder = Path(tempfile.mkdtemp(prefix=f"kvi-generated-{shard}-", dir=shm))

    @settings(
        max_examples=SHARE,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        function(),
        st.integers(0, WRAPPED_SHARE - 1),
        st.sampled_from(ENDINGS),
        st.sampled_from(UNITS),
    )
    def run(source: str, wrap: int, ending: str, unit: str) -> None:
        COUNTS["functions"] += 1
        options = Options(helpers_module=HELPERS, wrap=wrap == 0)
        path = folder / "generated.py"
        source = restyle(source, ending, unit)
        path.write_bytes(source.encode())
        expected = _values(source)
        try:
            outcome = fix_file(str(path), options, write=True)
        except Exception:
            COUNTS["internal errors"] += 1
            raise
        written = path.read_bytes().decode()
        if isinstance(outcome, FileError):
            COUNTS["refusals"] += 1
            assert written == source, "a refused file was changed"
            return
        _, after, rewrite = outcome
        assert written == (after if rewrite.changed else source)
        COUNTS["rewrites"] += len(rewrite.applied)
        COUNTS["rewritten functions"] += bool(rewrite.changed)
        compile(written, str(path), "exec")  # compiles; never run
        assert set(_LINE_END.findall(written)) <= {ending}  # each line's own
        if _values(written) != expected:
            COUNTS["unequal"] += 1
            raise AssertionError(f"values changed:\n{source}\n---\n{written}")
        again = fix_file(str(path), options, write=False)
        if isinstance(again, FileError) or again[2].changed:
            COUNTS["non-idempotent"] += 1
            raise AssertionError(f"second run changes:\n{written}")

    try:
        run()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        print(
            f"\ngenerated (shard {shard + 1}/{SHARDS}): {COUNTS['functions']} functions, "
            f"{COUNTS['rewrites']} rewrites in {COUNTS['rewritten functions']} "
            f"functions, {COUNTS['refusals']} refusals, {COUNTS['unequal']} unequal, "
            f"{COUNTS['internal errors']} internal errors, "
            f"{COUNTS['non-idempotent']} non-idempotent"
        )
    assert COUNTS["functions"] >= min(SHARE, 500) * 0.9
    assert COUNTS["rewrites"] > COUNTS["functions"]  # the generator finds sites
