"""The recorded real-GPU figures at a given N, for people without a GPU.

Without a GPU the lab times the user's CPU at any size, but the kernel only in Numba's
simulator. The GPU figures to set beside the CPU's come from the committed reference
runs (``gpu.service.references``): the vector add breakdown (one N, every phase) and
the scaling sweep (every power of two it measured). ``recorded_gpu_at(n)`` picks the
recorded N equal to ``n`` or, failing that, the nearest one (in ratio), and says which.

Nothing here measures or scales anything: every figure is a median from a committed
check file, with its provenance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from gpu.experiments.scaling.result import SweepRun
from gpu.experiments.transfers.result import StrategyComparison
from gpu.experiments.vector_add.result import VectorAddRun
from gpu.service.references import Provenance, References, load_references

PHASES = ("h2d", "launch", "kernel", "d2h", "total")  # "launch" only in the breakdown
# scaling-sweep series -> phase names of the breakdown
SWEEP_SERIES = {"gpu-h2d": "h2d", "gpu-kernel": "kernel", "gpu-d2h": "d2h", "gpu-total": "total"}
BREAKDOWN = "vector add breakdown"
SWEEP = "scaling sweep"


@dataclass(frozen=True)
class RecordedGpu:
    """Medians (seconds) of one recorded GPU run at one N, and where they come from.

    ``n`` is the recorded N; ``requested_n`` the N they are set beside. ``phases`` holds
    "h2d", "kernel", "d2h", "total" (end to end, pageable copies) and, from the
    breakdown, "launch"; ``samples`` the sample count of each.
    """

    n: int
    requested_n: int
    phases: Mapping[str, float]
    samples: Mapping[str, int]
    section: str  # BREAKDOWN or SWEEP
    reference: str  # the folder under benchmarks/, e.g. "h200-final"
    provenance: Provenance
    pinned_total_s: float | None = None  # one vector add with pinned host memory, when recorded at this N
    notes: tuple[str, ...] = field(default_factory=tuple)
    caveat: str | None = None  # ReferenceRun.caveat: set when the run was measured under older rules

    @property
    def exact(self) -> bool:
        return self.n == self.requested_n

    @property
    def device(self) -> str:
        return self.provenance.device

    @property
    def label(self) -> str:
        """The column heading: "NVIDIA H200, recorded 29 Nov 2026, 23:47 UTC"."""
        return f"{self.device}, recorded {self.provenance.when}"

    @property
    def source(self) -> str:
        """Where the figures come from, in one line."""
        return f"{self.provenance.source}, {self.section}"

    @property
    def size_difference(self) -> str:
        """How the recorded N differs from the requested one: "5% more elements", "10x as many elements", "same N"."""
        ratio = self.n / self.requested_n
        if ratio == 1:
            return "same N"
        if 1 / 1.5 < ratio < 1.5:
            return f"{abs(ratio - 1):.0%} {'more' if ratio > 1 else 'fewer'} elements"
        return f"{ratio:.2g}x as many elements" if ratio > 1 else f"{1 / ratio:.2g}x fewer elements"

    @property
    def size_note(self) -> str:
        """Same N, or which recorded N is nearest and how far."""
        if self.exact:
            return f"recorded at the same N, {self.n:,}"
        return (f"no recorded run at N = {self.requested_n:,}: the nearest recorded N is {self.n:,} "
                f"({self.size_difference})")

    def to_dict(self) -> dict:
        return {
            "label": self.label,
            "device": self.device,
            "recorded_at": self.provenance.date,
            "n": self.n,
            "requested_n": self.requested_n,
            "exact": self.exact,
            "size_note": self.size_note,
            "section": self.section,
            "reference": self.reference,
            "source": self.source,
            "phases": {k: {"median_s": v, "samples": self.samples.get(k)} for k, v in self.phases.items()},
            "pinned_total_s": self.pinned_total_s,
            "caveat": self.caveat,
            "provenance": self.provenance.to_dict(),
        }


def _candidates(refs: References) -> dict[int, RecordedGpu]:
    """Every recorded N -> its figures (requested_n left as n); the breakdown wins over the sweep at the same N."""
    out: dict[int, RecordedGpu] = {}
    ref = refs.best("scaling")
    sweep = SweepRun.recorded(ref) if ref is not None else None
    if ref is not None and sweep is not None:
        for n in sweep.sizes:
            phases, samples = {}, {}
            for series, phase in SWEEP_SERIES.items():
                point = sweep.point(n, series)
                if point is not None and point.stats is not None:
                    phases[phase], samples[phase] = point.stats.median_s, point.stats.n_samples
            if "kernel" in phases and "total" in phases:
                out[n] = RecordedGpu(n, n, phases, samples, SWEEP, ref.key, ref.provenance, caveat=ref.caveat)
    ref = refs.best("vector-add")
    run = VectorAddRun.recorded(ref) if ref is not None else None
    if ref is not None and run is not None:
        phases = {p: run.gpu[p].median_s for p in PHASES if p in run.gpu}
        samples = {p: run.gpu[p].n_samples for p in PHASES if p in run.gpu}
        strategies = StrategyComparison.recorded(ref)
        pinned = (
            strategies.strategies["pinned"].cost_s
            if strategies is not None and strategies.n == run.n and "pinned" in strategies.strategies
            else None
        )
        out[run.n] = RecordedGpu(run.n, run.n, phases, samples, BREAKDOWN, ref.key, ref.provenance, pinned,
                                 caveat=ref.caveat)
    return out


def recorded_sizes(refs: References | None = None) -> list[int]:
    """Every N the recorded runs hold GPU figures for, ascending."""
    return sorted(_candidates(refs or load_references()))


def recorded_gpu_at(n: int, refs: References | None = None) -> RecordedGpu | None:
    """The recorded GPU figures at ``n``, or at the nearest recorded N (by ratio); None without any."""
    candidates = _candidates(refs or load_references())
    if not candidates:
        return None
    nearest = min(candidates, key=lambda m: (abs(math.log(m / n)), -m))
    found = candidates[nearest]
    return replace(found, requested_n=int(n))


__all__ = ["BREAKDOWN", "SWEEP", "RecordedGpu", "recorded_gpu_at", "recorded_sizes"]
