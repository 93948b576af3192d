"""hypothesmith's strategies, each built once per process and only when drawn.

``from_grammar()`` builds a Lark parser of Python's grammar: about 4 s of CPU, paid
at import by every module that decorates a test with it, in every pytest-xdist
worker, whether or not that worker runs the test. Deferred, it is built where a
test draws from it, once for the three modules that do. The strategies are
hypothesmith's own, so the programs drawn are the same.
"""

from __future__ import annotations

import functools

from hypothesis import strategies as st


@functools.cache
def _grammar() -> st.SearchStrategy[str]:
    import hypothesmith

    return hypothesmith.from_grammar()


@functools.cache
def _node() -> st.SearchStrategy[str]:
    import hypothesmith

    return hypothesmith.from_node()


def from_grammar() -> st.SearchStrategy[str]:
    """``hypothesmith.from_grammar()``: modules from Python's grammar."""
    return st.deferred(lambda: _grammar())


def from_node() -> st.SearchStrategy[str]:
    """``hypothesmith.from_node()``: modules from libcst's node types."""
    return st.deferred(lambda: _node())
