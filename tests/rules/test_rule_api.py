"""A new rule is one module: its declaration and its decision, through the rule API.

The scratch copy of the package gets one more rule module, over a fact no rule
reads today (a device synchronize in a draft backend), with a module constant
inside its ``NEEDS``: ``check`` finds it, and the catalogue, the byte test and the
regions follow from the module alone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

RULE_MODULE = '''\
"""KVI010: a device synchronize in a draft backend (a scratch rule)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from lint_plugin.engine.vocabulary import Needs
from lint_plugin.rules._rule import Example, Rule

if TYPE_CHECKING:
    from lint_plugin.engine.checker import Checker

_SYNC = "synchronize"

# A synchronize call, in a class read whole (a possible draft backend).
NEEDS = Needs((((_SYNC,),),), where="class", facts=(_SYNC,))

RULE = Rule(
    code="KVI010",
    name="draft-backend-synchronize",
    message="`{text}` stalls the draft loop",
    fix_title=None,
    fix_safety=None,
    doc="## What it does\\nFinds a device synchronize in a draft backend.\\n",
    valid=(Example("torch.cuda.synchronize()\\n"),),
    invalid=(),
)


def decide(checker: Checker) -> None:
    for cls in checker.facts.classes:
        if not cls.is_draft_backend:
            continue
        for node in ast.walk(cls.node):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == _SYNC:
                text = checker.source.segment(node)
                checker.add("KVI010", checker.span(node), RULE.message.format(text=text))
'''

BACKEND = """\
import torch


class FooMultiStepDraftBackend:
    def __init__(self, topk, speculative_num_steps):
        self.topk = topk
        self.speculative_num_steps = speculative_num_steps

    def init_forward_metadata(self, forward_batch):
        x = 1
        torch.cuda.synchronize()
        return x
"""


def _scratch(tmp_path: Path, with_rule: bool) -> Path:
    """A copy of the package (``rules/`` where an install puts it), with the
    scratch rule or without."""
    copy = tmp_path / ("with" if with_rule else "without")
    shutil.copytree(
        ROOT / "lint_plugin",
        copy / "lint_plugin",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copytree(
        ROOT / "rules",
        copy / "lint_plugin" / "rules",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    if with_rule:
        (copy / "lint_plugin" / "rules" / "kvi010_draft_synchronize.py").write_text(
            RULE_MODULE
        )
    return copy


def _check(copy: Path, target: Path) -> tuple[int, list[dict]]:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\nfrom lint_plugin.cli import main\nsys.exit(main(sys.argv[1:]))",
            "check",
            "--no-cache",
            "--no-config",
            "--output-format",
            "json",
            str(target),
        ],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.stderr == "", run.stderr
    return run.returncode, json.loads(run.stdout)


def test_a_rule_module_alone_adds_a_rule(tmp_path: Path) -> None:
    target = tmp_path / "foo_backend.py"
    target.write_text(BACKEND)
    status, found = _check(_scratch(tmp_path, with_rule=True), target)
    assert status == 1
    assert [(f["code"], f["location"]["row"]) for f in found] == [("KVI010", 11)]
    assert found[0]["message"] == "`torch.cuda.synchronize()` stalls the draft loop"
    # Without the module, the same file holds nothing.
    assert _check(_scratch(tmp_path, with_rule=False), target) == (0, [])
