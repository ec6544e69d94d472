"""The vectorised tier's interpreter: a kernel's statements run once for every lane of a chunk.

See gpu/sim/vector.py for the model and why its answers are the per-thread tier's. Here
``Interpreter`` walks the kernel's syntax tree with a mask of active lanes (``None``: every lane):
statements, control flow (masks for ``if``, loops, ``break``/``continue``/``return``), expressions
and calls. Memory — the chunk's lanes, arrays, atomics, shuffles and the access check — is
gpu/sim/vector_memory.py.
"""

from __future__ import annotations

import ast
import builtins
import math
from collections.abc import Iterable

import numpy as np

from gpu.sim import device as device_api
from gpu.sim import vector_ops as ops
from gpu.sim.vector_memory import SHUFFLES, WARP, WARP_VOTES, Chunk, GlobalRef, LocalRef, Memory, SharedRef
from gpu.sim.vector_ops import Bail, PastLoopLimit, Weak

_BLOCK_VOTES = ("syncthreads_count", "syncthreads_and", "syncthreads_or")


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
    """The lanes that left a running loop (``break``), those that left this turn of it (``continue``), its turns."""

    __slots__ = ("broken", "skipped", "turns")

    def __init__(self):
        self.broken = None
        self.skipped = None
        self.turns = 0


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


class Interpreter(Memory):
    """Runs a kernel's plan over one chunk (``run``); raises Bail where the chunk leaves the subset."""

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
            for n, target in enumerate(node.targets):  # a = b = v: each name its own copy, left to right as Python
                self.assign(target, value.copy() if n and isinstance(value, np.ndarray) else value, mask, frame)
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
        """One turn of a loop's body; False when every lane in it broke out at once.

        A lane only ever leaves a running loop, so the loop's turns here are its longest lane's: past the launch's
        loop limit, the per-thread tier runs the launch and faults in the first thread that gets there. Each lane in
        the turn is one thread's turn of the launch's work (the per-thread tier counts the same turns); past the work
        limit, the per-thread tier runs the launch too."""
        state.turns += 1
        work = device_api.STATE
        if state.turns > work.loop_turns:
            limit = work.loop_turns
            raise PastLoopLimit(f"a loop past the simulator's limit of {limit:,} turns (body at line {body[0].lineno})")
        work.work_left -= self.chunk.lanes if mask is None else int(np.count_nonzero(mask))
        if work.work_left < 0:
            raise PastLoopLimit(f"loops past the simulator's work limit of {work.work_turns:,} turns in all (body at "
                                f"line {body[0].lineno})")
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
            result = this if result is None else ops.both(result, this)
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
            ops.bool_only(result, node.lineno)
            go = t if is_and else ~t
            sub = go if mask is None else mask & go
            if not sub.any():
                continue
            other = self.ev(value_node, sub, frame)
            ops.bool_only(other, node.lineno)
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
        if base is math and attr in ops.MATH:
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
            return ops.math_call(target[1], args, mask, node.lineno)
        if target in ops.BUILTINS:
            return ops.builtin_call(ops.BUILTINS[target], args, mask, self.chunk.lanes, node.lineno)
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
        if name in _BLOCK_VOTES and len(args) == 1:
            self.barrier(mask, frame, line)
            return self.block_vote(name, args[0], mask)
        if name in ("grid", "gridsize") and len(args) == 1 and args[0] in (1, 2, 3):
            n = int(args[0])
            c = self.chunk
            if name == "gridsize":
                out = tuple(c.grid[k] * c.block[k] for k in range(n))
            else:
                out = tuple(ops.global_id(c.blockIdx[k], c.block[k], c.threadIdx[k]) for k in range(n))
            return out[0] if n == 1 else out
        if name in ("shared.array", "local.array") and len(args) == 2:
            return self.allocate(name, node, args, mask, line)
        if name in SHUFFLES or name in WARP_VOTES or name == "syncwarp":
            return self.warp_collective(name, args, mask, line)
        if name.startswith("atomic.") and statement and len(args) == 3:
            self.atomic(name[len("atomic."):], args, mask, line)
            return None
        raise Bail(f"cuda.{name} here (line {line})")


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

    def block_vote(self, name: str, predicate, mask):
        """``syncthreads_count``, ``_and``, ``_or``: one Python int per block, from every thread's predicate."""
        truth = ops.truth(predicate)
        lanes = np.broadcast_to(truth, (self.chunk.lanes,)) if not isinstance(truth, np.ndarray) else truth
        if mask is not None:
            lanes = lanes & mask  # a block not here gets a number no lane of it reads
        count = lanes.reshape(self.chunk.blocks, self.chunk.threads).sum(axis=1)
        if name == "syncthreads_and":
            count = (count == self.chunk.threads).astype(np.int64)
        elif name == "syncthreads_or":
            count = (count > 0).astype(np.int64)
        return Weak(count.astype(np.int64)[self.chunk.block_row])

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


__all__ = ["Chunk", "Frame", "Interpreter"]
