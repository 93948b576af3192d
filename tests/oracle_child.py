"""The execution oracle's child: run pairs of modules, say whether they behave alike.

Run as ``python oracle_child.py`` with a JSON list on standard input, each item
``{"id", "before", "after", "seed"}`` (the two modules' bytes, base64). For each
pair both modules are executed from their bytes (so their coding cookie and BOM
decide how they are read, as for any import), each in a fresh module object, with
stub helpers (``stubpkg.spec_utils``: computed from their formulas) and a second
module defining the same names differently (``stubpkg.other``). What is
recorded and compared:

* the import's outcome (``ok`` or the exception's type and message);
* the module's values afterwards (numbers, strings, containers of them, the
  functions' and classes' names, a stub helper by the helper it is), its
  docstring and ``__annotations__``;
* every top-level function's and every method's result (or exception) for
  arguments drawn from the seed (``self`` and ``forward_batch`` are objects with
  sizing attributes), each function's ``__annotations__`` and docstring, and the
  module's values again after the calls (side effects).

A name the rewritten module binds to a stub helper where the original binds
nothing is the import ``fix`` adds: it is left out of the comparison. One line of
JSON per pair on standard output: ``{"id", "equal", "first"}``, ``first`` the
first difference.
"""

from __future__ import annotations

import base64
import inspect
import json
import random
import sys
import types


def _helpers() -> dict[str, types.ModuleType]:
    package = types.ModuleType("stubpkg")
    package.__path__ = []
    helpers = types.ModuleType("stubpkg.spec_utils")

    def draft_kv_indices_used_len(seq_lens_sum, topk, bs, num_steps):
        return seq_lens_sum * topk + bs * num_steps

    def draft_kv_indices_buffer_width(num_seqs, topk, max_context_len):
        return num_seqs * topk * max_context_len

    helpers.draft_kv_indices_used_len = draft_kv_indices_used_len
    helpers.draft_kv_indices_buffer_width = draft_kv_indices_buffer_width
    other = types.ModuleType("stubpkg.other")

    def other_used_len(seq_lens_sum, topk, bs, num_steps):
        return seq_lens_sum + topk + bs + num_steps + 1000

    def other_width(num_seqs, topk, max_context_len):
        return num_seqs + topk + max_context_len + 2000

    other.draft_kv_indices_used_len = other_used_len
    other.draft_kv_indices_buffer_width = other_width
    package.spec_utils = helpers
    package.other = other
    return {"stubpkg": package, "stubpkg.spec_utils": helpers, "stubpkg.other": other}


class Bag:
    """``self`` or ``forward_batch``: sizing attributes, read without effects."""

    def __init__(self, rng: random.Random) -> None:
        for name in (
            "topk",
            "max_context_len",
            "speculative_num_steps",
            "seq_lens_sum",
            "page_size",
            "batch_size",
        ):
            setattr(self, name, rng.randint(0, 9))
        self.model = types.SimpleNamespace(context_len=rng.randint(0, 9))


def _stub_names(stubs) -> dict[int, str]:
    helpers = stubs["stubpkg.spec_utils"]
    return {
        id(helpers.draft_kv_indices_used_len): "helper:draft_kv_indices_used_len",
        id(
            helpers.draft_kv_indices_buffer_width
        ): "helper:draft_kv_indices_buffer_width",
    }


def _value(value, stubs: dict[int, str], depth: int = 0):
    if id(value) in stubs:
        return stubs[id(value)]
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return repr(value)
    if depth > 4:
        return type(value).__name__
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [_value(v, stubs, depth + 1) for v in value]]
    if isinstance(value, dict):
        return {str(k): _value(v, stubs, depth + 1) for k, v in value.items()}
    if isinstance(value, (types.FunctionType, type)):
        return f"{type(value).__name__}:{value.__qualname__}"
    return type(value).__name__


def _outcome(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _snapshot(namespace: dict, stubs: dict[int, str]) -> dict:
    found = {}
    for name, value in namespace.items():
        if name.startswith("__") and name not in ("__doc__", "__annotations__"):
            continue
        if isinstance(value, types.ModuleType):
            continue
        found[name] = _value(value, stubs)
    return found


def _call(function, rng: random.Random, instance=None):
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError) as error:
        return "signature: " + _outcome(error)
    args = []
    for parameter in parameters:
        if parameter.kind not in (
            parameter.POSITIONAL_ONLY,
            parameter.POSITIONAL_OR_KEYWORD,
        ):
            continue
        if parameter.name == "self" and instance is not None:
            continue
        if parameter.name in ("self", "forward_batch"):
            args.append(Bag(rng))
        else:
            args.append(rng.randint(0, 9))
    try:
        target = function if instance is None else getattr(instance, function.__name__)
        return ["ok", _value(target(*args), {})]
    except Exception as error:
        return ["raised", _outcome(error)]


def run(data: bytes, seed: int) -> list:
    stubs = _helpers()
    sys.modules.update(stubs)
    stub_names = _stub_names(stubs)
    module = types.ModuleType("case_module")
    module.__file__ = "case_module.py"
    sys.modules["case_module"] = module
    record: list = []
    try:
        code = compile(data, "case_module.py", "exec", dont_inherit=True)
    except SyntaxError as error:
        return [["compile", _outcome(error)]]
    try:
        exec(code, module.__dict__)
        record.append(["import", "ok"])
    except Exception as error:
        record.append(["import", _outcome(error)])
    namespace = module.__dict__
    record.append(["values", _snapshot(namespace, stub_names)])
    rng = random.Random(seed)
    for name in sorted(namespace):
        value = namespace[name]
        if isinstance(value, types.FunctionType) and value.__module__ == "case_module":
            record.append([name, _call(value, rng)])
            record.append(
                [f"{name}.__annotations__", _value(value.__annotations__, stub_names)]
            )
            record.append([f"{name}.__doc__", repr(value.__doc__)])
        elif isinstance(value, type) and value.__module__ == "case_module":
            instance = object.__new__(value)
            instance.__dict__.update(vars(Bag(rng)))
            for attribute in sorted(vars(value)):
                member = vars(value)[attribute]
                if isinstance(member, types.FunctionType):
                    record.append([f"{name}.{attribute}", _call(member, rng, instance)])
                    record.append(
                        [
                            f"{name}.{attribute}.__annotations__",
                            _value(member.__annotations__, stub_names),
                        ]
                    )
                elif not attribute.startswith("__") or attribute == "__annotations__":
                    record.append([f"{name}.{attribute}", _value(member, stub_names)])
    record.append(["values after calls", _snapshot(namespace, stub_names)])
    return record


def _added_import(before: list, after: list) -> list:
    """``after`` without the names bound to a stub helper that ``before`` lacks."""
    old = {entry[0]: entry[1] for entry in before if entry[0].startswith("values")}
    cleaned = []
    for name, value in after:
        if name.startswith("values") and isinstance(value, dict):
            value = {
                key: item
                for key, item in value.items()
                if key in old.get(name, {}) or not str(item).startswith("helper:")
            }
        cleaned.append([name, value])
    return cleaned


def compare(before: bytes, after: bytes, seed: int) -> str | None:
    """None when both behave alike, else the first difference."""
    first = run(before, seed)
    second = _added_import(first, run(after, seed))
    for old, new in zip(first, second, strict=False):
        if old != new:
            return f"{old[0]}: {json.dumps(old[1])[:300]} became {json.dumps(new[1])[:300]}"
    if len(first) != len(second):
        return f"{len(first)} records became {len(second)}"
    return None


def main() -> None:
    sys.setrecursionlimit(10_000)
    for case in json.load(sys.stdin):
        before = base64.b64decode(case["before"])
        after = base64.b64decode(case["after"])
        try:
            difference = compare(before, after, case["seed"])
        except BaseException as error:  # the child must answer for every pair
            difference = f"the oracle itself failed: {_outcome(error)}"
        print(
            json.dumps(
                {"id": case["id"], "equal": difference is None, "first": difference}
            )
        )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
