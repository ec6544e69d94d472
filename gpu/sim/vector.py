"""The vectorised tier: a kernel in a subset it can prove runs a chunk of whole blocks as NumPy array operations.

A launch is cut into chunks of whole blocks (in the per-thread tier's block order). A chunk's
lanes — one per thread — run each statement together: a value is one Python or NumPy number
when it is the same in every lane, otherwise an array with one element per lane
(gpu/sim/vector_ops.py). An ``if`` whose test differs between lanes runs its body for the lanes
where it holds and its ``else`` for the others (a mask); a loop whose trip count differs runs
until no lane is left in it; ``return`` retires lanes; ``cuda.syncthreads()`` needs every live
lane of a block there. Shared arrays have one row per block of the chunk and start poisoned,
local arrays one row per lane.

Why the answers are the per-thread tier's, bit for bit:

- **Types.** Every operation gives what a thread's Python/NumPy operation gives (Weak lanes
  stand for Python numbers); what cannot be matched exactly raises ``Bail``.
- **Order.** The per-thread tier runs thread 0 first; here a statement runs for every lane at
  once. The two agree when no lane reads or writes an element another lane of the chunk writes
  between the same barriers (global memory: in the whole chunk, since the per-thread tier runs
  one block to its end before the next). Every access is logged and checked at each barrier
  and at the end of the chunk; a conflict raises ``Bail``. Float atomics are done by one
  ``np.add.at`` per array and chunk, in lane order — the per-thread order; integer atomics in
  any order, as wrapping integer addition (and ``&``, ``|``, ``^``, min, max) does not depend on it.
  Warp shuffles and votes move values between lanes, not memory: a gather, or a reduction per warp.
- **Faults.** An index out of bounds or negative, a barrier not every lane of a block reaches, a
  division by zero, anything outside the subset: ``Bail``. Then every array the launch wrote is
  put back as it was and the per-thread tier runs the launch, so a fault is raised by the
  per-thread tier itself, naming the thread and the line in its own words.

The engine asks :func:`try_launch` first (gpu/sim/kernel.py); it returns False, having changed
nothing, when the per-thread tier must run the launch. :func:`last_tier` says which tier ran.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import os
import threading
from dataclasses import dataclass

import numpy as np

from gpu.sim import device as device_api
from gpu.sim import engine, loops
from gpu.sim.rewrite import SYNC_NAMES, function_node
from gpu.sim.vector_eval import Chunk, Interpreter
from gpu.sim.vector_ops import Bail, PastLoopLimit

TIER_ENV = "KERNEL_LAB_SIM_TIER"  # "thread": every launch per thread; "auto" (default): vectorised where proven
CHUNK_LANES = 1 << 18  # lanes (threads) a chunk runs at once: whole blocks, up to this many
LOCAL_CHUNK_LANES = 1 << 14  # fewer where the kernel has local arrays (one row of each per lane)
GIVE_UP_AFTER = 3  # launches in a row that fell back: stop trying this kernel

_TIER_LOCK = threading.Lock()
# Scratch arrays of the access check, by size: all -1 between checks, so kept from launch to launch
# (allocating 10^7 of them per launch cost more than the launch). Dropped after an unforeseen error.
_OWNERS: dict[int, np.ndarray] = {}


@dataclass(frozen=True)
class Tier:
    """Which tier ran a launch: ``"vector"`` or ``"thread"``, and why not vector (empty when vector)."""

    name: str
    reason: str = ""

    def __str__(self) -> str:
        return self.name if not self.reason else f"{self.name} ({self.reason})"


_last: list[Tier] = [Tier("thread", "no launch yet")]


def _read_mode() -> str:
    raw = os.environ.get(TIER_ENV, "").strip() or "auto"
    if raw not in ("auto", "thread"):
        raise ValueError(f"{TIER_ENV} must be 'auto' or 'thread', not {raw!r}")
    return raw


_mode: list[str] = [_read_mode()]


def set_tier(mode: str) -> None:
    """``"auto"``: vectorise what the tier proves; ``"thread"``: every launch per thread (for comparisons)."""
    if mode not in ("auto", "thread"):
        raise ValueError(f"the simulator's tier is 'auto' or 'thread', not {mode!r}")
    _mode[0] = mode


@contextlib.contextmanager
def per_thread():
    """Every launch inside runs per thread (what watches each thread's lines, as coverage does, needs that)."""
    previous = _mode[0]
    _mode[0] = "thread"
    try:
        yield
    finally:
        _mode[0] = previous


def tier_mode() -> str:
    return _mode[0]


def last_tier() -> Tier:
    """The tier of the latest launch in this process."""
    return _last[0]


def vectorising() -> bool:
    """Whether launches now try the vectorised tier at all (not with KERNEL_LAB_SIM_TIER=thread or a shuffle)."""
    return _mode[0] == "auto" and engine.launch_seed() is None


def runs_vectorised(kernel) -> bool:
    """Whether a launch of ``kernel`` now would go to the vectorised tier (its launches may still fall back)."""
    return vectorising() and not plan_for(kernel).reason


def _report(kernel, tier: Tier) -> None:
    with _TIER_LOCK:
        _last[0] = tier
    kernel.last_tier = tier


# --- what the tier can take: checked once per kernel, before any launch


_ALLOWED = (
    ast.FunctionDef, ast.arguments, ast.arg, ast.Assign, ast.AugAssign, ast.Expr, ast.If, ast.For, ast.While,
    ast.Return, ast.Pass, ast.Break, ast.Continue, ast.Name, ast.Load, ast.Store, ast.Constant, ast.Attribute,
    ast.Subscript, ast.Tuple, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call, ast.keyword,
    ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd, ast.Invert, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv,
    ast.Mod, ast.BitAnd, ast.BitOr, ast.BitXor, ast.RShift, ast.LShift, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq,
    ast.NotEq,
)


@dataclass(eq=False)
class Plan:
    """A kernel as the vectorised tier takes it, or the reason it does not (``reason`` not empty)."""

    node: ast.FunctionDef | None
    scope: dict
    reason: str = ""
    has_local: bool = False
    fallbacks: int = 0


def _subset_reason(func: ast.FunctionDef, cuda_names: frozenset[str]) -> str:
    """Why ``func`` is outside the subset ("" when it is inside)."""
    for node in ast.walk(func):
        if isinstance(node, ast.FunctionDef) and node is not func:
            return f"a nested function (line {node.lineno})"
        if not isinstance(node, _ALLOWED):
            return f"{type(node).__name__} (line {getattr(node, 'lineno', func.lineno)})"
        if isinstance(node, (ast.For, ast.While)) and node.orelse:
            return f"a loop with an else (line {node.lineno})"
        if isinstance(node, ast.For) and not (isinstance(node.target, ast.Name) and _over_range_or_tuple(node.iter)):
            return f"a for loop that is not over range(...) or a tuple (line {node.lineno})"
        if isinstance(node, ast.Call):
            name = _cuda_call(node.func, cuda_names)
            if name is not None and name in SYNC_NAMES and name not in _VECTOR_SYNC:
                return f"cuda.{name} (line {node.lineno})"
            if name is not None and name.startswith("atomic.") and not _is_statement_call(node, func):
                return f"the value of cuda.{name} is used (line {node.lineno})"
    return ""


# The sync points the tier takes: block barriers (and their votes), and shuffles and votes among whole warps with
# the full mask.
_VECTOR_SYNC = frozenset({
    "syncthreads", "syncthreads_count", "syncthreads_and", "syncthreads_or", "syncwarp", "shfl_sync", "shfl_up_sync",
    "shfl_down_sync", "shfl_xor_sync", "all_sync", "any_sync", "eq_sync", "ballot_sync",
})


def _over_range_or_tuple(node: ast.expr) -> bool:
    if isinstance(node, ast.Tuple):
        return True
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"
        and not node.keywords and 1 <= len(node.args) <= 3
    )


def _is_statement_call(call: ast.Call, func: ast.FunctionDef) -> bool:
    return any(isinstance(n, ast.Expr) and n.value is call for n in ast.walk(func))


def _cuda_call(node, cuda_names) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in cuda_names and parts:
        return ".".join(reversed(parts))
    return None


def _scope_of(kernel, used: set[str]) -> tuple[dict, dict]:
    """(the names as the per-thread tier's code sees them, the names as the kernel's module defines them).

    The first is the scope gpu/sim/kernel.py compiled the kernel in at its first launch (``cuda``
    is the device API, Numba's dtypes are NumPy's): the two tiers read the same globals. A global
    array the kernel reads is frozen here, read-only (Numba makes it a constant). The second still
    holds device functions as the kernel objects they are, to be planned in turn.
    """
    fn = kernel.py_func
    scope = dict(kernel.compile().function.__globals__)
    defined = dict(fn.__globals__)
    if fn.__closure__:
        defined.update(zip(fn.__code__.co_freevars, (cell.cell_contents for cell in fn.__closure__)))
    for name in used:
        value = scope.get(name)
        if isinstance(value, np.ndarray):
            frozen = value.copy()
            frozen.flags.writeable = False
            scope[name] = frozen
    return scope, defined


def plan_for(kernel) -> Plan:
    """The kernel's plan, built once and kept on the kernel."""
    plan = getattr(kernel, "_vector_plan", None)
    if plan is None:
        plan = _build_plan(kernel, set())
        kernel._vector_plan = plan
    return plan


def _build_plan(kernel, active: set) -> Plan:
    fn = kernel.py_func
    try:
        node = function_node(inspect.getsource(fn), fn.__name__, fn.__code__.co_firstlineno)
    except (OSError, TypeError, ValueError, SyntaxError) as exc:
        return Plan(None, {}, reason=f"its source cannot be read ({exc})")
    used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    try:
        scope, defined = _scope_of(kernel, used)
    except Exception as exc:  # the per-thread tier's compile says what is wrong, in its own words
        return Plan(None, {}, reason=f"it does not compile ({type(exc).__name__})")
    cuda_names = frozenset(n for n in used if scope.get(n) is device_api.STATE)
    reason = _subset_reason(node, cuda_names)
    if reason:
        return Plan(None, {}, reason=reason)
    has_local = False
    kernel_type = type(kernel)  # SimKernel (gpu/sim/kernel.py dispatches here, so this module cannot import it)
    for name in used:
        value = defined.get(name)
        if value is not None and (isinstance(value, kernel_type) or type(value).__name__ == "FakeCUDAKernel"):
            callee = value if isinstance(value, kernel_type) else kernel_type(value.py_func, device=True)
            if not callee._device or id(callee) in active:
                return Plan(None, {}, reason=f"{name} is a kernel or recursive")
            sub = _build_plan(callee, active | {id(kernel)})
            if sub.reason:
                return Plan(None, {}, reason=f"device function {name}: {sub.reason}")
            scope[name] = sub
            has_local = has_local or sub.has_local
    has_local = has_local or any(
        isinstance(n, ast.Call) and _cuda_call(n.func, cuda_names) == "local.array" for n in ast.walk(node)
    )
    return Plan(node, scope, has_local=has_local)


# --- a launch


def try_launch(kernel, grid, block, args: tuple) -> bool:
    """Run the launch in the vectorised tier if it is in the subset; False (nothing changed) if not."""
    if _mode[0] != "auto":
        _report(kernel, Tier("thread", f"{TIER_ENV} is {_mode[0]!r}"))
        return False
    if engine.launch_seed() is not None:
        _report(kernel, Tier("thread", "threads run in a shuffled order"))
        return False
    plan = plan_for(kernel)
    if plan.reason:
        _report(kernel, Tier("thread", plan.reason))
        return False
    try:
        gx, gy, gz = engine.dims(grid, "grid")
        bx, by, bz = engine.dims(block, "block")
    except Exception:
        _report(kernel, Tier("thread", "the launch geometry is refused"))
        return False
    values = tuple(engine.kernel_argument(a) for a in args)
    why = _argument_reason(values)
    if why:
        _report(kernel, Tier("thread", why))
        return False
    saved: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    with engine._LAUNCH_LOCK, np.errstate(all="ignore"):
        loops.start_counting(values)  # a loop past either limit bails: the thread tier faults
        try:
            _run_chunks(plan, (gx, gy, gz), (bx, by, bz), values, saved)
        except Bail as bail:
            _restore(saved)
            return _fell_back(kernel, plan, bail.why, final=isinstance(bail, PastLoopLimit))
        except Exception as exc:  # anything unforeseen: the per-thread tier decides
            _OWNERS.clear()
            _restore(saved)
            return _fell_back(kernel, plan, f"{type(exc).__name__}: {exc}")
    plan.fallbacks = 0
    _report(kernel, Tier("vector"))
    return True


def _fell_back(kernel, plan: Plan, why: str, final: bool = False) -> bool:
    """The launch runs per thread; after ``GIVE_UP_AFTER`` in a row (or one ``final`` reason), every later one too."""
    plan.fallbacks += 1
    if final:
        plan.reason = why
    elif plan.fallbacks >= GIVE_UP_AFTER:
        plan.reason = f"fell back {GIVE_UP_AFTER} launches in a row, last: {why}"
    _report(kernel, Tier("thread", why))
    return False


def _argument_reason(values: tuple) -> str:
    arrays = [v for v in values if isinstance(v, np.ndarray)]
    for v in values:
        if not isinstance(v, (np.ndarray, np.generic, int, float, bool)):
            return f"an argument of type {type(v).__name__}"
    for k, a in enumerate(arrays):
        if a.dtype.fields is not None or a.dtype.kind not in "biuf" or a.dtype == np.float16:
            return f"an array argument of dtype {a.dtype}"  # float16: not proven to round as a thread's does
        if not a.flags.c_contiguous:
            return "an array argument that is not C-contiguous"
        for b in arrays[k + 1:]:
            if np.may_share_memory(a, b):
                return "two array arguments share memory"
    return ""


def _restore(saved: dict) -> None:
    for array, copy in saved.values():
        array[...] = copy


def _run_chunks(plan: Plan, grid, block, values: tuple, saved: dict) -> None:
    threads = block[0] * block[1] * block[2]
    blocks = grid[0] * grid[1] * grid[2]
    most = LOCAL_CHUNK_LANES if plan.has_local else CHUNK_LANES
    per_chunk = max(1, most // threads)
    for first in range(0, blocks, per_chunk):
        chunk = Chunk(grid, block, first, min(blocks, first + per_chunk))
        Interpreter(chunk, saved, _OWNERS).run(plan, values)


__all__ = [
    "TIER_ENV", "Plan", "Tier", "last_tier", "per_thread", "plan_for", "runs_vectorised", "set_tier", "tier_mode",
    "try_launch", "vectorising",
]
