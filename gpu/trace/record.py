"""Record every global and shared memory access of a kernel run in Numba's CUDA simulator.

How the simulator runs a kernel (numba/cuda/simulator/kernel.py, kernelapi.py): one
``FakeCUDAKernel.__call__`` per launch builds a ``FakeCUDAModule`` (what ``cuda`` means
inside the kernel: ``threadIdx``, ``shared.array``, ``atomic``, ``syncthreads``) and swaps
it into the kernel function's globals; then, one block at a time, a ``BlockManager``
starts one Python thread per CUDA thread and releases them together whenever every
live thread waits in ``syncthreads``. Array arguments reach the kernel as
``FakeWithinKernelCUDAArray(FakeCUDAArray)`` and every ``a[i]`` goes through
``FakeCUDAArray.__getitem__`` / ``__setitem__``.

The interception points, all undone when ``tracing()`` exits:

* **global arrays**: each array argument is passed as a ``TracedArray``, a
  ``FakeCUDAArray`` subclass. The simulator leaves a ``FakeCUDAArray`` argument as is and
  wraps it for the kernel, so every element access of the kernel lands in our
  ``__getitem__``/``__setitem__``, which checks the bounds *before* indexing (a negative
  index, which NumPy would wrap silently, is out of bounds too; an out-of-bounds read
  returns 0 and a write is dropped, so the run goes on and every offending thread is
  found), then records the access. Views (``a[i]`` of a 2-D array) stay traced.
* **shared arrays, atomics and barriers**: ``kernel.FakeCUDAModule`` is replaced by
  ``_TracingModule`` (a subclass), whose ``shared.array`` wraps the simulator's array in
  a ``TracedArray``, whose ``atomic.*`` record one atomic access and then do the
  simulator's own operation on the plain array, and whose ``syncthreads`` (and the
  ``_count``/``_and``/``_or`` variants) count barrier intervals per thread.
* **blocks**: ``kernel.BlockManager`` is replaced by a subclass that runs only the
  sampled blocks (the first, the last and evenly spaced ones between: the edges are
  where bounds bugs live) and says how many it skipped.

Each access records block, thread (linear id; the warp is id // 32), barrier interval
(the number of ``syncthreads`` this thread has passed), array, byte offset from the
array's allocation, read / write / atomic, the source site (file, line and column of the
kernel's instruction, found by walking up from our frame to the first frame outside
the simulator and this module: it also finds accesses inside device functions), and
the dynamic occurrence (the k-th time this thread reached this site), which is what
groups one warp's accesses into one request.

Concurrency: the simulator keeps one global kernel context and rewrites the kernel's
globals, and ``tracing()`` patches the simulator's module, so a trace must not overlap
any other simulated kernel in the same process. ``tracing()`` holds a process-wide lock
(two traces in one process queue), and the app never traces in its own process: it
runs each trace in a fresh child process (``gpu/trace/child.py``), which is also where
the simulator is forced on when the app itself runs on a GPU.

What a trace cannot see: timing, caches and the real scheduler's interleavings. The
simulator runs one block at a time and its threads in whatever order Python's threads
take; a race is found from the accesses (same address, same barrier interval, two
threads, one writes), not from a wrong answer, so it is found whatever the order was.
"""

from __future__ import annotations

import contextlib
import linecache
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpu.core.backend import BACKEND

READ, WRITE, ATOMIC = 0, 1, 2
KIND_NAMES = ("read", "write", "atomic")
DEFAULT_MAX_ACCESSES = 400_000  # ~50 MB of records; a 1,024-thread kernel makes a few thousand
DEFAULT_MAX_BLOCKS = 8  # enough for block-edge bugs and cross-block races; ~0.3 ms per simulated thread
MAX_OUT_OF_BOUNDS = 200  # recorded in full; the rest are only counted

_TRACE_LOCK = threading.Lock()  # one trace per process: the simulator's kernel context is global
_THIS_FILE = __file__


class TraceUnavailable(RuntimeError):
    """The trace needs Numba's CUDA simulator in this process."""


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
    """A place in the kernel's source: file, function, line and the column span of the access."""

    file: str
    function: str
    line: int
    col: int | None
    end_col: int | None

    @property
    def text(self) -> str:
        """The expression at this site (``out[col, row]``), or the whole line when columns are unknown."""
        src = linecache.getline(self.file, self.line)
        if self.col is not None and self.end_col is not None and src:
            return src.encode()[self.col:self.end_col].decode(errors="replace").strip()
        return src.strip()

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
    occurrences: dict[int, int] = field(default_factory=dict)


@dataclass
class RawTrace:
    """What one traced launch produced; ``gpu.trace.analysis`` turns it into findings.

    ``records``: tuples (block, thread, interval, array id, byte offset, kind, site id,
    occurrence), block and thread as linear ids (x fastest). ``barriers``: per
    (block, thread) that synchronised, the site ids of its barriers in order.
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
    """The mutable state of one traced launch (records, sites, per-thread states)."""

    def __init__(self, grid, block, max_accesses: int, blocks: tuple[int, ...]):
        self.grid, self.block = grid, block
        self.max_accesses = max_accesses
        self.blocks = set(blocks)
        self.arrays: list[ArrayInfo] = []
        self.sites: list[Site] = []
        self._site_ids: dict[tuple[Any, int], int] = {}
        self._positions: dict[Any, list] = {}
        self._site_by_position: dict[Site, int] = {}
        self.records: list[tuple] = []
        self.dropped = 0
        self.states: dict[tuple[int, int], _ThreadState] = {}
        self.oob: list[OutOfBounds] = []
        self.oob_count = 0
        self._shared: dict[tuple[str, int], TracedArray] = {}  # one per allocation line, as in the simulator
        self._lock = threading.RLock()  # sites and arrays are added from many simulator threads

    # -- who and where ------------------------------------------------------------

    def state(self) -> _ThreadState:
        t = threading.current_thread()
        st = getattr(t, "_kernel_lab_trace", None)
        if st is None:
            st = _ThreadState(linear(tuple(t.blockIdx), self.grid), linear(tuple(t.threadIdx), self.block))
            t._kernel_lab_trace = st
            self.states[(st.block, st.thread)] = st
        return st

    def site(self) -> int:
        """The id of the kernel source site that made the current access (first frame outside us and the simulator)."""
        frame = sys._getframe(2)
        while frame is not None and (
            frame.f_code.co_filename == _THIS_FILE
            or "numba/cuda/simulator" in frame.f_code.co_filename.replace("\\", "/")
        ):
            frame = frame.f_back
        if frame is None:
            return -1
        code, lasti = frame.f_code, frame.f_lasti
        key = (code, lasti)
        sid = self._site_ids.get(key)
        if sid is None:
            with self._lock:
                sid = self._site_ids.get(key)
                if sid is None:
                    positions = self._positions.get(code)
                    if positions is None:
                        positions = self._positions[code] = list(code.co_positions())
                    pos = (
                        positions[lasti // 2]
                        if 0 <= lasti // 2 < len(positions)
                        else (frame.f_lineno, None, None, None)
                    )
                    line = pos[0] if pos[0] is not None else frame.f_lineno
                    site = Site(code.co_filename, code.co_name, line, pos[2], pos[3] if pos[1] == line else None)
                    # a specialised instruction may report another offset for the same access: one id per position
                    sid = self._site_by_position.get(site)
                    if sid is None:
                        self.sites.append(site)
                        sid = self._site_by_position[site] = len(self.sites) - 1
                    self._site_ids[key] = sid
        return sid

    def new_array(self, name: str, space: str, ary: np.ndarray) -> ArrayInfo:
        with self._lock:
            info = ArrayInfo(
                len(self.arrays), name, space, tuple(int(s) for s in ary.shape), str(ary.dtype), int(ary.itemsize)
            )
            self.arrays.append(info)
        return info

    # -- what ---------------------------------------------------------------------

    def record(self, info: ArrayInfo, offset: int, kind: int) -> None:
        st = self.state()
        sid = self.site()
        n = st.occurrences.get(sid, 0)
        st.occurrences[sid] = n + 1
        if len(self.records) < self.max_accesses:
            self.records.append((st.block, st.thread, st.interval, info.id, offset, kind, sid, n))
        else:
            self.dropped += 1

    def out_of_bounds(self, info: ArrayInfo, shape: tuple[int, ...], index: tuple, kind: int) -> None:
        st = self.state()
        sid = self.site()
        with self._lock:
            self.oob_count += 1
            if len(self.oob) < MAX_OUT_OF_BOUNDS:
                self.oob.append(OutOfBounds(unlinear(st.block, self.grid), unlinear(st.thread, self.block),
                                            info.name, shape, tuple(_plain(i) for i in index), KIND_NAMES[kind], sid))

    def barrier(self) -> None:
        st = self.state()
        st.barriers.append(self.site())
        st.interval += 1


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _offset_of(view: np.ndarray, root: np.ndarray) -> int:
    return view.__array_interface__["data"][0] - root.__array_interface__["data"][0]


class _PlainArray:
    """Placeholder so that this module imports without the simulator (the class below needs it)."""


def _fake_array_class():
    if not BACKEND.simulated:
        return _PlainArray
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
    return FakeCUDAArray


class TracedArray(_fake_array_class()):  # type: ignore[misc]
    """A simulator device array whose element accesses are bounds-checked and recorded."""

    def __init__(self, ary: np.ndarray, tracer: _Tracer, info: ArrayInfo, offset: int = 0):
        self._ary = ary
        self.stream = 0
        self._tracer = tracer
        self._info = info
        self._offset = offset  # bytes from the start of the allocation to this view's first element

    def _element(self, idx, kind: int):
        """(byte offset, is an element) for an integer index; None when out of bounds (recorded); or (None, False)
        for a view."""
        index = idx if isinstance(idx, tuple) else (idx,)
        if not all(_is_int(i) for i in index):
            return None, False
        shape = self._ary.shape
        if len(index) > len(shape) or any(not 0 <= i < s for i, s in zip(index, shape)):
            self._tracer.out_of_bounds(self._info, tuple(shape), index, kind)
            return None, True
        offset = self._offset + sum(int(i) * st for i, st in zip(index, self._ary.strides))
        return offset, len(index) == len(shape)

    def __getitem__(self, idx):
        offset, element = self._element(idx, READ)
        if offset is None and element:  # out of bounds: recorded; read as 0 so every offending thread is found
            return self._ary.dtype.type(0)
        value = self._ary[idx]
        if element:
            self._tracer.record(self._info, offset, READ)
            return value
        if isinstance(value, np.ndarray):  # a view (a row, a slice): keep tracing it
            return TracedArray(value, self._tracer, self._info, self._offset + _offset_of(value, self._ary))
        return value

    def __setitem__(self, idx, value):
        offset, element = self._element(idx, WRITE)
        if offset is None and element:  # out of bounds: recorded, the write dropped
            return
        self._ary[idx] = value
        if element:
            self._tracer.record(self._info, offset, WRITE)
        else:  # a slice assignment: one write per element it covers
            view = self._ary[idx]
            base = self._offset + _offset_of(view, self._ary)
            for pos in np.ndindex(*view.shape):
                self._tracer.record(self._info, base + sum(p * s for p, s in zip(pos, view.strides)), WRITE)

    def atomic_target(self, index) -> tuple[np.ndarray, Any] | None:
        """Record an atomic on ``index`` and return (plain array, index), or None when out of bounds."""
        offset, element = self._element(index, ATOMIC)
        if offset is None:
            return None
        self._tracer.record(self._info, offset, ATOMIC)
        return self._ary, index


def _tracing_module_class(tracer: _Tracer):
    """A FakeCUDAModule whose shared arrays, atomics and barriers report to ``tracer``."""
    from numba.cuda.simulator import kernelapi

    class _Shared(kernelapi.FakeCUDAShared):
        def array(self, shape, dtype):
            # The simulator keys an allocation by its caller's line; called from here that
            # would be this line for every array, so the key is the kernel's line, as there.
            frame = sys._getframe(1)
            key = (frame.f_code.co_filename, frame.f_lineno)
            with tracer._lock:
                traced = tracer._shared.get(key)
                if traced is None:
                    if shape == 0:  # dynamic shared memory: the simulator's one buffer
                        ary = super().array(shape, dtype)
                    else:
                        ary = np.empty(
                            shape,
                            kernelapi.numpy_support.as_dtype(dtype)
                            if isinstance(dtype, kernelapi.types.Type)
                            else dtype,
                        )
                    name = _assigned_name(frame) or f"shared array of line {frame.f_lineno}"
                    traced = TracedArray(ary, tracer, tracer.new_array(name, "shared", ary))
                    tracer._shared[key] = traced
            return traced

    class _Atomic(kernelapi.FakeCUDAAtomic):
        pass

    def _atomic_op(name):
        base = getattr(kernelapi.FakeCUDAAtomic, name)

        def op(self, array, index, *args):
            target = array._item if hasattr(array, "_item") and isinstance(array._item, TracedArray) else array
            if isinstance(target, TracedArray):
                found = target.atomic_target(index)
                if found is None:
                    return target._ary.dtype.type(0)
                return base(self, found[0], found[1], *args)
            return base(self, array, index, *args)  # a local array: private to the thread, not traced

        return op

    for name in ("add", "sub", "and_", "or_", "xor", "inc", "dec", "exch", "max", "min", "nanmax", "nanmin", "cas"):
        setattr(_Atomic, name, _atomic_op(name))

    class _TracingModule(kernelapi.FakeCUDAModule):
        def __init__(self, grid_dim, block_dim, dynshared_size):
            super().__init__(grid_dim, block_dim, dynshared_size)
            self._shared = _Shared(dynshared_size)
            self._atomic = _Atomic()

        def syncthreads(self):
            tracer.barrier()
            super().syncthreads()

        def syncthreads_count(self, val):
            tracer.barrier()
            return super().syncthreads_count(val)

        def syncthreads_and(self, val):
            tracer.barrier()
            return super().syncthreads_and(val)

        def syncthreads_or(self, val):
            tracer.barrier()
            return super().syncthreads_or(val)

    return _TracingModule


def _assigned_name(frame) -> str | None:
    """The variable a ``name = cuda.shared.array(...)`` line assigns, read from the source line."""
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    head = line.split("=", 1)[0].strip() if "=" in line else ""
    return head if head.isidentifier() else None


def _sampled_block_manager(tracer: _Tracer, skipped: list):
    from numba.cuda.simulator import kernel

    class _SampledBlockManager(kernel.BlockManager):
        def run(self, grid_point, *args):
            if linear(tuple(grid_point), tracer.grid) in tracer.blocks:
                super().run(grid_point, *args)
            else:
                skipped.append(grid_point)

    return _SampledBlockManager


@contextlib.contextmanager
def tracing(tracer: _Tracer) -> Iterator[None]:
    """Patch the simulator for one traced launch (process-wide lock; restored on exit)."""
    if not BACKEND.simulated:
        raise TraceUnavailable(
            "the memory trace runs kernels in Numba's CUDA simulator, and this process uses a real GPU; "
            "run it in a child process with NUMBA_ENABLE_CUDASIM=1 (gpu.trace.child does)."
        )
    from numba.cuda.simulator import kernel

    with _TRACE_LOCK:
        saved = kernel.FakeCUDAModule, kernel.BlockManager
        kernel.FakeCUDAModule = _tracing_module_class(tracer)
        kernel.BlockManager = _sampled_block_manager(tracer, [])
        try:
            yield
        finally:
            kernel.FakeCUDAModule, kernel.BlockManager = saved


def trace_launch(kernel, grid, block, args: Sequence[Any], names: Sequence[str] | None = None,
                 max_accesses: int = DEFAULT_MAX_ACCESSES, max_blocks: int = DEFAULT_MAX_BLOCKS) -> RawTrace:
    """Run ``kernel[grid, block](*args)`` in the simulator with every access recorded.

    ``args``: NumPy arrays (traced as global memory, in place: their contents change as on
    a device) and scalars. ``names``: one name per argument (default: the kernel's
    parameter names). At most ``max_accesses`` accesses are recorded (the rest counted)
    and ``max_blocks`` blocks run (see ``sample_blocks``). A kernel that raises is
    reported in ``error`` with what was recorded until then.
    """
    grid3, block3 = _dim3(grid), _dim3(block)
    from gpu.sim import SimKernel

    if isinstance(kernel, SimKernel):  # a kernel of the lab's simulator: the same source, traced in numba-cuda's
        from gpu.sim.reference import as_numba

        kernel = as_numba(kernel)
    fn = getattr(kernel, "py_func", kernel)
    if names is None:
        code = fn.__code__
        names = code.co_varnames[:code.co_argcount]
    blocks = sample_blocks(grid3, max_blocks)
    tracer = _Tracer(grid3, block3, max_accesses, blocks)
    wrapped = [
        TracedArray(a, tracer, tracer.new_array(str(n), "global", a)) if isinstance(a, np.ndarray) and a.ndim > 0 else a
        for a, n in zip(args, names)
    ]
    error = None
    with tracing(tracer):
        try:
            kernel[grid, block](*wrapped)
        except Exception as exc:  # the learner's kernel may raise anything; the trace says what and where
            error = f"{type(exc).__name__}: {exc}"
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
    )


def _project_relative(path: str) -> str:
    """``gpu/experiments/transpose/kernels.py`` for the lab's files; others (a learner's ``submission.py``) as is."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    p = Path(path)
    return str(p.relative_to(root)) if p.is_absolute() and p.is_relative_to(root) else path

