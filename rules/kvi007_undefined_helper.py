"""KVI007: a helper (or the guard) imported from a module of the tree that lacks it."""

from __future__ import annotations

import os

from lint_plugin.engine.vocabulary import BUFFER_WIDTH, GUARD, HELPERS, USED_LEN, Needs
from lint_plugin.findings import Fix
from lint_plugin.lazy import lazy
from lint_plugin.rules._rule import Example, Rule

TYPE_CHECKING = False  # not `typing`: the catalogue is read on every run
if TYPE_CHECKING:
    from lint_plugin.engine.checker import Checker
    from lint_plugin.engine.package_tree import Home

package_tree = lazy("lint_plugin.engine.package_tree")

# An import of either helper or of the guard.
NEEDS = Needs((((USED_LEN, BUFFER_WIDTH, GUARD),),))

_INIT = ("python/sglang/__init__.py", "")
_BACKEND = "python/sglang/srt/layers/attention/foo_backend.py"
_SPEC_UTILS = "python/sglang/srt/speculative/spec_utils.py"
_UTILS = "python/sglang/srt/layers/attention/utils.py"
_WIDTH_ONLY = """\
import torch


def draft_kv_indices_buffer_width(
    num_seqs: int, topk: int, max_context_len: int
) -> int:
    return num_seqs * topk * max_context_len
"""
_IMPORT_BOTH = (
    "from sglang.srt.speculative.spec_utils import (\n"
    "    draft_kv_indices_buffer_width,\n"
    "    draft_kv_indices_used_len,\n"
    ")\n"
)

RULE = Rule(
    code="KVI007",
    name="undefined-draft-kv-indices-helper",
    message=(
        "`{name}` is imported from {module}, which is in this tree ({shown}) "
        "and does not define it"
    ),
    fix_title="Add the definition of `{name}` to {shown}",
    fix_safety="safe",
    doc="""
## What it does
Finds an import of `draft_kv_indices_used_len`, `draft_kv_indices_buffer_width`
(from the helpers module) or `assert_buffer_fits` (from any module) whose module
is a file of the tree being checked that does not define that name. The module is
found as Python would import it with the tree's source root on `sys.path`: the
root is the folder holding the file's topmost regular package (a folder with an
`__init__.py`: `python/` in SGLang's layout, whose folders below `sglang/` are
namespace packages), the file's own folder for a file in no package, and a
relative import goes up from the file's own folder. A module missing from a
package of the tree is reported too: the import's top-level package is a folder
of the tree (sglang before 0.5.3 has no `speculative/spec_utils.py`), so the
import can only fail. A module whose package is not in the tree (an installed
sglang, the bundled `lint_plugin.runtime`) is not judged, nor one that may define
anything (a `*` import, a module `__getattr__`, a `globals()` written through, a
file that does not parse; a `globals()` only read binds nothing). An import of a
helper from a module it is not trusted from is KVI005's, not this rule's.

## Why is this bad?
It is the state a half-done migration leaves: upstream's refactor added the
helpers to `spec_utils.py` and called them from the backends; a tree that has
only the second half raises `ImportError` on the first import of a backend,
while every sizing rule (KVI001 to KVI003) is satisfied by the calls. sglang
0.5.12.post1 has neither the helpers nor `assert_buffer_fits`.

## Example
```python
# python/sglang/srt/layers/attention/triton_backend.py
from sglang.srt.speculative.spec_utils import draft_kv_indices_used_len
```
with a `python/sglang/srt/speculative/spec_utils.py` that has no
`draft_kv_indices_used_len`.

## Use instead
`spec_utils.py` defines the helper, in upstream's shape:
```python
def draft_kv_indices_used_len(
    seq_lens_sum: int, topk: int, bs: int, num_steps: int
) -> int:
    \"\"\"...\"\"\"
    return seq_lens_sum * topk + bs * num_steps
```

## Fix safety
Safe: `draft-kv-lint fix` adds the missing definition to the module the import
names, after that module's imports, in upstream's shape (the width helper's
`2**31` refusal, the guard's message), and proves the added function computes
exactly the helper's formula (its returned polynomial equals the formula's) and
that nothing else in the module changed. A module missing from its package is
created with the definitions (upstream's place: `spec_utils.py` in
`speculative/`), when its folder exists; otherwise the files importing from it
are left unchanged (exit 1). A name nothing defines can only raise
`ImportError`; defining it changes no program that ran. The edit is in another
file: JSON and SARIF carry this fix's message without edits, and the flake8
plugin reports the finding like `check` (it reads the other module from disk,
never imports it).
""",
    valid=(
        Example(
            _IMPORT_BOTH,
            path=_BACKEND,
            tree=(
                _INIT,
                (
                    _SPEC_UTILS,
                    _WIDTH_ONLY
                    + "\n\ndef draft_kv_indices_used_len(seq_lens_sum, topk, bs, num_steps):\n"
                    "    return seq_lens_sum * topk + bs * num_steps\n",
                ),
            ),
        ),
        # sglang not in the tree (a plugin's package, sglang installed): not
        # judged here.
        Example(
            _IMPORT_BOTH,
            path="python/myplugin/backend.py",
            tree=(("python/myplugin/__init__.py", ""),),
        ),
        # A module that may define anything.
        Example(
            _IMPORT_BOTH,
            path=_BACKEND,
            tree=(_INIT, (_SPEC_UTILS, "from ._impl import *\n")),
        ),
        # Re-exported by an import counts as defined.
        Example(
            "from sglang.srt.layers.attention.utils import assert_buffer_fits\n",
            path=_BACKEND,
            tree=(_INIT, (_UTILS, "from sglang.guards import assert_buffer_fits\n")),
        ),
        # An import of a helper from an untrusted module is KVI005's.
        Example(
            "from .sizes import draft_kv_indices_used_len  # noqa: KVI005\n",
            path=_BACKEND,
            tree=(_INIT, ("python/sglang/srt/layers/attention/sizes.py", "")),
        ),
        # A namespace written through may bind the name.
        Example(
            _IMPORT_BOTH,
            path=_BACKEND,
            tree=(_INIT, (_SPEC_UTILS, "globals().update(TABLE)\n")),
        ),
    ),
    invalid=(
        Example(
            "from sglang.srt.speculative.spec_utils import draft_kv_indices_used_len\n",
            path=_BACKEND,
            tree=(_INIT, (_SPEC_UTILS, "import torch\n")),
        ),
        Example(
            _IMPORT_BOTH,
            path=_BACKEND,
            tree=(_INIT, (_SPEC_UTILS, _WIDTH_ONLY)),
        ),
        Example(
            "from .utils import assert_buffer_fits\n",
            path=_BACKEND,
            tree=(_INIT, (_UTILS, "import torch\n")),
        ),
        Example(
            "def f():\n"
            "    from sglang.srt.layers.attention.utils import assert_buffer_fits\n",
            path=_BACKEND,
            tree=(_INIT, (_UTILS, "def assert_buffer_fits_later(): ...\n")),
        ),
        # sglang before 0.5.3: the package is here, spec_utils.py is not.
        Example(
            "from sglang.srt.speculative.spec_utils import draft_kv_indices_used_len\n",
            path=_BACKEND,
            tree=(_INIT, ("python/sglang/srt/speculative/eagle_utils.py", "")),
        ),
        # A `globals()` only read binds nothing (0.5.1's eagle_utils.py).
        Example(
            "from sglang.srt.speculative.spec_utils import draft_kv_indices_used_len\n",
            path=_BACKEND,
            tree=(_INIT, (_SPEC_UTILS, 'AVAILABLE = "kernel" in globals()\n')),
        ),
    ),
)


# An import from a module its package in the tree does not have.
MISSING_MESSAGE = (
    "`{name}` is imported from {module}, which is missing from this tree (no {shown})"
)
MISSING_TITLE = "Create {shown} with the definition of `{name}`"


def undefined_home(
    name: str, module: str | None, level: int, trusted: bool, path: str
) -> Home | None:
    """The module of the tree that ``from <module> import <name>`` in ``path``
    names and that does not define ``name``, else None (shared with ``fix``)."""
    if name in HELPERS and not trusted:
        return None  # imported from elsewhere: KVI005's finding
    if name not in HELPERS and name != GUARD:
        return None
    home = package_tree.module_home(module, level, path)
    if home is None:
        # Not a file of the tree: missing from a package that is (a tree from
        # before the module existed), or outside it (not judged).
        return package_tree.missing_home(module, level, path)
    if home.path == os.path.abspath(path):
        return None
    return home if package_tree.defines(home.path, name) is False else None


def decide(checker: Checker) -> None:
    for imported in checker.facts.imports:
        statement = imported.statement
        home = undefined_home(
            imported.name,
            statement.module,
            statement.level,
            imported.trusted,
            checker.path,
        )
        if home is None:
            continue
        message = (MISSING_MESSAGE if home.missing else RULE.message).format(
            name=imported.name, module=home.module, shown=home.shown
        )
        title = (MISSING_TITLE if home.missing else RULE.fix_title or "").format(
            name=imported.name, shown=home.shown
        )
        checker.add(
            "KVI007", checker.span(imported.alias), message, Fix("safe", title, ())
        )
