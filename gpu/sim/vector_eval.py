"""The vectorised tier's interpreter: a kernel's statements run once for every lane of a chunk.

See gpu/sim/vector.py for the model and why its answers are the per-thread tier's. Here:
``Chunk`` (the lanes and their indices), the array references (global, shared, local), the
access log that finds two lanes touching one element, and ``Interpreter``, which walks the
kernel's syntax tree with a mask of active lanes (``None``: every lane).
"""

from __future__ import annotations

import ast
import builtins
import math
from collections.abc import Iterable

import numpy as np

from gpu.sim import device as device_api
from gpu.sim import vector_ops as ops
from gpu.sim.vector_ops import Bail, Weak

WARP = device_api.WARP


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


class _Dims:
    __slots__ = ("values",)

    def __init__(self, values):
        self.values = values


class _Namespace:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


class _AllReturned(Exception):
    pass


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class _Loop:
    """The lanes that left a running loop (``break``) and those that left this turn of it (``continue``)."""

    __slots__ = ("broken", "skipped")

    def __init__(self):
        self.broken = None
        self.skipped = None


class Frame:
    """A running kernel or device function: its variables, its live lanes and (device) return value."""

    def __init__(self, env: dict, alive):
        self.env = env
        self.loops: list[_Loop] = []
        self.partial: dict[str, np.ndarray] = {}  # variables defined in some lanes only: where they are
        self.alive = alive  # None: every lane the frame started with
        self.result = None
        self.result_lanes = None


FULL_MASK = 0xFFFFFFFF
_SHUFFLES = ("shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync")
_BUILTINS = {builtins.min: "min", builtins.max: "max", builtins.abs: "abs"}
_MATH = {"sqrt": np.sqrt, "fabs": np.fabs}
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


class Interpreter:
    def __init__(self, chunk: Chunk, saved: dict, owners: dict):
        self.chunk = chunk
        self.saved = saved  # id -> (array, copy before the launch wrote it)
        self.owners = owners  # size -> scratch "which lane wrote this element" array, -1 where none
        self.global_log = _Log()
        self.shared_log = _Log()
        self.shared_sites: dict[int, SharedRef] = {}
        self.ranges: dict[int, tuple] = {}
        self.products: dict[tuple, tuple] = {}
        self.bases: dict[tuple, tuple] = {}
        self.runs: dict[int, tuple] = {}
        self.shared_bytes = 0

    # --- the whole chunk
    def run(self, plan, values: tuple) -> None:
        node = plan.node
        names = [a.arg for a in node.args.args]
        if len(names) != len(values) or node.args.vararg or node.args.kwonlyargs:
            raise Bail("the arguments do not match the kernel's parameters")
        env = {n: (GlobalRef(v) if isinstance(v, np.ndarray) else v) for n, v in zip(names, values)}
        self.scope = plan.scope
        frame = self.kernel_frame = Frame(env, None)
        try:
            self.block(node.body, None, frame)
        except _AllReturned:
            pass
        self.check(self.shared_log)
        self.check(self.global_log)

    # --- statements
    def block(self, body, mask, frame: Frame) -> None:
        for stmt in body:
            if mask is not None and not mask.any():
                return
            self.stmt(stmt, mask, frame)
            if frame.alive is not None:
                mask = frame.alive if mask is None else mask & frame.alive

    def stmt(self, node, mask, frame: Frame) -> None:
        kind = type(node)
        if kind is ast.Assign:
            value = self.ev(node.value, mask, frame)
            self.assign(node.targets[0], value, mask, frame)
        elif kind is ast.AugAssign:
            self.augassign(node, mask, frame)
        elif kind is ast.If:
            test = ops.truth(self.ev(node.test, mask, frame))
            if not isinstance(test, np.ndarray):
                self.block(node.body if test else node.orelse, mask, frame)
                return
            if mask is None and test.all():  # every lane takes the body: no mask to carry
                self.block(node.body, None, frame)
                return
            yes = test if mask is None else mask & test
            no = ~test if mask is None else mask & ~test
            if yes.any():
                self.block(node.body, yes, frame)
            if node.orelse and no.any():
                self.block(node.orelse, self.live(no, frame), frame)
        elif kind is ast.For or kind is ast.While:
            self.loop(node, mask, frame)
        elif kind is ast.Break or kind is ast.Continue:
            self.jump(node, mask, frame)
        elif kind is ast.Expr:
            if isinstance(node.value, ast.Constant):
                return
            if not isinstance(node.value, ast.Call):
                raise Bail(f"an expression statement (line {node.lineno})")
            self.call(node.value, mask, frame, statement=True)
        elif kind is ast.Return:
            self.ret(node, mask, frame)
        elif kind is ast.Pass:
            return
        else:
            raise Bail(f"{kind.__name__} (line {node.lineno})")

    def live(self, mask, frame: Frame):
        if frame.alive is None:
            return mask
        return frame.alive.copy() if mask is None else mask & frame.alive

    def ret(self, node: ast.Return, mask, frame: Frame) -> None:
        if node.value is not None:
            value = self.ev(node.value, mask, frame)
            if frame.result_lanes is None and frame.result is None:
                frame.result = value
                frame.result_lanes = mask
            else:
                old_lanes = frame.result_lanes
                frame.result = ops.merge(self.full(mask), value, frame.result, self.chunk.lanes)
                frame.result_lanes = None if old_lanes is None or mask is None else old_lanes | mask
        if mask is None:
            frame.alive = np.zeros(self.chunk.lanes, bool)
            raise _AllReturned
        frame.alive = ~mask if frame.alive is None else frame.alive & ~mask

    def full(self, mask):
        return np.ones(self.chunk.lanes, bool) if mask is None else mask

    def loop(self, node, mask, frame: Frame) -> None:
        """A ``for`` or ``while``: lanes that ``break`` rejoin after it, lanes that ``continue`` at its next turn."""
        state = _Loop()
        frame.loops.append(state)
        try:
            if isinstance(node, ast.For):
                self.for_range(node, mask, frame, state)
            else:
                self.while_loop(node, mask, frame, state)
        finally:
            frame.loops.pop()
        if state.broken is not None:
            frame.alive = frame.alive | state.broken
            if frame is self.kernel_frame and frame.alive.all():
                frame.alive = None

    def turn(self, body, mask, frame: Frame, state: _Loop) -> bool:
        """One turn of a loop's body; False when every lane in it broke out at once."""
        try:
            self.block(body, mask, frame)
        except _Continue:
            pass
        except _Break:
            return False
        if state.skipped is not None:  # lanes that continued take the next turn
            frame.alive = frame.alive | state.skipped
            state.skipped = None
        return True

    def jump(self, node, mask, frame: Frame) -> None:
        """``break`` or ``continue``: for every lane here at once, a Python jump; else those lanes leave the turn."""
        if not frame.loops:
            raise Bail(f"{type(node).__name__.lower()} outside a loop (line {node.lineno})")
        if mask is None:
            raise _Break if isinstance(node, ast.Break) else _Continue
        state = frame.loops[-1]
        if isinstance(node, ast.Break):
            state.broken = mask.copy() if state.broken is None else state.broken | mask
        else:
            state.skipped = mask.copy() if state.skipped is None else state.skipped | mask
        frame.alive = ~mask if frame.alive is None else frame.alive & ~mask

    def for_range(self, node: ast.For, mask, frame: Frame, state: _Loop) -> None:
        assert isinstance(node.target, ast.Name)  # the subset check lets no other loop through
        name = node.target.id
        items: Iterable | None
        if isinstance(node.iter, ast.Tuple):  # for c in (first, second): the same items in every lane
            items = [self.ev(e, mask, frame) for e in node.iter.elts]
        else:
            assert isinstance(node.iter, ast.Call)
            bounds = [self.ev(a, mask, frame) for a in node.iter.args]
            items = None if any(ops.is_lane(b) for b in bounds) else range(*(ops.int_index(b) for b in bounds))
        if items is not None:
            for item in items:
                self.set_name(name, item, mask, frame)
                if not self.turn(node.body, mask, frame, state):
                    return
                mask = self.live(mask, frame)
                if mask is not None and not mask.any():
                    return
            return
        if len(bounds) == 1:
            bounds = [0, bounds[0]]
        start, stop = ops.int_index(bounds[0]), ops.int_index(bounds[1])
        step = ops.int_index(bounds[2]) if len(bounds) == 3 else 1
        if ops.is_lane(step) or step == 0:
            raise Bail(f"a range whose step differs between lanes, or is 0 (line {node.lineno})")
        current = np.broadcast_to(np.asarray(start, np.int64), (self.chunk.lanes,)).copy()
        while True:
            inside = current < stop if step > 0 else current > stop
            loop = inside if mask is None else mask & inside
            if not loop.any():
                return
            self.set_name(name, Weak(current.copy()), loop, frame)
            if not self.turn(node.body, loop, frame, state):
                return
            mask = self.live(mask, frame)
            current += step

    def while_loop(self, node: ast.While, mask, frame: Frame, state: _Loop) -> None:
        loop = mask
        while True:
            test = ops.truth(self.ev(node.test, loop, frame))
            if isinstance(test, np.ndarray):
                if loop is None and test.all():
                    pass  # every lane stays in the loop
                else:
                    loop = test.copy() if loop is None else loop & test
                if loop is not None and not loop.any():
                    return
            elif not test:
                return
            if not self.turn(node.body, loop, frame, state):
                return
            loop = self.live(loop, frame)
            if loop is not None and not loop.any():
                return

    # --- names and stores
    def set_name(self, name: str, value, mask, frame: Frame) -> None:
        env = frame.env
        if mask is None:
            env[name] = value
            frame.partial.pop(name, None)
            return
        if name not in env:
            env[name] = value
            frame.partial[name] = mask.copy()
            return
        env[name] = ops.merge(mask, value, env[name], self.chunk.lanes)
        if name in frame.partial:
            frame.partial[name] = frame.partial[name] | mask

    def assign(self, target, value, mask, frame: Frame) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, (SharedRef, LocalRef, GlobalRef)) and mask is not None:
                raise Bail(f"an array assigned in some lanes only (line {target.lineno})")
            self.set_name(target.id, value, mask, frame)
        elif isinstance(target, ast.Tuple):
            if not isinstance(value, tuple) or len(value) != len(target.elts):
                raise Bail(f"an unpacking this tier does not follow (line {target.lineno})")
            for t, v in zip(target.elts, value):
                self.assign(t, v, mask, frame)
        elif isinstance(target, ast.Subscript):
            ref = self.ev(target.value, mask, frame)
            index = self.index(target.slice, mask, frame)
            self.store(ref, index, value, mask, target.lineno)
        else:
            raise Bail(f"an assignment to {type(target).__name__} (line {target.lineno})")

    def augassign(self, node: ast.AugAssign, mask, frame: Frame) -> None:
        op = ops.BINARY.get(type(node.op))
        if op is None:
            raise Bail(f"the operator {type(node.op).__name__} (line {node.lineno})")
        target = node.target
        if isinstance(target, ast.Name):
            old = self.name(target.id, mask, frame, target.lineno)
            self.set_name(target.id, ops.binary(op, old, self.ev(node.value, mask, frame), mask), mask, frame)
            return
        if not isinstance(target, ast.Subscript):
            raise Bail(f"an augmented assignment to {type(target).__name__} (line {node.lineno})")
        ref = self.ev(target.value, mask, frame)
        index = self.index(target.slice, mask, frame)
        old = self.load(ref, index, mask, node.lineno)
        self.store(ref, index, ops.binary(op, old, self.ev(node.value, mask, frame), mask), mask, node.lineno)

    def name(self, name: str, mask, frame: Frame, line: int):
        env = frame.env
        if name in env:
            where = frame.partial.get(name)
            if where is not None and not (where if mask is None else where[mask]).all():
                raise Bail(f"{name} is read in a lane that never set it (line {line})")
            return env[name]
        if name not in self.scope:
            if hasattr(builtins, name):
                return getattr(builtins, name)
            raise Bail(f"the name {name} (line {line})")
        value = self.scope[name]
        if isinstance(value, np.ndarray):
            return GlobalRef(value)
        return value

    # --- memory
    def index(self, node, mask, frame: Frame) -> tuple:
        parts = node.elts if isinstance(node, ast.Tuple) else [node]
        if any(isinstance(p, ast.Slice) for p in parts):
            raise Bail(f"a slice (line {node.lineno})")
        value = self.ev(node, mask, frame)
        values = value if isinstance(value, tuple) else (value,)
        return tuple(ops.int_index(v) for v in values)

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

    # --- expressions
    def ev(self, node, mask, frame: Frame):
        kind = type(node)
        if kind is ast.Name:
            return self.name(node.id, mask, frame, node.lineno)
        if kind is ast.Constant:
            if isinstance(node.value, (bool, int, float)):
                return node.value
            raise Bail(f"the constant {node.value!r} (line {node.lineno})")
        if kind is ast.BinOp:
            op = ops.BINARY.get(type(node.op))
            if op is None:
                raise Bail(f"the operator {type(node.op).__name__} (line {node.lineno})")
            return ops.binary(op, self.ev(node.left, mask, frame), self.ev(node.right, mask, frame), mask)
        if kind is ast.Attribute:
            return self.attribute(node, mask, frame)
        if kind is ast.Subscript:
            ref = self.ev(node.value, mask, frame)
            return self.load(ref, self.index(node.slice, mask, frame), mask, node.lineno)
        if kind is ast.Compare:
            return self.compare(node, mask, frame)
        if kind is ast.BoolOp:
            return self.boolop(node, mask, frame)
        if kind is ast.UnaryOp:
            value = self.ev(node.operand, mask, frame)
            if isinstance(node.op, ast.Not):
                t = ops.truth(value)
                return Weak(~t) if isinstance(t, np.ndarray) else not t
            if isinstance(node.op, ast.USub):
                return ops.negate(value, mask)
            if isinstance(node.op, ast.Invert):
                return ops.invert(value)
            if isinstance(value, Weak) and value.kind == "b" or isinstance(value, bool):
                raise Bail(f"+ on a bool (line {node.lineno})")
            return value
        if kind is ast.IfExp:
            test = ops.truth(self.ev(node.test, mask, frame))
            if not isinstance(test, np.ndarray):
                return self.ev(node.body if test else node.orelse, mask, frame)
            yes = test if mask is None else mask & test
            no = ~test if mask is None else mask & ~test
            if not no.any():
                return self.ev(node.body, yes, frame)
            if not yes.any():
                return self.ev(node.orelse, no, frame)
            a, b = self.ev(node.body, yes, frame), self.ev(node.orelse, no, frame)
            return ops.merge(test, a, b, self.chunk.lanes)
        if kind is ast.Tuple:
            return tuple(self.ev(e, mask, frame) for e in node.elts)
        if kind is ast.Call:
            return self.call(node, mask, frame)
        raise Bail(f"{kind.__name__} (line {getattr(node, 'lineno', 0)})")

    def compare(self, node: ast.Compare, mask, frame: Frame):
        left = self.ev(node.left, mask, frame)
        result = None
        for op_node, right_node in zip(node.ops, node.comparators):
            op = ops.COMPARE.get(type(op_node))
            if op is None:
                raise Bail(f"the comparison {type(op_node).__name__} (line {node.lineno})")
            sub = mask
            if result is not None:
                t = ops.truth(result)
                if not isinstance(t, np.ndarray):
                    if not t:
                        return result
                else:
                    sub = t if mask is None else mask & t
            right = self.ev(right_node, sub, frame)
            this = ops.binary(op, left, right, sub)
            result = this if result is None else _and(result, this)
            left = right
        return result

    def boolop(self, node: ast.BoolOp, mask, frame: Frame):
        is_and = isinstance(node.op, ast.And)
        result = self.ev(node.values[0], mask, frame)
        for value_node in node.values[1:]:
            t = ops.truth(result)
            if not isinstance(t, np.ndarray):
                if t != is_and:
                    return result
                result = self.ev(value_node, mask, frame)
                continue
            _bool_only(result, node.lineno)
            go = t if is_and else ~t
            sub = go if mask is None else mask & go
            if not sub.any():
                continue
            other = self.ev(value_node, sub, frame)
            _bool_only(other, node.lineno)
            other_t = ops.truth(other)
            result = Weak(np.where(go, other_t, t))
        return result

    def attribute(self, node: ast.Attribute, mask, frame: Frame):
        base = self.ev(node.value, mask, frame)
        attr = node.attr
        chunk = self.chunk
        if base is device_api.STATE:
            if attr == "threadIdx":
                return _Dims(chunk.threadIdx)
            if attr == "blockIdx":
                return _Dims(chunk.blockIdx)
            if attr == "blockDim":
                return _Dims(chunk.block)
            if attr == "gridDim":
                return _Dims(chunk.grid)
            if attr == "warpsize":
                return WARP
            if attr == "laneid":
                return Weak(chunk.linear_thread.a % WARP)
            if attr in ("atomic", "shared", "local"):
                return _Namespace(attr)
            raise Bail(f"cuda.{attr} (line {node.lineno})")
        if isinstance(base, _Dims) and attr in ("x", "y", "z"):
            return base.values["xyz".index(attr)]
        if isinstance(base, GlobalRef):
            if attr in ("size", "shape", "ndim"):
                return getattr(base.array, attr)
        if isinstance(base, (SharedRef, LocalRef)) and attr in ("shape", "size", "ndim"):
            return {"shape": base.shape, "size": math.prod(base.shape), "ndim": len(base.shape)}[attr]
        if base is math and attr in _MATH:
            return ("math", attr)
        raise Bail(f"the attribute .{attr} (line {node.lineno})")

    def call(self, node: ast.Call, mask, frame: Frame, statement: bool = False):
        if node.keywords:
            raise Bail(f"a call with keywords (line {node.lineno})")
        func = node.func
        if isinstance(func, ast.Attribute):
            base = self.ev(func.value, mask, frame)
            if base is device_api.STATE:
                return self.cuda_call(func.attr, node, mask, frame, statement)
            if isinstance(base, _Namespace):
                return self.cuda_call(f"{base.name}.{func.attr}", node, mask, frame, statement)
            target = self.attribute(func, mask, frame)
        else:
            target = self.ev(func, mask, frame)
        args = [self.ev(a, mask, frame) for a in node.args]
        if isinstance(target, type) and issubclass(target, np.generic):
            if len(args) != 1:
                raise Bail(f"{target.__name__} with {len(args)} arguments (line {node.lineno})")
            return ops.cast(np.dtype(target), args[0], mask)
        if isinstance(target, tuple) and target[:1] == ("math",):
            return _math(target[1], args, mask, node.lineno)
        if target in _BUILTINS:
            return _builtin(_BUILTINS[target], args, mask, self.chunk.lanes, node.lineno)
        if type(target).__name__ == "Plan":
            return self.device_call(target, args, mask)
        raise Bail(f"a call of {getattr(target, '__name__', type(target).__name__)} (line {node.lineno})")

    def cuda_call(self, name: str, node: ast.Call, mask, frame: Frame, statement: bool):
        line = node.lineno
        if name in ("threadfence", "threadfence_block", "threadfence_system"):
            return None
        if name == "syncthreads":
            self.barrier(mask, frame, line)
            return None
        args = [self.ev(a, mask, frame) for a in node.args]
        if name in ("grid", "gridsize") and len(args) == 1 and args[0] in (1, 2, 3):
            n = int(args[0])
            c = self.chunk
            if name == "gridsize":
                out = tuple(c.grid[k] * c.block[k] for k in range(n))
            else:
                out = tuple(_global_id(c.blockIdx[k], c.block[k], c.threadIdx[k]) for k in range(n))
            return out[0] if n == 1 else out
        if name in ("shared.array", "local.array") and len(args) == 2:
            return self.allocate(name, node, args, mask, line)
        if name in _SHUFFLES or name == "syncwarp":
            return self.warp_collective(name, args, mask, line)
        if name.startswith("atomic.") and statement and len(args) == 3:
            self.atomic(name[len("atomic."):], args, mask, line)
            return None
        raise Bail(f"cuda.{name} here (line {line})")

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

    def barrier(self, mask, frame: Frame, line: int) -> None:
        """``cuda.syncthreads()``: the blocks whose lanes are here end a barrier interval; a block half here bails.

        A block none of whose lanes is here goes on (it returned, or waits at a barrier of its own in
        another branch): its accesses stay in the log, still in its interval.
        """
        if mask is None:
            self.check(self.shared_log)
            return
        rows = mask.reshape(self.chunk.blocks, self.chunk.threads)
        here = rows.any(axis=1)
        if (here & ~rows.all(axis=1)).any():
            raise Bail(f"a barrier some threads of a block do not reach (line {line})")
        self.check(self.shared_log, keep=~here)

    def device_call(self, plan, args, mask):
        node = plan.node
        names = [a.arg for a in node.args.args]
        if len(names) != len(args) or node.args.vararg or node.args.defaults:
            raise Bail(f"{node.name} called with {len(args)} arguments")
        frame = Frame(dict(zip(names, args)), None if mask is None else mask.copy())
        outer = self.scope
        self.scope = plan.scope
        try:
            self.block(node.body, mask, frame)
        except _AllReturned:
            pass
        finally:
            self.scope = outer
        if frame.result is None:
            return None
        covered = frame.result_lanes
        if covered is not None and not (covered if mask is None else covered[mask]).all():
            raise Bail(f"{node.name} returns a value in some lanes only")
        return frame.result


def _global_id(block_idx, size: int, thread_idx):
    """``blockIdx * blockDim + threadIdx`` on one axis: Weak lanes, or a Python int where it is uniform."""
    value = (block_idx.a if isinstance(block_idx, Weak) else block_idx) * size + (
        thread_idx.a if isinstance(thread_idx, Weak) else thread_idx
    )
    return Weak(value) if isinstance(value, np.ndarray) else int(value)


_OWNERS_KEPT = 2  # scratch owner arrays kept between launches (int32, one element per array element)
_REMEMBERED = 24  # entries per memo: each holds lane arrays, and a loop may make fresh ones every iteration


def _remember(memo: dict, key, value) -> None:
    if len(memo) >= _REMEMBERED:
        memo.clear()
    memo[key] = value


def _and(a, b):
    ta, tb = ops.truth(a), ops.truth(b)
    if not isinstance(ta, np.ndarray) and not isinstance(tb, np.ndarray):
        return a if not ta else b
    return Weak(np.logical_and(ta, tb))


def _bool_only(value, line: int) -> None:
    kind = ops.category(value)
    if kind not in (("weak", "b"), ("numpy", np.dtype(bool))):
        raise Bail(f"and/or over values that are not bools, differing between lanes (line {line})")


def _math(name: str, args, mask, line: int):
    if len(args) != 1:
        raise Bail(f"math.{name} with {len(args)} arguments (line {line})")
    (x,) = args
    if not ops.is_lane(x):
        try:
            return getattr(math, name)(x)
        except (ValueError, TypeError, OverflowError) as exc:
            raise Bail(f"math.{name}: {exc} (line {line})") from None
    data = x.a if isinstance(x, Weak) else x
    if isinstance(x, Weak) and x.kind == "b":
        raise Bail(f"math.{name} of a bool (line {line})")
    as_float = data.astype(np.float64)
    if name == "sqrt":
        live = as_float if mask is None else as_float[mask]
        if (live < 0).any():
            raise Bail(f"math.sqrt of a negative number (line {line})")
    return Weak(_MATH[name](as_float))


def _builtin(name: str, args, mask, lanes: int, line: int):
    if not any(ops.is_lane(a) for a in args):
        try:
            return getattr(builtins, name)(*args)
        except (TypeError, ValueError) as exc:
            raise Bail(f"{name}: {exc} (line {line})") from None
    if name == "abs":
        (x,) = args
        if isinstance(x, Weak):
            if x.kind == "b":
                raise Bail(f"abs of a bool (line {line})")
            return Weak(np.abs(x.a))
        return np.abs(x)
    if len(args) != 2:
        raise Bail(f"{name} of {len(args)} values (line {line})")
    a, b = args
    if ops.category(a) != ops.category(b):
        raise Bail(f"{name} of values of different types (line {line})")
    # Python's min(a, b) is b if b < a else a; max(a, b) is b if b > a else a (NaN: the first).
    take_b = ops.truth(ops.binary(ops.COMPARE[ast.Lt if name == "min" else ast.Gt], b, a, mask))
    return ops.merge(take_b, b, a, lanes)


__all__ = ["Chunk", "Frame", "GlobalRef", "Interpreter", "LocalRef", "SharedRef"]
