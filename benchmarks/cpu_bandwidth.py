"""Host bandwidth: does the parallel CPU vector add reach the host memory's ceiling?

Measures, at sizes well beyond the last-level cache, the effective bandwidth of
``numba-parallel`` (and NumPy / single-core Numba for context; 12 bytes per element)
against a NumPy copy of the same footprint (read + write counted). The issue's target:
numba-parallel at least 80% of the NumPy copy. Also measures the size sweep's own
overhead (wall time outside the timing calls) on a CPU-only sweep.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/cpu_bandwidth.py [--out benchmarks/cpu_bandwidth.md]``
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from gpu.core import cpu
from gpu.core.device import host_info
from gpu.core.limits import host_available_bytes
from gpu.core.peaks import last_level_cache_bytes
from gpu.core.timing import RepeatPolicy, format_seconds, measure
from gpu.experiments.scaling.config import make_config
from gpu.experiments.scaling.experiment import run_sweep

TARGET = 0.80  # numba-parallel / NumPy copy
IMPLS = ("numpy", "numba", "numba-parallel")


def bandwidth_rows(n: int, policy: RepeatPolicy) -> list[dict]:
    """One row per measure at size n: median seconds, samples, GB/s."""
    a = np.random.default_rng(0).random(n, dtype=np.float32)
    b = np.random.default_rng(1).random(n, dtype=np.float32)
    c = np.empty_like(a)
    rows = []
    for name in IMPLS:
        cpu.compile_cpu(name)
        fn = cpu.IMPLEMENTATIONS[name]
        stats = measure(lambda fn=fn: fn(a, b, c), policy)
        rows.append(
            {
                "measure": cpu.LABELS[name],
                "n": n,
                "bytes": 12 * n,
                "stats": stats,
                "gbps": 12 * n / stats.median_s / 1e9,
            }
        )
    # the ceiling: copy 8n bytes (a and b's footprint) within host memory: reads + writes counted
    src = np.concatenate([a, b])
    dst = np.empty_like(src)
    stats = measure(lambda: np.copyto(dst, src), policy)
    rows.append(
        {
            "measure": "NumPy copy (host memory ceiling)",
            "n": n,
            "bytes": 2 * src.nbytes,
            "stats": stats,
            "gbps": 2 * src.nbytes / stats.median_s / 1e9,
        }
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).with_name("cpu_bandwidth.md")))
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)

    llc = last_level_cache_bytes() or 64 * 2**20
    policy = RepeatPolicy.count(args.repeats, warmup=2)
    # sizes whose vector-add footprint (12 bytes per element) is 4x and 8x the LLC,
    # kept within a fifth of the free memory (a, b, c and the copy's two buffers)
    sizes = []
    for factor in (4, 8):
        n = 1 << int(np.ceil(np.log2(factor * llc / 12)))
        if 28 * n < host_available_bytes() / 5 * 4:
            sizes.append(n)
    if not sizes:
        print("not enough free memory for a size beyond the last-level cache", file=sys.stderr)
        return 1

    host = host_info()
    lines = [
        "# Host bandwidth: parallel CPU vector add against the NumPy copy",
        "",
        f"- measured: {datetime.now(UTC).isoformat(timespec='seconds')} with `PYTHONPATH=. .venv/bin/python "
        "benchmarks/cpu_bandwidth.py`",
        f"- host: {host.cpu}, {host.logical_cores} logical cores, last-level cache {llc / 2**20:,.0f} MiB",
        f"- policy: {policy.describe()}; wall clock. Vector add counts 12 bytes per element "
        "(read a, b; write c); the copy counts its read and its write. GB/s from the median and, "
        "less sensitive to other jobs on a shared machine, from the fastest sample.",
        f"- load average at start (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in os.getloadavg())}",
        "",
        "| N | footprint | measure | median | min | max | samples | GB/s (median) | GB/s (best) |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    verdicts = []
    for n in sizes:
        print(f"measuring N = {n:,}", file=sys.stderr)
        rows = bandwidth_rows(n, policy)
        for r in rows:
            s = r["stats"]
            lines.append(
                f"| {n:,} | {r['bytes'] / 2**30:.2f} GiB | {r['measure']} | {format_seconds(s.median_s)} | "
                f"{format_seconds(s.min_s)} | {format_seconds(s.max_s)} | {s.n_samples} | {r['gbps']:,.2f} | "
                f"{r['bytes'] / s.min_s / 1e9:,.2f} |"
            )
        par = next(r for r in rows if r["measure"] == cpu.LABELS["numba-parallel"])
        copy = rows[-1]
        for which, key in (("medians", "median_s"), ("fastest samples", "min_s")):
            parallel = par["bytes"] / getattr(par["stats"], key) / 1e9
            ceiling = copy["bytes"] / getattr(copy["stats"], key) / 1e9
            verdicts.append(
                f"- N = {n:,} ({12 * n / llc:.0f}x the LLC), {which}: numba-parallel {parallel:,.2f} GB/s = "
                f"**{parallel / ceiling:.0%}** of the NumPy copy ({ceiling:,.2f} GB/s); target ≥ {TARGET:.0%}: "
                f"{'met' if parallel / ceiling >= TARGET else 'NOT met'}"
            )
    lines.append(f"- load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if max(os.getloadavg()[:2]) > (os.cpu_count() or 1):
        lines.append(
            "- **the machine was oversubscribed** (load average above its core count): other jobs took "
            "CPU time and memory bandwidth during these runs, so the figures vary run to run; rerun "
            "on an idle machine before drawing conclusions."
        )
    lines += ["", "## Target", "", *verdicts]

    # the sweep's own overhead, CPU implementations only (the simulator's GPU would dominate)
    print("measuring the sweep's overhead", file=sys.stderr)
    config = make_config(2**10, 2**24, ["numpy", "numba-parallel"], policy=RepeatPolicy.count(5), limit=2**24)
    run = run_sweep(config)
    lines += [
        "",
        "## Sweep overhead",
        "",
        f"CPU-only sweep, N = 2^10 to 2^24 in powers of two, numpy and numba-parallel, {config.policy.describe()}: "
        f"wall {format_seconds(run.wall_s)}, of which {format_seconds(run.measuring_s)} inside the timing calls "
        f"(warm-ups included) and {format_seconds(run.sampled_s)} in the recorded samples. "
        f"Overhead outside the timing calls (inputs generated once at the largest size, NumPy reference, "
        f"bit-for-bit checks, bookkeeping): **{run.overhead_fraction:.1%}** (target < 10%).",
        "",
    ]
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
