"""Each run of a class on a case once, however many comparisons read it.

Proving a rewrite runs the original class and the rewritten one on every case
(``verdict.prove_class``); a test proving both the safe and the unsafe fix of a
class, then counting the original's overruns, would run the original three
times on the same cases, each launch of upstream's kernel in triton's
interpreter costing a fifth of a second. A run is a pure function of the class
text, the case, the device and the kernel, so within ``each_run_once()`` one
call per such key runs and the others get its record (records are compared,
never changed).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from lint_plugin.proof import verdict
from lint_plugin.proof.run import ReferenceDraftKernel as Reference
from lint_plugin.proof.run import run as _run


@contextmanager
def each_run_once() -> Iterator:
    """``verdict.run`` memoised for the block; yields the memoised ``run``."""
    seen: dict[tuple, object] = {}

    def run(source, class_name, params, device="cpu", *, kernel=Reference, **options):
        if options.get("extra_names"):
            return _run(source, class_name, params, device, kernel=kernel, **options)
        key = (str(source), class_name, params, str(device), kernel, repr(options))
        if key not in seen:
            seen[key] = _run(
                source, class_name, params, device, kernel=kernel, **options
            )
        return seen[key]

    original = verdict.run
    verdict.run = run
    try:
        yield run
    finally:
        verdict.run = original
