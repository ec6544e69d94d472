"""``gpu check``'s methodology section: evidence that the figures are measured as stated.

Flushed against warm L2 at a size that fits in the L2 and one that does not; how
many kernel samples needed a longer stream hold; the launch-overhead table; the GPU
telemetry over the whole check; and the sample count behind every figure in the report
("On a GPU").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from gpu.core.backend import BACKEND
from gpu.core.l2 import l2_cache_bytes
from gpu.core.telemetry import describe as describe_telemetry
from gpu.core.timing import (
    MIN_RELIABLE_SAMPLES,
    RepeatPolicy,
    format_factor,
    format_seconds,
)
from gpu.kernels.vector_add_timing import BYTES_PER_ELEMENT

SIMULATED_SIZES = (64, 256)  # no L2 in the simulator: two small sizes, to exercise the code


def l2_sizes(l2_bytes: int | None, max_n: int) -> tuple[int, int]:
    """(N whose working set fits in the L2 — a quarter of it —, N four times past it)."""
    if not l2_bytes:
        return SIMULATED_SIZES
    return max(1, l2_bytes // 4 // BYTES_PER_ELEMENT), min(max_n, 4 * l2_bytes // BYTES_PER_ELEMENT)


def stats_in(data, path: str = "") -> Iterable[tuple[str, dict]]:
    """Every stats-like dict (median_s and samples) inside a section's JSON data, with its path."""
    if isinstance(data, dict):
        if "median_s" in data and "samples" in data:
            yield path, data
            return
        for key, value in data.items():
            yield from stats_in(value, f"{path}/{key}" if path else str(key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from stats_in(value, f"{path}[{i}]")


def methodology(
    quick: bool, max_n: int, say, earlier_sections=(), telemetry: dict | None = None, budget_s: float | None = None
) -> tuple[bool, dict, str]:
    """(passed, data, markdown). Passes when every kernel sample was behind a verified
    hold (on a GPU that can hold) and the launch-overhead benchmark ran. With ``budget_s``
    (a verification plan's) every series samples until stable or its share is spent."""
    from gpu.core.arrays import vector_inputs
    from gpu.experiments.launch.overhead import (
        ENGINE_TARGET,
        PATHS,
        run_launch_overhead,
    )
    from gpu.kernels.geometry import blocks_for
    from gpu.kernels.vector_add import vector_add_kernel
    from gpu.kernels.vector_add_timing import time_resident_kernel

    l2 = l2_cache_bytes()
    sizes = l2_sizes(l2, max_n)
    per_series_s = 0.5 if budget_s is None else 0.4 * budget_s / max(2 * len(sizes), 1)
    policy = RepeatPolicy.count(3) if quick else RepeatPolicy.until_stable(0.02, per_series_s, max_repeat=100)
    rows: list[dict[str, Any]] = []  # one per size and L2 state, as the check file holds them
    for n in sizes:
        a, b = vector_inputs(n, seed=1)
        out = np.empty(n, dtype=np.float32)
        for flush in (True, False):
            say(f"methodology: N = {n:,}, L2 {'flushed' if flush else 'warm'}")
            stats = time_resident_kernel(vector_add_kernel, blocks_for(n, 256), 256, a, b, out, policy, flush_l2=flush)
            rows.append(
                {
                    "n": n,
                    "working_set_bytes": BYTES_PER_ELEMENT * n,
                    "fits_l2": bool(l2) and BYTES_PER_ELEMENT * n <= (l2 or 0),
                    "l2": "flushed" if flush else "warm",
                    "gbps": BYTES_PER_ELEMENT * n / stats.median_s / 1e9,
                    "stats": stats.to_dict(),
                    "agree": bool(np.array_equal(out, a + b)),
                }
            )
    say("methodology: launch overhead")
    overhead_policy = (RepeatPolicy.count(5 if quick else 30, warmup=2) if budget_s is None or quick
                       else RepeatPolicy.until_stable(0.02, 0.3 * budget_s, max_repeat=30, warmup=2))
    overhead = run_launch_overhead(overhead_policy)
    held_ok = all(r["stats"]["held"] is not False for r in rows) or BACKEND.simulated
    figures = [(f"{section.key}/{path}", s) for section in earlier_sections for path, s in stats_in(section.data)]
    few = [(path, s["samples"]) for path, s in figures if s["samples"] < MIN_RELIABLE_SAMPLES]

    md = [
        f"L2: {f'{l2 / 2**20:,.0f} MiB' if l2 else 'unknown (simulator)'}; kernel alone (held stream), "
        f"{policy.describe()}.",
        "",
        "| N | working set | fits in L2 | L2 | median | GB/s | samples | hold retries | verified hold |",
        "|---:|---:|---|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        s = r["stats"]
        md.append(
            f"| {r['n']:,} | {r['working_set_bytes'] / 2**20:,.2f} MiB | {'yes' if r['fits_l2'] else 'no'} | {r['l2']} "
            "| "
            f"{format_seconds(s['median_s'])} | {r['gbps']:,.4g} | {s['samples']} | {s['retries']} | "
            f"{'yes' if s['held'] else 'no (launch included)' if s['held'] is False else '—'} |"
        )
    total_retries = sum(r["stats"]["retries"] for r in rows)
    md += [
        "",
        f"Hold verification: {sum(r['stats']['samples'] for r in rows)} kernel samples kept, {total_retries} discarded "
        "and retried with a longer hold.",
        "",
        "**Launch overhead** (host time per launch):",
        "",
        "| path | median | min | max | samples |",
        "|---|---:|---:|---:|---:|",
    ]
    for k, v in overhead.paths.items():
        md.append(
            f"| {PATHS[k]} | {format_seconds(v.median_s)} | {format_seconds(v.min_s)} | {format_seconds(v.max_s)} | "
            f"{v.n_samples} |"
        )
    for k, why in overhead.skipped.items():
        md.append(f"| {PATHS[k]} | skipped: {why} | | | |")
    if overhead.engine_ratio is not None:
        md.append(
            "\nEngine launch ÷ the fastest path with the same three array arguments: "
            f"{format_factor(overhead.engine_ratio)} "
            f"(target ≤ {ENGINE_TARGET:g}x) — {'met' if overhead.passed else 'NOT met'}."
        )
    md += ["", f"**Telemetry over the check:** {describe_telemetry(telemetry)}", "",
           f"**Sample counts:** {len(figures)} figures in the sections above; {len(few)} rest on fewer than "
           f"{MIN_RELIABLE_SAMPLES} samples" + (": " + ", ".join(f"`{p}` ({n})" for p, n in few[:20]) if few else ".")]
    data = {
        "l2_bytes": l2,
        "l2_rows": rows,
        "hold_retries": total_retries,
        "launch_overhead": overhead.to_dict(),
        "telemetry": telemetry,
        "figures": len(figures),
        "few_sample_figures": [{"path": p, "samples": n} for p, n in few],
    }
    passed = held_ok and all(r["agree"] for r in rows) and bool(overhead.paths) and overhead.passed
    return passed, data, "\n".join(md)
