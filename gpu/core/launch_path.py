"""The engine's kernel launch: prepared once, then only the driver's launch per call.

Why: on the H200 (2026-12-04) numba-cuda's launch of the vector add with three device
arrays cost 33.2 µs against 6.47 µs for CuPy's ``RawKernel``. Read from numba-cuda 0.30.4,
every ``kernel[grid, block, stream](a, b, c)`` — configured once or not: ``configure`` is
LRU-cached — looks the CUDA context up, types each argument, packs 7 Python ints per 1-D
array, builds a new ``cuda.core.LaunchConfig`` and a new parameter buffer, and only then
reaches the driver. For a fixed kernel and fixed device arrays every one of those results
is the same at each call, so ``prepare_launch`` computes them once (the compiled function,
numba-cuda's own packing of the arguments: ``gpu.core.numba_internals``) and each call is
one ``cuLaunchKernel`` through ``cuda.bindings``.

The rungs of that ladder, each measured by the Launch config page
(``gpu.experiments.launch.overhead``):

- ``article``     ``kernel[grid, block, stream](*args)`` per call;
- ``specialised`` a dispatcher specialised for the arguments' types, configured once;
- ``prepared``    ``cuda.core.launch`` with the compiled kernel, a prebuilt config and
                  numba-cuda's packed argument list (the buffer still built per call);
- ``raw driver``  ``cuLaunchKernel`` with the parameter buffer built once: the engine's.

``configured_launch`` is what the engine calls wherever it times a kernel: the raw driver
launch for the prepared arguments on a GPU, the specialised dispatcher for any other
arguments (or where preparing is refused: another numba-cuda version, a debug kernel), and
the configured dispatcher in the simulator.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from gpu.core.backend import BACKEND


def _dims(value) -> tuple[int, int, int]:
    """A grid or block (an int or a tuple of 1–3 ints) as the driver's (x, y, z)."""
    dims = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(dims) <= 3 or any(int(d) < 1 for d in dims):
        raise ValueError(f"a grid or block is 1 to 3 positive sizes, got {value!r}")
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))  # type: ignore[return-value]


class PreparedLaunch:
    """``launch(*args)``: one ``cuLaunchKernel`` for the arguments it was prepared with.

    Prepared once for a compiled kernel, a geometry, a stream and a set of device arrays
    (and scalars): the driver's function handle, the grid and block, the stream's handle and
    the parameter buffer packed from numba-cuda's own marshalling. Called with those same
    arguments it only launches; with any others it launches through ``fallback`` (the
    specialised dispatcher), which marshals them as numba-cuda always does. It keeps the
    arguments alive: the buffer holds their device pointers.
    """

    label = "prepared once, cuLaunchKernel per call"

    def __init__(self, kernel, grid, block, stream, args: Sequence[Any], fallback: Callable[..., None]):
        from cuda.bindings import driver

        from gpu.core import numba_internals as internals

        internals.make_context_current()
        compiled = internals.compiled_kernel(kernel, args)
        self._args = tuple(args)
        self._words = internals.kernel_arguments(compiled, self._args, stream)
        self._params = internals.packed_parameters(self._words)
        self._launch = driver.cuLaunchKernel
        self._success = driver.CUresult.CUDA_SUCCESS
        # handles as plain addresses: cuLaunchKernel takes an int for a function (a CUkernel here) and a stream
        self._call = (int(internals.driver_function(compiled)), *_dims(grid), *_dims(block), 0,
                      int(internals.core_stream(stream).handle), self._params.ptr, 0)
        self._fallback = fallback
        self._thread = threading.get_ident()

    def __call__(self, *args) -> None:
        if args != self._args:  # identity first (tuple comparison), so the same arrays compare in C
            self._fallback(*args)
            return
        if threading.get_ident() != self._thread:  # the driver launches in the calling thread's context
            from gpu.core.numba_internals import make_context_current

            make_context_current()
            self._thread = threading.get_ident()
        (status,) = self._launch(*self._call)
        if status is not self._success:  # enum members are singletons, whatever the bindings' enum type
            raise RuntimeError(f"cuLaunchKernel failed: {status!r}")


def specialised_launch(kernel, blocks, threads_per_block, stream, *example_args) -> Callable[..., None]:
    """The dispatcher specialised for ``example_args``' types, configured once: ``launch(*args)``."""
    target = kernel
    if example_args and hasattr(kernel, "specialize"):
        try:
            target = kernel.specialize(*example_args)
        except Exception:  # already specialised, or a dispatcher that cannot be: stay general
            target = kernel
    return target[blocks, threads_per_block, stream]


def prepare_launch(kernel, blocks, threads_per_block, stream, *args) -> PreparedLaunch:
    """A ``PreparedLaunch`` of ``kernel`` for ``args`` (a GPU only; raises where it cannot be prepared).

    Its fallback, the specialised dispatcher, is made on the first call with other arguments, if any:
    specialising compiles the kernel again, which a launch that only ever sees its own arrays never needs.
    """
    made: list[Callable[..., None]] = []

    def fallback(*other) -> None:
        if not made:
            made.append(specialised_launch(kernel, blocks, threads_per_block, stream, *args))
        made[0](*other)

    return PreparedLaunch(kernel, blocks, threads_per_block, stream, args, fallback)


def core_launch(kernel, blocks, threads_per_block, stream, *args) -> Callable[[], None]:
    """The ``prepared`` rung: ``cuda.core.launch`` with everything but the parameter buffer built once."""
    from cuda.core import LaunchConfig, launch

    from gpu.core import numba_internals as internals

    internals.make_context_current()
    compiled = internals.compiled_kernel(kernel, args)
    words = internals.kernel_arguments(compiled, args, stream)
    config = LaunchConfig(grid=_dims(blocks), block=_dims(threads_per_block))
    core_kernel, core_stream = internals.core_kernel(compiled), internals.core_stream(stream)
    return lambda: launch(core_stream, config, core_kernel, *words)


# Why the last configured_launch could not be prepared (None when it was, or in the simulator).
_last_refusal = threading.local()


def configured_launch(kernel, blocks, threads_per_block, stream, *example_args) -> Callable[..., None]:
    """A callable ``launch(*args)`` queuing ``kernel`` with this geometry on ``stream``.

    On a GPU: prepared for ``example_args`` (``PreparedLaunch``), or the specialised
    dispatcher when it cannot be (``launch_label()`` says why). The simulator has neither:
    its dispatcher is configured once.
    """
    _last_refusal.why = None
    if BACKEND.simulated:
        return kernel[blocks, threads_per_block, stream]
    if example_args:
        try:
            return prepare_launch(kernel, blocks, threads_per_block, stream, *example_args)
        except Exception as exc:  # another numba-cuda, a debug kernel, no cuda.bindings: the dispatcher's path
            _last_refusal.why = f"{type(exc).__name__}: {exc}"
    return specialised_launch(kernel, blocks, threads_per_block, stream, *example_args)


def launch_label(launch: Callable[..., None]) -> str:
    """How ``launch`` (from ``configured_launch``) queues a kernel, in words, for result captions."""
    if isinstance(launch, PreparedLaunch):
        return PreparedLaunch.label
    why = getattr(_last_refusal, "why", None)
    if BACKEND.simulated:
        return "configured once (the simulator's dispatcher)"
    return "configured once (specialised dispatcher)" + (f"; not prepared: {why}" if why else "")


__all__ = ["PreparedLaunch", "configured_launch", "core_launch", "launch_label", "prepare_launch",
           "specialised_launch"]
