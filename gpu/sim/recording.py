"""The simulator's memory hooks: a recorder told of every global and shared access, barrier and warp collective.

``SimKernel.record(grid, block, args, recorder)`` launches a kernel as ``kernel[grid, block](*args)``
does, with one difference: every access of the kernel to its array arguments (global
memory) and to its ``cuda.shared.array``s, every atomic, every barrier and every warp
collective is reported to ``recorder`` (the ``Recorder`` protocol below; the memory trace,
gpu/trace/record.py, is one). Nothing here is used by a plain launch: the fast path has no
hook to test (the array arguments are NumPy arrays; only a recorded launch hands the kernel
``Watched`` arrays, and only its shared arrays and atomics check for them).

What the recorder is told, in the kernel's own terms:

* ``array(name, space, array) -> id``: once per global argument and once per shared-array
  call site ("global" or "shared"; a block's shared array at one site is the same id in
  every block, its offsets from that block's own allocation).
* ``access(block, thread, array, offset, kind, site)``: ``block`` and ``thread`` are linear
  ids (x fastest), ``offset`` the byte offset from the allocation's start, ``kind`` READ,
  WRITE or ATOMIC, ``site`` ``(file, function, line, col, end_col)`` of the kernel's
  expression (columns in UTF-8 bytes, None where Python does not know them).
* ``out_of_bounds(block, thread, array, index, kind, site)``: an index outside the array,
  negative ones included. Recorded instead of raised, so every offending thread is found:
  the read gives 0, the write (or atomic) is dropped.
* ``sync(block, kind, site, threads, completed)``: a barrier (``bar``, ``bar_count``,
  ``bar_and``, ``bar_or``) or a warp collective (``syncwarp``, ``shfl_down``, ``ballot``, ...
  the kinds of gpu/sim/rewrite.py) released for ``threads`` (linear ids, sorted). A barrier
  some threads never reach (a KernelFault follows) is reported first with ``completed``
  False for the threads that waited there. Which of these order memory — a barrier for the
  block, ``syncwarp`` among the lanes of its mask, a shuffle not at all — is the
  recorder's to decide (the trace follows CUDA's memory model).

Why the recorder cannot be forged by the kernel it records: it is never an
attribute of anything the kernel can name. The ``Watched`` arrays keep only the NumPy array,
an id and an offset; the recorder is in the closures of their class's methods and of the
hooks (reachable only through dunder attributes, which the write-a-kernel checker refuses,
and which nothing here relies on being hidden otherwise: every call into the recorder
reports an access the kernel really made, done by the hook itself).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np

READ, WRITE, ATOMIC = 0, 1, 2

Site = tuple  # (file, function, line, col | None, end_col | None, end_line | None): end_col is a column of end_line


class Recorder(Protocol):
    """What a recorded launch reports to (see the module docstring)."""

    def array(self, name: str, space: str, array: np.ndarray) -> int: ...

    def access(self, block: int, thread: int, array: int, offset: int, kind: int, site: Site) -> None: ...

    def out_of_bounds(self, block: int, thread: int, array: int, index: tuple, kind: int, site: Site) -> None: ...

    def sync(self, block: int, kind: str, site: Site, threads: Sequence[int], completed: bool) -> None: ...


class Hooks(NamedTuple):
    """What the engine and the device API call during one recorded launch (closures over the recorder)."""

    watched: type  # the class of the arrays the kernel is handed
    wrap_args: Any  # (args, names) -> args with every array argument watched
    shared: Any  # (array, site line, caller frame) -> the watched shared array
    atomic: Any  # (watched array, index, name) -> (NumPy array, index), or None when out of bounds (recorded)
    sync: Any  # (kind, generator, threads, completed) -> None


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _offset_of(view: np.ndarray, root: np.ndarray) -> int:
    return view.__array_interface__["data"][0] - root.__array_interface__["data"][0]


def _assigned_name(file: str, line: int) -> str | None:
    """The variable a ``name = cuda.shared.array(...)`` line assigns, read from the source line."""
    import linecache

    text = linecache.getline(file, line).strip()
    head = text.split("=", 1)[0].strip() if "=" in text else ""
    return head if head.isidentifier() else None


def hooks_for(recorder: Recorder, codes: frozenset, state) -> Hooks:
    """The hooks of one recorded launch of a kernel whose code objects are ``codes``; ``state`` is the device API."""
    positions: dict = {}
    sites: dict = {}
    shared_ids: dict = {}  # the rewrite's site id of a cuda.shared.array call -> its array id

    def site_of(frame) -> Site:
        """The kernel's source site of the innermost kernel frame at or above ``frame``."""
        while frame is not None and frame.f_code not in codes:
            frame = frame.f_back
        if frame is None:
            return ("?", "?", 0, None, None)
        code, lasti = frame.f_code, frame.f_lasti
        key = (code, lasti)
        found = sites.get(key)
        if found is None:
            listed = positions.get(code)
            if listed is None:
                listed = positions[code] = list(code.co_positions())
            pos = listed[lasti // 2] if 0 <= lasti // 2 < len(listed) else (frame.f_lineno, None, None, None)
            line = pos[0] if pos[0] is not None else frame.f_lineno
            # (file, function, line, col, end_col, end_line): end_col is on end_line, which a multi-line access spans to
            found = sites[key] = (code.co_filename, code.co_name, line, pos[2], pos[3], pos[1] if pos[1] else line)
        return found

    def who() -> tuple[int, int]:
        b, g, t, d = state.blockIdx, state.gridDim, state.threadIdx, state.blockDim
        return b.x + g.x * (b.y + g.y * b.z), t.x + d.x * (t.y + d.y * t.z)

    def element(watched, idx, kind: int, frame):
        """(byte offset, whole element) for an integer index; (None, True) out of bounds (recorded); (None, False)
        for anything else (a slice, a partial index: a view)."""
        index = idx if isinstance(idx, tuple) else (idx,)
        if not all(_is_int(i) for i in index):
            return None, False
        ary = watched._ary
        shape = ary.shape
        if len(index) > len(shape) or any(not 0 <= i < s for i, s in zip(index, shape)):
            block, thread = who()
            recorder.out_of_bounds(block, thread, watched._id, tuple(int(i) for i in index), kind, site_of(frame))
            return None, True
        offset = watched._base + sum(int(i) * st for i, st in zip(index, ary.strides))
        return offset, len(index) == len(shape)

    class Watched:
        """A kernel's view of one global or shared array during a recorded launch: NumPy's, every element reported."""

        __slots__ = ("_ary", "_id", "_base")

        def __init__(self, ary: np.ndarray, array_id: int, base: int = 0):
            self._ary, self._id, self._base = ary, array_id, base

        def __getitem__(self, idx):
            frame = sys._getframe(1)
            offset, whole = element(self, idx, READ, frame)
            if offset is None and whole:  # out of bounds: recorded; read as 0 so every offending thread is found
                return self._ary.dtype.type(0)
            value = self._ary[idx]
            if whole:
                block, thread = who()
                recorder.access(block, thread, self._id, offset, READ, site_of(frame))
                return value
            if isinstance(value, np.ndarray):  # a view (a row, a slice): still watched, offsets from the allocation
                return Watched(value, self._id, self._base + _offset_of(value, self._ary))
            return value

        def __setitem__(self, idx, value):
            frame = sys._getframe(1)
            offset, whole = element(self, idx, WRITE, frame)
            if offset is None and whole:  # out of bounds: recorded, the write dropped
                return
            self._ary[idx] = value
            block, thread = who()
            site = site_of(frame)
            if whole:
                recorder.access(block, thread, self._id, offset, WRITE, site)
                return
            view = self._ary[idx]  # a slice assignment: one write per element it covers
            base = self._base + _offset_of(view, self._ary)
            for pos in np.ndindex(*view.shape):
                recorder.access(block, thread, self._id, base + sum(p * s for p, s in zip(pos, view.strides)), WRITE,
                                site)

        def __len__(self) -> int:
            return len(self._ary)

        def __iter__(self):  # ``for v in a``: each element read (without this, Python's fallback would never stop)
            for i in range(len(self._ary)):
                yield self[i]

        def __getattr__(self, name):  # shape, size, dtype, ndim, strides...: the array's own
            if name.startswith("_"):
                raise AttributeError(name)
            return getattr(self._ary, name)

        def __repr__(self) -> str:
            return f"<watched array {self._ary.shape} {self._ary.dtype}>"

    def wrap_args(args: tuple, names: Sequence[str]) -> tuple:
        seen: dict[int, int] = {}  # one id per distinct array: an array passed twice is one allocation
        out = []
        for value, name in zip(args, names):
            if isinstance(value, np.ndarray) and value.ndim > 0:
                array_id = seen.get(id(value))
                if array_id is None:
                    array_id = seen[id(value)] = recorder.array(str(name), "global", value)
                out.append(Watched(value, array_id))
            else:
                out.append(value)
        return (*out, *args[len(out):])

    def shared(array: np.ndarray, line: int, frame, site: int = 0) -> Watched:
        file = frame.f_code.co_filename if frame is not None else "?"
        array_id = shared_ids.get(site)
        if array_id is None:
            name = _assigned_name(file, line) or f"shared array of line {line}"
            array_id = shared_ids[site] = recorder.array(name, "shared", array)
        return Watched(array, array_id)

    def atomic(watched: Watched, index, name: str):
        frame = sys._getframe(1)  # the device API's atomic: site_of walks up to the kernel's frame
        offset, whole = element(watched, index, ATOMIC, frame)
        if offset is None:
            return None if whole else (watched._ary, index)
        block, thread = who()
        recorder.access(block, thread, watched._id, offset, ATOMIC, site_of(frame))
        return watched._ary, index

    def sync(kind: str, generator, threads: Sequence[int], completed: bool = True) -> None:
        while getattr(generator, "gi_yieldfrom", None) is not None:  # the innermost device function's frame
            generator = generator.gi_yieldfrom
        frame = getattr(generator, "gi_frame", None)
        block, _ = who()
        recorder.sync(block, kind, site_of(frame) if frame is not None else ("?", "?", 0, None, None), threads,
                      completed)

    return Hooks(Watched, wrap_args, shared, atomic, sync)


__all__ = ["ATOMIC", "READ", "WRITE", "Hooks", "Recorder", "Site", "hooks_for"]
