"""What a kernel's ``cuda`` is inside the lab's simulator: the thread's indices, memory and intrinsics.

``STATE`` is the one device API object put in a rewritten kernel's globals (gpu/sim/kernel.py);
the engine (gpu/sim/engine.py) moves its indices from thread to thread. Shared and local arrays
start poisoned (NaN, or 0xEF bytes for integers) so a missing barrier or write shows; atomics
return the old value and are atomic because one thread runs at a time.
"""

from __future__ import annotations

import sys
import types
import warnings
from typing import NoReturn

import numpy as np

from gpu.sim.errors import DividedByZero, KernelFault, NegativeIndexWrapped, _OutOfBounds
from gpu.sim.fp16 import FP16, Fp16
from gpu.sim.rewrite import BLOCK_SYNC, SYNC_NAMES

WARP = 32
SHARED_BYTES_PER_BLOCK = 48 * 1024  # static shared memory a block may declare (sm_70 and newer)
LOCAL_BYTES_PER_THREAD = 512 * 1024  # the most local memory a thread may have


class Dim3:
    __slots__ = ("x", "y", "z")

    def __init__(self, x: int = 1, y: int = 1, z: int = 1):
        self.x, self.y, self.z = x, y, z

    def tuple(self) -> tuple[int, int, int]:
        return (self.x, self.y, self.z)


def as_dtype(dtype) -> np.dtype:
    try:
        return np.dtype(dtype)
    except TypeError:
        from numba.np.numpy_support import as_dtype as numba_as_dtype

        return numba_as_dtype(dtype)


def poisoned(shape, dtype) -> np.ndarray:
    """A fresh array that says "never written": NaN for floats, 0xEF bytes for integers."""
    array = np.empty(shape, dtype=as_dtype(dtype))
    if array.dtype.kind in "fc":
        array.fill(np.nan)
    else:
        array.view(np.uint8).fill(0xEF)
    return array


def _shape(shape) -> tuple[int, ...]:
    dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    return tuple(int(d) for d in dims)


# The hooks of the recorded launch running now (gpu/sim/recording.py), else None. Set and cleared by the
# engine under its launch lock (``watch``); a module global, never an attribute of the device API a kernel can name.
WATCHING: list = [None]


def watch(hooks) -> None:
    """Install ``hooks`` for a recorded launch (None: a plain launch again, with the plain atomics)."""
    WATCHING[0] = hooks
    STATE.atomic = _WatchedAtomics(STATE) if hooks is not None else _Atomics(STATE)


def _dropped(array):
    """What an out-of-bounds atomic of a recorded launch returns: 0 of the array's type (the atomic was recorded)."""
    dtype = getattr(array, "dtype", None)
    return dtype.type(0) if dtype is not None else 0


class _Atomics:
    """``cuda.atomic.*``: each returns the old value; one thread runs at a time, so each is atomic."""

    def __init__(self, state: State):
        self._state = state

    def _index(self, array: np.ndarray, index, name: str):
        idx = index if isinstance(index, tuple) else (index,)
        if len(idx) != array.ndim:
            self._state.fault(
                "out of bounds", f"cuda.atomic.{name} indexes a {array.ndim}-D array with {len(idx)} indices"
            )
        fixed = []
        for axis, (i, n) in enumerate(zip(idx, array.shape)):
            if -n <= i < 0:  # Numba's atomics index with wraparound, as plain indexing does
                wrapped(_caller_line(), int(i), axis, n)
                i = i + n
            if not 0 <= i < n:
                self._state.fault(
                    "out of bounds",
                    f"cuda.atomic.{name} at index {i} of axis {axis}, whose valid indices are "
                    f"{-n} to {n - 1} (a negative one wraps once); a GPU would update memory outside the array",
                )
            fixed.append(i)
        return tuple(fixed)

    def _update(self, name, array, index, value, op):
        idx = self._index(array, index, name)
        old = array[idx]
        array[idx] = op(old, array.dtype.type(value))
        return old

    def add(self, array, index, value):
        return self._update("add", array, index, value, lambda old, v: old + v)

    def sub(self, array, index, value):
        return self._update("sub", array, index, value, lambda old, v: old - v)

    def max(self, array, index, value):
        return self._update("max", array, index, value, lambda old, v: v if v > old or old != old else old)

    def min(self, array, index, value):
        return self._update("min", array, index, value, lambda old, v: v if v < old or old != old else old)

    def nanmax(self, array, index, value):
        return self._update("nanmax", array, index, value, lambda old, v: np.fmax(old, v))

    def nanmin(self, array, index, value):
        return self._update("nanmin", array, index, value, lambda old, v: np.fmin(old, v))

    def inc(self, array, index, value):
        return self._update("inc", array, index, value, lambda old, v: old.dtype.type(0) if old >= v else old + 1)

    def dec(self, array, index, value):
        return self._update("dec", array, index, value, lambda old, v: v if (old == 0 or old > v) else old - 1)

    def exch(self, array, index, value):
        return self._update("exch", array, index, value, lambda old, v: v)

    def and_(self, array, index, value):
        return self._update("and_", array, index, value, lambda old, v: old & v)

    def or_(self, array, index, value):
        return self._update("or_", array, index, value, lambda old, v: old | v)

    def xor(self, array, index, value):
        return self._update("xor", array, index, value, lambda old, v: old ^ v)

    def cas(self, array, index, old, value):
        idx = self._index(array, index, "cas")
        current = array[idx]
        if current == array.dtype.type(old):
            array[idx] = array.dtype.type(value)
        return current

    def compare_and_swap(self, array, old, value):
        return self.cas(array, 0, old, value)


class _WatchedAtomics(_Atomics):
    """``cuda.atomic`` during a recorded launch only: an atomic on a watched array is reported, then done on its
    NumPy array (out of bounds: reported and dropped, returning 0). A plain launch never pays for this check."""

    def _update(self, name, array, index, value, op):
        target = _watched(array, _wrap_only(array, index), name)
        return _dropped(array) if target is None else super()._update(name, target[0], target[1], value, op)

    def cas(self, array, index, old, value):
        target = _watched(array, _wrap_only(array, index), "cas")
        return _dropped(array) if target is None else super().cas(target[0], target[1], old, value)


def _wrap_only(array, index):
    """A recorded atomic's index with each axis in [-size, 0) wrapped (and warned); the rest is the recorder's."""
    idx = index if isinstance(index, tuple) else (index,)
    shape = getattr(array, "shape", ())
    if not any(isinstance(i, (int, np.integer)) and i < 0 for i in idx):
        return index
    out = []
    for axis, (i, n) in enumerate(zip(idx, shape)):
        if isinstance(i, (int, np.integer)) and -n <= i < 0:
            wrapped(_caller_line(), int(i), axis, n)
            i = i + n
        out.append(i)
    out.extend(idx[len(out):])
    return tuple(out) if isinstance(index, tuple) else out[0]


def _watched(array, index, name: str):
    hooks = WATCHING[0]
    if hooks is None or not isinstance(array, hooks.watched):
        return array, index
    return hooks.atomic(array, index, name)


class _Local:
    def __init__(self, state: State):
        self._state = state

    def array(self, shape, dtype):
        array = poisoned(_shape(shape), dtype)
        if array.nbytes > LOCAL_BYTES_PER_THREAD:
            self._state.fault(
                "local memory",
                f"cuda.local.array of {array.nbytes:,} bytes is more than the "
                f"{LOCAL_BYTES_PER_THREAD // 1024} KiB a thread can have",
            )
        return array


class _Const:
    def array_like(self, array):
        copy = np.array(array, copy=True)
        copy.setflags(write=False)  # constant memory: a store is an error
        return copy


class _SharedAccess:
    def __init__(self, state: State):
        self._state = state

    def array(self, *args, **kwargs):
        self._state.fault(
            "unsupported",
            "cuda.shared.array must be called directly as cuda.shared.array(shape, dtype) "
            "inside the kernel (the simulator gives each call site one array per block)",
        )


class _GridGroup:
    """``cuda.cg.this_grid()``: its ``sync()`` is a point every thread of the grid meets (the rewrite makes it one)."""

    def sync(self):
        raise KernelFault("unsupported", "call sync() on a name assigned cuda.cg.this_grid() (g = cuda.cg.this_grid(); "
                          "g.sync()) or as cuda.cg.this_grid().sync(): the simulator switches threads there")


class _CooperativeGroups:
    """``cuda.cg``: the grid group only (what numba-cuda offers)."""

    def this_grid(self) -> _GridGroup:
        return _GRID


_GRID = _GridGroup()


class State:
    """What a running thread sees: the device API in a kernel's globals is this object."""

    def __init__(self) -> None:
        self.threadIdx = Dim3(0, 0, 0)
        self.blockIdx = Dim3(0, 0, 0)
        self.blockDim = Dim3()
        self.gridDim = Dim3()
        self.warpsize = WARP
        self.atomic = _Atomics(self)
        self.local = _Local(self)
        self.const = _Const()
        self.shared = _SharedAccess(self)
        self.fp16 = FP16
        self.cg = _CooperativeGroups()
        self.block_shared: dict[int, np.ndarray] = {}
        self.wrapped_lines: set[int] = set()  # lines where a negative index wrapped in this launch (warned once)
        self.divided_lines: set[int] = set()  # lines where a division by zero gave Numba's value (warned once)
        self.dynamic_shared_bytes = 0  # the launch's dynamic shared memory: cuda.shared.array(0, dtype)
        # the loops' limits, set as each launch begins (gpu/sim/loops.py: start_counting)
        self.loop_turns = 0  # the launch's limit on one run of one loop in one thread (``loop_limit``)
        self.work_turns = 0  # the launch's limit on all its loops' turns together (``work_limit``)
        self.work_left = 0  # of which this many are left: loops charge their turns as they leave
        self.launches = 0  # launches begun in this process (a loop's late charge names its own: ``_counted``)
        self.line = 0
        self.exited: set[int] = set()  # linear ids of threads of this block that returned

    # --- where the thread is
    @property
    def linear(self) -> int:
        t, d = self.threadIdx, self.blockDim
        return t.x + d.x * (t.y + d.y * t.z)

    @property
    def laneid(self) -> int:
        return self.linear % WARP

    def grid(self, ndim: int):
        t, b, d = self.threadIdx, self.blockIdx, self.blockDim
        if ndim == 1:
            return b.x * d.x + t.x
        if ndim == 2:
            return (b.x * d.x + t.x, b.y * d.y + t.y)
        if ndim == 3:
            return (b.x * d.x + t.x, b.y * d.y + t.y, b.z * d.z + t.z)
        self.fault("unsupported", f"cuda.grid takes 1, 2 or 3, not {ndim!r}")

    def gridsize(self, ndim: int):
        g, d = self.gridDim, self.blockDim
        if ndim == 1:
            return g.x * d.x
        if ndim == 2:
            return (g.x * d.x, g.y * d.y)
        if ndim == 3:
            return (g.x * d.x, g.y * d.y, g.z * d.z)
        self.fault("unsupported", f"cuda.gridsize takes 1, 2 or 3, not {ndim!r}")

    def fault(self, kind: str, sentence: str, line: int | None = None) -> NoReturn:
        raise KernelFault(kind, sentence, block=self.blockIdx.tuple(), thread=self.threadIdx.tuple(), line=line)

    # --- no-ops on a machine where one thread runs at a time
    def threadfence(self):
        pass

    threadfence_block = threadfence_system = threadfence

    def nanosleep(self, ns):
        pass

    def activemask(self) -> int:
        """The lanes of this warp that have not returned (the simulator runs no lane ahead of a branch)."""
        warp = self.linear // WARP
        size = self.blockDim.x * self.blockDim.y * self.blockDim.z
        mask = 0
        for lane in range(WARP):
            tid = warp * WARP + lane
            if tid < size and tid not in self.exited:
                mask |= 1 << lane
        return mask

    def lanemask_lt(self) -> int:
        return (1 << self.laneid) - 1

    # --- integer and float intrinsics Numba offers
    @staticmethod
    def popc(x):
        return bin(int(x) & 0xFFFFFFFFFFFFFFFF).count("1")

    @staticmethod
    def brev(x):
        """The bits reversed over the value's width: 32 for a 32-bit (or narrower) value, 64 for a 64-bit one and for
        a plain Python int (Numba types an integer as int64), as Numba's ``brev`` picks ``__brev`` or ``__brevll``."""
        bits = _bits(x)
        value = int(f"{int(x) & ((1 << bits) - 1):0{bits}b}"[::-1], 2)
        return _same_type(x, value)

    @staticmethod
    def clz(x):
        bits = _bits(x)
        return bits - (int(x) & ((1 << bits) - 1)).bit_length()

    @staticmethod
    def ffs(x):
        x = int(x) & ((1 << _bits(x)) - 1)
        return (x & -x).bit_length()

    @staticmethod
    def fma(a, b, c):
        return a * b + c

    @staticmethod
    def selp(cond, a, b):
        return a if cond else b

    @staticmethod
    def cbrt(x):
        return np.cbrt(x)

    def __getattr__(self, name):
        if name in BLOCK_SYNC or name.endswith("_sync") or name == "syncwarp":
            raise KernelFault(
                "unsupported",
                f"cuda.{name} must be called directly as cuda.{name}(...) in the kernel or a "
                "device function (the simulator switches threads there)",
            )
        raise AttributeError(f"the simulator has no cuda.{name}")


def _bits(x) -> int:
    """The width an integer intrinsic works on: the NumPy type's (at least 32), 64 for a Python int (Numba's int64)."""
    itemsize = getattr(getattr(x, "dtype", None), "itemsize", 8)
    return 64 if itemsize > 4 else 32


def _same_type(x, value: int):
    dtype = getattr(x, "dtype", None)
    if dtype is None or dtype.kind not in "iu":
        return value
    return np.array(value, dtype=np.uint64 if dtype.itemsize > 4 else np.uint32).astype(dtype)[()]


STATE = State()

# Paths under ``cuda`` that the rewrite turns into something else (sync points, per-site shared arrays).
_REWRITTEN = frozenset({*SYNC_NAMES, "shared.array"})


def unmodelled(path: list[str]) -> str | None:
    """``cuda.<path>`` as far as the simulator cannot follow it (``"cuda.cg"``), or None when it models all of it."""
    if ".".join(path[:2]) in _REWRITTEN or path[0] in _REWRITTEN:
        return None
    obj: object = STATE
    for depth, part in enumerate(path):
        if part.startswith("_") or not hasattr(obj, part):
            return "cuda." + ".".join(path[: depth + 1])
        obj = getattr(obj, part)
        if not isinstance(obj, (State, _Atomics, _Local, _Const, _SharedAccess, Fp16, _CooperativeGroups)):
            return None  # a value or a function: what follows is an attribute of it, not of the API
    return None


# --- the helpers the rewritten source calls


def _caller_line() -> int:
    """The line of the kernel code that called into this module (an atomic's caller)."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return frame.f_lineno if frame is not None else 0


def divided_by_zero(line: int, op: str, value) -> None:
    """Warn, once per line per launch, that a division by zero gave the compiled kernel's value."""
    if line not in STATE.divided_lines:
        STATE.divided_lines.add(line)
        warnings.warn(DividedByZero(line, op, value), stacklevel=3)


def wrapped(line: int, index: int, axis: int, size: int) -> None:
    """Warn, once per line per launch, that a negative index wrapped."""
    if line not in STATE.wrapped_lines:
        STATE.wrapped_lines.add(line)
        warnings.warn(NegativeIndexWrapped(line, index, axis, size), stacklevel=2)


def negative_index(array, index, axis: int, line: int):
    """A negative ``index`` on ``axis``: wrapped once, as Numba does (``fix_index``), or out of bounds below -size."""
    shape = getattr(array, "shape", None)
    if shape is None:  # a tuple (``a.shape[-1]``) or another sequence
        shape = (len(array),) if axis == 0 and hasattr(array, "__len__") else np.shape(array)
    if axis >= len(shape):
        return index  # more indices than axes: NumPy raises, and the engine reports it
    size = int(shape[axis])
    if index >= -size:
        wrapped(line, int(index), axis, size)
        return index + size
    if WATCHING[0] is not None and isinstance(array, WATCHING[0].watched):
        return index  # a recorded launch: the watched array records it as out of bounds and goes on
    raise _OutOfBounds(
        f"index {index} on axis {axis} is below -{size}: Numba wraps a negative index once (to index + {size}), "
        f"and this one still lies before the array (shape {tuple(shape)}), so a GPU would read or write memory "
        "outside it",
        line,
    )


def whole_index(array, index, line: int):
    """An index held in a variable, which may be a tuple (``gid = cuda.grid(2); a[gid]``): each axis wrapped once."""
    if isinstance(index, tuple):
        return tuple(negative_index(array, i, axis, line) if _is_negative(i) else i for axis, i in enumerate(index))
    return negative_index(array, index, 0, line) if _is_negative(index) else index


def _is_negative(i) -> bool:
    return isinstance(i, (int, np.integer)) and bool(i < 0)


def check_dynamic_shared(nbytes: int) -> int:
    if nbytes > SHARED_BYTES_PER_BLOCK:
        raise KernelFault("launch", f"the launch asks for {nbytes:,} bytes of dynamic shared memory, more than the "
                          f"{SHARED_BYTES_PER_BLOCK // 1024} KiB a block has without opting in")
    return nbytes


_DYNAMIC = -1  # the key of a block's dynamic shared memory among its shared arrays


def _dynamic_shared(dtype) -> np.ndarray:
    """``cuda.shared.array(0, dtype)``: the launch's dynamic shared memory seen as ``dtype``; every such array of a
    block starts at the same byte, as in CUDA (and in Numba, where each is a view of the one extern array)."""
    raw = STATE.block_shared.get(_DYNAMIC)
    if raw is None:
        raw = poisoned(STATE.dynamic_shared_bytes, np.uint8)
        itemsize = as_dtype(dtype).itemsize
        raw[: len(raw) - len(raw) % itemsize].view(as_dtype(dtype))[:] = poisoned(1, dtype)[0]
        static = sum(a.nbytes for k, a in STATE.block_shared.items() if k != _DYNAMIC)
        if static + raw.nbytes > SHARED_BYTES_PER_BLOCK:
            STATE.fault("shared memory", f"the block's static shared arrays ({static:,} bytes) and the launch's "
                        f"dynamic shared memory ({raw.nbytes:,} bytes) are more than the "
                        f"{SHARED_BYTES_PER_BLOCK // 1024} KiB a block has")
        STATE.block_shared[_DYNAMIC] = raw
    itemsize = as_dtype(dtype).itemsize
    return raw[: len(raw) - len(raw) % itemsize].view(as_dtype(dtype))


def shared_array(site: int, line: int, shape, dtype):
    if _shape(shape) == (0,):
        return _dynamic_shared(dtype)
    array = STATE.block_shared.get(site)
    if array is None:
        array = poisoned(_shape(shape), dtype)
        used = sum(a.nbytes for a in STATE.block_shared.values()) + array.nbytes
        if used > SHARED_BYTES_PER_BLOCK:
            STATE.fault(
                "shared memory",
                f"the block's shared arrays need {used:,} bytes, more than the "
                f"{SHARED_BYTES_PER_BLOCK // 1024} KiB a block can declare",
                line,
            )
        if WATCHING[0] is not None:  # a recorded launch: every access to this array is reported
            array = WATCHING[0].shared(array, line, sys._getframe(1), site)
        STATE.block_shared[site] = array
    return array


__all__ = [
    "STATE", "Dim3", "State", "negative_index", "poisoned", "shared_array", "unmodelled", "whole_index", "wrapped",
]
