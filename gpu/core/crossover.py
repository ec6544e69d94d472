"""Where one timing series overtakes another for good: crossovers from medians and from
noise bands (pure functions of sizes and seconds, used by Scaling and its check)."""

from __future__ import annotations

import math
from collections.abc import Sequence

# What a user can choose: the GPU kernel (end to end and kernel only come together),
# the CPU implementations, and the reference libraries.


def format_n(n: float, digits: int = 3) -> str:
    """A size as "213,000 (2^17.7)": ``digits`` significant figures and its power of two."""
    rounded = float(f"{n:.{digits}g}")
    return f"{rounded:,.0f} (2^{math.log2(n):.1f})"


def find_crossover(
    ns: Sequence[float], gpu_s: Sequence[float], cpu_s: Sequence[float]
) -> tuple[str, float | None]:
    """Smallest N from which the GPU stays faster than the CPU (pure).

    Takes two median series over the same sizes; NaN or non-positive points are
    dropped. Returns ("from", n) with n interpolated where log(gpu/cpu) crosses 0,
    linearly in log N, between the last size the GPU was not faster and the next;
    ("always", first n) when it is faster everywhere; ("never", None) when it is not
    faster at the largest size; ("unknown", None) without a usable point.
    """
    points = sorted(
        (float(n), math.log(g / c))
        for n, g, c in zip(ns, gpu_s, cpu_s)
        if n > 0 and g > 0 and c > 0 and not (math.isnan(g) or math.isnan(c))
    )
    if not points:
        return "unknown", None
    if points[-1][1] >= 0:
        return "never", None
    behind = [i for i, (_, d) in enumerate(points) if d >= 0]
    if not behind:
        return "always", points[0][0]
    i = behind[-1]
    (n0, d0), (n1, d1) = points[i], points[i + 1]
    t = d0 / (d0 - d1)  # d0 >= 0 > d1, so 0 <= t < 1
    return "from", math.exp(math.log(n0) + t * (math.log(n1) - math.log(n0)))


def crossover_band(
    ns: Sequence[float], gpu: Sequence[tuple[float, float, float]], cpu: Sequence[tuple[float, float, float]]
) -> tuple[str, float | None, float | None, float | None]:
    """The crossover of two series with noise bands (pure).

    ``gpu`` and ``cpu`` are (min, median, max) per size. Returns (kind, n, n_low,
    n_high): kind and n as ``find_crossover`` on the medians; n_low where the GPU's
    fastest samples overtake the CPU's slowest for good (the earliest the crossing can
    be), n_high where the GPU's slowest overtake the CPU's fastest (the latest). An
    edge is None when it lies outside the sizes measured.
    """
    kind, n = find_crossover(ns, [g[1] for g in gpu], [c[1] for c in cpu])
    if kind != "from" or n is None:
        return kind, n, None, None
    early_kind, early = find_crossover(ns, [g[0] for g in gpu], [c[2] for c in cpu])
    late_kind, late = find_crossover(ns, [g[2] for g in gpu], [c[0] for c in cpu])
    n_low = early if early_kind == "from" else None
    n_high = late if late_kind == "from" else None
    # with bands, the optimistic crossing is never later than the median one, nor the pessimistic earlier
    n_low = min(n_low, n) if n_low is not None else None
    n_high = max(n_high, n) if n_high is not None else None
    return kind, n, n_low, n_high
