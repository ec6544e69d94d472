"""Inputs kept on the device for every series at one size, and results checked there.

Why: the Scaling sweep's overhead on the H200 (2026-12-04) was 70.2% against a 10% target:
at each of the largest sizes, every device series uploaded its own copy of a and b (8 GiB at
N = 2^30), copied its 4 GiB result back and compared it with NumPy's on the host, while
its timed samples were a few milliseconds of kernel. ``ResidentInputs`` uploads a, b and
NumPy's a + b once per size; the 4-per-thread kernel and the libraries (CuPy and PyTorch
read Numba's device arrays without a copy, through ``__cuda_array_interface__``) all read
them, and ``identical`` compares a result with NumPy's bit for bit on the device, bringing
back one count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpu.core.backend import BACKEND, cuda
from gpu.core.launch_spec import Launch

COMPARE_THREADS = 256


@cuda.jit(cache=not BACKEND.simulated)
def count_mismatches_kernel(x, y, count):
    """``count[0]`` += the number of positions where ``x`` and ``y`` (uint32 views: bits) differ."""
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if x[i] != y[i]:
            cuda.atomic.add(count, 0, 1)


@dataclass
class ResidentInputs:
    """a, b and NumPy's a + b (``expected``) as device arrays, uploaded once on ``stream``."""

    a: Any
    b: Any
    expected: Any
    stream: Any

    @classmethod
    def upload(cls, a: np.ndarray, b: np.ndarray, expected: np.ndarray) -> ResidentInputs:
        """Copy a, b and expected to the device and wait for the copies."""
        stream = cuda.stream()
        resident = cls(cuda.to_device(a, stream=stream), cuda.to_device(b, stream=stream),
                       cuda.to_device(expected, stream=stream), stream)
        stream.synchronize()
        return resident

    def mismatches(self, result) -> int:
        """How many elements of ``result`` (a device array, a CuPy or PyTorch one, or a host array, copied in)
        differ from NumPy's a + b in their bits; ``result``'s shape must be expected's. Waits for the comparison."""
        if hasattr(result, "copy_to_host"):
            array = result
        elif isinstance(result, np.ndarray):
            array = cuda.to_device(result, stream=self.stream)
        else:
            array = cuda.as_cuda_array(result)  # __cuda_array_interface__: no copy
        if tuple(array.shape) != tuple(self.expected.shape):
            raise ValueError(f"a result of shape {tuple(array.shape)} compared with a + b of {self.expected.shape}")
        count = cuda.to_device(np.zeros(1, dtype=np.uint32), stream=self.stream)
        blocks = max(1, min(-(-array.size // COMPARE_THREADS), 1024))  # a grid-stride loop: 1,024 blocks at most
        count_mismatches_kernel[blocks, COMPARE_THREADS, self.stream](
            array.view(np.uint32), self.expected.view(np.uint32), count
        )
        return int(count.copy_to_host(stream=self.stream)[0])

    def identical(self, result) -> bool:
        """True when ``result`` holds NumPy's a + b bit for bit (checked on the device)."""
        return self.mismatches(result) == 0


# What it launches (gpu/core/launch_spec.py; the compile gate compiles it for every target).
LAUNCHES = {
    "count_mismatches_kernel": Launch(("void(uint32[::1], uint32[::1], uint32[::1])",),
                                      threads_per_block=COMPARE_THREADS),
}

__all__ = ["COMPARE_THREADS", "ResidentInputs", "count_mismatches_kernel"]
