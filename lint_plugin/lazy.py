"""A module imported when it is first used, not where it is named.

The rule modules are read on every run for their declarations (``RULE``,
``NEEDS``: the pre-filter's words), also by a run that finds nothing to parse;
what they decide with (the engine: most of what a cold run imports) is needed
only for a file the byte test lets through. So a rule names its engine modules
with ``lazy`` (stdlib ``importlib.util.LazyLoader``): the module is found now and
executed on its first attribute access.
"""

from __future__ import annotations

import importlib.util
import sys
import types


def lazy(name: str) -> types.ModuleType:
    """The module ``name``, executed when an attribute of it is first read (at
    once if it is imported already)."""
    found = sys.modules.get(name)
    if found is not None:
        return found
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module
