"""The block-size sweep: what threads per block cost the article's kernel.

The vector-add kernel timed alone (behind the verified stream hold, L2 flushed) for
threads per block 32 to 1024, plus an optional size that is not a multiple of 32, and a
grid-stride vector add with blocks = a multiple of the multiprocessor count, each with
effective bandwidth and the occupancy the device allows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpu.catalog.base import CheckSection, Experiment, PageLink, Param, Part, PerBackend, Progress, Recorded
from gpu.catalog.registry import register
from gpu.core import estimates
from gpu.core.arrays import vector_inputs
from gpu.core.backend import BACKEND, cuda
from gpu.core.device import DeviceInfo, device_info
from gpu.core.kernel_timing import time_on_device
from gpu.core.l2 import fits_in_l2, flush_problem, l2_cache_bytes, recorded_l2_bytes
from gpu.core.limits import (
    InputError,
    check_n,
    check_repeats,
    check_threads,
    max_vector_n,
    parse_int,
    threads_per_block_warnings,
)
from gpu.core.occupancy import Occupancy, SmLimits, kernel_occupancy, sm_limits
from gpu.core.shape import Shaped, shaped, tagged
from gpu.core.telemetry import TelemetryMonitor
from gpu.core.timing import (
    RepeatPolicy,
    Stats,
    utc_timestamp,
)
from gpu.kernels.geometry import blocks_for
from gpu.kernels.vector_add import (
    VECTOR_ADD_SIGNATURE,
    compile_grid_stride_vector_add,
    compile_vector_add,
    vector_add_grid_stride_kernel,
    vector_add_kernel,
)
from gpu.kernels.vector_add_timing import (
    BYTES_PER_ELEMENT,
    effective_bandwidth_gbps,
)

SWEEP_BLOCK_SIZES = (32, 64, 128, 256, 512, 1024)
GRID_STRIDE_SM_MULTIPLES = (1, 4, 8, 32)  # blocks = k x multiprocessors
GRID_STRIDE_THREADS = 256
KIND_ONE_PER_ELEMENT = "one thread per element"
KIND_GRID_STRIDE = "grid-stride"



# --- launch arithmetic -----------------------------------------------------------------


# --- the indexing explorer -------------------------------------------------------------


# --- occupancy -------------------------------------------------------------------------


# --- the block-size sweep --------------------------------------------------------------


@shaped(derived={"label": lambda c: c.label})
@dataclass(frozen=True)
class LaunchConfigResult(Shaped):
    """One configuration of the sweep: its kernel time Stats (seconds) and checks."""

    kind: str  # KIND_ONE_PER_ELEMENT or KIND_GRID_STRIDE
    threads_per_block: int
    blocks: int
    kernel: Stats
    agree: bool  # c == a + b bit for bit after the timed runs
    sm_multiple: int | None = None  # grid-stride: blocks = sm_multiple x multiprocessors
    occupancy: Occupancy | None = None

    @property
    def label(self) -> str:
        if self.kind == KIND_GRID_STRIDE:
            return f"grid-stride {self.sm_multiple}×SMs × {self.threads_per_block}"
        return f"{self.threads_per_block} threads/block"

    def __post_init__(self) -> None:
        if self.kind not in (KIND_ONE_PER_ELEMENT, KIND_GRID_STRIDE):
            raise ValueError(f"kind is {self.kind[:60]!r}; expected {KIND_ONE_PER_ELEMENT!r} or {KIND_GRID_STRIDE!r}")


def _sweep_to_file(run: LaunchSweepRun, data: dict) -> dict:
    """The file adds the sweep's parameters, verdicts and each configuration's bandwidth for its reader."""
    configs = data.pop("configs")
    return {
        "experiment": "launch-sweep",
        "created_at": data.pop("created_at"),
        "params": {
            "n": run.n,
            "block_sizes": [c.threads_per_block for c in run.configs if c.kind == KIND_ONE_PER_ELEMENT],
            "grid_stride_multiples": [c.sm_multiple for c in run.configs if c.kind == KIND_GRID_STRIDE],
            "repeats": run.policy.n_repeat,
        },
        "backend": data.pop("backend"),
        "device": data.pop("device"),
        "n": data.pop("n"),
        "dtype": run.dtype,
        **data,
        "agree": run.agree,
        "best": run.best.label,
        "configs": [
            {**c, "bandwidth_gbps": run.bandwidth_gbps(r.kernel.median_s)} for c, r in zip(configs, run.configs)
        ],
        "l2_resident": run.l2_resident,
    }


def _sweep_from_file(data: dict) -> dict:
    data = tagged(data, "experiment", "launch-sweep")
    for key in ("params", "dtype", "agree", "best", "l2_resident"):
        data.pop(key, None)
    if isinstance(data.get("configs"), list):
        data["configs"] = [
            {k: v for k, v in c.items() if k != "bandwidth_gbps"} if isinstance(c, dict) else c for c in data["configs"]
        ]
    if not data.get("l2_bytes"):  # a run recorded before it wrote its L2: the size its device reports
        data["l2_bytes"] = recorded_l2_bytes(data)
    return data


@shaped(
    prose=("explanation",), renames={"limits": "sm_limits"}, to_file=_sweep_to_file, from_file=_sweep_from_file
)
@dataclass(frozen=True)
class LaunchSweepRun(Shaped):
    """Kernel time per launch configuration at one N (CUDA events; wall clock simulated)."""

    n: int
    backend: str
    device: DeviceInfo
    policy: RepeatPolicy
    configs: tuple[LaunchConfigResult, ...]
    compile_s: float
    sm_count: int  # multiprocessors used for grid-stride sizes (1 in the simulator)
    limits: SmLimits | None
    warnings: tuple[str, ...] = ()
    seed: int = 0
    created_at: str = field(default_factory=utc_timestamp)
    l2_bytes: int | None = None  # the device's L2 (None: unknown or simulated)
    telemetry: dict | None = None  # GPU clocks, temperature, power, throttling over the sweep

    dtype = "float32"

    @property
    def agree(self) -> bool:
        return all(c.agree for c in self.configs)

    @property
    def l2_resident(self) -> bool:
        """a, b and c together fit in the L2: every figure may be served partly from cache (°)."""
        return fits_in_l2(self.bytes_moved, self.l2_bytes)

    @property
    def bytes_moved(self) -> int:
        return BYTES_PER_ELEMENT * self.n

    def bandwidth_gbps(self, seconds: float) -> float:
        return effective_bandwidth_gbps(self.n, seconds)

    @property
    def best(self) -> LaunchConfigResult:
        """The configuration with the lowest median kernel time."""
        return min(self.configs, key=lambda c: c.kernel.median_s)

    def config(self, label: str) -> LaunchConfigResult | None:
        return next((c for c in self.configs if c.label == label), None)

    def to_frame(self):
        """Tidy samples (pandas DataFrame): one row per configuration x sample.

        Columns: label, kind, threads_per_block, blocks, sm_multiple, sample, seconds,
        bandwidth_gbps, occupancy (fraction or NaN), occupancy_source, best, n, backend.
        """
        import pandas as pd

        best = self.best.label
        rows = []
        for order, c in enumerate(self.configs):
            occ = c.occupancy
            for i, s in enumerate(c.kernel.samples_s):
                rows.append(
                    {
                        "order": order,
                        "label": c.label,
                        "kind": c.kind,
                        "threads_per_block": c.threads_per_block,
                        "blocks": c.blocks,
                        "sm_multiple": c.sm_multiple,
                        "sample": i,
                        "seconds": s,
                        "bandwidth_gbps": self.bandwidth_gbps(s),
                        "occupancy": occ.fraction if occ else float("nan"),
                        "occupancy_source": occ.source if occ else "not available",
                        "best": c.label == best,
                        "few_samples": c.kernel.few_samples,
                        "l2_resident": self.l2_resident,
                        "held": c.kernel.held,
                        "retries": c.kernel.retries,
                    }
                )
        frame = pd.DataFrame(rows)
        frame["n"] = self.n
        frame["backend"] = self.backend
        return frame

    @classmethod
    def recorded(cls, ref: Any) -> LaunchSweepRun | None:
        """This experiment's block-size sweep in a committed check (``ref``: a ``ReferenceRun`` of
        gpu/service/references.py, read through its ``read``), None when the run holds none."""
        return ref.read(cls, "launch", "sweep")



def _check_block_sizes(sizes: Iterable[int | str], device_max: int) -> tuple[list[int], list[str]]:
    values, warnings = [], []
    for size in sizes:
        values.append(check_threads(size, device_max))
        warnings += threads_per_block_warnings(values[-1])
    return list(dict.fromkeys(values)), warnings


def run_launch_sweep(
    n: int | str,
    block_sizes: Iterable[int | str] = SWEEP_BLOCK_SIZES,
    *,
    extra_block_size: int | str | None = None,
    grid_stride_multiples: Iterable[int | str] = GRID_STRIDE_SM_MULTIPLES,
    grid_stride_threads: int | str = GRID_STRIDE_THREADS,
    policy: RepeatPolicy | None = None,
    max_n: int | None = None,
    seed: int = 0,
    on_progress: Progress | Callable[[str], None] | None = None,
) -> LaunchSweepRun:
    """Time the vector-add kernel per launch configuration at one N.

    Inputs are copied to the device once; only the kernel is timed (CUDA events on one
    stream behind a stream-holding kernel, so host launch latency is excluded — see
    ``gpu.core.kernel_timing.time_on_device``; wall clock in the simulator). After each configuration the output is
    copied
    back and checked bit for bit against NumPy, then poisoned with NaN for the next.
    ``policy`` defaults to 10 timed runs after one warm-up.
    """
    say = on_progress or (lambda _msg: None)
    n = check_n(n, max_n)
    device = device_info()
    sizes, warnings = _check_block_sizes(block_sizes, device.max_threads_per_block)
    if extra_block_size is not None:
        extra, extra_warnings = _check_block_sizes([extra_block_size], device.max_threads_per_block)
        warnings += extra_warnings
        sizes = list(dict.fromkeys(sizes + extra))
    gs_threads = parse_int(grid_stride_threads, "grid-stride threads per block")
    multiples = [parse_int(k, "multiple of the SM count") for k in grid_stride_multiples]
    if multiples:
        check_threads(gs_threads, device.max_threads_per_block)
    for k in multiples:
        if not 1 <= k <= 1024:
            raise InputError(f"grid-stride multiples of the SM count must be between 1 and 1024, got {k}")
    if not sizes and not multiples:
        raise InputError("choose at least one block size or grid-stride launch")
    policy = policy or RepeatPolicy.count(10)
    sm_count = device.multiprocessors or 1
    if device.multiprocessors is None and multiples:
        warnings.append("The simulator has no multiprocessors: grid-stride sizes use a count of 1.")

    # compile once, timed apart
    say("compiling the kernels")
    compile_s = compile_vector_add() + (compile_grid_stride_vector_add() if multiples else 0.0)
    limits = sm_limits()
    compiled_article = None if BACKEND.simulated else vector_add_kernel.compile(VECTOR_ADD_SIGNATURE)
    compiled_gs = (
        None if BACKEND.simulated or not multiples else vector_add_grid_stride_kernel.compile(VECTOR_ADD_SIGNATURE)
    )

    # prepare inputs on the device once
    a, b = vector_inputs(n, seed)
    reference_bits = (a + b).view(np.uint32)
    poison = np.full(n, np.nan, dtype=np.float32)
    out = np.empty(n, dtype=np.float32)
    stream = cuda.stream()
    d_a = cuda.to_device(a, stream=stream)
    d_b = cuda.to_device(b, stream=stream)
    d_c = cuda.to_device(poison, stream=stream)

    l2_bytes = l2_cache_bytes()
    if (flush := flush_problem()) is not None:
        warnings.append(flush)
    monitor = TelemetryMonitor().start()  # clocks and throttling over the whole sweep
    plan: list[tuple[str, int, int, int | None]] = [(KIND_ONE_PER_ELEMENT, t, blocks_for(n, t), None) for t in sizes]
    plan += [(KIND_GRID_STRIDE, gs_threads, k * sm_count, k) for k in multiples]
    results = []
    for index, (kind, tpb, blocks, multiple) in enumerate(plan, start=1):
        kernel = vector_add_kernel if kind == KIND_ONE_PER_ELEMENT else vector_add_grid_stride_kernel
        label = f"{tpb} threads/block" if multiple is None else f"grid-stride {multiple}×SMs × {tpb}"
        say(f"{label} ({index} of {len(plan)})")

        # the kernel alone, launch configured once, launch latency excluded (one monitor covers the sweep)
        timing = time_on_device(kernel, (d_a, d_b, d_c), blocks, tpb, policy=policy, stream=stream,
                                working_set_bytes=BYTES_PER_ELEMENT * n, l2_bytes=l2_bytes, telemetry=False)
        stats = timing.stats
        d_c.copy_to_host(out, stream=stream)
        stream.synchronize()
        agree = bool(np.array_equal(out.view(np.uint32), reference_bits))
        d_c.copy_to_device(poison, stream=stream)  # the next configuration must write every element
        compiled = compiled_article if kind == KIND_ONE_PER_ELEMENT else compiled_gs
        occupancy = kernel_occupancy(compiled, tpb, limits, device.multiprocessors)
        results.append(LaunchConfigResult(kind, tpb, blocks, stats, agree, multiple, occupancy))
    stream.synchronize()
    del d_a, d_b, d_c
    telemetry = monitor.stop()

    return LaunchSweepRun(
        n=n,
        backend=BACKEND.kind,
        device=device,
        policy=policy,
        configs=tuple(results),
        compile_s=compile_s,
        sm_count=sm_count,
        limits=limits,
        warnings=tuple(dict.fromkeys(warnings)),
        seed=seed,
        l2_bytes=l2_bytes,
        telemetry=telemetry,
    )


# --- the declarations ----------------------------------------------------------------

SM_MULTIPLE_CHOICES = (1, 2, 4, 8, 16, 32)  # grid-stride launches offered on the page


def _ints(value, name: str) -> tuple[int, ...]:
    parts = [part.strip() for part in value.split(",")] if isinstance(value, str) else list(value)
    return tuple(dict.fromkeys(parse_int(part, name) for part in parts if str(part).strip()))


def _optional_block_size(value) -> int | None:
    if str(value).strip() == "":
        return None
    return check_threads(value, device_info().max_threads_per_block)


def _sweep_work(p) -> int:
    """N x (repeats + 1 warm-up) for every configuration timed."""
    configs = len(p["block_sizes"]) + len(p["grid_stride_multiples"]) + (1 if p["extra_block_size"] else 0)
    if not configs:
        raise InputError("choose at least one block size or grid-stride launch")
    return p["n"] * (p["repeats"] + 1) * configs


def _sweep_estimate(p, simulated: bool) -> float:
    """Seconds the sweep takes at these settings, for the form (``Experiment.estimate``): every configuration's
    samples (warm-up included), a kernel pass over N each, and a first launch that compiles."""
    configs = len(p["block_sizes"]) + len(p["grid_stride_multiples"]) + (1 if p["extra_block_size"] else 0)
    n = p["n"]
    per_sample = estimates.kernel_s(n, 12 * n, simulated) + (0.0 if simulated else estimates.GPU_SAMPLE_S)
    return configs * ((p["repeats"] + 1) * per_sample + (0.0 if simulated else estimates.GPU_COMPILE_S))


# The page of the launch experiments (indexing, the sweep, launch overhead): one link for all three.
LAUNCH_PAGE = PageLink(
    "Launch config",
    ":material/grid_view:",
    30,
    "which thread handles which element; block-size sweep; the kernel's PTX",
    "pages/3_Launch_config.py",
)

def read_recorded(ref) -> tuple:
    """Every result this experiment's "On a real GPU" panel draws from a committed run
    (``Recorded.read``): raises if one cannot be rebuilt."""
    return (LaunchSweepRun.recorded(ref),)


LAUNCH_SWEEP = register(
    Experiment(
        key="launch-sweep",
        title="Block-size sweep",
        summary="time the vector-add kernel for threads per block 32..1024 and grid-stride launches",
        params=(
            Param(
                "n",
                "N (elements per vector)",
                check_n,
                lambda: min(1024 if BACKEND.simulated else 2**26, max_vector_n()),
                "A whole number such as 67108864, 1e8 or 2^26. Large N shows the memory-bound plateau.",
            ),
            Param(
                "repeats",
                "Repeats",
                check_repeats,
                PerBackend(20, 3),
                "Timed runs per configuration after one warm-up.",
            ),
            Param(
                "extra_block_size",
                "Extra block size",
                _optional_block_size,
                None,
                "Also time this block size, e.g. 100 (not a multiple of 32). Empty: none.",
            ),
            Param(
                "block_sizes",
                "Threads per block",
                lambda v: _ints(v, "threads per block"),
                SWEEP_BLOCK_SIZES,
                "Block sizes to time, comma-separated.",
                widget="multiselect",
                options=SWEEP_BLOCK_SIZES,
            ),
            Param(
                "grid_stride_multiples",
                "Grid-stride launches (blocks = k × multiprocessors, 256 threads each)",
                lambda v: _ints(v, "multiple of the SM count"),
                PerBackend(GRID_STRIDE_SM_MULTIPLES, (1, 4)),
                "Grid-stride launches of k × SM-count blocks of 256 threads, comma-separated k ('' for none).",
                widget="multiselect",
                options=SM_MULTIPLE_CHOICES,
                option_label=lambda k: f"{k}× SMs",
            ),
        ),
        run=lambda p, progress: run_launch_sweep(
            p["n"],
            p["block_sizes"],
            extra_block_size=p["extra_block_size"],
            grid_stride_multiples=p["grid_stride_multiples"],
            policy=RepeatPolicy.count(p["repeats"]),
            on_progress=progress,
        ),
        work=_sweep_work,
        estimate=_sweep_estimate,
        measures=lambda run: {"best_kernel_s": min(c.kernel.median_s for c in run.configs)} if run.configs else {},
        result_type=LaunchSweepRun,
        page=LAUNCH_PAGE,
        order=40,
        history_columns=("n", "repeats"),
        check=(
            CheckSection("launch", parts=(Part(("sweep",), LaunchSweepRun),)),  # run by check.py: launch_section
        ),
        recorded=Recorded("launch", read=read_recorded),  # drawn by ui/views/experiments/launch.py: recorded
        uses_cpu=BACKEND.simulated,
    )
)

__all__ = [
    "GRID_STRIDE_SM_MULTIPLES",
    "LaunchConfigResult",
    "LaunchSweepRun",
    "Occupancy",
    "SWEEP_BLOCK_SIZES",
    "SmLimits",
    "run_launch_sweep",
]
