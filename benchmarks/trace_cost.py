"""What a memory trace costs: 1,024-thread kernels traced in the simulator, in process and in a child.

    PYTHONPATH=. .venv/bin/python benchmarks/trace_cost.py [--runs 5]

For each kernel: the median, min and max wall time of ``--runs`` traces in this process
(``trace_lab_kernel``: run with every access recorded, then every finding), the same
launch untraced in the simulator (what the recording adds), and one trace through the
app's path (``run_in_child``: a fresh process, imports included). Prints a Markdown
table for benchmarks/trace_cost.md. The target: a trace of a 1,024-thread
kernel under 5 s here.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from datetime import UTC, datetime

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")  # the trace is a simulator tool

from gpu.trace.child import run_in_child
from gpu.trace.lab import find, trace_lab_kernel

# (lab kernel, N): each launches 1,024 threads (4 blocks of 256)
CASES = (("vector-add", 1024), ("transpose-tiled", 64), ("reduction-tree", 1024))
TARGET_S = 5.0


def timed(fn, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"- measured: {datetime.now(UTC).isoformat(timespec='seconds')} with "
          f"`PYTHONPATH=. .venv/bin/python benchmarks/trace_cost.py --runs {args.runs}`")
    print(f"- host: {platform.processor() or platform.machine()}, {os.cpu_count()} logical cores; "
          f"load average at start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"- target: a trace of a 1,024-thread kernel under {TARGET_S:g} s\n")
    print(
        "| kernel | launch | accesses recorded | untraced run (median) | trace in process (median) | min | max | trace "
        "in a child process (incl. start and imports) | trace under 5 s |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for name, n in CASES:
        kernel = find(name)
        report = trace_lab_kernel(name, n)
        threads = report.blocks_total * report.threads_per_block
        assert threads == 1024, f"{name} at N = {n} launches {threads} threads"

        def untraced(kernel=kernel, n=n):
            launch = kernel.prepare(n)
            launch.kernel[launch.grid, launch.block](*launch.args)

        plain = statistics.median(timed(untraced, args.runs))
        traced = timed(lambda name=name, n=n: trace_lab_kernel(name, n), args.runs)
        child = timed(lambda name=name, n=n: run_in_child([(name, n)]), 1)[0]
        med = statistics.median(traced)
        print(
            f"| {name} | {report.blocks_total} × {report.threads_per_block} threads | {report.accesses:,} | "
            f"{plain:.2f} s | "
            f"{med:.2f} s | {min(traced):.2f} s | {max(traced):.2f} s | {child:.2f} s | "
            f"{'yes' if med < TARGET_S else 'NO'} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
