"""The vectorised tier's memory: a chunk's lanes, the arrays a kernel indexes, and the check that no two lanes clash.

``Chunk`` is one launch's blocks ``first`` to ``last - 1``, one lane per thread (block-major, x
fastest, as the per-thread tier orders them). Global arrays, shared arrays (a row per block) and
local arrays (a row per lane) are addressed as one element number per lane in a 1-D view. Every
access is logged; ``Memory.check`` (at each barrier for shared memory, at the end of the chunk for
global memory) raises ``Bail`` when one lane touched an element another lane wrote in that span,
which is when the statement-at-a-time order could differ from the per-thread tier's.
"""

from __future__ import annotations

import math

import numpy as np

from gpu.sim import device as device_api
from gpu.sim import vector_ops as ops
from gpu.sim.vector_ops import Bail, Weak

WARP = device_api.WARP
FULL_MASK = 0xFFFFFFFF


_LANE_SHAPES: dict[tuple, tuple] = {}
_LANE_SHAPES_KEPT = 8  # (block, blocks per chunk) shapes kept between launches


def _lane_shape(block, blocks: int) -> tuple:
    """(lane, block row, linear thread id, threadIdx) of ``blocks`` blocks of ``block``: built once, read-only.

    An axis the block does not extend along (``by == 1``) is the Python int 0, as a thread sees it.
    """
    key = (block, blocks)
    hit = _LANE_SHAPES.get(key)
    if hit is None:
        threads = block[0] * block[1] * block[2]
        lane = np.arange(blocks * threads, dtype=np.int64)
        row, t = (np.zeros_like(lane), lane) if blocks == 1 else np.divmod(lane, threads)
        x = t if block[1] == block[2] == 1 else t % block[0]
        y = 0 if block[1] == 1 else (t // block[0]) % block[1]
        z = 0 if block[2] == 1 else t // (block[0] * block[1])
        arrays = [a for a in (lane, row, t, x, y, z) if isinstance(a, np.ndarray)]
        for array in arrays:
            array.flags.writeable = False  # shared by every launch of this shape: nothing may change them
        hit = (lane, row, Weak(t), tuple(Weak(a) if isinstance(a, np.ndarray) else a for a in (x, y, z)))
        if len(_LANE_SHAPES) >= _LANE_SHAPES_KEPT:
            _LANE_SHAPES.pop(next(iter(_LANE_SHAPES)))
        _LANE_SHAPES[key] = hit
    return hit


class Chunk:
    """Blocks ``first`` to ``last - 1`` (linear ids, x fastest) of a launch: one lane per thread, block-major."""

    def __init__(self, grid, block, first: int, last: int):
        self.grid, self.block, self.first = grid, block, first
        self.threads = block[0] * block[1] * block[2]
        self.blocks = last - first
        self.lanes = self.blocks * self.threads
        self.lane, self.block_row, self.linear_thread, self.threadIdx = _lane_shape(block, self.blocks)
        self._block_idx: tuple | None = None

    @property
    def blockIdx(self) -> tuple:
        if self._block_idx is None:
            linear = self.block_row + self.first
            if self.grid[1] == self.grid[2] == 1:
                self._block_idx = (Weak(linear), 0, 0)
            else:
                rest, x = np.divmod(linear, self.grid[0])
                self._block_idx = (Weak(x), Weak(rest % self.grid[1]), Weak(rest // self.grid[1]))
        return self._block_idx


class _Ref:
    """Memory a kernel indexes: ``storage`` (C-contiguous), ``flat`` (its 1-D view), ``shape`` (the kernel's view)."""

    __slots__ = ("storage", "flat", "shape", "row")

    def __init__(self, storage: np.ndarray, shape: tuple):
        self.storage, self.flat, self.shape = storage, storage.reshape(-1), shape
        self.row = math.prod(shape)  # elements of one block's (shared) or lane's (local) copy


class GlobalRef(_Ref):
    """A kernel's array argument (or a global array it reads)."""

    def __init__(self, array: np.ndarray):
        if not array.flags.c_contiguous:
            raise Bail("an array that is not C-contiguous")
        super().__init__(array, array.shape)

    @property
    def array(self) -> np.ndarray:
        return self.storage


class SharedRef(_Ref):
    """One ``cuda.shared.array`` call site: a row per block of the chunk."""

    def __init__(self, storage: np.ndarray):
        super().__init__(storage, storage.shape[1:])


class LocalRef(_Ref):
    """One execution of ``cuda.local.array``: a row per lane."""

    def __init__(self, storage: np.ndarray):
        super().__init__(storage, storage.shape[1:])


SHUFFLES = ("shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync")
WARP_VOTES = ("all_sync", "any_sync", "eq_sync", "ballot_sync")
_ATOMIC_INT = {"add": np.add, "sub": np.subtract, "and_": np.bitwise_and, "or_": np.bitwise_or,
               "xor": np.bitwise_xor, "max": np.maximum, "min": np.minimum}
_ATOMIC_FAMILY = {"add": "add", "sub": "add"}


class _Log:
    """Every element each lane read, wrote or updated atomically, per array, until the next check."""

    def __init__(self):
        self.clear()

    def clear(self) -> None:
        self.reads: dict[int, list] = {}
        self.writes: dict[int, list] = {}
        self.atomics: dict[int, list] = {}
        self.arrays: dict[int, np.ndarray] = {}

    def add(self, table: dict, key: int, array: np.ndarray, flat, mask):
        self.arrays[key] = array
        table.setdefault(key, []).append((flat, mask))


class Memory:
    """The memory side of the interpreter: addresses, loads, stores, atomics, shuffles and the access check."""

    def __init__(self, chunk: Chunk, saved: dict, owners: dict):
        self.chunk = chunk
        self.saved = saved  # id -> (array, copy before the launch wrote it)
        self.owners = owners  # size -> scratch "which lane wrote this element" array, -1 where none
        self.global_log = _Log()
        self.shared_log = _Log()
        self.shared_sites: dict[int, SharedRef] = {}
        self.shared_bytes = 0
        self.ranges: dict[int, tuple] = {}
        self.products: dict[tuple, tuple] = {}
        self.bases: dict[tuple, tuple] = {}
        self.runs: dict[int, tuple] = {}

    def _address(self, ref: _Ref, index: tuple, mask, line: int):
        """Each lane's element of ``ref.flat`` (0 in inactive lanes), after the bounds check: an int or int64 lanes.

        The part that varies by lane (``ty * 16 + block * 256``) is remembered for the chunk, keyed by the
        lane arrays it is made of, so an access in a loop costs one addition and one gather.
        """
        shape = ref.shape
        if len(index) != len(shape):
            raise Bail(f"{len(index)} indices into a {len(shape)}-D array (line {line})")
        offset = 0
        parts = []
        step = 1
        for i, n in zip(reversed(index), reversed(shape)):
            if isinstance(i, np.ndarray):
                if mask is not None:
                    i = np.where(mask, i, 0)
                    low, high = (int(i.min()), int(i.max())) if i.size else (0, 0)
                else:
                    low, high = self._range(i)
                if low < 0 or high >= n:
                    raise Bail(f"an index out of bounds or negative (line {line})")
                parts.append((i, step))
            else:
                if not 0 <= i < n:
                    raise Bail(f"an index out of bounds or negative (line {line})")
                offset += i * step
            step *= n
        if isinstance(ref, SharedRef):
            parts.append((self.chunk.block_row, ref.row))
        elif isinstance(ref, LocalRef):
            parts.append((self.chunk.lane, ref.row))
        if not parts:
            return offset
        key = tuple((id(i), k) for i, k in parts)
        hit = self.bases.get(key) if mask is None else None
        if hit is None or any(kept is not i for kept, (i, _) in zip(hit[0], parts)):
            base = self._scaled(*parts[0])
            for i, k in parts[1:]:
                base = base + self._scaled(i, k)
            hit = ([i for i, _ in parts], base)
            if mask is None:
                _remember(self.bases, key, hit)
        return hit[1] + offset if offset else hit[1]

    def _run_start(self, flat) -> int | None:
        """The first element if the lanes' elements are consecutive (lane k at first + k), else None; remembered."""
        if not isinstance(flat, np.ndarray) or flat.ndim != 1 or not flat.size:
            return None
        hit = self.runs.get(id(flat))
        if hit is None or hit[0] is not flat:
            first = int(flat[0])
            consecutive = int(flat[-1]) - first == flat.size - 1 and bool((np.diff(flat) == 1).all())
            hit = (flat, first if consecutive else None)
            _remember(self.runs, id(flat), hit)
        return hit[1]

    def _one_each(self, flat, mask) -> bool:
        """Whether the active lanes' elements rise strictly with the lane (so no two lanes share one)."""
        if not isinstance(flat, np.ndarray):
            return mask is not None and int(mask.sum()) <= 1
        if mask is None:
            return self._run_start(flat) is not None or bool((np.diff(flat) > 0).all())
        return bool((np.diff(flat[mask]) > 0).all())

    def _range(self, lanes: np.ndarray) -> tuple[int, int]:
        """(min, max) of a lane array, remembered for this chunk (the chunk's indices are used again and again)."""
        hit = self.ranges.get(id(lanes))
        if hit is None or hit[0] is not lanes:
            hit = (lanes, int(lanes.min()), int(lanes.max())) if lanes.size else (lanes, 0, 0)
            _remember(self.ranges, id(lanes), hit)
        return hit[1], hit[2]

    def _scaled(self, lanes: np.ndarray, step: int) -> np.ndarray:
        """``lanes * step``, remembered for this chunk for the arrays it is asked of again."""
        if step == 1:
            return lanes
        hit = self.products.get((id(lanes), step))
        if hit is None or hit[0] is not lanes:
            hit = (lanes, lanes * step)
            _remember(self.products, (id(lanes), step), hit)
        return hit[1]

    def load(self, ref, index: tuple, mask, line: int):
        if isinstance(ref, tuple):
            if len(index) != 1 or isinstance(index[0], np.ndarray):
                raise Bail(f"a tuple indexed by lane (line {line})")
            return ref[index[0]]
        if not isinstance(ref, _Ref):
            raise Bail(f"a subscript of {type(ref).__name__} (line {line})")
        flat = self._address(ref, index, mask, line)
        self.log(ref, False, flat, mask)
        start = self._run_start(flat) if mask is None else None
        if start is not None:  # consecutive elements: a copy of a slice, not a gather
            return ref.flat[start:start + flat.size].copy()
        return ref.flat[flat]

    def store(self, ref, index: tuple, value, mask, line: int) -> None:
        if not isinstance(ref, _Ref):
            raise Bail(f"a store into {type(ref).__name__} (line {line})")
        flat = self._address(ref, index, mask, line)
        if isinstance(ref, GlobalRef):
            self.before_write(ref.storage)
        data = ops.store_value(ref.storage.dtype, value, mask)
        self.log(ref, True, flat, mask)
        if isinstance(data, np.ndarray) and not isinstance(flat, np.ndarray):
            flat = np.full(self.chunk.lanes, flat, np.int64)  # every lane at one element
        start = self._run_start(flat) if mask is None else None
        if start is not None:  # consecutive elements: a slice
            ref.flat[start:start + flat.size] = data
            return
        if mask is not None:
            flat = flat[mask] if isinstance(flat, np.ndarray) else np.full(int(mask.sum()), flat, np.int64)
            if isinstance(data, np.ndarray):
                data = data[mask]
        ref.flat[flat] = data

    def before_write(self, array: np.ndarray) -> None:
        if not array.flags.writeable:
            raise Bail("a store into a read-only array")
        if id(array) not in self.saved:
            self.saved[id(array)] = (array, array.copy())

    def log(self, ref: _Ref, write: bool, flat, mask) -> None:
        """Note the element each active lane touches (checked only for the arrays the chunk writes)."""
        if isinstance(ref, LocalRef):
            return  # a lane's own memory
        log = self.global_log if isinstance(ref, GlobalRef) else self.shared_log
        log.add(log.writes if write else log.reads, id(ref.storage), ref.storage, flat, mask)

    def _touched(self, entries) -> tuple[np.ndarray, np.ndarray]:
        """(element, lane) for every active lane of every entry."""
        lanes_all = self.chunk.lane
        flats, lanes = [], []
        for flat, mask in entries:
            if not isinstance(flat, np.ndarray):
                flat = np.full(lanes_all.shape, flat, np.int64)
            flats.append(flat if mask is None else flat[mask])
            lanes.append(lanes_all if mask is None else lanes_all[mask])
        return np.concatenate(flats), np.concatenate(lanes)

    def check(self, log: _Log, keep=None) -> None:
        """Bail if two lanes touched one element, one of them writing, since the log began; then clear it.

        ``keep`` (a bool per block of the chunk): the entries of those blocks' lanes stay in the log.
        """
        for key, array in log.arrays.items():
            writes, reads, atomics = log.writes.get(key), log.reads.get(key), log.atomics.get(key)
            if atomics and (writes or reads):
                raise Bail("an array updated by atomics and read or written plainly between the same barriers")
            if atomics:
                if array.dtype.kind == "f" and len(atomics) > 1:
                    raise Bail("float atomics on one array at more than one point of the kernel")
                if len({_ATOMIC_FAMILY.get(op, op) for op, _ in atomics}) > 1:
                    raise Bail("different atomic operations on one array")
            if not writes:
                continue
            if not reads and len(writes) == 1 and self._one_each(*writes[0]):
                continue  # one store, each lane its own element, no load: nothing to clash
            owner = self.owners.get(array.size)  # scratch, -1 again after every check: shared by arrays of a size
            if owner is None:
                if len(self.owners) >= _OWNERS_KEPT:
                    self.owners.clear()
                owner = self.owners[array.size] = np.full(array.size, -1, np.int32)
            wf, wl = self._touched(writes)
            owner[wf] = wl
            clash = bool((owner[wf] != wl).any())
            if not clash and reads:
                rf, rl = self._touched(reads)
                seen = owner[rf]
                clash = bool(((seen >= 0) & (seen != rl)).any())
            owner[wf] = -1
            if clash:
                raise Bail("two lanes touch one element between the same barriers, one of them writing")
        if keep is None or not keep.any():
            log.clear()
            return
        mine = keep[self.chunk.block_row]
        for table in (log.reads, log.writes):
            for key, entries in table.items():
                table[key] = [(flat, mine if mask is None else mask & mine) for flat, mask in entries]
        for key, done in log.atomics.items():
            log.atomics[key] = [(op, mine if mask is None else mask & mine) for op, mask in done
                                if (mine if mask is None else mask & mine).any()]

    def allocate(self, name: str, node, args, mask, line: int):
        shape = args[0] if isinstance(args[0], tuple) else (args[0],)
        if any(ops.is_lane(s) for s in shape) or not isinstance(args[1], type):
            raise Bail(f"cuda.{name} with a shape or type that is not constant (line {line})")
        shape = tuple(int(s) for s in shape)
        dtype = device_api.as_dtype(args[1])
        if name == "shared.array":
            site = id(node)
            ref = self.shared_sites.get(site)
            if ref is None:
                storage = device_api.poisoned((self.chunk.blocks, *shape), dtype)
                self.shared_bytes += storage.nbytes // self.chunk.blocks
                if self.shared_bytes > device_api.SHARED_BYTES_PER_BLOCK:
                    raise Bail("more shared memory than a block can declare")
                ref = self.shared_sites[site] = SharedRef(storage)
            return ref
        if mask is not None:
            raise Bail(f"cuda.local.array in some lanes only (line {line})")
        storage = device_api.poisoned((self.chunk.lanes, *shape), dtype)
        if storage.nbytes // max(1, self.chunk.lanes) > device_api.LOCAL_BYTES_PER_THREAD:
            raise Bail("more local memory than a thread can have")
        return LocalRef(storage)

    def atomic(self, op: str, args, mask, line: int) -> None:
        ref, index, value = args
        if not isinstance(ref, (GlobalRef, SharedRef)):
            raise Bail(f"an atomic on {type(ref).__name__} (line {line})")
        storage = ref.storage
        ufunc = _ATOMIC_INT.get(op)
        if ufunc is None or (storage.dtype.kind == "f" and op not in ("add", "sub")):
            raise Bail(f"cuda.atomic.{op} on {storage.dtype} (line {line})")
        index = tuple(ops.int_index(i) for i in (index if isinstance(index, tuple) else (index,)))
        flat = self._address(ref, index, mask, line)
        data = ops.cast(storage.dtype, value, mask)
        if isinstance(ref, GlobalRef):
            self.before_write(storage)
        flat = np.broadcast_to(flat, (self.chunk.lanes,))
        data = np.broadcast_to(data, (self.chunk.lanes,))
        if mask is not None:
            flat, data = flat[mask], data[mask]
        log = self.global_log if isinstance(ref, GlobalRef) else self.shared_log
        log.arrays[id(storage)] = storage
        log.atomics.setdefault(id(storage), []).append((op, mask))
        ufunc.at(ref.flat, flat, data)  # in lane order: the per-thread tier's order

    def _warp_vote(self, name: str, args, line: int):
        """``all_sync``/``any_sync``/``eq_sync`` (a Python int per lane) and ``ballot_sync`` (a uint32), per warp."""
        if len(args) != 2:
            raise Bail(f"cuda.{name} with {len(args)} arguments (line {line})")
        truth = ops.truth(args[1])
        lanes = np.broadcast_to(truth, (self.chunk.lanes,)) if not isinstance(truth, np.ndarray) else truth
        warps = lanes.reshape(-1, WARP)
        if name == "ballot_sync":
            bits = (warps.astype(np.uint64) << np.arange(WARP, dtype=np.uint64)).sum(axis=1).astype(np.uint32)
            return np.repeat(bits, WARP)
        every, some = warps.all(axis=1), warps.any(axis=1)
        value = {"all_sync": every, "any_sync": some, "eq_sync": every | ~some}[name]
        return Weak(np.repeat(value.astype(np.int64), WARP))

    def warp_collective(self, name: str, args, mask, line: int):
        """A shuffle (or ``syncwarp``) with the full mask, every warp here whole or not at all: a gather by lane."""
        full = args[0] if args else FULL_MASK
        if ops.is_lane(full) or not isinstance(full, (int, np.integer)) or int(full) & FULL_MASK != FULL_MASK:
            raise Bail(f"cuda.{name} with a mask that is not 0xffffffff in every lane (line {line})")
        if self.chunk.threads % WARP:
            raise Bail(f"cuda.{name} in a block whose last warp is partial (line {line})")
        if mask is not None:
            warps = mask.reshape(-1, WARP)
            if (warps.any(axis=1) & ~warps.all(axis=1)).any():
                raise Bail(f"cuda.{name} reached by some lanes of a warp only (line {line})")
        if name == "syncwarp":
            return None
        if name in WARP_VOTES:
            return self._warp_vote(name, args, line)
        if len(args) not in (3, 4):
            raise Bail(f"cuda.{name} with {len(args)} arguments (line {line})")
        value, operand = args[1], ops.int_index(args[2])
        width = ops.int_index(args[3]) if len(args) == 4 else WARP
        if ops.is_lane(width) or width not in (1, 2, 4, 8, 16, 32):
            raise Bail(f"cuda.{name} with width {width!r} (line {line})")
        if not ops.is_lane(value):
            return value  # the same in every lane, so in the lane it is read from
        lane = self.chunk.linear_thread.a % WARP
        if name == "shfl_down_sync":
            source = np.where(lane % width + operand < width, lane + operand, lane)
        elif name == "shfl_up_sync":
            source = np.where(lane % width >= operand, lane - operand, lane)
        elif name == "shfl_sync":
            source = lane - lane % width + np.asarray(operand) % width
        else:
            source = lane ^ operand
            source = np.where(source // width == lane // width, source, lane)
        gather = self.chunk.lane - lane + source
        if isinstance(value, Weak):
            return Weak(value.a[gather])
        return value[gather]


_OWNERS_KEPT = 2  # scratch owner arrays kept between launches (int32, one element per array element)
_REMEMBERED = 24  # entries per memo: each holds lane arrays, and a loop may make fresh ones every iteration


def _remember(memo: dict, key, value) -> None:
    if len(memo) >= _REMEMBERED:
        memo.clear()
    memo[key] = value


__all__ = ["Chunk", "GlobalRef", "LocalRef", "Memory", "SharedRef"]
