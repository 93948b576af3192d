"""pytest-xdist's ``--dist loadgroup`` groups, kept on pytest 9 (a conftest hook)."""

from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    """``--dist loadgroup``'s groups, which pytest-xdist 3.8 loses on pytest 9.

    xdist's worker writes ``item._nodeid`` (``<id>@<group>``), the suffix its
    scheduler groups by; pytest 9 keeps a node's id in ``_id``, so every group
    mark is ignored and the tests that share a session's work (the pre-commit
    environment, prove's grid) are split over the workers. Upstream:
    pytest-dev/pytest-xdist#1386 (fix proposed in #1388). This does what the
    worker's hook meant to, only where the suffix is missing."""
    # Set by xdist on its workers only (their collection is what it schedules).
    if not getattr(config.option, "loadgroup", False) or not hasattr(
        items[0] if items else None, "_id"
    ):
        return
    from _pytest.nodeid import coerce_node_id

    for item in items:
        names = sorted(
            {
                str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                for mark in item.iter_markers("xdist_group")
            }
        )
        tail = item.nodeid.rsplit("]", 1)[-1]
        if names and "@" not in tail:
            item._id = coerce_node_id(f"{item.nodeid}@{'_'.join(names)}")
