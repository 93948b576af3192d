"""Find the index kernel of the tree a backend file belongs to.

Each release keeps ``generate_draft_decode_kv_indices`` somewhere else
(``srt/speculative/eagle_utils.py`` up to 0.5.2, ``spec_utils.py`` up to
0.5.12.post1, ``srt/speculative/triton_ops/cache_locs.py`` in 0.5.13,
``kernels/ops/speculative/cache_locs.py`` in 0.5.23), and a backend imports it
from a module that may only re-export it (0.5.23's ``spec_utils`` does). So the
kernel is found the way Python would find it: the backend's own
``from M import generate_draft_decode_kv_indices`` (at module level or inside a
method), ``M`` resolved against the package root the file sits in, followed
through re-exports to the file with the ``def``. Where the import leads out of
the tree on disk, the release layouts above are tried in the same tree. Nothing
is imported: every file is read and parsed with ``ast``.

A kernel that cannot be found is a :class:`KernelNotFound` naming what was
tried; callers turn it into "cannot drive", never into a substitute kernel.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .errors import HarnessError
from .triton_source import KERNEL, KernelSource, kernel_from_text

PACKAGE = "sglang"
# Where releases keep the kernel, newest first (relative to the package root).
KNOWN_LOCATIONS = (
    "sglang/kernels/ops/speculative/cache_locs.py",
    "sglang/srt/speculative/triton_ops/cache_locs.py",
    "sglang/srt/speculative/spec_utils.py",
    "sglang/srt/speculative/eagle_utils.py",
)
MAX_REEXPORTS = 8


class KernelNotFound(HarnessError):
    """No file of the tree defines the kernel the backend launches."""


def package_root(path: Path) -> Path | None:
    """The folder holding the outermost ``sglang/`` package ``path`` is inside."""
    root = None
    for parent in Path(path).resolve().parents:
        if parent.name == PACKAGE and (parent / "__init__.py").is_file():
            root = parent.parent
        elif parent.name == PACKAGE and (parent / "srt").is_dir():
            root = parent.parent  # a wheel's tree unpacked without __init__.py
    return root


def _module_file(root: Path, module: str) -> Path | None:
    base = root.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _package_of(root: Path, path: Path) -> list[str]:
    """The package a file's relative imports start from."""
    parts = list(Path(path).resolve().relative_to(root.resolve()).with_suffix("").parts)
    return parts[:-1]  # a module's package, or the package of an __init__.py


def _imported_from(text: str, filename: str, package: list[str]) -> str | None:
    """The absolute module ``text`` imports the kernel's name from, if any."""
    tree = ast.parse(text, filename=filename)
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if not any(alias.name == KERNEL for alias in node.names):
            continue
        if not node.level:
            return node.module
        base = package[: len(package) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))
    return None


def _defines(text: str) -> bool:
    if f"def {KERNEL}(" not in text:
        return False
    tree = ast.parse(text)
    return any(isinstance(n, ast.FunctionDef) and n.name == KERNEL for n in tree.body)


def locate_kernel(backend: Path, text: str | None = None) -> KernelSource:
    """The kernel the backend file ``backend`` launches (``text``: its contents,
    when they are not the file's, e.g. a git revision of it)."""
    backend = Path(backend)
    root = package_root(backend)
    if root is None:
        raise KernelNotFound(
            f"{backend} is not inside an {PACKAGE}/ package, so its tree has no "
            f"{KERNEL} to find (--kernel FILE, or --reference-kernel)"
        )
    if text is None:
        text = backend.read_text(encoding="utf-8")
    chain = [backend]
    module = _imported_from(text, str(backend), _package_of(root, backend))
    tried = []
    for _ in range(MAX_REEXPORTS):
        if module is None:
            break
        path = _module_file(root, module)
        if path is None:
            tried.append(f"{module} (not in {root})")
            break
        chain.append(path)
        body = path.read_text(encoding="utf-8")
        if _defines(body):
            how = "imported by " + " -> ".join(_short(root, p) for p in chain[:-1])
            return kernel_from_text(body, str(path), how)
        module = _imported_from(body, str(path), _package_of(root, path))
    for relative in KNOWN_LOCATIONS:
        path = root / relative
        if path.is_file():
            body = path.read_text(encoding="utf-8")
            if _defines(body):
                why = f"; the import leads to {tried[0]}" if tried else ""
                return kernel_from_text(body, str(path), f"a release's layout{why}")
    followed = " -> ".join(_short(root, p) for p in chain)
    raise KernelNotFound(
        f"no {KERNEL} in the tree of {backend} (followed {followed}"
        + (f"; {tried[0]}" if tried else "")
        + f"; tried {', '.join(KNOWN_LOCATIONS)}): --kernel FILE, or "
        "--reference-kernel"
    )


def _short(root: Path, path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)
