"""Ratios and bandwidths in words, shared by the engine's prose and the pages.

A speedup is never printed as ``7.1e-06x``: below 1 it is turned round ("about 690x
slower"), with two significant figures at most.
"""

from __future__ import annotations

import math


def factor_text(factor: float, *, compact: bool = False) -> str:
    """A ratio ≥ 1 with sensible precision: 1.5x, 12x, 84x, 320x, 76,000x (``compact``: 76k x)."""
    if factor != factor or factor <= 0 or math.isinf(factor):
        return "—"
    if compact and factor >= 1e4:
        for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
            if factor >= scale:
                value = factor / scale
                return f"{value:.2g}{suffix}x" if value < 10 else f"{value:.0f}{suffix}x"
    if factor < 10:
        return f"{factor:.1f}x"
    if factor < 100:
        return f"{factor:.0f}x"
    digits = int(math.floor(math.log10(factor))) - 1  # keep two significant figures
    return f"{round(factor, -digits):,.0f}x"


def times_words(factor: float, baseline: str, *, simulated: bool = False) -> str:
    """``factor`` = baseline time ÷ GPU time, in words: "about 320x faster than NumPy",
    "about 690x slower than the Python loop — simulated", "about as fast as NumPy"."""
    if factor != factor or factor <= 0 or math.isinf(factor):
        return f"not comparable with {baseline}"
    tag = " — simulated" if simulated else ""
    if 0.95 <= factor <= 1.05:
        return f"about as fast as {baseline}{tag}"
    if factor > 1:
        return f"about {factor_text(factor)} faster than {baseline}{tag}"
    return f"about {factor_text(1 / factor)} slower than {baseline}{tag}"


def format_gbps(gbps: float | None) -> str:
    """Bandwidth with a unit that keeps it short: 3,395 GB/s, 11.3 GB/s, 54.9 MB/s, 12 kB/s."""
    if gbps is None or gbps != gbps:
        return "—"
    for scale, unit in ((1.0, "GB/s"), (1e-3, "MB/s"), (1e-6, "kB/s")):
        if gbps >= scale:
            value = gbps / scale
            return f"{value:,.0f} {unit}" if value >= 100 else f"{value:.3g} {unit}"
    return f"{gbps * 1e9:.3g} B/s"


def few_samples(stats) -> str:
    """" (one sample)" / " (2 samples)" after a figure from fewer than 3 samples, else ""."""
    if stats is None or not stats.few_samples:
        return ""
    return " (one sample)" if stats.n_samples == 1 else f" ({stats.n_samples} samples)"


def format_bytes(nbytes: float) -> str:
    """Binary units: 4 KiB, 1.5 MiB, 256 MiB, 2 GiB."""
    for scale, unit in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.0f} B"
