"""``jit`` and the kernel object: what ``@cuda.jit`` returns when the lab's simulator runs kernels.

The kernel's source is read (``inspect.getsource``: a submission's source is put in
``linecache`` by its loader), rewritten (gpu/sim/rewrite.py) and exec'd once, at the first
launch, in a copy of the module's globals where ``cuda`` is the simulator's device API,
Numba's dtypes are NumPy's and device functions are their rewritten selves. Globals are
read at that first launch and then fixed, as Numba fixes them at compile time.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import threading
import types as pytypes
from dataclasses import dataclass

import numpy as np

from gpu.sim import arithmetic, engine, loops, signature, vector
from gpu.sim import device as device_api
from gpu.sim.errors import KernelFault
from gpu.sim.rewrite import (
    BLOCK,
    DIV,
    ENDLESS,
    FLOORDIV,
    INDEX,
    INT,
    MOD,
    NEG,
    POW,
    RANGE,
    SHARED,
    SHL,
    SHR,
    SPENT,
    STORED,
    TURNS,
    WITHIN,
    WRAP,
    RewriteRefused,
    function_node,
    grid_syncs,
    rewrite,
)

JIT_OPTIONS = frozenset(
    {
        "device",
        "cache",
        "fastmath",
        "inline",
        "debug",
        "opt",
        "lineinfo",
        "max_registers",
        "link",
        "extensions",
        "forceinline",
        "boundscheck",
    }
)


@dataclass(frozen=True)
class Compiled:
    function: object
    is_generator: bool
    codes: frozenset  # every code object of this kernel and its device functions (to find the line of an error)
    block: object = None  # the whole-block loop (gpu/sim/rewrite.py: _block_loop), or None
    cooperative: bool = False  # it (or a device function it calls) syncs the grid: every block runs up to the sync


def _is_cuda_module(value) -> bool:
    if value is MODULE_SENTINEL[0]:
        return True
    return isinstance(value, pytypes.ModuleType) and value.__name__ in ("numba.cuda", "numba_cuda.numba.cuda")


MODULE_SENTINEL: list = [None]  # the simulator's host module (gpu.sim.MODULE), set when it is built

_COMPILE_LOCK = threading.RLock()


def _numpy_type(value):
    """Numba's ``float32`` and friends -> NumPy's (callable and usable as a dtype); else None."""
    try:
        from numba.core import types as nbtypes
    except ImportError:  # pragma: no cover
        return None
    if isinstance(value, (nbtypes.Integer, nbtypes.Float, nbtypes.Boolean)):
        return np.dtype(str(value) if not isinstance(value, nbtypes.Boolean) else "bool").type
    return None


class SimKernel:
    """A kernel (or a device function, ``device=True``) for the lab's simulator."""

    def __init__(self, fn, device: bool = False, **options):
        unknown = set(options) - JIT_OPTIONS
        if unknown:
            raise TypeError(f"cuda.jit got unexpected option(s) {', '.join(sorted(unknown))}")
        self.py_func = fn
        self.fn = fn
        self._device = bool(device)
        self.options = options
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__module__ = getattr(fn, "__module__", None) or __name__
        self.__wrapped__ = fn
        self._compiled: Compiled | None = None
        self.extensions: list = []

    # --- the numba-cuda dispatcher surface the lab uses
    def __getitem__(self, configuration):
        if not isinstance(configuration, tuple) or not 2 <= len(configuration) <= 4:
            raise KernelFault("launch", "launch a kernel as kernel[blocks, threads_per_block](arguments), or "
                              "kernel[blocks, threads_per_block, stream, dynamic_shared_bytes](arguments)")
        shared = configuration[3] if len(configuration) == 4 else 0
        if isinstance(shared, bool) or not isinstance(shared, (int, np.integer)) or shared < 0:
            raise KernelFault("launch", f"a launch's dynamic shared memory is a whole number of bytes, not {shared!r}")
        return _Launch(self, configuration[0], configuration[1], int(shared))

    def __call__(self, *args):
        if self._device:
            compiled = self.compile()
            if compiled.is_generator:
                raise KernelFault("unsupported", f"{self.__name__} synchronises threads; call it from a kernel")
            return compiled.function(*args)
        raise KernelFault("launch", f"{self.__name__} is a kernel: launch it as {self.__name__}[blocks, threads](...)")

    @property
    def overloads(self) -> dict:
        """Numba's compiled overloads by signature; here one for any signature (the simulator types nothing)."""
        return _Overloads({"simulated": _Overload()})

    def specialize(self, *args):
        return self

    def forall(self, ntasks: int, tpb: int = 0, stream=0, sharedmem=0):
        threads = tpb or 128
        return self[(int(ntasks) + threads - 1) // threads, threads]

    def __repr__(self) -> str:
        return f"<simulated {'device function' if self._device else 'kernel'} {self.__name__}>"

    def record(self, grid, block, args, recorder, names=None, blocks=None) -> None:
        """``self[grid, block](*args)`` with every memory access, barrier and warp collective told to ``recorder``.

        ``recorder`` follows ``gpu.sim.recording.Recorder``; ``names`` name the arguments (default:
        the kernel's parameters); ``blocks`` (linear ids) are the only blocks run (default: all).
        Out-of-bounds accesses are recorded, not raised; any other fault raises as in a plain launch.
        """
        if self._device:
            raise KernelFault("launch", f"{self.__name__} is a device function: call it from a kernel")
        from gpu.sim.recording import hooks_for

        compiled = self.compile()
        if names is None:
            code = self.py_func.__code__
            names = code.co_varnames[: code.co_argcount]
        hooks = hooks_for(recorder, compiled.codes, device_api.STATE)
        engine.launch(
            compiled.function,
            compiled.is_generator,
            compiled.codes,
            grid,
            block,
            hooks.wrap_args(tuple(engine.kernel_argument(a) for a in args), list(names)),
            seed=engine.launch_seed(),
            block_function=compiled.block,
            hooks=hooks,
            only=None if blocks is None else frozenset(int(b) for b in blocks),
            cooperative=compiled.cooperative,
        )

    # --- compilation: rewrite once
    def compile(self, _active: frozenset = frozenset()) -> Compiled:
        if self._compiled is not None:
            return self._compiled
        with _COMPILE_LOCK:
            if self._compiled is None:
                self._compiled = _compile(self, _active | {id(self)})
        return self._compiled


COOPERATIVE_MAX_THREADS = 1 << 20  # a grid that syncs keeps every thread's generator alive until the last sync


class _Overload:
    """What ``kernel.overloads[signature]`` gives: the launch limits numba-cuda's compiled kernel reports."""

    def max_cooperative_grid_blocks(self, blockdim) -> int:
        threads = 1
        for d in blockdim if isinstance(blockdim, (tuple, list)) else (blockdim,):
            threads *= int(d)
        return max(1, COOPERATIVE_MAX_THREADS // max(1, threads))


class _Overloads(dict):
    def __missing__(self, key):
        return self["simulated"]


class _Launch:
    """``kernel[grid, block]``: a configured launch (a new object: the kernel is never mutated)."""

    def __init__(self, kernel: SimKernel, grid, block, shared_bytes: int = 0):
        self.kernel, self.grid, self.block, self.shared_bytes = kernel, grid, block, shared_bytes

    def __call__(self, *args):
        kernel = self.kernel
        if kernel._device:
            raise KernelFault("launch", f"{kernel.__name__} is a device function: call it from a kernel")
        compiled = kernel.compile()
        # The vectorised tier, where it proves the kernel; dynamic shared memory and grid syncs run per thread.
        per_thread_only = bool(self.shared_bytes) or compiled.cooperative
        if not per_thread_only and vector.try_launch(kernel, self.grid, self.block, args):
            return
        engine.launch(
            compiled.function,
            compiled.is_generator,
            compiled.codes,
            self.grid,
            self.block,
            tuple(engine.kernel_argument(a) for a in args),
            seed=engine.launch_seed(),
            block_function=compiled.block,
            dynamic_shared_bytes=self.shared_bytes,
            cooperative=compiled.cooperative,
        )


def _compile(kernel: SimKernel, active: frozenset) -> Compiled:
    fn = kernel.py_func
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError) as exc:
        raise KernelFault("unsupported", f"the simulator cannot read the source of {kernel.__name__} ({exc})") from None
    code = fn.__code__
    scope = dict(fn.__globals__)
    if fn.__closure__:
        scope.update(zip(code.co_freevars, (cell.cell_contents for cell in fn.__closure__)))
    cuda_names = set()
    sync_devices = set()
    kernels = set()  # kernels (not device functions) the source names: using one is a launch inside a kernel
    cooperative = False
    codes: set = set()
    used = global_names(fn) | set(code.co_freevars)  # a kernel built by a function closes over its names
    for name, value in list(scope.items()):
        if name not in used:
            continue
        if _is_cuda_module(value):
            cuda_names.add(name)
            scope[name] = device_api.STATE
        elif isinstance(value, SimKernel) or _is_numba_device(value):
            device = value if isinstance(value, SimKernel) else SimKernel(value.py_func, device=True)
            if not device._device:
                kernels.add(name)
                continue
            if id(device) in active:
                raise KernelFault(
                    "unsupported",
                    f"{device.__name__} calls itself (directly or through another device "
                    "function); recursion is not supported",
                )
            compiled = device.compile(active)
            scope[name] = compiled.function
            codes |= compiled.codes
            cooperative = cooperative or compiled.cooperative
            if compiled.is_generator:
                sync_devices.add(name)
        elif type(value).__name__ == "FakeCUDAKernel":
            kernels.add(name)
        elif isinstance(value, np.ndarray):
            # Numba compiles a global array in as a constant: later changes to it are not seen, and it is read-only
            frozen = value.copy()
            frozen.setflags(write=False)
            scope[name] = frozen
        else:
            as_numpy = _numpy_type(value)
            if as_numpy is not None:
                scope[name] = as_numpy
    node = function_node(source, fn.__name__, code.co_firstlineno)
    _refuse_unmodelled(kernel, node, frozenset(cuda_names))
    cuda_frozen, sync_frozen = frozenset(cuda_names), frozenset(sync_devices)
    cooperative = cooperative or grid_syncs(node, cuda_frozen)  # before the rewrite replaces the sync calls
    try:
        rewritten = rewrite(node, code.co_filename, cuda_frozen, sync_frozen, frozenset(kernels))
    except RewriteRefused as refused:
        raise KernelFault("unsupported", f"{kernel.__name__}: {refused.sentence}", line=refused.line) from None
    # The generated code's names contain "$", which no source can spell, and are bound here, after the
    # learner's globals: nothing a submission defines can take their place.
    scope[NEG] = device_api.negative_index
    scope[INDEX] = device_api.whole_index
    scope[SHARED] = device_api.shared_array
    scope[RANGE] = builtins.range
    scope[TURNS] = loops.turns
    scope[ENDLESS] = loops.endless
    scope[SPENT] = loops.spent
    scope[WITHIN] = loops.within
    # arithmetic as a compiled kernel does it: int64 products and shifts, Numba's division by zero
    scope.update({INT: int, WRAP: arithmetic.wrap, POW: arithmetic.power, SHL: arithmetic.shl, SHR: arithmetic.shr,
                  DIV: arithmetic.truediv, FLOORDIV: arithmetic.floordiv, MOD: arithmetic.mod,
                  STORED: arithmetic.stored})
    exec(rewritten.code, scope)
    function = scope[rewritten.name]
    codes |= _all_codes(function.__code__)
    block = scope.get(BLOCK) if rewritten.block_name and not kernel._device else None
    if block is not None:
        codes |= _all_codes(block.__code__)
    return Compiled(function=function, is_generator=rewritten.is_generator, codes=frozenset(codes), block=block,
                    cooperative=cooperative)


def _refuse_unmodelled(kernel: SimKernel, node: ast.FunctionDef, cuda_names: frozenset) -> None:
    """Refuse, before anything runs, a ``cuda.*`` API the simulator does not model: one sentence naming it."""
    nodes = [n for statement in node.body for n in ast.walk(statement)]  # the body: not the @cuda.jit decorator
    inner = {id(n.value) for n in nodes if isinstance(n, ast.Attribute)}
    for sub in nodes:
        if not isinstance(sub, ast.Attribute) or id(sub) in inner:  # the whole path once, from its outermost node
            continue
        parts: list[str] = []
        root: ast.expr = sub
        while isinstance(root, ast.Attribute):
            parts.append(root.attr)
            root = root.value
        if not (isinstance(root, ast.Name) and root.id in cuda_names):
            continue
        missing = device_api.unmodelled(parts[::-1])
        if missing is not None:
            raise KernelFault(
                "unsupported",
                f"{kernel.__name__} uses {missing}, which the lab's simulator does not model (docs/simulator.md lists "
                "what it does); run it on a GPU, or under numba-cuda's simulator with KERNEL_LAB_SIMULATOR=numba",
                line=getattr(sub, "lineno", None),
            )


def global_names(fn) -> set[str]:
    """The names ``fn`` (and any function nested in it) reads as globals: the only globals to rebind."""
    return set().union(*(c.co_names for c in _all_codes(fn.__code__)))


def _all_codes(code) -> set:
    out = {code}
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            out |= _all_codes(const)
    return out


def _is_numba_type(value) -> bool:
    return type(value).__module__.split(".")[0] == "numba"


def _is_numba_device(value) -> bool:
    return type(value).__name__ == "FakeCUDAKernel" and getattr(value, "_device", False)


def jit(func_or_sig=None, device: bool = False, **options):
    """``@cuda.jit``, ``@cuda.jit(device=True)``, ``@cuda.jit("void(float32[:])")``, ``@cuda.jit(cache=...)``.

    A signature string is Python to numba-cuda (it ``eval()``s it); here it is read by the lab's own
    grammar (gpu/sim/signature.py), never evaluated, and only checked: the simulator types nothing.
    """
    if callable(func_or_sig) and not isinstance(func_or_sig, (str, list, tuple)) and not _is_numba_type(func_or_sig):
        return SimKernel(func_or_sig, device=device, **options)
    if func_or_sig is not None:
        signature.accept(func_or_sig)

    def decorate(fn):
        return SimKernel(fn, device=device, **options)

    return decorate


__all__ = ["SimKernel", "jit"]
