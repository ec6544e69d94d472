"""Record every global and shared memory access of a kernel run in Kernel Lab's simulator.

The recording is the simulator's own (gpu/sim/recording.py): ``SimKernel.record`` launches
the kernel with a recorder, and the simulator tells it of every access to an array argument
(global memory) or a ``cuda.shared.array`` (shared memory), every atomic, every barrier and
every warp collective, with the block and thread, the byte offset from the allocation and
the kernel's source site (file, line and the column span of the expression, device
functions included). ``_Tracer`` here is that recorder; it adds what the findings need:

* the **barrier interval** of each access: how many ``syncthreads`` (and the ``_count``,
  ``_and``, ``_or`` forms) its thread had passed; a barrier that only some threads reached
  is in each thread's barrier sequence too (the simulator stops the launch there; the
  divergence finding says who reached it and who did not);
* the **warp syncs** each thread took part in (``cuda.syncwarp``, in order, one id per
  release) and how many it had passed at each access: ``syncwarp`` orders memory among the
  lanes of its mask as ``syncthreads`` does for the block (gpu/trace/analysis.py);
* the **dynamic occurrence** of each access (the k-th time this thread reached this site),
  which groups one warp's accesses into one request;
* how many times each **warp collective** was released (``syncwarp``, shuffles, votes):
  shuffles and votes move values between lanes, not memory, and order nothing.

Only sampled blocks run (the first, the last and evenly spaced ones between: the edges are
where bounds bugs live), and at most ``max_accesses`` accesses are kept (the rest counted).
An out-of-bounds index (a negative one included) is recorded instead of raised, so every
offending thread is found: the read gives 0, the write is dropped.

Any kernel the lab runs is traced in the lab's simulator: a kernel of numba-cuda's (on a GPU
machine's child, or with ``KERNEL_LAB_SIMULATOR=numba``) is rebuilt from its Python function.
The recorder is never reachable from the kernel it records (gpu/sim/recording.py says how), so
a learner's kernel cannot forge its own trace.

What a trace cannot see: timing, caches and the real scheduler's interleavings. The simulator
runs one block at a time and one thread at a time, switching at barriers and warp
collectives; a race is found from the accesses (same address, no barrier between, two
threads, one writes, not both atomically), not from a wrong answer, so it is found whatever
the order was.
"""

from __future__ import annotations

import ast
import linecache
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpu.core.backend import BACKEND
from gpu.core.safe_text import shown
from gpu.sim import pyast
from gpu.sim.errors import NOTES
from gpu.sim.recording import ATOMIC as ATOMIC  # the record kinds are the simulator's (re-exported: analysis uses them)
from gpu.sim.recording import READ as READ
from gpu.sim.recording import WRITE as WRITE
from gpu.sim.rewrite import BLOCK_SYNC

KIND_NAMES = ("read", "write", "atomic")
DEFAULT_MAX_ACCESSES = 400_000  # ~50 MB of records; a 1,024-thread kernel makes a few thousand
DEFAULT_MAX_BLOCKS = 8  # enough for block-edge bugs and cross-block races; ~0.3 ms per simulated thread
MAX_OUT_OF_BOUNDS = 200  # recorded in full; the rest are only counted
_BARRIERS = frozenset(BLOCK_SYNC.values())


class TraceUnavailable(RuntimeError):
    """The trace needs a process that simulates (a GPU process traces in a child)."""


@dataclass(frozen=True)
class ArrayInfo:
    """One traced array: ``space`` is "global" (an argument) or "shared"."""

    id: int
    name: str
    space: str
    shape: tuple[int, ...]
    dtype: str
    itemsize: int

    def index_of(self, offset_bytes: int) -> tuple[int, ...]:
        """The element index at ``offset_bytes`` from the allocation (C order)."""
        flat, index = offset_bytes // self.itemsize, []
        for side in reversed(self.shape):  # np.unravel_index, without its per-call cost (called per record)
            index.append(flat % side)
            flat //= side
        return tuple(reversed(index))

    def to_dict(self) -> dict:
        return {"id": self.id, "name": self.name, "space": self.space, "shape": list(self.shape),
                "dtype": self.dtype, "itemsize": self.itemsize}


@dataclass(frozen=True)
class Site:
    """A place in the kernel's source: file, function, line and the span of the access (``end_col`` on ``end_line``)."""

    file: str
    function: str
    line: int
    col: int | None
    end_col: int | None
    end_line: int | None = None

    @property
    def text(self) -> str:
        """The expression at this site (``out[col, row]``) from its own span, on one line and through the output gate.

        A multi-line expression is quoted as Python reads it (``ast.unparse``: no comments, no line breaks); the whole
        line only when columns are unknown.
        """
        return shown(self._raw_text())

    def _raw_text(self) -> str:
        src = linecache.getline(self.file, self.line)
        if self.col is None or self.end_col is None or not src:
            return src.strip()
        last = self.end_line or self.line
        if last == self.line:
            return src.encode()[self.col:self.end_col].decode(errors="replace").strip()
        lines = [linecache.getline(self.file, n).encode() for n in range(self.line, last + 1)]
        lines[-1] = lines[-1][:self.end_col]
        lines[0] = lines[0][self.col:]
        span = b"".join(lines).decode(errors="replace")
        try:
            return ast.unparse(pyast.parse_expression(span.strip()))
        except (SyntaxError, ValueError, RecursionError):
            return " ".join(span.split())

    def to_dict(self) -> dict:
        return {"file": self.file, "function": self.function, "line": self.line, "text": self.text}


@dataclass
class OutOfBounds:
    """One out-of-bounds access, found before the simulator (or NumPy's wrap-around) hid it."""

    block: tuple[int, int, int]
    thread: tuple[int, int, int]
    array: str
    shape: tuple[int, ...]
    index: tuple[Any, ...]
    kind: str
    site: int


@dataclass
class _ThreadState:
    block: int
    thread: int
    interval: int = 0
    barriers: list[int] = field(default_factory=list)
    warp_syncs: list[int] = field(default_factory=list)
    occurrences: dict[int, int] = field(default_factory=dict)


@dataclass
class RawTrace:
    """What one traced launch produced; ``gpu.trace.analysis`` turns it into findings.

    ``records``: tuples (block, thread, interval, array id, byte offset, kind, site id,
    occurrence, warp syncs passed), block and thread as linear ids (x fastest); the last
    field may be left out (0). ``barriers``: per (block, thread) that synchronised, the site
    ids of its barriers in order. ``warp_syncs``: per (block, thread) that took part in a
    ``syncwarp``, the ids of those releases in order. ``collectives``: releases of each warp
    collective by kind (``shfl_down``: 5 in a warp's tree sum; ``syncwarp`` too).
    """

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    arrays: list[ArrayInfo]
    sites: list[Site]
    records: list[tuple]
    barriers: dict[tuple[int, int], tuple[int, ...]]
    blocks_traced: tuple[int, ...]
    accesses_dropped: int
    out_of_bounds: list[OutOfBounds]
    out_of_bounds_count: int
    error: str | None
    source_file: str = ""  # the kernel function's file: where the sites' line numbers count
    warp_syncs: dict[tuple[int, int], tuple[int, ...]] = field(default_factory=dict)
    collectives: dict[str, int] = field(default_factory=dict)
    wrapped: tuple[str, ...] = ()  # a sentence per line where a negative index wrapped once (as Numba does)

    @property
    def blocks_total(self) -> int:
        return int(np.prod(self.grid))


def _dim3(value) -> tuple[int, int, int]:
    dims = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    return tuple(int(d) for d in (*dims, 1, 1)[:3])  # type: ignore[return-value]


def linear(point: Sequence[int], dims: Sequence[int]) -> int:
    """x + dx * (y + dy * z): the simulator's (and CUDA's) linear thread and block id."""
    return int(point[0] + dims[0] * (point[1] + dims[1] * point[2]))


def unlinear(value: int, dims: Sequence[int]) -> tuple[int, int, int]:
    return (value % dims[0], (value // dims[0]) % dims[1], value // (dims[0] * dims[1]))


def sample_blocks(grid: tuple[int, int, int], max_blocks: int) -> tuple[int, ...]:
    """Linear ids of the blocks to trace: all if they fit, else the first, the last and evenly spaced ones."""
    total = int(np.prod(grid))
    if total <= max_blocks:
        return tuple(range(total))
    if max_blocks <= 1:
        return (0,)
    picks = np.linspace(0, total - 1, max_blocks).round().astype(int)
    return tuple(sorted(set(int(p) for p in picks)))


class _Tracer:
    """The recorder of one traced launch (``gpu.sim.recording.Recorder``): records, sites, per-thread states."""

    def __init__(self, grid, block, max_accesses: int):
        self.grid, self.block = grid, block
        self.max_accesses = max_accesses
        self.arrays: list[ArrayInfo] = []
        self.sites: list[Site] = []
        self._site_ids: dict[tuple, int] = {}
        self.records: list[tuple] = []
        self.dropped = 0
        self.states: dict[tuple[int, int], _ThreadState] = {}
        self.oob: list[OutOfBounds] = []
        self.oob_count = 0
        self.warp_events = 0
        self.collectives: Counter = Counter()

    def _state(self, block: int, thread: int) -> _ThreadState:
        st = self.states.get((block, thread))
        if st is None:
            st = self.states[(block, thread)] = _ThreadState(block, thread)
        return st

    def _site(self, site: tuple) -> int:
        sid = self._site_ids.get(site)
        if sid is None:
            self.sites.append(Site(*site))
            sid = self._site_ids[site] = len(self.sites) - 1
        return sid

    # -- the simulator's calls (gpu/sim/recording.py) -------------------------------

    def array(self, name: str, space: str, ary: np.ndarray) -> int:
        self.arrays.append(ArrayInfo(len(self.arrays), name, space, tuple(int(s) for s in ary.shape), str(ary.dtype),
                                     int(ary.itemsize)))
        return len(self.arrays) - 1

    def access(self, block: int, thread: int, array: int, offset: int, kind: int, site: tuple) -> None:
        st = self._state(block, thread)
        sid = self._site(site)
        n = st.occurrences.get(sid, 0)
        st.occurrences[sid] = n + 1
        if len(self.records) < self.max_accesses:
            self.records.append((block, thread, st.interval, array, offset, kind, sid, n, len(st.warp_syncs)))
        else:
            self.dropped += 1

    def out_of_bounds(self, block: int, thread: int, array: int, index: tuple, kind: int, site: tuple) -> None:
        self.oob_count += 1
        if len(self.oob) < MAX_OUT_OF_BOUNDS:
            info = self.arrays[array]
            self.oob.append(OutOfBounds(unlinear(block, self.grid), unlinear(thread, self.block), info.name,
                                        info.shape, tuple(_plain(i) for i in index), KIND_NAMES[kind],
                                        self._site(site)))

    def sync(self, block: int, kind: str, site: tuple, threads: Sequence[int], completed: bool) -> None:
        if kind in _BARRIERS:
            sid = self._site(site)
            for t in threads:
                st = self._state(block, t)
                st.barriers.append(sid)
                st.interval += completed
        else:
            self.collectives[kind] += 1
            if kind == "syncwarp":
                self.warp_events += 1
                for t in threads:
                    self._state(block, t).warp_syncs.append(self.warp_events)


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _sim_kernel(kernel):
    """The lab simulator's kernel for ``kernel``: itself, or one rebuilt from a numba-cuda kernel's Python function."""
    from gpu.sim import SimKernel

    if isinstance(kernel, SimKernel):
        return kernel
    return SimKernel(getattr(kernel, "py_func", kernel))


def trace_launch(kernel, grid, block, args: Sequence[Any], names: Sequence[str] | None = None,
                 max_accesses: int = DEFAULT_MAX_ACCESSES, max_blocks: int = DEFAULT_MAX_BLOCKS) -> RawTrace:
    """Run ``kernel[grid, block](*args)`` in the lab's simulator with every access recorded.

    ``args``: NumPy arrays (traced as global memory, in place: their contents change as on
    a device) and scalars. ``names``: one name per argument (default: the kernel's
    parameter names). At most ``max_accesses`` accesses are recorded (the rest counted)
    and ``max_blocks`` blocks run (see ``sample_blocks``). A kernel that raises is
    reported in ``error`` with what was recorded until then.
    """
    if not BACKEND.simulated:
        raise TraceUnavailable(
            "the memory trace runs kernels in Kernel Lab's simulator, and this process uses a real GPU; "
            "run it in a child process with NUMBA_ENABLE_CUDASIM=1 (gpu.trace.child does)."
        )
    grid3, block3 = _dim3(grid), _dim3(block)
    sim = _sim_kernel(kernel)
    fn = sim.py_func
    if names is None:
        code = fn.__code__
        names = code.co_varnames[:code.co_argcount]
    blocks = sample_blocks(grid3, max_blocks)
    tracer = _Tracer(grid3, block3, max_accesses)
    error = None
    with warnings.catch_warnings(record=True) as caught:  # a negative index that wrapped: the report notes it
        warnings.simplefilter("always")
        try:
            sim.record(grid, block, tuple(args), tracer, names=list(names), blocks=blocks)
        except Exception as exc:  # the learner's kernel may raise anything; the trace says what and where
            error = f"{type(exc).__name__}: {exc}"
    wrapped = tuple(dict.fromkeys(str(w.message) for w in caught if isinstance(w.message, NOTES)))
    return RawTrace(
        kernel=getattr(fn, "__name__", str(kernel)),
        grid=grid3,
        block=block3,
        arrays=list(tracer.arrays),
        sites=tracer.sites,
        records=tracer.records,
        barriers={k: tuple(st.barriers) for k, st in tracer.states.items() if st.barriers},
        blocks_traced=blocks,
        accesses_dropped=tracer.dropped,
        out_of_bounds=tracer.oob,
        out_of_bounds_count=tracer.oob_count,
        error=error,
        source_file=_project_relative(fn.__code__.co_filename),
        warp_syncs={k: tuple(st.warp_syncs) for k, st in tracer.states.items() if st.warp_syncs},
        collectives=dict(tracer.collectives),
        wrapped=wrapped,
    )


def _project_relative(path: str) -> str:
    """``gpu/experiments/transpose/kernels.py`` for the lab's files; others (a learner's ``submission.py``) as is."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    p = Path(path)
    return str(p.relative_to(root)) if p.is_absolute() and p.is_relative_to(root) else path

