"""How ``draft-kv-lint fix --diff`` scales with the number of sites in one file.

One generated function holding N one-line sites (``a_k = seq_lens_sum * self.topk
+ bs * num_steps``) and N three-line sites with a comment (each wrapped again by
the formatter), for N in 1,000, 5,000 and 10,000; the time per site should stay
flat (linear time), where a quadratic splice or one formatter run per statement
made 10,000 sites take half a minute and 50,000 never finish.

Usage: python bench/bench_fix_sites.py [--sizes 1000,5000,10000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ONE_LINE = "    a{k} = seq_lens_sum * self.topk + bs * num_steps"
WRAPPED = (
    "    b{k} = (\n        seq_lens_sum * self.topk  # c{k}\n"
    "        + bs * num_steps\n    )"
)


def source(sites: int, template: str) -> str:
    lines = ["def f(self, seq_lens_sum, bs, num_steps):"]
    lines += [template.format(k=k) for k in range(sites)]
    return "\n".join([*lines, "    return 1"]) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,5000,10000")
    sizes = [int(n) for n in parser.parse_args().sizes.split(",")]
    folder = Path(tempfile.mkdtemp(prefix="kvi-sites-"))
    print(f"{'layout':<10} {'sites':>7} {'seconds':>9} {'ms/site':>8}")
    for name, template in (("one-line", ONE_LINE), ("wrapped", WRAPPED)):
        for sites in sizes:
            path = folder / f"{name}-{sites}.py"
            path.write_text(source(sites, template))
            command = [sys.executable, "-m", "lint_plugin.cli", "fix", "--no-config"]
            start = time.perf_counter()
            result = subprocess.run(
                [*command, "--diff", str(path)], capture_output=True, text=True
            )
            seconds = time.perf_counter() - start
            if (
                result.returncode != 1
                or f"Would fix {sites} site(s)" not in result.stderr
            ):
                print(f"unexpected result for {path}: {result.stderr[-300:]}")
                return 1
            print(
                f"{name:<10} {sites:>7} {seconds:>9.2f} {1000 * seconds / sites:>8.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
