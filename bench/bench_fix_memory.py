"""Peak memory of ``draft-kv-lint fix --diff`` per MB of source it rewrites.

One generated module of N KB: a function holding one-line sites
(``a_k = seq_lens_sum * self.topk + bs * num_steps``) and as many plain
statements, the shape of a large file with formulas throughout. Each run is a
child process; its peak resident set (``ru_maxrss``) less a run on a file with
nothing to fix (start-up and imports) is what the rewrite holds. ``fix``
refuses files over ``MAX_FIX_BYTES`` that could hold a site: this bench is
where that limit comes from.

Usage: python bench/bench_fix_memory.py [--sizes 100,250,500,1000]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

SITE = "    a{k} = seq_lens_sum * self.topk + bs * num_steps"
PLAIN = "    b{k} = {k} + len(seq_lens)"


def source(kilobytes: int) -> str:
    lines = ["def f(self, seq_lens_sum, seq_lens, bs, num_steps):"]
    size, k = 0, 0
    while size < kilobytes * 1024:
        for template in (SITE, PLAIN):
            line = template.format(k=k)
            lines.append(line)
            size += len(line) + 1
        k += 1
    return "\n".join([*lines, "    return 1"]) + "\n"


def peak_kb(path: Path) -> int:
    """The peak resident set of one ``fix --diff`` child, in KB."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    command = [sys.executable, "-m", "lint_plugin.cli", "fix", "--no-config"]
    subprocess.run([*command, "--diff", str(path)], capture_output=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of children is the largest so far: run the sizes upwards.
    return max(after, before)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,250,500,1000")
    sizes = sorted(int(n) for n in parser.parse_args().sizes.split(","))
    folder = Path(tempfile.mkdtemp(prefix="kvi-memory-"))
    empty = folder / "empty.py"
    empty.write_text("x = 1\n")
    floor = peak_kb(empty)
    from lint_plugin.fix.command import MAX_FIX_BYTES

    print(f"floor (a file with nothing to fix): {floor / 1024:.0f} MB")
    limit = MAX_FIX_BYTES / 2**20
    print(f"fix refuses files over {limit:.0f} MiB that may hold a site")
    print(f"{'source':>9} {'peak':>9} {'held':>9} {'MB per MB':>10}")
    for kilobytes in sizes:
        path = folder / f"m{kilobytes}.py"
        text = source(kilobytes)
        path.write_text(text)
        peak = peak_kb(path)
        held = (peak - floor) / 1024
        megabytes = len(text.encode()) / 2**20
        print(
            f"{megabytes:>7.2f}MB {peak / 1024:>7.0f}MB {held:>7.0f}MB "
            f"{held / megabytes:>10.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
