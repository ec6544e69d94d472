"""The same kernel under numba-cuda's simulator: the reference the differential tests and the benchmark compare with.

``as_numba(kernel)`` rebuilds a lab-simulator kernel's Python function with ``cuda`` bound
to ``numba.cuda`` (numba-cuda's simulator swaps its own module in at launch) and its
device functions rebuilt the same way, then jits it with numba-cuda. Needs
``NUMBA_ENABLE_CUDASIM=1`` in the process (it is, wherever the lab's simulator runs).
"""

from __future__ import annotations

import types

from gpu.sim.kernel import SimKernel, _is_cuda_module, global_names


def as_numba(kernel: SimKernel, _memo: dict | None = None):
    from numba import cuda as numba_cuda

    memo = {} if _memo is None else _memo
    if id(kernel) in memo:
        return memo[id(kernel)]
    fn = kernel.py_func
    scope = dict(fn.__globals__)
    used = global_names(fn)
    for name, value in list(scope.items()):
        if name not in used:
            continue
        if _is_cuda_module(value):
            scope[name] = numba_cuda
        elif isinstance(value, SimKernel) and value._device and value is not kernel:
            scope[name] = as_numba(value, memo)
    rebuilt = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    jitted = numba_cuda.jit(device=kernel._device)(rebuilt)
    memo[id(kernel)] = jitted
    return jitted


__all__ = ["as_numba"]
