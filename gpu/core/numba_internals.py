"""Everything the engine's prepared launch reads inside numba-cuda, named once and pinned.

The prepared launch (``gpu.core.launch_path``) does once what numba-cuda's own launch does
on every call, and then hands the driver only the launch. To build exactly what numba-cuda
would pass it uses these pieces of numba-cuda 0.30.4, none of them public API:

- ``CUDADispatcher.compile(argtypes)`` with ``typeof_pyval``: the compiled kernel (a
  ``_Kernel``) for the arguments' types, as ``dispatcher.call`` finds it;
- ``_Kernel._prepare_args(ty, val, stream, retr, kernelargs)``: numba-cuda's own
  marshalling, the list it hands to ``cuda.core.launch`` (dispatcher.py, ``_Kernel.launch``).
  An array becomes 5 + 2·ndim words: ``meminfo`` (0), ``parent`` (0), ``nitems``,
  ``itemsize``, ``data`` (the device pointer), ``shape``…, ``strides``… in bytes — the
  members of numba's ``ArrayModel`` (datamodel/cuda_models.py), in that order; a scalar
  becomes one ctypes value of its type (``c_int32``, ``c_float``, ...);
- ``_Kernel._codelibrary.get_cufunc()``: the loaded function; its ``handle`` is what the
  driver launches;
- ``cudadrv.driver._to_core_stream`` and ``cudadrv.devices.get_context``: the stream's
  handle, and the context made current in the calling thread.

The compile worker (``gpu.core.compile_worker``) reads two more: ``compiler._compile_pyfunc_with_fixup``
(``lower_kernel``), what the public ``compile_ptx`` calls before ``lib.get_asm_strs(cc)``, keeping
its code library so NVVM compiles one lowering for several targets; and the name
``dispatcher.get_current_device`` (``pretend_current_device``). The launch-overhead benchmark reads
``_Kernel.launch``, numba-cuda's own launch below its dispatcher, as a floor (``numba_launch``).
The L2 flush and the transfers' poisoned outputs use ``cudadrv.driver.device_memset`` (``device_memset``),
and the device facts ``cudadrv.driver.driver.get_version`` (``driver_version``).

``cuda.core``'s ``ParamHolder`` (the buffer ``cuda.core.launch`` builds from that list on
every call) packs it into the ``void**`` array the driver reads; building it once is the
whole saving. ``tests/test_numba_internals.py`` checks, without a GPU, that numba-cuda's
marshalling of device arrays gives this layout and that the packed buffer holds those
words. Another numba-cuda version is refused with a message naming both versions
(``require_pinned``): re-read the code above, re-run that test, then move the pin.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata
from typing import Any

PINNED_NUMBA_CUDA = "0.30.4"

# numba's ArrayModel members, in order (datamodel/cuda_models.py): what one array argument becomes.
ARRAY_FIELDS = ("meminfo", "parent", "nitems", "itemsize", "data", "shape", "strides")


class UnsupportedNumbaCuda(RuntimeError):
    """The installed numba-cuda is not the version whose internals this module was written against,
    or a kernel uses a feature the prepared launch does not reproduce."""


def installed_version() -> str | None:
    """numba-cuda's installed version, or None when it is not installed."""
    try:
        return metadata.version("numba-cuda")
    except metadata.PackageNotFoundError:
        return None


def require_pinned(version: str | None = None) -> None:
    """Refuse, with both versions named, unless numba-cuda is ``PINNED_NUMBA_CUDA``."""
    found = installed_version() if version is None else version
    if found != PINNED_NUMBA_CUDA:
        raise UnsupportedNumbaCuda(
            f"the prepared launch reads numba-cuda {PINNED_NUMBA_CUDA}'s internals (gpu/core/numba_internals.py); "
            f"numba-cuda {found or 'is not installed'}{'' if found is None else ' is installed'}: install "
            f"numba-cuda=={PINNED_NUMBA_CUDA} (requirements.txt), or launch through the dispatcher"
        )


def array_words(nitems: int, itemsize: int, data: int, shape: Sequence[int], strides: Sequence[int]) -> list[int]:
    """The words numba-cuda passes for one array argument, in ``ARRAY_FIELDS`` order (meminfo and parent 0)."""
    if len(shape) != len(strides):
        raise ValueError(f"an array has one stride per dimension: shape {tuple(shape)}, strides {tuple(strides)}")
    return [0, 0, int(nitems), int(itemsize), int(data), *map(int, shape), *map(int, strides)]


def compiled_kernel(dispatcher, args: Sequence[Any]):
    """The compiled kernel (numba-cuda's ``_Kernel``) ``dispatcher`` launches for ``args``' types.

    Refuses what the prepared launch does not reproduce: a debug kernel (numba-cuda reads its
    error flag after every launch), a cooperative one, one whose compilation depends on the
    launch configuration, and argument extensions (they may copy data per launch).
    """
    require_pinned()
    argtypes = tuple(dispatcher.typeof_pyval(a) for a in args)
    compiled = dispatcher.compile(argtypes)
    for attribute, why in (
        ("debug", "a debug kernel reports errors after each launch"),
        ("cooperative", "a cooperative kernel needs a cooperative launch"),
        ("launch_config_sensitive", "its code depends on the launch configuration"),
        ("extensions", "argument extensions may copy data at every launch"),
    ):
        if getattr(compiled, attribute, False):
            raise UnsupportedNumbaCuda(f"{compiled.py_func.__name__}: not prepared ({why})")
    return compiled


def kernel_arguments(compiled, args: Sequence[Any], stream) -> list:
    """numba-cuda's own marshalling of ``args`` for ``compiled``: the list ``_Kernel.launch`` would pass.

    Raises UnsupportedNumbaCuda when marshalling would copy an argument to the device (a host
    array): that copy happens per launch and cannot be prepared once.
    """
    if len(args) != len(compiled.argument_types):
        raise ValueError(
            f"{compiled.py_func.__name__} takes {len(compiled.argument_types)} arguments, {len(args)} were given"
        )
    copied_back: list = []
    words: list = []
    for ty, value in zip(compiled.argument_types, args):
        compiled._prepare_args(ty, value, stream, copied_back, words)
    if copied_back:
        raise UnsupportedNumbaCuda("a host array argument would be copied at every launch: pass device arrays")
    return words


def driver_function(compiled):
    """The loaded function's driver handle (a ``CUkernel``), for ``cuLaunchKernel``."""
    return compiled._codelibrary.get_cufunc().handle


def core_kernel(compiled):
    """The loaded function as a ``cuda.core`` Kernel, for ``cuda.core.launch``."""
    return compiled._codelibrary.get_cufunc().kernel


def core_stream(stream):
    """``stream`` (a numba Stream, or 0) as the ``cuda.core`` Stream numba-cuda launches on."""
    from numba.cuda.cudadrv import driver

    return driver._to_core_stream(stream)


def make_context_current() -> None:
    """Make numba-cuda's context current in the calling thread (as every numba launch does)."""
    from numba.cuda.cudadrv import devices

    devices.get_context()


def lower_kernel(py_func, signature: str, cc: tuple[int, int]):
    """numba-cuda's front end for one kernel (typing, lowering to NVVM IR): its code library, which
    NVVM compiles per target (``lib.get_asm_strs(cc)``). Needs no GPU."""
    import importlib

    compiler = importlib.import_module("numba.cuda.compiler")
    lib, _ = compiler._compile_pyfunc_with_fixup(py_func, signature, device=False, cc=cc, abi="numba")
    return lib


def pretend_current_device(cc: tuple[int, int]) -> None:
    """Make numba-cuda believe the current device has compute capability ``cc`` (a compile-only process).

    compile_ptx(..., cc=cc) passes cc to the kernel, but numba-cuda 0.30 compiles any *device function* a
    kernel calls (``warp_sum`` in the reduction) through ``CUDADispatcher.compile_device``, which asks
    ``get_current_device().compute_capability`` -- and reading ``cuda.warpsize`` types through the same path.
    With no driver that call raises CudaSupportError. numba_cuda/numba/cuda/dispatcher.py imports
    ``get_current_device`` by name, so that name in the dispatcher module is replaced with a stand-in device
    that only knows a compute capability. Safe only in a process that compiles and never launches; the
    device functions' NVVM IR is the same for every target 7.5+ (gpu/core/compile_worker.py says why).
    """
    import importlib
    import types

    dispatcher: Any = importlib.import_module("numba.cuda.dispatcher")
    device = types.SimpleNamespace(compute_capability=tuple(cc), name=f"compile target cc {cc[0]}.{cc[1]}")
    dispatcher.get_current_device = lambda: device


def numba_launch(compiled, args: Sequence[Any], grid, block, stream):
    """``launch()``: numba-cuda's own launch of ``compiled`` below its dispatcher (marshalling every call),
    the floor the launch-overhead benchmark shows; not used by the engine."""
    core = core_stream(stream)
    return lambda: compiled.launch(tuple(args), grid, block, core, 0)


def device_memset(array, byte: int, nbytes: int, stream) -> None:
    """Queue a fill of ``nbytes`` of device ``array`` with ``byte`` on ``stream`` (the driver's memset)."""
    from numba.cuda.cudadrv import driver

    driver.device_memset(array, byte, nbytes, stream)


def driver_version() -> tuple[int, int]:
    """The CUDA driver's version as numba-cuda reads it, (major, minor)."""
    from numba.cuda.cudadrv import driver

    return driver.driver.get_version()


def packed_parameters(words: Sequence[Any]):
    """The ``void**`` parameter buffer ``cuda.core.launch`` builds from ``words`` (its ``ptr`` is the address)."""
    from cuda.core._kernel_arg_handler import ParamHolder

    return ParamHolder(list(words))


__all__ = [
    "ARRAY_FIELDS",
    "PINNED_NUMBA_CUDA",
    "UnsupportedNumbaCuda",
    "array_words",
    "compiled_kernel",
    "core_kernel",
    "core_stream",
    "device_memset",
    "driver_function",
    "driver_version",
    "installed_version",
    "kernel_arguments",
    "lower_kernel",
    "make_context_current",
    "numba_launch",
    "packed_parameters",
    "pretend_current_device",
    "require_pinned",
]
