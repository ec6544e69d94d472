"""What one vector-add run measured (``VectorAddRun``), and how it reads and writes its file.

A run holds every phase's samples on the GPU (h2d, kernel, d2h, total), each CPU implementation's, the bit-for-bit
agreement with NumPy, and where the kernel ran at a smaller N than the CPU (the simulator's cap) says so: no
GPU-vs-CPU ratio is then made. Its file (check.json, History, downloads) keeps the compile time and the phases under
``gpu``, with the speedups, agreement summary and timing rules written for the reader and recomputed when read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpu.core.agreement import BitAgreement
from gpu.core.device import DeviceInfo
from gpu.core.limits import SIMULATED_THREAD_COST
from gpu.core.shape import Shaped, ShapeError, shaped, tagged, to_builtins
from gpu.core.telemetry import describe as describe_telemetry
from gpu.core.timing import MIN_RELIABLE_SAMPLES, RepeatPolicy, Stats, format_factor, format_seconds, utc_timestamp
from gpu.experiments.vector_add.article import ArticleRun
from gpu.kernels.vector_add_timing import TIMING_RULES, CpuTiming, effective_bandwidth_gbps


@shaped(renames={"gpu_measure": "gpu"})
@dataclass(frozen=True)
class Speedup(Shaped):
    """How many times faster the GPU measure is than a CPU baseline."""

    baseline: str  # CPU implementation name
    gpu_measure: str  # "total" (end to end, copies included) or "kernel"
    factor: float
    estimated: bool  # True when the baseline is an estimate, not a measurement


def _run_to_file(run: VectorAddRun, data: dict) -> dict:
    """The file keeps the compile time and the phases under ``gpu`` with the kernel's bandwidth, and
    says which N each side ran at (``gpu_n`` is always written: ``kernel_n``)."""
    gpu = {
        "compile_s": data.pop("compile_s"),
        "phases": data.pop("gpu"),
        "kernel_bandwidth_gbps": run.kernel_bandwidth_gbps,
    }
    data.pop("gpu_n")
    return {
        "experiment": "vector-add",
        "created_at": data.pop("created_at"),
        "n": data.pop("n"),
        "dtype": run.dtype,
        **data,
        "agree": run.agree,
        "max_abs_diff": run.max_abs_diff,
        "gpu": gpu,
        "speedup": {f"{s.gpu_measure}_vs_{s.baseline}": to_builtins(s) for s in run.speedups},
        "gpu_n": run.kernel_n,
        "cpu_n": run.n,
        "gpu_note": run.gpu_note,
        "timing_rules": TIMING_RULES,
    }


# written for the reader (the file's agreement summary, speedups and rules), recomputed when read
_RUN_DERIVED = ("agree", "max_abs_diff", "speedup", "cpu_n", "gpu_note", "timing_rules")


def _run_from_file(data: dict) -> dict:
    data = tagged(data, "experiment", "vector-add")
    if data.pop("dtype", "float32") != "float32":
        raise ShapeError("has a `dtype` other than 'float32' (vector add adds float32 vectors)")
    gpu = data.pop("gpu")
    if isinstance(gpu, dict):  # the shape of the rest is the converter's to check
        gpu = dict(gpu)
        data["compile_s"] = gpu.pop("compile_s", 0.0)
        gpu.pop("kernel_bandwidth_gbps", None)
        data["gpu"] = gpu.pop("phases", gpu)
    if isinstance(data.get("cpu"), dict):
        data["cpu"] = {name: {**t, "name": name} if isinstance(t, dict) else t for name, t in data["cpu"].items()}
    if data.get("gpu_n") == data.get("n"):  # the GPU ran at the full N: no separate size
        data["gpu_n"] = None
    return {k: v for k, v in data.items() if k not in _RUN_DERIVED}


@shaped(to_file=_run_to_file, from_file=_run_from_file, paths={"gpu": "gpu.phases", "compile_s": "gpu.compile_s"})
@dataclass(frozen=True)
class VectorAddRun(Shaped):
    """Everything one vector-add run measured. Times in seconds."""

    n: int
    threads_per_block: int
    blocks_per_grid: int
    backend: str
    device: DeviceInfo
    policy: RepeatPolicy
    compile_s: float
    gpu: dict[str, Stats]  # "h2d", "kernel", "d2h", "total"
    cpu: dict[str, CpuTiming]
    agreement: dict[str, BitAgreement]
    warnings: tuple[str, ...] = ()
    article: ArticleRun | None = None  # the article's own method, when it was run too
    seed: int = 0
    created_at: str = field(default_factory=utc_timestamp)
    telemetry: dict | None = None  # GPU clocks, temperature, power, throttling (gpu.core.telemetry)
    # The N the GPU part ran at, when below ``n``: in the simulator the CPU
    # implementations run at the user's N and the simulated kernel at the simulator's cap.
    gpu_n: int | None = None

    dtype = "float32"

    def __post_init__(self) -> None:
        missing = [phase for phase in ("h2d", "kernel", "d2h", "total") if phase not in self.gpu]
        if missing:
            raise ValueError(f"the GPU phases lack {', '.join(missing)} (a run times h2d, kernel, d2h and total)")

    @property
    def kernel_n(self) -> int:
        """The N of every GPU figure (and of the GPU's agreement check)."""
        return self.gpu_n if self.gpu_n is not None else self.n

    @property
    def gpu_capped(self) -> bool:
        """True when the GPU part ran at a smaller N than the CPU: no GPU-vs-CPU ratio is then made."""
        return self.kernel_n < self.n

    @property
    def gpu_note(self) -> str | None:
        """Why the GPU figures are at another N, in one sentence; None when they are not."""
        if not self.gpu_capped:
            return None
        return (
            f"the simulated kernel ran at N = {self.kernel_n:,}, the simulator's cap (KERNEL_LAB_MAX_N; about "
            f"{SIMULATED_THREAD_COST}), checked against NumPy at that N; the CPU ran at N = {self.n:,}, so no "
            "GPU-vs-CPU ratio is made"
        )

    @property
    def agree(self) -> bool:
        return all(a.passed for a in self.agreement.values())

    @property
    def max_abs_diff(self) -> float:
        return max((a.max_abs_diff for a in self.agreement.values()), default=0.0)

    def bandwidth_gbps(self, seconds: float) -> float:
        """GB/s of the GPU part (at ``kernel_n``) taking ``seconds``."""
        return effective_bandwidth_gbps(self.kernel_n, seconds)

    @property
    def kernel_bandwidth_gbps(self) -> float:
        return self.bandwidth_gbps(self.gpu["kernel"].median_s)

    @property
    def speedups(self) -> list[Speedup]:
        """GPU (end to end and kernel only) against each CPU baseline, by median.

        Empty when the GPU ran at a smaller N than the CPU (``gpu_capped``): times at two
        sizes are not a speedup.
        """
        out: list[Speedup] = []
        if self.gpu_capped:
            return out
        for name, timing in self.cpu.items():
            for measure in ("total", "kernel"):
                gpu_s = self.gpu[measure].median_s
                if gpu_s > 0 and timing.median_s == timing.median_s:  # skip NaN estimates
                    out.append(Speedup(name, measure, timing.median_s / gpu_s, timing.estimated))
        return out

    def speedup(self, baseline: str, gpu_measure: str = "total") -> Speedup | None:
        return next((s for s in self.speedups if s.baseline == baseline and s.gpu_measure == gpu_measure), None)

    @classmethod
    def recorded(cls, ref: Any) -> VectorAddRun | None:
        """This experiment's breakdown run in a committed check (``ref``: a ``ReferenceRun`` of
        gpu/service/references.py, read through its ``read``), None when the run holds none."""
        return ref.read(cls, "breakdown", "run")

    def to_frame(self):
        """Tidy samples: one row per implementation x phase x sample (pandas DataFrame).

        Columns: implementation, phase, sample, seconds, estimated, few_samples, n, backend.
        A skipped CPU implementation contributes one row holding its estimate. ``n`` is the
        size of that row's measurement (``kernel_n`` for the GPU rows).
        """
        import pandas as pd

        rows = []
        for phase, stats in self.gpu.items():
            for i, s in enumerate(stats.samples_s):
                rows.append(("gpu", phase, i, s, False))
        for name, timing in self.cpu.items():
            if timing.stats is None:
                rows.append((name, "cpu", 0, timing.estimate_s, True))
            else:
                for i, s in enumerate(timing.stats.samples_s):
                    rows.append((name, "cpu", i, s, False))
        frame = pd.DataFrame(rows, columns=["implementation", "phase", "sample", "seconds", "estimated"])
        # fewer than 3 samples: the spread is unknown, and every chart and download says so
        counts = frame.groupby(["implementation", "phase"])["sample"].transform("count")
        frame["few_samples"] = (counts < MIN_RELIABLE_SAMPLES) & ~frame["estimated"]
        frame["n"] = [self.kernel_n if impl == "gpu" else self.n for impl in frame["implementation"]]
        frame["backend"] = self.backend
        return frame

    def __str__(self) -> str:
        geometry = f"{self.blocks_per_grid:,} blocks x {self.threads_per_block} threads"
        lines = [
            f"vector add, N = {self.n:,} float32, "
            + (f"GPU at N = {self.kernel_n:,} ({geometry})" if self.gpu_capped else geometry)
            + f", {self.device.name} ({self.backend})",
            f"results agree with NumPy: {'yes, bit for bit' if self.agree else 'NO'}"
            f" (max |diff| {self.max_abs_diff:g})",
            # the simulator compiles nothing: "0 ns" would be a measurement it never made
            f"kernel compile: {'n/a (simulator)' if self.backend == 'simulator' else format_seconds(self.compile_s)}",
        ]
        if self.gpu_capped:
            lines.append(f"note: {self.gpu_note}")
        gpu_at = f" (N = {self.kernel_n:,})" if self.gpu_capped else ""
        for phase, stats in self.gpu.items():
            lines.append(f"  GPU {phase:<8} {stats}{gpu_at}")
        cpu_at = f" (N = {self.n:,})" if self.gpu_capped else ""
        for name, timing in self.cpu.items():
            if timing.stats is None:
                lines.append(f"  CPU {name:<8} skipped: {timing.skipped}")
            else:
                lines.append(f"  CPU {name:<8} {timing.stats}{cpu_at}")
        if self.telemetry is not None:
            lines.append(describe_telemetry(self.telemetry))
        if self.backend == "simulator":  # a ratio against a simulated time is no speedup: none is printed
            lines.append("  no GPU-vs-CPU ratio: the GPU times above are simulated (the recorded GPU's follow)")
            return "\n".join(lines)
        for s in self.speedups:
            tag = " (estimated)" if s.estimated else ""
            lines.append(f"  speedup GPU {s.gpu_measure} vs {s.baseline}: {format_factor(s.factor)}{tag}")
        return "\n".join(lines)


__all__ = ["Speedup", "VectorAddRun"]
