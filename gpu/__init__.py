"""Kernel Lab's engine: kernels, CPU baselines, timing and experiments. No UI here.

Importing ``gpu`` first decides between hardware CUDA and the simulator (see
``gpu.core.backend``); import numba.cuda only through ``gpu.core.backend``.
"""

from gpu.core.backend import BACKEND, Backend

__all__ = ["BACKEND", "Backend"]
