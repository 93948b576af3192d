"""The sizes SGLang really runs the draft index kernel at: what each verdict names.

Upstream's helpers size a draft row for a *contract*: every request's ``seq_len +
num_steps <= max_context_len``. SGLang does not keep it. A running request may
reach ``max_req_len = context_len - 1`` (``srt/managers/tp_worker.py``), and the
draft steps write ``num_steps`` slots beyond it; ``req_to_token`` rows carry
``4 + num_draft_tokens`` slots of headroom for exactly that (the "temporary fix
for the context length issue" of ``srt/mem_cache/``). That is the *wall*
envelope: ``1 <= seq_len <= max_context_len - 1``, any step count. At the wall
the kernel writes up to ``topk * (num_steps - 1)`` entries per request past what
the width helper gives; only a guard before the launch (KVI006) stops it.

So "sized" (KVI003) is a claim against the contract, and ``prove --kernel``
judges the wall unless told ``--envelope contract``. The source lines below are
found in the analysed tree when it holds them (read as text, never imported);
otherwise the releases' own lines are named.
"""

from __future__ import annotations

import re
from pathlib import Path

WALL, CONTRACT = "wall", "contract"  # prove's --envelope choices

CONTRACT_PREMISE = "every request's seq_len + num_steps <= max_context_len"
WALL_PREMISE = (
    "a drafting request's seq_len up to max_context_len - 1, "
    "then num_steps draft slots beyond it"
)
# What a sized KVI003 verdict is measured against, and what it does not cover.
SIZED_AGAINST = (
    "upstream's helper, num_seqs * topk * max_context_len, whose premise is "
    f"{CONTRACT_PREMISE}"
)
AT_THE_WALL = (
    "SGLang admits a running request up to max_req_len = context_len - 1 "
    "(srt/managers/tp_worker.py), so at the context wall the kernel writes up to "
    "topk * (num_steps - 1) more entries per request than that width: only a "
    "capacity guard before the launch (assert_buffer_fits, KVI006) stops it"
)

# Where the envelope is written in the releases checked (package-relative).
KNOWN_SOURCES = {
    "0.5.12.post1": (
        "srt/managers/tp_worker.py:305",
        "srt/model_executor/model_runner_kv_cache_mixin.py:244",
    ),
    "0.5.13": ("srt/managers/tp_worker.py:305", "srt/mem_cache/common.py:201"),
    "0.5.23": (
        "srt/managers/tp_worker.py:569",
        "srt/mem_cache/allocation_sizing.py:104",
    ),
}
_ADMISSION = "srt/managers/tp_worker.py"
_HEADROOM = (
    "srt/mem_cache/allocation_sizing.py",
    "srt/mem_cache/common.py",
    "srt/model_executor/model_runner_kv_cache_mixin.py",
    "srt/model_executor/model_runner.py",
)
_CONTEXT_MINUS_ONE = re.compile(r"\bcontext_len\s*-\s*1\b")
_HEADROOM_NOTE = "temporary fix for the context length issue"


def package_root(path: str | Path) -> Path | None:
    """The ``sglang`` folder above ``path`` (a kernel or backend of the tree)."""
    for parent in Path(path).resolve().parents:
        if parent.name == "sglang" and (parent / "srt").is_dir():
            return parent
    return None


def _line_of(path: Path, found, last: bool = False) -> int | None:
    try:
        text = path.read_text("utf-8", errors="replace")
    except OSError:
        return None
    lines = [n for n, line in enumerate(text.splitlines(), 1) if found(line)]
    if not lines:
        return None
    return lines[-1] if last else lines[0]


def sources(path: str | Path) -> tuple[str, ...]:
    """``sglang/FILE:LINE`` of the admission limit and of the req_to_token headroom
    in the tree holding ``path``; empty when the tree has neither."""
    root = package_root(path)
    if root is None:
        return ()
    found = []
    admission = root / _ADMISSION
    line = _line_of(
        admission,
        lambda text: (
            bool(_CONTEXT_MINUS_ONE.search(text)) and not text.lstrip().startswith("#")
        ),
        # 0.5.23 validates the pool with one `min(context_len - 1, ...)` and
        # returns the scheduler's limit from the last (get_worker_info).
        last=True,
    )
    if line is not None:
        found.append(f"sglang/{_ADMISSION}:{line}")
    for name in _HEADROOM:
        line = _line_of(root / name, lambda text: _HEADROOM_NOTE in text)
        if line is not None:
            found.append(f"sglang/{name}:{line}")
            break
    return tuple(found)


def known_sources() -> str:
    """The newest release's lines, for output with no tree to read them from."""
    version, where = list(KNOWN_SOURCES.items())[-1]
    return f"in sglang {version}: {', '.join(f'sglang/{w}' for w in where)}"
