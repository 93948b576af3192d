"""``ast.walk`` without its per-node generators.

``ast.walk`` runs two nested generators (``iter_child_nodes``,
``iter_fields``) for every node it reaches; the rules walk the large classes of
a backend many times over, and there that overhead was most of the walking
(~0.4 us a node against ~0.2 here). Same nodes, same (breadth-first) order,
each node's children queued before it is handed out, as ``ast.walk`` does.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator

_AST = ast.AST


def walk_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """What ``ast.walk(node)`` yields, in its order."""
    todo = deque((node,))
    pop = todo.popleft
    push = todo.append
    while todo:
        node = pop()
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, _AST):
                push(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, _AST):
                        push(item)
        yield node
