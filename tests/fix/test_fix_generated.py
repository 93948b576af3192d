"""``fix`` against an oracle it does not share code with: CPython running the module.

Modules come from ``generated_modules.py`` (names, scopes, placements, side
effects, annotations, docstrings, encodings and layouts real modules have). Each
is fixed in place; every file ``fix`` writes is then run, with its original, in a
child Python (``oracle_child.py``: stub helpers computed from their formulas,
arguments drawn from a seed), and the two must behave identically: the import's
outcome, the module's values, every function's and method's result, the
annotations and docstrings. Many pairs share one child process.

For every written file, also: it compiles, a second run changes nothing (every
third file: the long run is long), it has no more findings of any KVI rule than
the original but the formulas left, its encoding, BOM and line
endings are the original's, every comment of the original is still there
character for character, and no line outside the rewritten statements (and the
helpers' import) changed. A refusal must leave the file byte-identical and be one
line. With ``-s`` the counts are printed: files written, unchanged, refused (by
reason, names and positions left out), unequal.

CI runs 2,000 modules, in four shards of 500 that pytest-xdist's workers share
(each shard its own seeds). The long run (``-p no:xdist`` shows the counts)::

    DRAFT_KV_LINT_GENERATED=50000 python -m pytest tests/fix/test_fix_generated.py -s \
        -p no:xdist
"""

from __future__ import annotations

import base64
import codecs
import difflib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tokenize
from collections import Counter
from pathlib import Path

import pytest
from generated_modules import HELPERS_MODULE, generate

from lint_plugin.engine.settings import Settings
from lint_plugin.findings import FileError
from lint_plugin.fix.command import fix_file
from lint_plugin.fix.rewrite import Options
from lint_plugin.linter import lint_source

sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))
EXAMPLES = int(os.environ.get("DRAFT_KV_LINT_GENERATED", "2000"))
FIRST_SEED = int(os.environ.get("DRAFT_KV_LINT_GENERATED_SEED", "0"))
SHARDS = 4
SHARE = -(-EXAMPLES // SHARDS)  # each shard's modules, rounded up
# Formatting runs ruff: a fifth of the modules go through it, the rest are
# written unwrapped (the gate is the same either way).
WRAPPED_SHARE = 5
# A second run on every third written file (the long run's modules are many).
AGAIN_SHARE = 3
BATCH = 250  # pairs per child process
CHILD = Path(__file__).parents[1] / "oracle_child.py"
SETTINGS = Settings(helpers_module=HELPERS_MODULE)


class Oracle:
    """Pairs sent to child processes a batch at a time, at most two running;
    the first few unequal pairs are kept to be shown."""

    def __init__(self) -> None:
        self.batch: list[dict] = []
        self.running: list[tuple[subprocess.Popen, dict[int, tuple[bytes, bytes]]]] = []
        self.compared = 0
        self.unequal: list[tuple[dict, bytes, bytes]] = []
        self.count_unequal = 0

    def add(self, seed: int, before: bytes, after: bytes) -> None:
        self.batch.append({"id": seed, "seed": seed, "before": before, "after": after})
        if len(self.batch) == BATCH:
            self.flush()

    def flush(self) -> None:
        if self.batch:
            sources = {p["id"]: (p["before"], p["after"]) for p in self.batch}
            wire = [
                {**p, "before": _b64(p["before"]), "after": _b64(p["after"])}
                for p in self.batch
            ]
            self.running.append((start_child(wire), sources))
            self.batch = []
        while len(self.running) > 2:
            self.collect()

    def collect(self) -> None:
        child, sources = self.running.pop(0)
        output, _ = child.communicate()
        assert child.returncode == 0, "the oracle's child failed"
        for line in output.splitlines():
            result = json.loads(line)
            self.compared += 1
            if not result["equal"]:
                self.count_unequal += 1
                if len(self.unequal) < 3:
                    self.unequal.append((result, *sources[result["id"]]))

    def finish(self) -> None:
        self.flush()
        while self.running:
            self.collect()

    def stop(self) -> None:
        for child, _ in self.running:
            if child.poll() is None:
                child.kill()
                child.wait()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.mark.parametrize("shard", range(SHARDS))
def test_fix_keeps_what_generated_modules_do(shard: int) -> None:
    seeds = range(
        FIRST_SEED + shard * SHARE, FIRST_SEED + min((shard + 1) * SHARE, EXAMPLES)
    )
    counts: Counter[str] = Counter()
    refusals: Counter[str] = Counter()
    problems: dict[str, tuple[int, str]] = {}
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    folder = Path(tempfile.mkdtemp(prefix=f"kvi-oracle-{shard}-", dir=shm))
    path = folder / "generated.py"
    oracle = Oracle()
    try:
        for seed in seeds:
            module = generate(seed)
            data = module.data()
            compile(data, "generated.py", "exec", dont_inherit=True)  # valid Python
            path.write_bytes(data)
            options = Options(
                helpers_module=HELPERS_MODULE, wrap=seed % WRAPPED_SHARE == 0
            )
            outcome = fix_file(str(path), options, write=True)
            after = path.read_bytes()
            if isinstance(outcome, FileError):
                counts["refused"] += 1
                refusals[reason(outcome.reason)] += 1
                assert after == data, f"seed {seed}: a refused file was changed"
                assert "\n" not in str(outcome) and "\r" not in str(outcome), seed
                continue
            if not outcome[2].changed:
                counts["unchanged"] += 1
                assert after == data
                continue
            counts["written"] += 1
            counts["sites"] += len(outcome[2].applied)
            again = seed % AGAIN_SHARE == 0
            for problem in problems_of(module, data, after, options, again):
                counts[problem.split(":")[0]] += 1
                problems.setdefault(problem.split(":")[0], (seed, problem))
            oracle.add(seed, data, after)
        oracle.finish()
    finally:
        oracle.stop()
        shutil.rmtree(folder, ignore_errors=True)
        print(
            f"\ngenerated modules (shard {shard + 1}/{SHARDS}, seeds {seeds.start}-"
            f"{seeds.stop - 1}): {len(seeds)}; written {counts['written']} "
            f"({counts['sites']} sites), unchanged {counts['unchanged']}, refused "
            f"{counts['refused']}, compared {oracle.compared}, unequal "
            f"{oracle.count_unequal}"
        )
        for why, number in refusals.most_common():
            print(f"  refused {number:6d}: {why}")
        for kind, (seed, problem) in sorted(problems.items()):
            print(
                f"  written but {kind}: {counts[kind]} (first: seed {seed}: {problem})"
            )
    if oracle.unequal:
        result, before, after = oracle.unequal[0]
        raise AssertionError(
            f"{oracle.count_unequal} written files behave differently; seed "
            f"{result['id']}: {result['first']}\n--- original\n"
            f"{before.decode('latin-1')}\n--- written\n{after.decode('latin-1')}"
        )
    assert not problems, f"written files with problems: {sorted(problems)}"
    assert oracle.compared == counts["written"]
    assert counts["written"] > len(seeds) // 2  # the generator finds sites


def start_child(batch: list[dict]) -> subprocess.Popen:
    child = subprocess.Popen(
        [sys.executable, str(CHILD)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=tempfile.gettempdir(),
    )
    child.stdin.write(json.dumps(batch))
    child.stdin.close()
    child.stdin = None  # communicate() must not write again
    return child


_VARIABLE = re.compile(r"\b\d+(?::\d+)?\b|\w+\(\)|'[^']*'|\(line _\)")
_SUBJECT = re.compile(r"`(?:draft_kv_indices_\w+|_draft_kv_indices_\w+|spec_utils)`")


def reason(message: str) -> str:
    """A refusal's reason without its positions and the names it is about."""
    message = message.removeprefix("left unchanged: ").removeprefix("rewrite refused: ")
    message = _SUBJECT.sub("`name`", message)
    message = _VARIABLE.sub("_", message)
    message = re.sub(r"^_: KVI00\d: ", "", message).replace(" (_)", "")
    return message[:140]


# ---- what a written file must also be ---------------------------------------------------


def problems_of(
    module, before: bytes, after: bytes, options: Options, again: bool = True
) -> list[str]:
    """What is wrong with a written file, besides how it behaves (one word each,
    then the details); ``again``: also run fix on it a second time."""
    found = []
    try:
        compile(after, "generated.py", "exec", dont_inherit=True)
    except SyntaxError as error:
        return [f"does-not-compile: {error}"]
    if again and fix_file_bytes(after, options) != after:
        found.append("second-run-changes")
    if after.startswith(codecs.BOM_UTF8) != module.bom:
        found.append("bom")
    old_text, new_text = decoded(before), decoded(after)
    if (
        module.encoding != "utf-8"
        and old_text.split("\n", 1)[0] != new_text.split("\n", 1)[0]
    ):
        found.append("coding-cookie")
    endings = set(re.findall(r"\r\n|\r|\n", new_text))
    if not endings <= set(re.findall(r"\r\n|\r|\n", old_text)):
        found.append("line-endings")
    old_findings = findings(before)
    old = Counter(f.code for f in old_findings)
    new = Counter(f.code for f in findings(after))
    # A formula the rewrite left was in the original (the engine reports one per
    # sum at a time): only the other rules' findings may not grow.
    gained = sorted(
        code
        for code, number in new.items()
        if number > old[code] and code not in ("KVI001", "KVI002")
    )
    if gained:
        found.append(f"gains-finding: {gained}")
    missing = comments(old_text) - comments(new_text)
    if missing:
        found.append(f"comment-changed: {sorted(missing)}")
    outside = changed_outside_statements(old_text, new_text, old_findings)
    if outside:
        found.append(f"changed-outside-statements: rows {outside}")
    return found


def fix_file_bytes(data: bytes, options: Options) -> bytes:
    folder = Path(tempfile.mkdtemp(prefix="kvi-again-"))
    try:
        path = folder / "again.py"
        path.write_bytes(data)
        fix_file(str(path), options, write=True)
        return path.read_bytes()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def decoded(data: bytes) -> str:
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding).removeprefix("\ufeff")


def findings(data: bytes) -> list:
    return lint_source(decoded(data).encode(), "generated.py", SETTINGS)


def comments(text: str) -> Counter[str]:
    """Every comment, exactly (noqa directives aside: KVI100 edits those)."""
    tokens = tokenize.generate_tokens(io.StringIO(normal(text)).readline)
    return Counter(
        t.string
        for t in tokens
        if t.type == tokenize.COMMENT and "noqa" not in t.string
    )


def normal(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def changed_outside_statements(old: str, new: str, found: list) -> list[int]:
    """Rows of the original that changed though no statement holding a fixable
    finding (``found``) or the helpers' import holds them."""
    import ast

    old, new = normal(old), normal(new)
    tree = ast.parse(old)
    sites = [f for f in found if f.fix]
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        first = min(
            [node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]
        )
        last = node.end_lineno
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and body[0].lineno > node.lineno:
            last = body[0].lineno - 1  # a compound statement's header
        if (isinstance(node, ast.ImportFrom) and node.module == HELPERS_MODULE) or any(
            first <= f.row <= last for f in sites
        ):
            allowed.update(range(first, last + 1))
    outside = []
    old_lines, new_lines = old.split("\n"), new.split("\n")
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            outside += [row for row in range(i1 + 1, i2 + 1) if row not in allowed]
    return outside
