"""The lab's timing method and checks, self-contained: the code cell every generated notebook carries.

This file is copied verbatim into each notebook (``gpu.notebook.build``), so it imports only the
standard library, NumPy and ``numba.cuda`` — nothing of the lab, which a free cloud GPU does not have.
It is also imported by the lab's tests, which run it in numba-cuda's simulator.

The method, as the lab's ``gpu check`` times a kernel: warm-up launches first (compilation and first
touches stay out of the samples), the L2 written over before every sample (a scratch buffer twice the
L2's size, as nvbench does), each sample timed with CUDA events on one stream, then the median, min,
max and spread of the samples. Not carried over: the lab's verified stream hold (it needs the lab's own
holding kernel), so a sample here includes the launch's own overhead, a few microseconds at most. In
the simulator there are no events: samples are wall-clock seconds of Python running the threads, and
the file says ``backend: "simulator"``.
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
import time
from datetime import UTC, datetime

import numpy as np

# numba-cuda 0.30 registers an overload for np.row_stack, which NumPy 2.5 removed: without this alias
# compiling any kernel fails under NumPy 2.5 (as the lab's gpu/core/backend.py does before its import)
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

from numba import config as _numba_config  # after the alias
from numba import cuda

FORMAT = "kernel-lab-self-reported"
FORMAT_VERSION = 1
METHOD = "notebook-1"  # warm-up, L2 flushed before every sample, CUDA events, median/min/max/spread
FLUSH_FACTOR = 2  # scratch = 2 x L2: written through, it evicts every line of the previous sample


def simulated() -> bool:
    """True when numba-cuda runs kernels in its simulator (NUMBA_ENABLE_CUDASIM=1): no GPU times then."""
    return bool(getattr(_numba_config, "ENABLE_CUDASIM", False))


def _attribute(device, name: str) -> int | None:
    try:
        return int(getattr(device, name))
    except Exception:  # an attribute this driver or binding does not know
        return None


def device_facts() -> dict:
    """Name, compute capability, SMs, memory clock and bus width, L2 size and the peak they give (GB/s)."""
    if simulated():
        return {"name": "CUDA simulator", "compute_capability": None, "multiprocessors": None,
                "memory_clock_khz": None, "memory_bus_width_bits": None, "l2_bytes": None,
                "peak_bandwidth_gbps": None}
    device = cuda.get_current_device()
    name = device.name.decode() if isinstance(device.name, bytes) else str(device.name)
    clock_khz = _attribute(device, "MEMORY_CLOCK_RATE")
    bus_bits = _attribute(device, "GLOBAL_MEMORY_BUS_WIDTH")
    major, minor = device.compute_capability
    peak = 2 * clock_khz * 1e3 * bus_bits / 8 / 1e9 if clock_khz and bus_bits else None  # double data rate
    return {"name": name, "compute_capability": f"{major}.{minor}",
            "multiprocessors": _attribute(device, "MULTIPROCESSOR_COUNT"), "memory_clock_khz": clock_khz,
            "memory_bus_width_bits": bus_bits, "l2_bytes": _attribute(device, "L2_CACHE_SIZE"),
            "peak_bandwidth_gbps": peak}


def library_versions() -> dict:
    from importlib import metadata

    def version(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    return {"numba-cuda": version("numba-cuda"), "numba": version("numba"), "numpy": np.__version__,
            "python": platform.python_version()}


class L2Flush:
    """Writes FLUSH_FACTOR x L2 bytes on ``stream`` before a sample; ``done`` is False where it cannot."""

    def __init__(self, stream, l2_bytes: int | None):
        self.stream = stream
        self.nbytes = FLUSH_FACTOR * l2_bytes if l2_bytes and not simulated() else 0
        self.scratch = cuda.device_array(self.nbytes, dtype=np.uint8) if self.nbytes else None

    @property
    def done(self) -> bool:
        return self.scratch is not None

    def __call__(self) -> None:
        if self.scratch is not None:
            cuda.cudadrv.driver.device_memset(self.scratch, 0, self.nbytes, self.stream)


def summarise(samples_s: list[float]) -> dict:
    """Median, min, max (seconds) and spread ((max - min) / median) of the samples, with the samples."""
    ordered = sorted(samples_s)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return {"median_s": median, "min_s": ordered[0], "max_s": ordered[-1],
            "spread": (ordered[-1] - ordered[0]) / median if median > 0 else None,
            "samples": len(ordered), "samples_s": list(samples_s)}


def time_it(run, *, stream, flush: L2Flush, warmup: int, samples: int) -> dict:
    """``run()`` queues work on ``stream``: warm-up runs, then ``samples`` timed ones, each after an L2 flush.

    On a GPU each sample is the CUDA-event time between the flush and the stream's end; in the simulator,
    wall-clock seconds of Python (never a GPU time). Returns ``summarise`` of the samples."""
    for _ in range(warmup):
        run()
    stream.synchronize()
    out = []
    for _ in range(samples):
        flush()
        if simulated():
            start_s = time.perf_counter()
            run()
            stream.synchronize()
            out.append(time.perf_counter() - start_s)
            continue
        start, end = cuda.event(), cuda.event()
        start.record(stream)
        run()
        end.record(stream)
        end.synchronize()
        out.append(cuda.event_elapsed_time(start, end) / 1e3)
    return summarise(out)


def compare(name: str, got: np.ndarray, want: np.ndarray, rtol: float = 0.0, atol: float = 0.0) -> dict:
    """One check: bit-identical (rtol = atol = 0) or within the tolerance; the first wrong index when not."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return {"name": name, "passed": False, "detail": f"shape {got.shape}, expected {want.shape}"}
    ok = np.equal(got, want) if rtol == 0 and atol == 0 else np.isclose(got, want, rtol=rtol, atol=atol)
    wrong = np.flatnonzero(~ok.reshape(-1))
    if wrong.size == 0:
        exact = "bit-identical" if rtol == 0 and atol == 0 else f"within rtol={rtol}, atol={atol}"
        return {"name": name, "passed": True, "detail": f"{exact} ({got.size:,} values)"}
    first = int(wrong[0])
    return {"name": name, "passed": False,
            "detail": f"{wrong.size:,} wrong; first at flat index {first}: got {got.reshape(-1)[first]!r}, "
                      f"expected {want.reshape(-1)[first]!r}"}


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def result_header(kind: str, key: str, kernel_source: str) -> dict:
    """What every result file starts with: format, what ran, where, with which libraries."""
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "method": METHOD, "kind": kind, "key": key,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "backend": "simulator" if simulated() else "cuda", "device": device_facts(),
            "versions": library_versions(), "kernel_source": kernel_source, "kernel_sha256": sha256(kernel_source)}


def write_result(result: dict, path: str) -> str:
    """Write the one result file (strict JSON: no NaN or infinity); returns its path."""
    def strict(value):
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, dict):
            return {k: strict(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [strict(v) for v in value]
        return value

    with open(path, "w", encoding="utf-8") as f:
        json.dump(strict(result), f, indent=1, allow_nan=False)
    return path


def gamma(k: int, u: float = 2.0**-24) -> float:
    """The relative rounding bound of a summation k additions deep, (1 + u)^k - 1, as the lab computes it."""
    return math.expm1(k * math.log1p(u)) if k > 0 else 0.0


def compare_bounded(name: str, got: np.ndarray, exact64: np.ndarray, abs_terms64: np.ndarray, depth: int) -> dict:
    """One check against a float64 reference: |got - exact| <= (gamma_k(float32) + gamma_k(float64)) x sum|terms|."""
    got = np.asarray(got)
    if got.shape != exact64.shape:
        return {"name": name, "passed": False, "detail": f"shape {got.shape}, expected {exact64.shape}"}
    error = np.abs(got.astype(np.float64) - exact64)
    error = np.where(np.isnan(error), np.inf, error)  # NaN never agrees
    bound = (gamma(depth) + gamma(depth, 2.0**-53)) * abs_terms64
    over = np.flatnonzero((error > bound).reshape(-1))
    if over.size == 0:
        return {"name": name, "passed": True,
                "detail": f"within the float32 bound of a depth-{depth} sum against float64 ({got.size:,} values)"}
    first = int(over[0])
    return {"name": name, "passed": False,
            "detail": f"{over.size:,} outside the bound; first at flat index {first}: got {got.reshape(-1)[first]!r}, "
                      f"expected {exact64.reshape(-1)[first]!r} within {bound.reshape(-1)[first]:.3g}"}


def one_wave(kernel, signature: str, blocks_needed: int, block) -> int:
    """Blocks for one full wave of this GPU (what every SM holds at once, from the occupancy of the kernel as
    compiled here), never more than ``blocks_needed``: the lab's grid-stride launch, computed on this device."""
    per_grid = kernel.compile(signature).max_cooperative_grid_blocks(block)
    return max(1, min(blocks_needed, int(per_grid)))


def time_wall(run, *, flush: L2Flush, warmup: int, samples: int, per: int = 1) -> dict:
    """``run()`` does the whole work and waits for it (several streams, host memory): wall-clock seconds per sample,
    each after an L2 flush and a synchronised device, divided by ``per`` (seconds per result). Returns ``summarise``."""
    for _ in range(warmup):
        run()
    out = []
    for _ in range(samples):
        flush()
        cuda.synchronize()
        start_s = time.perf_counter()
        run()
        cuda.synchronize()
        out.append((time.perf_counter() - start_s) / per)
    return summarise(out)
