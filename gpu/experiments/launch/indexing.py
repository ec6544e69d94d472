"""The thread-indexing explorer: which thread handles which element.

A probe kernel (the article's kernel plus a recorder) runs at the chosen N and block
size, or as a grid-stride loop over a fixed number of blocks, and records for every
thread its threadIdx.x, blockIdx.x, blockDim.x, position, warp, whether the guard masked
it off, and how many elements it added. The records are checked against the same
arithmetic done in NumPy. Launches too large to probe get the launch arithmetic only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from gpu.catalog.base import Experiment, Param, Progress
from gpu.catalog.registry import register
from gpu.core import estimates
from gpu.core.arrays import vector_inputs
from gpu.core.backend import BACKEND, cuda
from gpu.core.device import DeviceInfo, device_info
from gpu.core.limits import (
    SIMULATED_THREAD_COST,
    SIMULATOR_MAX_N,
    WARP_SIZE,
    InputError,
    check_threads,
    parse_int,
    parse_size,
    threads_per_block_warnings,
)
from gpu.core.timing import utc_timestamp
from gpu.experiments.launch.experiment import LAUNCH_PAGE
from gpu.kernels.geometry import blocks_for
from gpu.kernels.vector_add import (
    PROBE_FIELDS,
    grid_stride_probe_kernel,
    indexing_probe_kernel,
)

DRAW_LIMIT_THREADS = 4096  # the explorer's chart draws at most this many thread cells


# The probe records 7 int32 per thread and needs a, b, c (and two more int32 arrays for
# grid-stride) per element: 2^22 of each is ~200 MB, quick on any GPU.
PROBE_MAX_GPU = 1 << 22
MAX_INDEX = 2**31 - 1  # CUDA's 1-D grid is at most 2^31 - 1 blocks; positions here are int32


def probe_limit() -> int:
    """Most threads (and elements) the probe runs at on this backend."""
    return SIMULATOR_MAX_N if BACKEND.simulated else PROBE_MAX_GPU


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
        kind = (
            f"grid-stride over {self.blocks:,} blocks"
            if self.grid_stride
            else f"{self.blocks:,} blocks (ceil(N / {self.threads_per_block}))"
        )
        lines = [
            f"N = {self.n:,}, {self.threads_per_block} threads per block, {kind}",
            f"  threads launched {self.threads_launched:,}, idle {self.idle_threads:,}",
            f"  warps launched {self.warps_launched:,}, fully idle {self.idle_warps:,}, partly idle "
            f"{self.partial_warps:,}",
            f"  last block: {self.last_block_idle_threads} of {self.threads_per_block} threads idle "
            f"({self.last_block_wasted_fraction:.1%} wasted)",
        ]
        if self.grid_stride:
            lines.append(
                f"  stride {self.stride:,}; elements per thread "
                f"{self.min_elements_per_thread}–{self.max_elements_per_thread}"
            )
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
    created_at: str = field(default_factory=utc_timestamp)

    @property
    def drawable(self) -> bool:
        return self.records is not None

    @property
    def passed(self) -> bool:
        """False only when the probe ran and disagreed with the arithmetic."""
        return all(v is not False for v in (self.records_match, self.sums_match, self.coverage_ok))

    @property
    def agree(self) -> bool:
        """The result protocol's agreement: the probe's records and sums matched the index arithmetic."""
        return self.passed

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
            f"position = tx + bx * bw = {tx} + {bx} * {bw} = {p}"
            for tx, bx, bw, p in zip(frame["tx"], frame["bx"], frame["bw"], frame["position"])
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
            lines.append(
                f"  probe records {verdict} the index arithmetic; sums "
                f"{'bit-identical' if self.sums_match else 'WRONG'}"
            )
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
    tpb = check_threads(threads_per_block, device.max_threads_per_block)
    warnings = threads_per_block_warnings(tpb)
    grid_stride = grid_stride_blocks is not None
    blocks = check_grid_blocks(grid_stride_blocks) if grid_stride_blocks is not None else blocks_for(n, tpb)
    summary = LaunchSummary(n, tpb, blocks, grid_stride, device.warp_size)
    if summary.threads_launched > MAX_INDEX:
        raise InputError(
            f"{blocks:,} blocks × {tpb} threads = {summary.threads_launched:,} threads, more than the "
            f"{MAX_INDEX:,} the probe can number; use fewer blocks."
        )

    limit = probe_limit()
    too_big = max(summary.threads_launched, n)
    if too_big > limit:
        where = f"the CUDA simulator (about {SIMULATED_THREAD_COST})" if BACKEND.simulated else "this page's probe"
        note = (
            f"This launch has {summary.threads_launched:,} threads for {n:,} elements; the probe runs at up to "
            f"{limit:,} of each in {where}, and the chart draws at most {draw_limit:,} threads — "
            "so here is the summary, computed from the launch arithmetic."
        )
        return IndexingRun(
            summary, BACKEND.kind, device, False, None, None, None, None, draw_limit, note, tuple(warnings)
        )

    # prepare inputs and the record buffers
    a, b = vector_inputs(n, seed)
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
    if handled_by is not None:  # read back by the grid-stride probe only
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


def _optional_blocks(value) -> int | None:
    return None if str(value).strip() == "" else check_grid_blocks(value)


def _indexing_work(p) -> int:
    """One pass over max(N, threads launched) when the probe runs; beyond ``probe_limit()``
    the explorer only does the launch arithmetic, which costs nothing."""
    blocks = p["grid_stride_blocks"] or blocks_for(p["n"], p["threads_per_block"])
    work = max(p["n"], blocks * p["threads_per_block"])
    return work if work <= probe_limit() else 0


def _indexing_estimate(p, simulated: bool) -> float:
    """Seconds the probe takes (``Experiment.estimate``): one launch of max(N, threads) threads, and on a GPU a
    first launch that compiles; above ``probe_limit()`` nothing runs."""
    threads = _indexing_work(p)
    return estimates.kernel_s(threads, 24 * threads, simulated) + (0.0 if simulated else estimates.GPU_COMPILE_S)


INDEXING = register(
    Experiment(
        key="indexing",
        title="Thread-indexing probe",
        summary="run the thread-indexing probe: which thread handles which element",
        params=(
            Param(
                "n",
                "N (elements to cover)",
                lambda v: parse_size(v, "N"),
                1000,
                "Any whole number ≥ 1, e.g. 1000, 33 or 2^10. Sizes that are not a multiple of the block size show the "
                "guard at work.",
            ),
            Param(
                "threads_per_block",
                "Threads per block",
                lambda v: check_threads(v, device_info().max_threads_per_block),
                256,
                "1 to the device's limit (1024). Try 32, 33, 100, 256.",
            ),
            Param(
                "grid_stride_blocks",
                "Grid-stride blocks",
                _optional_blocks,
                None,
                "Empty: one thread per element, ceil(N / threads) blocks. A number: a grid-stride launch of exactly "
                "that many blocks, each thread looping with stride = blocks × threads.",
            ),
        ),
        run=lambda p, progress: run_indexing(
            p["n"], p["threads_per_block"], p["grid_stride_blocks"], on_progress=progress
        ),
        work=_indexing_work,
        estimate=_indexing_estimate,
        measures=lambda run: (
            {"threads_launched": float(run.summary.threads_launched)}
            | ({"probe_s": run.probe_s} if run.probe_s is not None else {})
        ),
        result_type=IndexingRun,
        page=LAUNCH_PAGE,
        order=30,
        history_columns=("n", "threads_per_block"),
        uses_cpu=BACKEND.simulated,  # simulated threads are CPU work
    )
)
