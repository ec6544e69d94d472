"""The result of one catalog run: every step, library and CPU implementation on one problem.

Raw samples in seconds; everything else is derived: GB/s from the bytes the algorithm
must move (declared by the kernel), GFLOP/s from its FLOPs, % of the roof that bounds
it on this device, and the ratio to the fastest library doing the same work.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpu.core.agreement import Agreement
from gpu.core.device import DeviceInfo
from gpu.core.kernel_timing import KernelTiming
from gpu.core.l2 import fits_in_l2
from gpu.core.roofline import Roofs
from gpu.core.shape import Shaped, ShapeError, from_builtins, shaped
from gpu.core.timing import (
    RepeatPolicy,
    Stats,
    format_factor,
    format_seconds,
    utc_timestamp,
)

KINDS = ("step", "library", "cpu")  # a Numba GPU step, a GPU library reference, a CPU implementation
KIND_LABELS = {"step": "GPU step (Numba)", "library": "GPU library", "cpu": "CPU"}


def _impl_to_file(result: ImplResult, data: dict) -> dict:
    """Its key is the one it is filed under (``KernelRun``)."""
    data.pop("key")
    data["phases"] = data["phases"] or None
    return data


def _impl_from_file(data: dict) -> dict:
    data.setdefault("key", "")
    return data


@shaped(renames={"timing": "kernel_timing"}, to_file=_impl_to_file, from_file=_impl_from_file)
@dataclass(frozen=True)
class ImplResult(Shaped):
    """One implementation: its phase samples (seconds), or why it was skipped; its agreement."""

    key: str
    label: str
    kind: str  # one of KINDS
    phases: dict[str, Stats] | None = None  # steps: alloc, h2d, launch, kernel, d2h, total; libraries: kernel; CPU: cpu
    skipped: str | None = None
    estimate_s: float | None = None  # CPU only: the probe-based estimate
    compile_s: float = 0.0  # steps: the first launch (JIT compile + one run); CPU: Numba compile
    agreement: Agreement | None = None
    launch: str | None = None  # steps: "16 blocks of 256 threads"
    same_work: bool = True  # False for a yardstick such as a device copy of the same bytes
    error: str | None = None  # it raised (an expired hold, a launch failure): this row only
    timing: KernelTiming | None = None  # the kernel alone: per-sample held/retries, L2 status
    note: str | None = None  # shown beside its figures (e.g. a reference moving more bytes)

    @property
    def measured(self) -> bool:
        return self.phases is not None

    @property
    def why_not(self) -> str | None:
        """Why there is no figure: skipped, or failed with its error."""
        return self.skipped or (f"failed: {self.error}" if self.error else None)

    @property
    def main(self) -> Stats | None:
        """The figure compared across implementations: the kernel alone on the GPU, the call on the CPU."""
        if self.phases is None:
            return None
        return self.phases.get("cpu") or self.phases.get("kernel")

    @property
    def seconds(self) -> float | None:
        """Median of ``main``, or the estimate for a CPU implementation that was not run."""
        return self.main.median_s if self.main is not None else self.estimate_s

    @property
    def on_gpu(self) -> bool:
        return self.kind in ("step", "library")

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind is {self.kind[:60]!r}; expected one of {', '.join(KINDS)}")
        if self.phases is not None and self.main is None:
            raise ValueError("a measured implementation holds its main figure: a 'kernel' (GPU) or 'cpu' phase")


def _seconds(result: ImplResult) -> float:
    """The median of a measured implementation (one always has its main figure: ``ImplResult``)."""
    main = result.main
    if main is None:
        raise ValueError(f"{result.key} was not measured")
    return main.median_s


# what a run's file says of each implementation beside its own shape (summary_rows), and of the run
_ROW_KEYS = ("seconds", "estimated", "gbps", "gflops", "fraction_of_peak", "vs_best_library")
_RUN_DERIVED = ("agree", "intensity_flop_per_byte", "best_library", "l2_resident")


def _run_to_file(run: KernelRun, data: dict) -> dict:
    best = run.best_library
    rows = {row["key"]: row for row in run.summary_rows()}
    implementations = {
        r.key: {**written, **{k: rows[r.key][k] for k in _ROW_KEYS}} for r, written in zip(run.results, data["results"])
    }
    return {
        "experiment": data.pop("kernel"),
        "title": data.pop("title"),
        "created_at": data.pop("created_at"),
        "params": data.pop("params"),
        "size": data.pop("size"),
        "backend": data.pop("backend"),
        "device": data.pop("device"),
        "roofs": data.pop("roofs"),
        "policy": data.pop("policy"),
        "seed": data.pop("seed"),
        "agree": run.agree,
        "agreement_mode": data.pop("agreement_mode"),
        "agreement_why": data.pop("agreement_why"),
        "bytes_moved": data.pop("bytes_moved"),
        "flops": data.pop("flops"),
        "intensity_flop_per_byte": run.intensity,
        "best_library": best.key if best else None,
        "l2_bytes": data.pop("l2_bytes"),
        "l2_resident": run.l2_resident,
        "telemetry": data.pop("telemetry"),
        "implementations": implementations,
        "notes": data.pop("notes"),
        "warnings": data.pop("warnings"),
    }


def _yardsticks(implementations: dict, best: Any) -> set[str]:
    """The libraries a file written before ``same_work`` was measuring other work: faster than the best library
    it names (a device copy of the same bytes, say), since the best is the fastest of those doing the same work."""
    best_s = (implementations.get(best) or {}).get("seconds") if isinstance(best, str) else None
    if not isinstance(best_s, int | float):
        return set()
    return {
        key for key, row in implementations.items()
        if isinstance(row, dict) and "same_work" not in row and row.get("kind") == "library" and key != best
        and isinstance(row.get("seconds"), int | float) and row["seconds"] < best_s
    }


def _run_from_file(data: dict) -> dict:
    data["kernel"] = data.pop("experiment", None)
    implementations = data.pop("implementations", None)
    if isinstance(implementations, dict):
        for key in _yardsticks(implementations, data.get("best_library")):
            implementations = {**implementations, key: {**implementations[key], "same_work": False}}
        data["results"] = [
            {**{k: v for k, v in row.items() if k not in _ROW_KEYS}, "key": key} if isinstance(row, dict) else row
            for key, row in implementations.items()
        ]
        for key, row in zip(implementations, data["results"]):  # a problem named by the file's key, not a position
            try:
                from_builtins(row, ImplResult)
            except ShapeError as exc:
                raise exc.under(f"implementations.{key}") from None
    return {k: v for k, v in data.items() if k not in _RUN_DERIVED}


@shaped(to_file=_run_to_file, from_file=_run_from_file, paths={"kernel": "experiment", "results": "implementations"})
@dataclass(frozen=True)
class KernelRun(Shaped):
    """Everything one catalog run measured. Times in seconds, bytes and FLOPs per run of the kernel."""

    kernel: str
    title: str
    params: dict[str, Any]
    size: str  # "N = 4,096 float32", "64 × 64 float32"
    backend: str
    device: DeviceInfo
    roofs: Roofs
    policy: RepeatPolicy
    bytes_moved: int
    flops: int
    results: tuple[ImplResult, ...]
    agreement_mode: str  # "exact" or "bounded"
    notes: tuple[str, ...] = ()
    agreement_why: str = ""  # why the check is exact (or bounded) for this kernel: the spec's words
    warnings: tuple[str, ...] = ()
    seed: int = 0
    created_at: str = field(default_factory=utc_timestamp)
    l2_bytes: int | None = None  # the device's L2 (None: unknown or simulated)
    telemetry: dict | None = None  # GPU clocks, temperature, power, throttling over the run

    # --- derived ---------------------------------------------------------------------

    def get(self, key: str) -> ImplResult:
        for r in self.results:
            if r.key == key:
                return r
        raise KeyError(f"{self.kernel}: no implementation {key!r}")

    @property
    def agree(self) -> bool:
        """Every implementation that ran agrees with the reference."""
        return all(r.agreement.passed for r in self.results if r.agreement is not None)

    @property
    def l2_resident(self) -> bool:
        """The bytes the kernel moves fit in the L2: GPU figures may be served partly from cache (°)."""
        return fits_in_l2(self.bytes_moved, self.l2_bytes)

    def marks(self, result: ImplResult) -> str:
        """``*`` fewer than 3 samples, ``°`` working set fits in the L2 (GPU rows)."""
        main = result.main
        few = "*" if main is not None and main.few_samples else ""
        return few + ("°" if result.on_gpu and result.measured and self.l2_resident else "")

    @property
    def intensity(self) -> float:
        """FLOPs per byte the algorithm must move (not hardware counters)."""
        return self.flops / self.bytes_moved if self.bytes_moved else 0.0

    def gbps(self, result: ImplResult) -> float | None:
        s = result.seconds
        return self.bytes_moved / s / 1e9 if s and result.measured else None

    def gflops(self, result: ImplResult) -> float | None:
        s = result.seconds
        return self.flops / s / 1e9 if s and result.measured and self.flops else None

    def fraction_of_peak(self, result: ImplResult) -> float | None:
        """Share of the roof that bounds this kernel on this device (GPU results only; None when unknown)."""
        if not result.on_gpu or not result.measured:
            return None
        gflops = self.gflops(result)
        if gflops is not None:
            return self.roofs.fraction(gflops, self.intensity)
        gbps = self.gbps(result)
        return gbps / self.roofs.memory_gbps if gbps and self.roofs.memory_gbps else None

    @property
    def best_library(self) -> ImplResult | None:
        """The fastest measured library doing the same work (not a yardstick copy)."""
        libs = [r for r in self.results if r.kind == "library" and r.same_work and r.measured]
        return min(libs, key=_seconds) if libs else None

    def vs_best_library(self, result: ImplResult) -> float | None:
        """This result's time ÷ the best library's time (1.1 = 10% slower); GPU results only."""
        best = self.best_library
        if best is None or not result.on_gpu or not result.measured:
            return None
        return _seconds(result) / _seconds(best)

    @property
    def best_step(self) -> ImplResult | None:
        steps = [r for r in self.results if r.kind == "step" and r.measured]
        return min(steps, key=_seconds) if steps else None

    def marks_legend(self) -> list[str]:
        """The legend lines for the marks that appear in this run's rows."""
        rows = self.summary_rows()
        out = []
        if any(r["few_samples"] for r in rows):
            out.append("* fewer than 3 samples: spread unknown")
        if any(r["l2_resident"] for r in rows):
            out.append(
                f"° the {self.bytes_moved:,} bytes fit in the {self.l2_bytes:,}-byte L2: may be served partly from "
                "cache"
            )
        return out

    # --- output ----------------------------------------------------------------------

    def summary_rows(self) -> list[dict]:
        """One row per implementation: time, GB/s, GFLOP/s, % of peak, ratio to the best library, agreement."""
        rows = []
        for r in self.results:
            rows.append({
                "key": r.key, "label": r.label, "kind": r.kind, "kind_label": KIND_LABELS[r.kind],
                "seconds": r.seconds, "estimated": r.skipped is not None and r.estimate_s is not None,
                "samples": r.main.n_samples if r.main else 0,
                "few_samples": bool(r.main and r.main.few_samples),
                "l2_resident": r.on_gpu and r.measured and self.l2_resident,
                "marks": self.marks(r),
                "held": r.main.held if r.main else None,
                "retries": r.main.retries if r.main else 0,
                "note": r.note,
                "min_s": r.main.min_s if r.main else None, "max_s": r.main.max_s if r.main else None,
                "gbps": self.gbps(r), "gflops": self.gflops(r), "fraction_of_peak": self.fraction_of_peak(r),
                "vs_best_library": self.vs_best_library(r),
                "agreement": r.agreement.describe() if r.agreement else None,
                "agrees": r.agreement.passed if r.agreement else None,
                "launch": r.launch, "skipped": r.why_not, "error": r.error,
            })
        return rows

    def summary_frame(self):
        import pandas as pd

        return pd.DataFrame(self.summary_rows())

    def to_frame(self):
        """Tidy samples: one row per implementation × phase × sample (pandas DataFrame).

        Columns: kernel, size, implementation, label, kind, phase, sample, seconds,
        estimated, few_samples, held, retries, l2_resident, backend (held and retries per
        sample where the kernel alone was timed behind a hold). A CPU implementation that
        was only estimated has one row.
        """
        import pandas as pd

        rows = []
        for r in self.results:
            if r.phases is None:
                if r.estimate_s is not None:
                    rows.append((r.key, r.label, r.kind, "cpu", 0, r.estimate_s, True, True, None, 0, False))
                continue
            l2 = r.on_gpu and self.l2_resident
            for phase, stats in r.phases.items():
                per_sample = r.timing if phase == "kernel" and r.timing is not None else None
                for i, s in enumerate(stats.samples_s):
                    held = per_sample.sample_held[i] if per_sample else stats.held
                    retries = per_sample.sample_retries[i] if per_sample else 0
                    rows.append((r.key, r.label, r.kind, phase, i, s, False, stats.few_samples, held, retries, l2))
        frame = pd.DataFrame(
            rows,
            columns=[
                "implementation",
                "label",
                "kind",
                "phase",
                "sample",
                "seconds",
                "estimated",
                "few_samples",
                "held",
                "retries",
                "l2_resident",
            ],
        )
        frame.insert(0, "size", self.size)
        frame.insert(0, "kernel", self.kernel)
        frame["backend"] = self.backend
        return frame

    def __str__(self) -> str:
        lines = [
            f"{self.title}, {self.size}, {self.device.name} ({self.backend}); {self.bytes_moved:,} bytes and "
            f"{self.flops:,} FLOPs per run (intensity {self.intensity:.3g} FLOP/byte)",
            f"agreement ({self.agreement_mode}): {'all agree' if self.agree else 'DISAGREE'}",
        ]
        for row in self.summary_rows():
            if row["seconds"] is None or (row["skipped"] and not row["estimated"]):
                why = row["skipped"] if row["error"] else f"skipped: {row['skipped']}"
                lines.append(f"  {row['label']:<34} {why}")
                continue
            parts = [("estimated " if row["estimated"] else "") + format_seconds(row["seconds"]) + row["marks"]]
            if row["held"] is False and row["kind"] != "cpu":
                parts.append("includes the launch (no hold)")
            if row["retries"]:
                parts.append(f"{row['retries']} retried")
            if row["gbps"]:
                parts.append(f"{row['gbps']:,.4g} GB/s")
            if row["gflops"]:
                parts.append(f"{row['gflops']:,.4g} GFLOP/s")
            if row["fraction_of_peak"] is not None:
                parts.append(f"{row['fraction_of_peak']:.0%} of peak")
            if row["vs_best_library"] is not None:
                parts.append(f"{format_factor(row['vs_best_library'])} the best library's time")
            if row["agreement"]:
                parts.append(row["agreement"])
            if row["note"]:
                parts.append(row["note"])
            lines.append(f"  {row['label']:<34} " + " · ".join(parts))
        marks = self.marks_legend()
        lines += [f"  note: {n}" for n in self.notes] + [f"  warning: {w}" for w in self.warnings]
        lines += [f"  {m}" for m in marks]
        if self.telemetry is not None:
            from gpu.core.telemetry import describe

            lines.append(f"  {describe(self.telemetry)}")
        return "\n".join(lines)


__all__ = ["ImplResult", "KIND_LABELS", "KINDS", "KernelRun"]
