"""Launch configuration: how blocks and threads map to data, and what block size costs.

Two experiments:

- ``run_indexing``: the thread-indexing explorer. A probe kernel (the article's kernel
  plus a recorder) runs at the chosen N and block size, or as a grid-stride loop over a
  fixed number of blocks, and records for every thread its threadIdx.x, blockIdx.x,
  blockDim.x, position, warp, whether the guard masked it off, and how many elements it
  added. The records are checked against the same arithmetic done in NumPy.
- ``run_launch_sweep``: the article's vector-add kernel timed with CUDA events for
  threads per block 32 to 1024 (plus an optional size that is not a multiple of 32),
  and a grid-stride vector add with blocks = a multiple of the multiprocessor count,
  each with effective bandwidth and the occupancy the device allows.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Iterable

import numpy as np

from gpu.core.backend import BACKEND, cuda
from gpu.core.device import DeviceInfo, device_info
from gpu.kernels.vector_add import (
    PROBE_FIELDS,
    VECTOR_ADD_SIGNATURE,
    blocks_for,
    compile_grid_stride_vector_add,
    compile_vector_add,
    grid_stride_probe_kernel,
    indexing_probe_kernel,
    vector_add_grid_stride_kernel,
    vector_add_kernel,
)
from gpu.core.limits import (
    SIMULATOR_MAX_N,
    WARP_SIZE,
    InputError,
    check_n,
    check_repeats,
    check_threads,
    check_threads_per_block,
    max_vector_n,
    parse_int,
    parse_size,
)
from gpu.core.timing import RepeatPolicy, Stats, format_seconds, time_kernel
from gpu.experiments.base import Experiment, Param, PerBackend, Progress
from gpu.experiments.registry import register
from gpu.experiments.vector_add import BYTES_PER_ELEMENT, effective_bandwidth_gbps

DRAW_LIMIT_THREADS = 4096  # the explorer's chart draws at most this many thread cells
# The probe records 7 int32 per thread and needs a, b, c (and two more int32 arrays for
# grid-stride) per element: 2^22 of each is ~200 MB, quick on any GPU.
PROBE_MAX_GPU = 1 << 22
MAX_INDEX = 2**31 - 1  # CUDA's 1-D grid is at most 2^31 - 1 blocks; positions here are int32

SWEEP_BLOCK_SIZES = (32, 64, 128, 256, 512, 1024)
GRID_STRIDE_SM_MULTIPLES = (1, 4, 8, 32)  # blocks = k x multiprocessors
GRID_STRIDE_THREADS = 256
KIND_ONE_PER_ELEMENT = "one thread per element"
KIND_GRID_STRIDE = "grid-stride"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def probe_limit() -> int:
    """Most threads (and elements) the probe runs at on this backend."""
    return SIMULATOR_MAX_N if BACKEND.simulated else PROBE_MAX_GPU


# --- launch arithmetic -----------------------------------------------------------------


@dataclass(frozen=True)
class LaunchSummary:
    """What a launch of ``blocks`` x ``threads_per_block`` threads does with N elements.

    Pure arithmetic (no GPU). Thread t (global index tx + bx * bw) is idle exactly when
    t >= N, for one-thread-per-element and grid-stride launches alike.
    """

    n: int
    threads_per_block: int
    blocks: int
    grid_stride: bool = False
    warp_size: int = WARP_SIZE

    @property
    def threads_launched(self) -> int:
        return self.blocks * self.threads_per_block

    @property
    def active_threads(self) -> int:
        return min(self.n, self.threads_launched)

    @property
    def idle_threads(self) -> int:
        """Threads the guard masks off (one per element) or that get no element (grid-stride)."""
        return max(0, self.threads_launched - self.n)

    @property
    def warps_per_block(self) -> int:
        return -(-self.threads_per_block // self.warp_size)

    @property
    def warps_launched(self) -> int:
        return self.blocks * self.warps_per_block

    @property
    def empty_lanes_per_block(self) -> int:
        """Lanes of the block's last warp with no thread (block size not a multiple of 32)."""
        return self.warps_per_block * self.warp_size - self.threads_per_block

    def _warp_counts(self) -> tuple[int, int]:
        """(fully idle warps, partly idle warps): a warp is partly idle when some of its
        32 lanes do work and others are masked off or hold no thread at all."""
        tpb, ws, wpb = self.threads_per_block, self.warp_size, self.warps_per_block
        full_blocks = min(self.blocks, self.n // tpb)
        partial = full_blocks * (1 if tpb % ws else 0)  # a short last warp in every full block
        idle = 0
        rest = self.blocks - full_blocks
        if rest and self.n % tpb:  # the block that straddles the end of the data
            active = self.n - full_blocks * tpb  # 0 < active < tpb
            rest -= 1
            if active % ws:  # one warp has both working and masked lanes
                partial += 1
            idle += wpb - -(-active // ws)
        idle += rest * wpb  # blocks entirely past the end (grid-stride with few elements)
        return idle, partial

    @property
    def idle_warps(self) -> int:
        """Warps in which no lane does any work."""
        return self._warp_counts()[0]

    @property
    def partial_warps(self) -> int:
        return self._warp_counts()[1]

    @property
    def last_block_idle_threads(self) -> int:
        return min(self.threads_per_block, max(0, self.threads_launched - self.n))

    @property
    def last_block_wasted_fraction(self) -> float:
        """Share of the last block's threads that do nothing (0 when N fills it)."""
        return self.last_block_idle_threads / self.threads_per_block

    @property
    def stride(self) -> int:
        """Grid-stride step: threads in the whole grid."""
        return self.threads_launched

    @property
    def max_elements_per_thread(self) -> int:
        return -(-self.n // self.threads_launched)

    @property
    def min_elements_per_thread(self) -> int:
        return self.n // self.threads_launched

    def to_dict(self) -> dict:
        return {
            "n": self.n,
            "threads_per_block": self.threads_per_block,
            "blocks": self.blocks,
            "grid_stride": self.grid_stride,
            "threads_launched": self.threads_launched,
            "active_threads": self.active_threads,
            "idle_threads": self.idle_threads,
            "warps_launched": self.warps_launched,
            "idle_warps": self.idle_warps,
            "partial_warps": self.partial_warps,
            "empty_lanes_per_block": self.empty_lanes_per_block,
            "last_block_idle_threads": self.last_block_idle_threads,
            "last_block_wasted_fraction": self.last_block_wasted_fraction,
            "max_elements_per_thread": self.max_elements_per_thread,
            "min_elements_per_thread": self.min_elements_per_thread,
        }

    def __str__(self) -> str:
        kind = f"grid-stride over {self.blocks:,} blocks" if self.grid_stride else f"{self.blocks:,} blocks (ceil(N / {self.threads_per_block}))"
        lines = [
            f"N = {self.n:,}, {self.threads_per_block} threads per block, {kind}",
            f"  threads launched {self.threads_launched:,}, idle {self.idle_threads:,}",
            f"  warps launched {self.warps_launched:,}, fully idle {self.idle_warps:,}, partly idle {self.partial_warps:,}",
            f"  last block: {self.last_block_idle_threads} of {self.threads_per_block} threads idle ({self.last_block_wasted_fraction:.1%} wasted)",
        ]
        if self.grid_stride:
            lines.append(f"  stride {self.stride:,}; elements per thread {self.min_elements_per_thread}–{self.max_elements_per_thread}")
        return "\n".join(lines)


def expected_records(n: int, threads_per_block: int, blocks: int, grid_stride: bool = False) -> np.ndarray:
    """What the probe must record, computed in NumPy: int64 (threads, len(PROBE_FIELDS))."""
    thread = np.arange(blocks * threads_per_block, dtype=np.int64)
    tx = thread % threads_per_block
    bx = thread // threads_per_block
    position = tx + bx * threads_per_block
    masked = position >= n
    if grid_stride:
        stride = blocks * threads_per_block
        elements = np.where(masked, 0, (n - 1 - position) // stride + 1)
    else:
        elements = (~masked).astype(np.int64)
    return np.stack(
        [tx, bx, np.full_like(tx, threads_per_block), position, tx // WARP_SIZE, masked.astype(np.int64), elements],
        axis=1,
    )


# --- the indexing explorer -------------------------------------------------------------


@dataclass(frozen=True)
class IndexingRun:
    """The explorer's result: launch summary, and the probe's per-thread records when drawn.

    ``records`` (int32, one row per launched thread, columns PROBE_FIELDS) and, for
    grid-stride, ``handled_by`` (the global thread index that added each element) are
    kept only when the launch is small enough to draw.
    """

    summary: LaunchSummary
    backend: str
    device: DeviceInfo
    probed: bool  # the probe kernel ran
    records_match: bool | None  # probe records == NumPy index arithmetic (None: not probed)
    sums_match: bool | None  # c == a + b bit for bit (None: not probed)
    coverage_ok: bool | None  # every element added exactly once (None: not probed)
    probe_s: float | None  # wall clock of the probe launch, including the copies
    draw_limit: int
    note: str  # why the chart is not drawn (empty when it is)
    warnings: tuple[str, ...] = ()
    records: np.ndarray | None = field(default=None, compare=False, repr=False)
    handled_by: np.ndarray | None = field(default=None, compare=False, repr=False)
    created_at: str = field(default_factory=_now)

    @property
    def drawable(self) -> bool:
        return self.records is not None

    @property
    def passed(self) -> bool:
        """False only when the probe ran and disagreed with the arithmetic."""
        return all(v is not False for v in (self.records_match, self.sums_match, self.coverage_ok))

    def elements_of(self, thread: int) -> list[int]:
        """Elements that global thread ``thread`` added (needs drawn records)."""
        if self.records is None:
            raise ValueError("records were not kept for this launch (too large to draw)")
        if self.handled_by is not None:
            return [int(i) for i in np.flatnonzero(self.handled_by == thread)]
        return [thread] if thread < self.summary.n else []

    def to_frame(self):
        """One row per launched thread (pandas DataFrame); empty when not drawn.

        Columns: thread, tx, bx, bw, position, warp, lane, masked, elements (count),
        handled (text list of the elements it added), formula.
        """
        import pandas as pd

        columns = ["thread", *PROBE_FIELDS, "lane", "handled", "formula"]
        if self.records is None:
            return pd.DataFrame(columns=columns)
        frame = pd.DataFrame(self.records.astype(np.int64), columns=list(PROBE_FIELDS))
        frame.insert(0, "thread", frame["position"])
        frame["lane"] = frame["tx"] % WARP_SIZE
        frame["masked"] = frame["masked"].astype(bool)
        n = self.summary.n
        if self.handled_by is not None:
            handled: dict[int, list[int]] = {}
            for element, thread in enumerate(self.handled_by.tolist()):
                handled.setdefault(thread, []).append(element)
            frame["handled"] = [_short_list(handled.get(t, [])) for t in frame["thread"]]
        else:
            frame["handled"] = [str(p) if p < n else "none" for p in frame["position"]]
        frame["formula"] = [
            f"position = tx + bx * bw = {tx} + {bx} * {bw} = {p}" for tx, bx, bw, p in zip(frame["tx"], frame["bx"], frame["bw"], frame["position"])
        ]
        return frame[columns]

    def to_dict(self) -> dict:
        data = {
            "experiment": "indexing",
            "created_at": self.created_at,
            "params": {
                "n": self.summary.n,
                "threads_per_block": self.summary.threads_per_block,
                "grid_stride_blocks": self.summary.blocks if self.summary.grid_stride else None,
            },
            "backend": self.backend,
            "device": self.device.to_dict(),
            "n": self.summary.n,
            "threads_per_block": self.summary.threads_per_block,
            "blocks": self.summary.blocks,
            "grid_stride": self.summary.grid_stride,
            "summary": self.summary.to_dict(),
            "probed": self.probed,
            "records_match": self.records_match,
            "sums_match": self.sums_match,
            "coverage_ok": self.coverage_ok,
            "probe_s": self.probe_s,
            "draw_limit": self.draw_limit,
            "drawn": self.drawable,
            "note": self.note,
            "warnings": list(self.warnings),
        }
        if self.records is not None:
            data["records"] = {"columns": list(PROBE_FIELDS), "rows": self.records.tolist()}
        if self.handled_by is not None:
            data["handled_by"] = self.handled_by.tolist()
        return data

    def __str__(self) -> str:
        lines = [str(self.summary), f"  on {self.device.name} ({self.backend})"]
        if self.probed:
            verdict = "match" if self.records_match else "DO NOT match"
            lines.append(f"  probe records {verdict} the index arithmetic; sums {'bit-identical' if self.sums_match else 'WRONG'}")
            if self.coverage_ok is not None:
                lines.append(f"  every element handled exactly once: {'yes' if self.coverage_ok else 'NO'}")
        if self.note:
            lines.append(f"  {self.note}")
        return "\n".join(lines)


def _short_list(values: list[int], keep: int = 8) -> str:
    if not values:
        return "none"
    text = ", ".join(str(v) for v in values[:keep])
    return text + (f", … ({len(values)} in all)" if len(values) > keep else "")


def check_grid_blocks(blocks: int | str) -> int:
    """Validate a grid size in blocks (1 to 2^31 - 1); return it."""
    value = parse_int(blocks, "blocks")
    if not 1 <= value <= MAX_INDEX:
        raise InputError(f"blocks must be between 1 and {MAX_INDEX:,} (CUDA's 1-D grid limit), got {value:,}")
    return value


def run_indexing(
    n: int | str,
    threads_per_block: int | str,
    grid_stride_blocks: int | str | None = None,
    *,
    draw_limit: int = DRAW_LIMIT_THREADS,
    seed: int = 0,
    on_progress: Progress | None = None,
) -> IndexingRun:
    """Run the indexing probe and summarise the launch.

    ``grid_stride_blocks`` None: one thread per element, ceil(N / threads) blocks.
    Otherwise a grid-stride loop over exactly that many blocks. The probe runs when the
    launch (threads and elements) is within ``probe_limit()``; records are kept when at
    most ``draw_limit`` threads were launched. Larger launches get the summary only.
    """
    say = on_progress or (lambda _msg: None)
    n = parse_size(n, "N")
    if n > MAX_INDEX:
        raise InputError(f"N = {n:,} is too large for the explorer: at most {MAX_INDEX:,} (int32 positions).")
    device = device_info()
    warnings = check_threads_per_block(threads_per_block, device.max_threads_per_block)
    tpb = parse_int(threads_per_block, "threads per block")
    grid_stride = grid_stride_blocks is not None
    blocks = check_grid_blocks(grid_stride_blocks) if grid_stride else blocks_for(n, tpb)
    summary = LaunchSummary(n, tpb, blocks, grid_stride, device.warp_size)
    if summary.threads_launched > MAX_INDEX:
        raise InputError(
            f"{blocks:,} blocks × {tpb} threads = {summary.threads_launched:,} threads, more than the "
            f"{MAX_INDEX:,} the probe can number; use fewer blocks."
        )

    limit = probe_limit()
    too_big = max(summary.threads_launched, n)
    if too_big > limit:
        where = "the CUDA simulator (about 0.1 ms per simulated thread)" if BACKEND.simulated else "this page's probe"
        note = (
            f"This launch has {summary.threads_launched:,} threads for {n:,} elements; the probe runs at up to "
            f"{limit:,} of each in {where}, and the chart draws at most {draw_limit:,} threads — "
            "so here is the summary, computed from the launch arithmetic."
        )
        return IndexingRun(summary, BACKEND.kind, device, False, None, None, None, None, draw_limit, note, tuple(warnings))

    # prepare inputs and the record buffers
    rng = np.random.default_rng(seed)
    a = rng.random(n, dtype=np.float32)
    b = rng.random(n, dtype=np.float32)
    record = np.full((summary.threads_launched, len(PROBE_FIELDS)), -1, dtype=np.int32)
    say(f"running the probe: {blocks:,} blocks × {tpb} threads")
    started = time.perf_counter()
    stream = cuda.stream()
    d_a = cuda.to_device(a, stream=stream)
    d_b = cuda.to_device(b, stream=stream)
    d_c = cuda.device_array(n, dtype=np.float32, stream=stream)
    d_record = cuda.to_device(record, stream=stream)
    handled_by = hits = None
    if grid_stride:
        d_handled = cuda.to_device(np.full(n, -1, dtype=np.int32), stream=stream)
        d_hits = cuda.to_device(np.zeros(n, dtype=np.int32), stream=stream)
        grid_stride_probe_kernel[blocks, tpb, stream](d_a, d_b, d_c, d_record, d_handled, d_hits)
        handled_by = d_handled.copy_to_host(stream=stream)
        hits = d_hits.copy_to_host(stream=stream)
    else:
        indexing_probe_kernel[blocks, tpb, stream](d_a, d_b, d_c, d_record)
    record = d_record.copy_to_host(stream=stream)
    c = d_c.copy_to_host(stream=stream)
    stream.synchronize()
    probe_s = time.perf_counter() - started

    # check the records against NumPy's arithmetic, and the sums against NumPy's
    say("checking the records against the index arithmetic")
    records_match = bool(np.array_equal(record.astype(np.int64), expected_records(n, tpb, blocks, grid_stride)))
    sums_match = bool(np.array_equal((a + b).view(np.uint32), c.view(np.uint32)))
    coverage_ok = None
    if grid_stride:
        expected_owner = np.arange(n, dtype=np.int64) % summary.stride
        coverage_ok = bool(np.all(hits == 1) and np.array_equal(handled_by.astype(np.int64), expected_owner))
    drawn = summary.threads_launched <= draw_limit
    note = "" if drawn else (
        f"{summary.threads_launched:,} threads is more than the {draw_limit:,} the chart draws: summary only "
        "(the probe still ran and its records were checked)."
    )
    return IndexingRun(
        summary,
        BACKEND.kind,
        device,
        True,
        records_match,
        sums_match,
        coverage_ok,
        probe_s,
        draw_limit,
        note,
        tuple(warnings),
        records=record if drawn else None,
        handled_by=handled_by if drawn and grid_stride else None,
    )


# --- occupancy -------------------------------------------------------------------------


@dataclass(frozen=True)
class Occupancy:
    """How many of one configuration's blocks a multiprocessor holds at once.

    ``source`` is "driver" (cuOccupancyMaxActiveBlocksPerMultiprocessor for the compiled
    kernel) or "calculated" (from the kernel's registers and the device's per-SM limits,
    an approximation). ``limiter`` names the per-SM limit that binds, when calculated.
    """

    threads_per_block: int
    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    source: str
    limiter: str | None = None

    @property
    def fraction(self) -> float:
        """Theoretical occupancy: resident warps / the SM's maximum."""
        return self.warps_per_sm / self.max_warps_per_sm if self.max_warps_per_sm else float("nan")

    def to_dict(self) -> dict:
        return {
            "threads_per_block": self.threads_per_block,
            "blocks_per_sm": self.blocks_per_sm,
            "warps_per_sm": self.warps_per_sm,
            "max_warps_per_sm": self.max_warps_per_sm,
            "fraction": self.fraction,
            "source": self.source,
            "limiter": self.limiter,
        }


@dataclass(frozen=True)
class SmLimits:
    """Per-multiprocessor limits read from the device (None where not exposed)."""

    max_threads_per_sm: int | None
    max_blocks_per_sm: int | None
    registers_per_sm: int | None
    shared_memory_per_sm: int | None

    def to_dict(self) -> dict:
        return {
            "max_threads_per_sm": self.max_threads_per_sm,
            "max_blocks_per_sm": self.max_blocks_per_sm,
            "registers_per_sm": self.registers_per_sm,
            "shared_memory_per_sm": self.shared_memory_per_sm,
        }


def sm_limits() -> SmLimits | None:
    """The current device's per-SM limits; None in the simulator."""
    if BACKEND.simulated:
        return None
    dev = cuda.get_current_device()

    def attr(name: str) -> int | None:
        try:
            return int(getattr(dev, name))
        except Exception:  # attribute not exposed by this driver/binding
            return None

    return SmLimits(
        attr("MAX_THREADS_PER_MULTIPROCESSOR"),
        attr("MAX_BLOCKS_PER_MULTIPROCESSOR"),
        attr("MAX_REGISTERS_PER_MULTIPROCESSOR"),
        attr("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
    )


REGISTER_ALLOCATION_UNIT = 256  # registers are handed out per warp in chunks of 256


def calculated_occupancy(
    threads_per_block: int, regs_per_thread: int, shared_per_block: int, limits: SmLimits, warp_size: int = WARP_SIZE
) -> Occupancy | None:
    """Occupancy from per-SM limits, like CUDA's occupancy calculator (approximate)."""
    if not limits.max_threads_per_sm:
        return None
    warps_per_block = -(-threads_per_block // warp_size)
    max_warps = limits.max_threads_per_sm // warp_size
    bounds = {"threads per SM": max_warps // warps_per_block}
    if limits.max_blocks_per_sm:
        bounds["blocks per SM"] = limits.max_blocks_per_sm
    if limits.registers_per_sm and regs_per_thread:
        regs_per_warp = -(-regs_per_thread * warp_size // REGISTER_ALLOCATION_UNIT) * REGISTER_ALLOCATION_UNIT
        bounds["registers"] = (limits.registers_per_sm // regs_per_warp) // warps_per_block
    if limits.shared_memory_per_sm and shared_per_block:
        bounds["shared memory"] = limits.shared_memory_per_sm // shared_per_block
    limiter = min(bounds, key=bounds.get)
    blocks = bounds[limiter]
    return Occupancy(threads_per_block, blocks, blocks * warps_per_block, max_warps, "calculated", limiter)


def kernel_occupancy(compiled, threads_per_block: int, limits: SmLimits | None, sm_count: int | None) -> Occupancy | None:
    """Occupancy of a compiled kernel (numba-cuda ``_Kernel``) at one block size.

    Asks the driver (through the kernel's max_cooperative_grid_blocks, which is
    active blocks per SM x SM count); falls back to the calculation. None when neither
    works (and always in the simulator).
    """
    if compiled is None or limits is None:
        return None
    warps_per_block = -(-threads_per_block // WARP_SIZE)
    max_warps = (limits.max_threads_per_sm or 0) // WARP_SIZE
    calc = None
    try:
        calc = calculated_occupancy(threads_per_block, compiled.regs_per_thread, compiled.shared_mem_per_block, limits)
    except Exception:
        calc = None
    try:
        if sm_count and max_warps:
            per_sm = int(compiled.max_cooperative_grid_blocks(threads_per_block)) // sm_count
            return Occupancy(threads_per_block, per_sm, per_sm * warps_per_block, max_warps, "driver", calc.limiter if calc and calc.blocks_per_sm == per_sm else None)
    except Exception:
        pass
    return calc


# --- the block-size sweep --------------------------------------------------------------


@dataclass(frozen=True)
class LaunchConfigResult:
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

    def to_dict(self) -> dict:
        return {
            "label": self.label,
            "kind": self.kind,
            "threads_per_block": self.threads_per_block,
            "blocks": self.blocks,
            "sm_multiple": self.sm_multiple,
            "agree": self.agree,
            "kernel": self.kernel.to_dict(),
            "occupancy": self.occupancy.to_dict() if self.occupancy else None,
        }


@dataclass(frozen=True)
class LaunchSweepRun:
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
    created_at: str = field(default_factory=_now)

    dtype = "float32"

    @property
    def agree(self) -> bool:
        return all(c.agree for c in self.configs)

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

    def explanation(self) -> str:
        """Why small blocks lose and why the large-N curve is flat, from these numbers."""
        per_element = sorted((c for c in self.configs if c.kind == KIND_ONE_PER_ELEMENT), key=lambda c: c.threads_per_block)
        best = self.best
        if self.backend == "simulator":
            return (
                "In the CUDA simulator every thread is a Python thread on the CPU, so these times measure "
                "the simulator, not a GPU: block size changes little here. On a GPU, small blocks lose because a "
                "multiprocessor holds only a limited number of blocks (16 to 32), so 32-thread blocks leave most of "
                "its thread slots empty and fewer memory loads are in flight; and at large N the curve goes flat "
                "because vector add is memory bound — 12 bytes moved per single add — so DRAM bandwidth, not the "
                "launch shape, sets the time."
            )
        parts = []
        smallest = per_element[0] if per_element else None
        if smallest is not None and smallest is not best:
            slower = smallest.kernel.median_s / best.kernel.median_s
            occ = smallest.occupancy
            if occ is not None and self.limits is not None and occ.fraction < 1:
                cap = f"at most {occ.blocks_per_sm} blocks"
                why = f" (its limit on {occ.limiter})" if occ.limiter else ""
                parts.append(
                    f"Small blocks lose: a multiprocessor holds {cap}{why}, so with {smallest.threads_per_block}-thread "
                    f"blocks only {occ.warps_per_sm} of its {occ.max_warps_per_sm} warp slots are filled "
                    f"({occ.fraction:.0%} occupancy) and fewer loads are in flight to hide memory latency; "
                    f"{smallest.label} took {slower:.2f}× the best time."
                )
            else:
                parts.append(
                    f"{smallest.label} took {slower:.2f}× the best time: with small blocks the per-multiprocessor "
                    "block limit leaves thread slots empty, so fewer loads are in flight."
                )
        big = [c for c in per_element if c.threads_per_block >= 128]
        if len(big) >= 2:
            times = [c.kernel.median_s for c in big]
            spread = max(times) / min(times) - 1
            best_bw = self.bandwidth_gbps(best.kernel.median_s)
            peak = self.device.peak_bandwidth_gbps
            of_peak = f", {best_bw / peak:.0%} of the {peak:,.0f} GB/s theoretical peak" if peak else ""
            if spread < 0.15:
                parts.append(
                    f"From 128 threads per block up the times are within {spread:.0%} of each other: vector add is "
                    f"memory bound (12 bytes moved per add), so once enough loads are in flight DRAM bandwidth "
                    f"({best_bw:,.0f} GB/s here{of_peak}) sets the time, not the launch shape."
                )
            else:
                parts.append(
                    f"From 128 threads per block up the times still differ by {spread:.0%}; at N = {self.n:,} "
                    f"({self.bytes_moved / 1e6:,.0f} MB moved) launch overhead and the tail of the last wave "
                    f"weigh more than at large N, where the curve flattens because vector add is memory bound "
                    f"(best {best_bw:,.0f} GB/s{of_peak})."
                )
        parts.append(f"Best here: {best.label} ({format_seconds(best.kernel.median_s)}).")
        return " ".join(parts)

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
                    }
                )
        frame = pd.DataFrame(rows)
        frame["n"] = self.n
        frame["backend"] = self.backend
        return frame

    def to_dict(self) -> dict:
        return {
            "experiment": "launch-sweep",
            "created_at": self.created_at,
            "params": {
                "n": self.n,
                "block_sizes": [c.threads_per_block for c in self.configs if c.kind == KIND_ONE_PER_ELEMENT],
                "grid_stride_multiples": [c.sm_multiple for c in self.configs if c.kind == KIND_GRID_STRIDE],
                "repeats": self.policy.n_repeat,
            },
            "backend": self.backend,
            "device": self.device.to_dict(),
            "n": self.n,
            "dtype": self.dtype,
            "policy": self.policy.to_dict(),
            "seed": self.seed,
            "compile_s": self.compile_s,
            "sm_count": self.sm_count,
            "sm_limits": self.limits.to_dict() if self.limits else None,
            "agree": self.agree,
            "best": self.best.label,
            "configs": [
                {**c.to_dict(), "bandwidth_gbps": self.bandwidth_gbps(c.kernel.median_s)} for c in self.configs
            ],
            "explanation": self.explanation(),
            "warnings": list(self.warnings),
        }

    def __str__(self) -> str:
        lines = [
            f"launch sweep, N = {self.n:,} float32, {self.device.name} ({self.backend}), {self.policy.describe()}",
            f"{'configuration':<30} {'blocks':>10} {'median':>10} {'min':>10} {'max':>10} {'GB/s':>8} {'occupancy':>10}",
        ]
        best = self.best.label
        for c in self.configs:
            occ = f"{c.occupancy.fraction:.0%} ({c.occupancy.source[0]})" if c.occupancy else "—"
            mark = " *" if c.label == best else ""
            lines.append(
                f"{c.label + mark:<30} {c.blocks:>10,} {format_seconds(c.kernel.median_s):>10} "
                f"{format_seconds(c.kernel.min_s):>10} {format_seconds(c.kernel.max_s):>10} "
                f"{self.bandwidth_gbps(c.kernel.median_s):>8,.4g} {occ:>10}"
            )
        lines.append(f"results agree with NumPy: {'yes, bit for bit' if self.agree else 'NO'}")
        lines.append("occupancy: (d) from the driver, (c) calculated from registers and per-SM limits")
        lines.append(self.explanation())
        return "\n".join(lines)


def _check_block_sizes(sizes: Iterable[int | str], device_max: int) -> tuple[list[int], list[str]]:
    values, warnings = [], []
    for size in sizes:
        warnings += check_threads_per_block(size, device_max)
        values.append(parse_int(size, "threads per block"))
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
    on_progress: Progress | None = None,
) -> LaunchSweepRun:
    """Time the vector-add kernel per launch configuration at one N.

    Inputs are copied to the device once; only the kernel is timed (CUDA events on one
    stream behind a stream-holding kernel, so host launch latency is excluded — see
    ``gpu.core.timing.time_kernel``; wall clock in the simulator). After each configuration the output is copied
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
        check_threads_per_block(gs_threads, device.max_threads_per_block)
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
    compiled_gs = None if BACKEND.simulated or not multiples else vector_add_grid_stride_kernel.compile(VECTOR_ADD_SIGNATURE)

    # prepare inputs on the device once
    rng = np.random.default_rng(seed)
    a = rng.random(n, dtype=np.float32)
    b = rng.random(n, dtype=np.float32)
    reference_bits = (a + b).view(np.uint32)
    poison = np.full(n, np.nan, dtype=np.float32)
    out = np.empty(n, dtype=np.float32)
    stream = cuda.stream()
    d_a = cuda.to_device(a, stream=stream)
    d_b = cuda.to_device(b, stream=stream)
    d_c = cuda.to_device(poison, stream=stream)

    plan = [(KIND_ONE_PER_ELEMENT, t, blocks_for(n, t), None) for t in sizes]
    plan += [(KIND_GRID_STRIDE, gs_threads, k * sm_count, k) for k in multiples]
    results = []
    for index, (kind, tpb, blocks, k) in enumerate(plan, start=1):
        kernel = vector_add_kernel if kind == KIND_ONE_PER_ELEMENT else vector_add_grid_stride_kernel
        label = f"{tpb} threads/block" if k is None else f"grid-stride {k}×SMs × {tpb}"
        say(f"{label} ({index} of {len(plan)})")

        def launch(kernel=kernel, blocks=blocks, tpb=tpb) -> None:
            kernel[blocks, tpb, stream](d_a, d_b, d_c)

        stats = time_kernel(launch, stream, policy)  # the kernel alone, launch latency excluded
        d_c.copy_to_host(out, stream=stream)
        stream.synchronize()
        agree = bool(np.array_equal(out.view(np.uint32), reference_bits))
        d_c.copy_to_device(poison, stream=stream)  # the next configuration must write every element
        compiled = compiled_article if kind == KIND_ONE_PER_ELEMENT else compiled_gs
        occupancy = kernel_occupancy(compiled, tpb, limits, device.multiprocessors)
        results.append(LaunchConfigResult(kind, tpb, blocks, stats, agree, k, occupancy))
    stream.synchronize()
    del d_a, d_b, d_c

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
    )



# --- the declarations ----------------------------------------------------------------

SM_MULTIPLE_CHOICES = (1, 2, 4, 8, 16, 32)  # grid-stride launches offered on the page


def _ints(value, name: str) -> tuple[int, ...]:
    parts = [part.strip() for part in value.split(",")] if isinstance(value, str) else list(value)
    return tuple(dict.fromkeys(parse_int(part, name) for part in parts if str(part).strip()))


def _optional_blocks(value) -> int | None:
    return None if str(value).strip() == "" else check_grid_blocks(value)


def _optional_block_size(value) -> int | None:
    if str(value).strip() == "":
        return None
    return check_threads(value, device_info().max_threads_per_block)


def _indexing_work(p) -> int:
    """One pass over max(N, threads launched) when the probe runs; beyond ``probe_limit()``
    the explorer only does the launch arithmetic, which costs nothing."""
    blocks = p["grid_stride_blocks"] or blocks_for(p["n"], p["threads_per_block"])
    work = max(p["n"], blocks * p["threads_per_block"])
    return work if work <= probe_limit() else 0


def _sweep_work(p) -> int:
    """N x (repeats + 1 warm-up) for every configuration timed."""
    configs = len(p["block_sizes"]) + len(p["grid_stride_multiples"]) + (1 if p["extra_block_size"] else 0)
    if not configs:
        raise InputError("choose at least one block size or grid-stride launch")
    return p["n"] * (p["repeats"] + 1) * configs


INDEXING = register(Experiment(
    key="indexing",
    title="Thread-indexing probe",
    summary="run the thread-indexing probe: which thread handles which element",
    params=(
        Param("n", "N (elements to cover)", lambda v: parse_size(v, "N"), 1000,
              "Any whole number ≥ 1, e.g. 1000, 33 or 2^10. Sizes that are not a multiple of the block size show the guard at work."),
        Param("threads_per_block", "Threads per block", lambda v: check_threads(v, device_info().max_threads_per_block), 256,
              "1 to the device's limit (1024). Try 32, 33, 100, 256."),
        Param("grid_stride_blocks", "Grid-stride blocks", _optional_blocks, None,
              "Empty: one thread per element, ceil(N / threads) blocks. A number: a grid-stride launch of exactly "
              "that many blocks, each thread looping with stride = blocks × threads."),
    ),
    run=lambda p, progress: run_indexing(p["n"], p["threads_per_block"], p["grid_stride_blocks"], on_progress=progress),
    work=_indexing_work,
    measures=lambda run: {"threads_launched": float(run.summary.threads_launched)}
    | ({"probe_s": run.probe_s} if run.probe_s is not None else {}),
    passed=lambda run: run.passed,
    page="pages/3_Launch_config.py",
    uses_cpu=BACKEND.simulated,  # simulated threads are CPU work
))

LAUNCH_SWEEP = register(Experiment(
    key="launch-sweep",
    title="Block-size sweep",
    summary="time the vector-add kernel for threads per block 32..1024 and grid-stride launches",
    params=(
        Param("n", "N (elements per vector)", check_n, lambda: min(1024 if BACKEND.simulated else 2**26, max_vector_n()),
              "A whole number such as 67108864, 1e8 or 2^26. Large N shows the memory-bound plateau."),
        Param("repeats", "Repeats", check_repeats, PerBackend(20, 3), "Timed runs per configuration after one warm-up."),
        Param("extra_block_size", "Extra block size", _optional_block_size, None,
              "Also time this block size, e.g. 100 (not a multiple of 32). Empty: none."),
        Param("block_sizes", "Threads per block", lambda v: _ints(v, "threads per block"), SWEEP_BLOCK_SIZES,
              "Block sizes to time, comma-separated.", widget="multiselect", options=SWEEP_BLOCK_SIZES),
        Param("grid_stride_multiples", "Grid-stride launches (blocks = k × multiprocessors, 256 threads each)",
              lambda v: _ints(v, "multiple of the SM count"), PerBackend(GRID_STRIDE_SM_MULTIPLES, (1, 4)),
              "Grid-stride launches of k × SM-count blocks of 256 threads, comma-separated k ('' for none).",
              widget="multiselect", options=SM_MULTIPLE_CHOICES, option_label=lambda k: f"{k}× SMs"),
    ),
    run=lambda p, progress: run_launch_sweep(
        p["n"], p["block_sizes"], extra_block_size=p["extra_block_size"], grid_stride_multiples=p["grid_stride_multiples"],
        policy=RepeatPolicy.count(p["repeats"]), on_progress=progress,
    ),
    work=_sweep_work,
    measures=lambda run: {"best_kernel_s": min(c.kernel.median_s for c in run.configs)} if run.configs else {},
    page="pages/3_Launch_config.py",
    uses_cpu=BACKEND.simulated,
))

__all__ = [
    "DRAW_LIMIT_THREADS",
    "GRID_STRIDE_SM_MULTIPLES",
    "IndexingRun",
    "LaunchConfigResult",
    "LaunchSummary",
    "LaunchSweepRun",
    "Occupancy",
    "SWEEP_BLOCK_SIZES",
    "SmLimits",
    "calculated_occupancy",
    "expected_records",
    "probe_limit",
    "run_indexing",
    "run_launch_sweep",
]
