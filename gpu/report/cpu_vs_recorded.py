"""Your CPU, measured now, beside a real GPU, recorded: figures and words.

Without a GPU the CPU baselines run at the user's N while the kernel only runs in the
simulator. Here the CPU's medians are set beside the committed recorded GPU run at the
same N, or the nearest recorded N (``gpu.report.recorded_gpu``), and the ratios are
said in words. The two sides are always labelled for what they are: "your CPU,
measured now" and "<device>, recorded <date>". No simulated figure appears here.

``vector_add_vs_recorded`` and ``sweep_vs_recorded`` build frozen results with
``to_dict()``, ``sentences()`` and ``to_frame()``; ``companion`` picks the one for a
result (the CLI prints it after the run).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpu.core import cpu
from gpu.core.timing import format_seconds
from gpu.core.words import times_words
from gpu.report.recorded_gpu import RecordedGpu, recorded_gpu_at
from gpu.service.references import ARTICLE, References

YOUR_CPU = "your CPU, measured now"
SHORT = {"python": "Python loop", "numpy": "NumPy", "numba": "Numba @njit", "numba-parallel": "Numba parallel"}
GPU_MEASURES = {
    "kernel": "Kernel alone",
    "total": "GPU end to end (pageable copies)",
    "h2d": "H2D copy",
    "d2h": "D2H copy",
}


@dataclass(frozen=True)
class CpuFigure:
    """One CPU implementation measured now: median seconds, or its estimate when not run."""

    name: str
    n: int
    median_s: float
    estimated: bool = False
    samples: int = 0
    skipped: str | None = None

    @property
    def label(self) -> str:
        return SHORT[self.name]

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "label": self.label,
            "n": self.n,
            "median_s": self.median_s,
            "estimated": self.estimated,
            "samples": self.samples,
            "skipped": self.skipped,
        }


def _your(figure: CpuFigure) -> str:
    return f"your {figure.label}" + (" (estimated)" if figure.estimated else "")


def _source_sentence(recorded: RecordedGpu) -> str:
    rules = f"; {recorded.caveat}" if recorded.caveat else ", under today's measurement rules"
    return (
        f"GPU figures: {recorded.label}, by `python -m gpu check` ({recorded.source}), recorded on a real GPU, "
        f"not measured in this session{rules}; {recorded.size_note}."
    )


# --- one size: Vector add ---------------------------------------------------------------------


@dataclass(frozen=True)
class VectorAddVsRecorded:
    """The user's CPU implementations at ``cpu_n`` beside one recorded GPU run."""

    cpu_n: int
    cpu: tuple[CpuFigure, ...]
    recorded: RecordedGpu

    def figure(self, name: str) -> CpuFigure | None:
        return next((f for f in self.cpu if f.name == name), None)

    def ratio(self, name: str, measure: str) -> float | None:
        """CPU median ÷ recorded GPU ``measure`` median: above 1 the recorded GPU is faster."""
        figure, gpu_s = self.figure(name), self.recorded.phases.get(measure)
        if figure is None or not gpu_s or not figure.median_s == figure.median_s:
            return None
        return figure.median_s / gpu_s

    def sentences(self) -> list[str]:
        """Where the GPU figures come from, then kernel and end to end against your NumPy, the Python loop, Numba
        parallel."""
        rec, dev = self.recorded, self.recorded.device
        kernel_s, total_s = rec.phases["kernel"], rec.phases["total"]
        out = [_source_sentence(rec)]
        numpy = self.figure("numpy")
        if numpy is not None:
            out.append(
                f"On the recorded {dev} the kernel alone takes {format_seconds(kernel_s)}: "
                f"{times_words(numpy.median_s / kernel_s, _your(numpy))} ({format_seconds(numpy.median_s)} at N = "
                f"{self.cpu_n:,})."
            )
            copies = (
                f" (H2D {format_seconds(rec.phases['h2d'])}, D2H {format_seconds(rec.phases['d2h'])})"
                if "h2d" in rec.phases and "d2h" in rec.phases
                else ""
            )
            out.append(
                f"With pageable copies the GPU takes {format_seconds(total_s)} end to end{copies}, your NumPy "
                f"{format_seconds(numpy.median_s)}: the recorded GPU is "
                f"{times_words(numpy.median_s / total_s, _your(numpy))}."
            )
        else:
            out.append(
                f"On the recorded {dev} the kernel alone takes {format_seconds(kernel_s)}, and with pageable copies "
                f"{format_seconds(total_s)}."
            )
        if rec.pinned_total_s is not None:
            out.append(
                f"With pinned host memory the recorded GPU takes {format_seconds(rec.pinned_total_s)} for the same add "
                "(Transfers page)."
            )
        python = self.figure("python")
        if python is not None:
            if python.estimated:
                lead = f"Your Python loop was not run ({python.skipped}); against its estimate"
            else:
                lead = (f"Your Python loop, the article's CPU code, took {format_seconds(python.median_s)} "
                        f"({python.samples} sample{'s' if python.samples != 1 else ''})")
                if self.cpu_n == ARTICLE.n:
                    lead += f", where the article printed {ARTICLE.cpu_time_s:.2f} s on Colab's CPU"
            out.append(
                f"{lead}: the recorded GPU, copies included, is "
                f"{times_words(python.median_s / total_s, _your(python))}."
            )
        parallel = self.figure("numba-parallel")
        if parallel is not None:
            out.append(
                f"Your Numba parallel takes {format_seconds(parallel.median_s)}: the recorded kernel alone is "
                f"{times_words(parallel.median_s / kernel_s, 'your Numba parallel')}."
            )
        return out

    def to_frame(self):
        """One row per figure: source ("your CPU, measured now" or the recorded label), measure, n, median_s,
        estimated."""
        import pandas as pd

        rows = [(YOUR_CPU, f.label, f.n, f.median_s, f.estimated) for f in self.cpu]
        rows += [(self.recorded.label, GPU_MEASURES[m], self.recorded.n, self.recorded.phases[m], False)
                 for m in ("kernel", "total", "h2d", "d2h") if m in self.recorded.phases]
        return pd.DataFrame(rows, columns=["source", "measure", "n", "median_s", "estimated"])

    def to_dict(self) -> dict:
        return {
            "cpu_label": YOUR_CPU,
            "cpu_n": self.cpu_n,
            "cpu": {f.name: f.to_dict() for f in self.cpu},
            "gpu_label": self.recorded.label,
            "recorded": self.recorded.to_dict(),
            "ratios": {
                f"{name}_over_recorded_{m}": self.ratio(name, m)
                for name in (f.name for f in self.cpu)
                for m in ("kernel", "total")
            },
            "sentences": self.sentences(),
        }

    def lines(self) -> list[str]:
        """For the terminal: a heading, then the sentences."""
        return [f"Your CPU, measured now (N = {self.cpu_n:,}), beside {self.recorded.label} (N = {self.recorded.n:,}):",
                *(f"  {s}" for s in self.sentences())]


def vector_add_vs_recorded(run, refs: References | None = None) -> VectorAddVsRecorded | None:
    """The comparison for a ``VectorAddRun`` (its CPU at ``run.n``); None without a recorded run or CPU figures."""
    figures = tuple(
        CpuFigure(name, run.n, t.median_s, t.estimated, t.stats.n_samples if t.stats else 0, t.skipped)
        for name, t in run.cpu.items()
        if t.median_s == t.median_s
    )
    recorded = recorded_gpu_at(run.n, refs)
    if recorded is None or not figures:
        return None
    return VectorAddVsRecorded(run.n, figures, recorded)


# --- many sizes: Scaling ----------------------------------------------------------------------


@dataclass(frozen=True)
class SweepVsRecorded:
    """The user's CPU series at each size of a sweep beside the recorded GPU at that size (or the nearest)."""

    sizes: tuple[int, ...]
    cpu: tuple[CpuFigure, ...]  # every CPU point of the sweep
    recorded: tuple[RecordedGpu, ...]  # one per size, same order

    @property
    def label(self) -> str:
        return self.recorded[0].label if self.recorded else ""

    def at(self, n: int) -> RecordedGpu | None:
        return next((r for r in self.recorded if r.requested_n == n), None)

    def cpu_at(self, n: int, name: str) -> CpuFigure | None:
        return next((f for f in self.cpu if f.n == n and f.name == name), None)

    def crossover(self, name: str, measure: str):
        """Where the recorded GPU ``measure`` overtakes your ``name`` (``find_crossover`` on the exactly matched
        sizes)."""
        from gpu.core.crossover import find_crossover

        pairs: list[tuple[int, float, float]] = []
        for n in self.sizes:
            gpu, cpu_figure = self.at(n), self.cpu_at(n, name)
            gpu_s = gpu.phases.get(measure) if gpu is not None and gpu.exact else None
            if gpu_s and cpu_figure is not None:
                pairs.append((n, gpu_s, cpu_figure.median_s))
        if not pairs:
            return "unknown", None, pairs
        kind, where = find_crossover([p[0] for p in pairs], [p[1] for p in pairs], [p[2] for p in pairs])
        return kind, where, pairs

    def sentences(self) -> list[str]:
        from gpu.core.crossover import format_n

        if not self.recorded:
            return []
        first = self.recorded[-1]
        out = [_source_sentence(first).replace(f"; {first.size_note}", "")]
        inexact = [r for r in self.recorded if not r.exact]
        if inexact:
            out.append(
                "Recorded at the same N for "
                + f"{len(self.recorded) - len(inexact)} of {len(self.recorded)} sizes; for the others the nearest "
                "recorded N is used: "
                + "; ".join(f"{r.requested_n:,} → {r.n:,}" for r in inexact[:6])
                + ("; …" if len(inexact) > 6 else "")
                + "."
            )
        dev = first.device
        for name in ("numpy", "numba-parallel"):
            if not any(f.name == name for f in self.cpu):
                continue
            for measure, who in (("kernel", "the kernel alone"), ("total", "with its pageable copies, the GPU")):
                kind, where, pairs = self.crossover(name, measure)
                other = f"your {SHORT[name]}"
                if kind == "from":
                    out.append(
                        f"On the recorded {dev}, {who} beats {other} from N ≈ {format_n(where, 2)}, where the medians "
                        "cross."
                    )
                elif kind == "always":
                    out.append(
                        f"On the recorded {dev}, {who} beats {other} at every size compared (from N = {pairs[0][0]:,})."
                    )
                elif kind == "never":
                    out.append(
                        f"On the recorded {dev}, {who} does not beat {other} at the largest size compared (N = "
                        f"{pairs[-1][0]:,})."
                    )
        top = self.sizes[-1] if self.sizes else None
        rec = self.at(top) if top else None
        numpy = self.cpu_at(top, "numpy") if top else None
        if rec is not None and numpy is not None:
            out.append(
                f"At N = {top:,}: your NumPy {format_seconds(numpy.median_s)}; the recorded kernel alone "
                f"{format_seconds(rec.phases['kernel'])} "
                f"({times_words(numpy.median_s / rec.phases['kernel'], 'your NumPy')}), end to end "
                f"{format_seconds(rec.phases['total'])} "
                f"({times_words(numpy.median_s / rec.phases['total'], 'your NumPy')})"
                + ("" if rec.exact else f" — at the nearest recorded N, {rec.n:,}")
                + "."
            )
        return out

    def to_frame(self):
        """One row per size × series: n (your size), recorded_n, source, measure, median_s, estimated."""
        import pandas as pd

        rows = [(f.n, f.n, YOUR_CPU, f.label, f.median_s, f.estimated) for f in self.cpu]
        for r in self.recorded:
            rows += [
                (r.requested_n, r.n, r.label, GPU_MEASURES[m], r.phases[m], False)
                for m in ("kernel", "total")
                if m in r.phases
            ]
        return pd.DataFrame(rows, columns=["n", "recorded_n", "source", "measure", "median_s", "estimated"])

    def to_dict(self) -> dict:
        return {
            "cpu_label": YOUR_CPU,
            "gpu_label": self.label,
            "sizes": list(self.sizes),
            "cpu": [f.to_dict() for f in self.cpu],
            "recorded": [r.to_dict() for r in self.recorded],
            "sentences": self.sentences(),
        }

    def lines(self) -> list[str]:
        return [f"Your CPU, measured now, beside {self.label}:", *(f"  {s}" for s in self.sentences())]


def sweep_vs_recorded(run, refs: References | None = None) -> SweepVsRecorded | None:
    """The comparison for a ``SweepRun``: its CPU points beside the recorded GPU at each size."""
    figures = tuple(
        CpuFigure(p.series, p.n, p.median_s, p.estimated, p.stats.n_samples if p.stats else 0)
        for p in sorted(run.points, key=lambda p: p.n)
        if p.series in cpu.IMPLEMENTATIONS and p.ok
    )
    sizes = tuple(sorted({f.n for f in figures}))
    recorded = tuple(r for r in (recorded_gpu_at(n, refs) for n in sizes) if r is not None)
    if not figures or len(recorded) != len(sizes):
        return None
    return SweepVsRecorded(sizes, figures, recorded)


def companion(result: Any, refs: References | None = None):
    """The comparison to show after ``result`` without a GPU (simulator runs only); None otherwise."""
    if getattr(result, "backend", None) != "simulator":
        return None
    from gpu.experiments.scaling.result import SweepRun
    from gpu.experiments.vector_add.result import VectorAddRun

    if isinstance(result, VectorAddRun):
        return vector_add_vs_recorded(result, refs)
    if isinstance(result, SweepRun):
        return sweep_vs_recorded(result, refs)
    return None


__all__ = [
    "YOUR_CPU",
    "CpuFigure",
    "SweepVsRecorded",
    "VectorAddVsRecorded",
    "companion",
    "sweep_vs_recorded",
    "vector_add_vs_recorded",
]
