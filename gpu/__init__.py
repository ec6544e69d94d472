"""Kernel Lab's engine: kernels, CPU baselines, timing and experiments. No UI here.

Importing ``gpu`` first decides between hardware CUDA and the simulator (see
``gpu.backend``); import numba.cuda only through ``gpu.backend``.
"""

from gpu.backend import BACKEND, Backend

__all__ = ["BACKEND", "Backend"]
