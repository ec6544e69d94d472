"""``jit`` and the kernel object: what ``@cuda.jit`` returns when the lab's simulator runs kernels.

The kernel's source is read (``inspect.getsource``: a submission's source is put in
``linecache`` by its loader), rewritten (gpu/sim/rewrite.py) and exec'd once, at the first
launch, in a copy of the module's globals where ``cuda`` is the simulator's device API,
Numba's dtypes are NumPy's and device functions are their rewritten selves. Globals are
read at that first launch and then fixed, as Numba fixes them at compile time.
"""

from __future__ import annotations

import inspect
import threading
import types as pytypes
from dataclasses import dataclass

import numpy as np

from gpu.sim import device as device_api
from gpu.sim import engine, vector
from gpu.sim.errors import KernelFault
from gpu.sim.rewrite import function_node, rewrite

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
        if not isinstance(configuration, tuple) or len(configuration) < 2:
            raise KernelFault("launch", "launch a kernel as kernel[blocks, threads_per_block](arguments)")
        return _Launch(self, configuration[0], configuration[1])

    def __call__(self, *args):
        if self._device:
            compiled = self.compile()
            if compiled.is_generator:
                raise KernelFault("unsupported", f"{self.__name__} synchronises threads; call it from a kernel")
            return compiled.function(*args)
        raise KernelFault("launch", f"{self.__name__} is a kernel: launch it as {self.__name__}[blocks, threads](...)")

    @property
    def overloads(self) -> dict:
        return {}

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
        )

    # --- compilation: rewrite once
    def compile(self, _active: frozenset = frozenset()) -> Compiled:
        if self._compiled is not None:
            return self._compiled
        with _COMPILE_LOCK:
            if self._compiled is None:
                self._compiled = _compile(self, _active | {id(self)})
        return self._compiled


class _Launch:
    """``kernel[grid, block]``: a configured launch (a new object: the kernel is never mutated)."""

    def __init__(self, kernel: SimKernel, grid, block):
        self.kernel, self.grid, self.block = kernel, grid, block

    def __call__(self, *args):
        kernel = self.kernel
        if kernel._device:
            raise KernelFault("launch", f"{kernel.__name__} is a device function: call it from a kernel")
        compiled = kernel.compile()
        if vector.try_launch(kernel, self.grid, self.block, args):  # the vectorised tier, where it proves the kernel
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
    codes: set = set()
    used = global_names(fn)
    for name, value in list(scope.items()):
        if name not in used:
            continue
        if _is_cuda_module(value):
            cuda_names.add(name)
            scope[name] = device_api.STATE
        elif isinstance(value, SimKernel) or _is_numba_device(value):
            device = value if isinstance(value, SimKernel) else SimKernel(value.py_func, device=True)
            if not device._device:
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
            if compiled.is_generator:
                sync_devices.add(name)
        else:
            as_numpy = _numpy_type(value)
            if as_numpy is not None:
                scope[name] = as_numpy
    node = function_node(source, fn.__name__, code.co_firstlineno)
    cuda_frozen, sync_frozen = frozenset(cuda_names), frozenset(sync_devices)
    rewritten = rewrite(node, code.co_filename, cuda_frozen, sync_frozen)
    scope["_neg"] = device_api.negative_index
    scope["_shared"] = device_api.shared_array
    exec(rewritten.code, scope)
    function = scope[rewritten.name]
    codes |= _all_codes(function.__code__)
    block = scope.get(rewritten.block_name) if rewritten.block_name and not kernel._device else None
    if block is not None:
        codes |= _all_codes(block.__code__)
    return Compiled(function=function, is_generator=rewritten.is_generator, codes=frozenset(codes), block=block)


def global_names(fn) -> set[str]:
    """The names ``fn`` (and any function nested in it) reads as globals: the only globals to rebind."""
    return set().union(*(c.co_names for c in _all_codes(fn.__code__)))


def _all_codes(code) -> set:
    out = {code}
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            out |= _all_codes(const)
    return out


def _is_numba_device(value) -> bool:
    return type(value).__name__ == "FakeCUDAKernel" and getattr(value, "_device", False)


def jit(func_or_sig=None, device: bool = False, **options):
    """``@cuda.jit``, ``@cuda.jit(device=True)``, ``@cuda.jit(cache=...)``: signatures are not taken (see below)."""
    if callable(func_or_sig) and not isinstance(func_or_sig, (str, list, tuple)):
        return SimKernel(func_or_sig, device=device, **options)
    if func_or_sig is not None:
        # A signature string is Python to numba-cuda (it eval()s it); the simulator types
        # nothing, so it takes none: the compile gate checks the real signatures.
        raise TypeError("the lab's simulator takes no signature in @cuda.jit; the kernel is typed at launch on a GPU")

    def decorate(fn):
        return SimKernel(fn, device=device, **options)

    return decorate


__all__ = ["SimKernel", "jit"]
