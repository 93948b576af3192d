"""A module imported when it is first used, not where it is named.

The rule modules are read on every run for their declarations (``RULE``,
``NEEDS``: the pre-filter's words), also by a run that finds nothing to parse;
what they decide with (the engine: most of what a cold run imports) is needed
only for a file the byte test lets through. So a rule names its engine modules
with ``lazy``: a stand-in whose first attribute read imports the module, by the
ordinary import (a module that fails to import raises its own error, each time).
"""

from __future__ import annotations

import importlib
import sys
import types


class _Deferred(types.ModuleType):
    """Stands for the module of its name until an attribute is read."""

    def __getattr__(self, attribute: str):
        # Called only for what the stand-in lacks: every name of the module.
        # Read from the module each time, as it is then (a test's monkeypatch
        # of the module is seen).
        module = self.__dict__.get("_module")
        if module is None:
            module = self.__dict__["_module"] = importlib.import_module(self.__name__)
            # The module that named the stand-in then reads the module itself:
            # each read through the stand-in is a Python call, ~2% of the
            # engine's time on a draft backend (the rules read their engine
            # modules in their inner loops).
            names = self.__dict__.get("_names")
            if names is not None:
                for key, value in list(names.items()):
                    if value is self:
                        names[key] = module
        return getattr(module, attribute)


def lazy(name: str) -> types.ModuleType:
    """The module ``name`` (itself when imported already), imported when an
    attribute of it is first read; the caller's global bound to the stand-in
    is then rebound to the module."""
    found = sys.modules.get(name)
    if found is not None:
        return found
    deferred = _Deferred(name)
    deferred._names = sys._getframe(1).f_globals
    return deferred
