"""KVI003's message says what is true of the class: a counterexample only where
an instance can reach it; otherwise what the row's fit rests on (a refusal of
``topk > 1`` in ``__init__``, the token-count premise of SGLang's draft graph
runner). The finding itself never moves, and ``check --explain`` heads with the
position ``check`` reports."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from rule_snippets import EVERY_RULE

from lint_plugin.cli import main
from lint_plugin.explain import explain
from lint_plugin.linter import lint_source
from lint_plugin.rules import RULES

_CLASS = """\
import logging

import torch

logger = logging.getLogger(__name__)


class FooMultiStepDraftBackend:
    def __init__(self, model_runner, topk: int, speculative_num_steps: int):
{init}

    def init_cuda_graph_state(self, max_bs: int, max_num_tokens: int):
        self.cuda_graph_kv_indices = torch.zeros(
            (self.speculative_num_steps, {width}),
            dtype=torch.int32,
        )
{more}"""

_KEEP = ["self.topk = topk", "self.speculative_num_steps = speculative_num_steps"]
_BS = "max_bs * self.max_context_len"
_TOKENS = "max_num_tokens * self.max_context_len"


def _source(init: list[str], width: str = _BS, more: str = "") -> str:
    body = textwrap.indent("\n".join(init), " " * 8)
    return _CLASS.format(init=body, width=width, more=more)


def _kvi003(source: str) -> list:
    found = lint_source(source.encode(), "snippet.py", EVERY_RULE)
    return [f for f in found if f.code == "KVI003"]


def _message(source: str) -> str:
    (finding,) = _kvi003(source)
    return finding.message


def _witness(message: str) -> dict[str, int]:
    """The values a counterexample names (``max_bs=1, self.topk=2, ...``)."""
    inside = message.split(" (", 1)[1].split(" gives ")[0]
    return {k: int(v) for k, v in re.findall(r"([\w.]+)=(\d+)", inside)}


# Each refuses every topk above one in a statement every instance runs.
REFUSALS = [
    pytest.param(
        ["if topk > 1:", "    raise ValueError('topk=1 only')", *_KEEP],
        id="if-raise-param",
    ),
    pytest.param(
        [*_KEEP, "if not self.topk == 1:", "    raise ValueError"],
        id="not-eq-attribute",
    ),
    pytest.param(
        ["if not topk <= 1:", "    raise ValueError('topk=1 only')", *_KEEP],
        id="not-le",
    ),
    pytest.param(
        [*_KEEP, "if self.topk not in (0, 1):", "    raise ValueError"], id="not-in"
    ),
    pytest.param(
        [*_KEEP, "if self.topk != 1:", "    raise NotImplementedError"], id="if-ne"
    ),
    pytest.param(
        ["if not topk < 2:", "    logger.error('no')", "    raise ValueError", *_KEEP],
        id="not-lt",
    ),
    pytest.param(
        ["if topk == 1:", "    pass", "else:", "    raise ValueError", *_KEEP],
        id="else-raises",
    ),
    pytest.param(
        [
            "if topk > 4:",
            "    raise ValueError",
            "elif topk > 1:",
            "    raise ValueError",
            *_KEEP,
        ],
        id="elif",
    ),
    pytest.param(
        [
            "self.topk, self.speculative_num_steps = topk, speculative_num_steps",
            "if not (topk == 1 or topk == 0):",
            "    raise ValueError",
        ],
        id="tuple-assign",
    ),
    pytest.param(
        [
            "self.model_runner = model_runner",
            *_KEEP,
            "if not (self.topk < 2 and model_runner is not None):",
            "    raise ValueError",
        ],
        id="and-other-test",
    ),
]

# None of these makes every instance's topk at most one.
NOT_REFUSALS = [
    pytest.param(
        [*_KEEP, "if model_runner.flag:", "    if self.topk > 1:", "        raise E"],
        id="in-a-branch",
    ),
    pytest.param(
        [*_KEEP, "if self.page_size > 1:", "    raise E"], id="other-attribute"
    ),
    pytest.param(
        [*_KEEP, "if speculative_num_steps > 1:", "    raise E"], id="other-parameter"
    ),
    # `python -O` drops an assert: no refusal every run makes.
    pytest.param([*_KEEP, "assert self.topk == 1"], id="assert"),
    pytest.param(["assert topk <= 1, 'topk=1 only'", *_KEEP], id="assert-parameter"),
    pytest.param(
        [*_KEEP, "if topk > 1:", "    logger.warning('topk > 1 is slow')"],
        id="warning-only",
    ),
    pytest.param(
        [
            *_KEEP,
            "if model_runner is None:",
            "    return",
            "if topk > 1:",
            "    raise E",
        ],
        id="after-early-return",
    ),
    pytest.param(
        [
            *_KEEP,
            "try:",
            "    if topk > 1:",
            "        raise E",
            "except E:",
            "    pass",
        ],
        id="in-try",
    ),
    pytest.param(
        ["if self.topk > 1:", "    raise E", *_KEEP], id="attribute-before-kept"
    ),
    pytest.param([*_KEEP, "if topk > 2:", "    raise E"], id="allows-two"),
    pytest.param([*_KEEP, "if topk > 4:", "    raise ValueError"], id="allows-some"),
    pytest.param(
        [*_KEEP, "if not (topk == 1 or model_runner.ok):", "    raise E"],
        id="or-other-test",
    ),
    pytest.param(
        ["if topk > 1:", "    raise ValueError", "topk = topk or 2", *_KEEP],
        id="parameter-rebound",
    ),
    pytest.param(
        [
            "if topk > 1:",
            "    raise E",
            "self.topk = model_runner.topk",
            "self.speculative_num_steps = 2",
        ],
        id="keeps-another-value",
    ),
    # A base's __init__ run after it may keep another topk.
    pytest.param(
        [*_KEEP, "if self.topk > 1:", "    raise E", "super().__init__(model_runner)"],
        id="base-init-after",
    ),
]

_REFUSAL_ELSEWHERE = """
    def check_topk(self):
        if self.topk > 1:
            raise ValueError
"""

_REBOUND_ELSEWHERE = """
    def set_topk(self, topk):
        self.topk = topk
"""


@pytest.mark.parametrize("init", REFUSALS)
def test_a_class_refusing_topk_above_one_gets_no_counterexample(init) -> None:
    message = _message(_source(init))
    assert (
        "only while topk <= 1, which FooMultiStepDraftBackend.__init__ enforces (row "
    ) in message
    assert "a subclass or a change that lifts it would overflow the row" in message
    assert "self.topk=2" not in message and "gives" not in message
    # Still a finding, with its fix: upstream sizes the row with the helper.
    assert message.endswith(
        ": size it with draft_kv_indices_buffer_width(num_seqs, topk, max_context_len)"
    )


def test_the_refusal_row_is_the_refusing_statement() -> None:
    source = _source(["if topk > 1:", "    raise ValueError", *_KEEP])
    row = next(
        i for i, line in enumerate(source.splitlines(), 1) if "if topk > 1" in line
    )
    assert f"(row {row};" in _message(source)


@pytest.mark.parametrize(
    ("init", "more"),
    [
        *((p.values[0], "") for p in NOT_REFUSALS),
        ([*_KEEP], _REFUSAL_ELSEWHERE),
        ([*_KEEP, "if self.topk > 1:", "    raise E"], _REBOUND_ELSEWHERE),
    ],
    ids=[p.id for p in NOT_REFUSALS] + ["another-method", "rebound-elsewhere"],
)
def test_what_is_no_refusal_keeps_the_counterexample(init, more) -> None:
    message = _message(_source(init, more=more))
    assert "enforces" not in message
    assert "can be less than num_seqs * topk * max_context_len (" in message
    assert _witness(message)["self.topk"] == 2


_REFUSING = ["if topk > 1:", "    raise ValueError", *_KEEP]
_HEADER = "class FooMultiStepDraftBackend:"


# Each lets an instance keep a topk above one in a way `__init__` does not show.
OPEN_TO_CHANGE = [
    pytest.param(
        _source(_REFUSING) + "\n\nclass Wide(FooMultiStepDraftBackend):\n"
        "    def __init__(self, topk):\n        self.topk = topk\n",
        id="subclass-in-the-file",
    ),
    pytest.param(
        _source(_REFUSING)
        + "\n\nclass Wide(\n    FooMultiStepDraftBackend,\n):\n    topk = 4\n",
        id="subclass-header-on-lines",
    ),
    pytest.param(_source([*_REFUSING, "widen(self)"]), id="instance-handed-on"),
    pytest.param(
        _source(_REFUSING, more="\n    def me(self):\n        return self\n"),
        id="instance-returned",
    ),
    pytest.param(
        _source(_REFUSING).replace(_HEADER, "class FooMultiStepDraftBackend(Mixin):"),
        id="a-base",
    ),
    pytest.param(
        _source(_REFUSING).replace(
            _HEADER, "class FooMultiStepDraftBackend(metaclass=Meta):"
        ),
        id="a-metaclass",
    ),
    pytest.param(
        _source(_REFUSING).replace(_HEADER, "@swap\n" + _HEADER), id="class-decorator"
    ),
    pytest.param(
        _source(_REFUSING).replace(
            "    def __init__", "    @swallow\n    def __init__"
        ),
        id="init-decorator",
    ),
    pytest.param(_source([*_REFUSING, "self.__dict__['topk'] = 4"]), id="through-dict"),
    pytest.param(_source([*_REFUSING, "setattr(self, 'top' + 'k', 4)"]), id="setattr"),
    pytest.param(
        _source(_REFUSING) + "\n\nFooMultiStepDraftBackend.__init__ = other_init\n",
        id="patched-after",
    ),
]


def test_an_instance_made_in_the_file_keeps_the_refusal() -> None:
    source = _source(_REFUSING) + "\n\nBACKEND = FooMultiStepDraftBackend(None, 1, 2)\n"
    assert "FooMultiStepDraftBackend.__init__ enforces" in _message(source)


@pytest.mark.parametrize("source", OPEN_TO_CHANGE)
def test_a_class_open_to_another_topk_keeps_the_counterexample(source: str) -> None:
    message = _message(source)
    assert "enforces" not in message
    assert _witness(message)["self.topk"] == 2


def test_a_row_too_small_even_for_topk_one_gets_a_reachable_counterexample() -> None:
    """The refusal bounds the topk, not the row: the values shown keep topk 1."""
    init = ["if topk > 1:", "    raise ValueError", *_KEEP]
    message = _message(_source(init, "(max_bs - 1) * self.max_context_len"))
    assert "can be less than" in message and "enforces" not in message
    values = _witness(message)
    assert values["self.topk"] == 1
    assert (values["max_bs"] - 1) * values["self.max_context_len"] < (
        values["max_bs"] * values["self.max_context_len"]
    )


def test_a_path_only_a_refused_topk_takes_does_not_hide_a_reachable_one() -> None:
    source = _source(["if topk > 1:", "    raise ValueError", *_KEEP], "width").replace(
        "        self.cuda_graph_kv_indices",
        "        if self.topk > 1:\n"
        f"            width = {_BS}\n"
        "        else:\n"
        "            width = (max_bs - 1) * self.max_context_len\n"
        "        self.cuda_graph_kv_indices",
    )
    message = _message(source)
    assert "enforces" not in message
    assert _witness(message)["self.topk"] == 1


def test_a_token_count_row_names_the_premise_it_rests_on() -> None:
    message = _message(_source(_KEEP, _TOKENS))
    assert (
        "fits num_seqs * topk * max_context_len only while max_num_tokens is at "
        "least num_seqs * topk (SGLang's draft graph runner passes max_bs * topk; "
        "the class does not check it)"
    ) in message
    assert "max_num_tokens=1" not in message and "gives" not in message


@pytest.mark.parametrize(
    "width",
    [
        f"({_TOKENS}) // 2",
        "(max_num_tokens - 1) * self.max_context_len",
        "max_num_tokens * self.max_context_len - max_bs",
    ],
)
def test_a_token_count_too_small_under_the_premise_keeps_a_counterexample(
    width: str,
) -> None:
    """The values shown are ones the graph runner passes: tokens = count * topk."""
    message = _message(_source(_KEEP, width))
    assert "is at least" not in message and "can be less than" in message
    values = _witness(message)
    count = values.get("max_bs", values.get("num_seqs"))
    assert values["max_num_tokens"] == count * values["self.topk"]


def test_a_refusing_class_with_a_token_count_row_rests_on_the_refusal() -> None:
    """With topk 1 a token count covers its sequences: no premise needed."""
    init = ["if topk > 1:", "    raise ValueError", *_KEEP]
    message = _message(_source(init, _TOKENS))
    assert "enforces (row" in message and "is at least" not in message


@pytest.mark.parametrize(
    ("init", "width"),
    [
        (_KEEP, _BS),
        (["if topk > 1:", "    raise ValueError", *_KEEP], _BS),
        (_KEEP, _TOKENS),
    ],
)
def test_the_finding_and_its_fix_do_not_move(init, width) -> None:
    """Only the message changes: at the width, with the helper's unsafe fix."""
    source = _source(init, width)
    (finding,) = _kvi003(source)
    row = next(
        i
        for i, line in enumerate(source.splitlines(), 1)
        if "(self.speculative_num_steps, " in line
    )
    column = source.splitlines()[row - 1].index(width) + 1
    assert (finding.row, finding.column) == (row, column)
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    assert "draft_kv_indices_buffer_width(max_bs, self.topk" in (
        finding.fix.edits[0].content
    )


# --- check --explain heads with the position check reports ------------------

KVI003_RULE = RULES["KVI003"]
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _explain_cases():
    for index, example in enumerate(KVI003_RULE.invalid):
        yield pytest.param(example.code, id=f"invalid-{index}")
    for name in ("flashinfer_mla_backend", "triton_backend"):
        text = (FIXTURES / f"{name}.py").read_text()
        yield pytest.param(text, id=f"fixture-{name}")
    yield pytest.param(
        _source(["if topk > 1:", "    raise ValueError", *_KEEP]), id="refusal"
    )
    yield pytest.param(
        _source(_KEEP, more="").replace(
            f"{_BS}\n", "self._alloc(\n                max_bs\n            )\n"
        )
        + "\n    def _alloc(self, n):\n        return n * self.max_context_len\n",
        id="width-on-a-later-line",
    )


@pytest.mark.parametrize("source", _explain_cases())
def test_explain_heads_with_the_row_and_column_check_reports(
    source: str, tmp_path: Path, capsys
) -> None:
    path = tmp_path / "b.py"
    path.write_text(source)
    status = main(
        [
            "check",
            "--no-config",
            "--select",
            "KVI003",
            "--output-format",
            "json",
            str(path),
        ]
    )
    found = json.loads(capsys.readouterr().out)
    assert status == 1 and found
    for finding in found:
        row, column = finding["location"]["row"], finding["location"]["column"]
        report, verdict = explain(source, str(path), row)
        heads = [
            line.split(" ", 1)[0]
            for line in report.splitlines()
            if line.startswith(str(path))
        ]
        assert f"{path}:{row}:{column}:" in heads
        assert verdict == "unsized"


def test_explain_says_what_the_message_says(tmp_path: Path) -> None:
    """No counterexample in explain that the message withholds."""
    source = _source(["if topk > 1:", "    raise ValueError", *_KEEP])
    (finding,) = _kvi003(source)
    report, _ = explain(source, "b.py", finding.row)
    assert "__init__ enforces (row" in report and "self.topk=2" not in report
    report, _ = explain(_source(_KEEP, _TOKENS), "b.py", finding.row)
    assert "max_num_tokens is at least num_seqs * topk" in report
    assert "max_num_tokens=1" not in report
