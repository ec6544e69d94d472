"""Two kernels that read the same data, coalesced and strided: the trace's first lesson.

Both copy every element of ``a`` to ``out`` exactly once; only the order in which a
warp's threads visit ``a`` differs. Thread i of ``read_strided_kernel`` reads element
``(i % rows) * STRIDE + i // rows``: neighbouring threads read elements STRIDE apart.
"""

from __future__ import annotations

from gpu.core.backend import BACKEND, cuda
from gpu.core.launch_spec import Launch

STRIDE = 32  # 32 float32 = 128 bytes apart: every thread of a warp lands in its own sector
WHOLE_PATTERN = STRIDE * 32  # N a multiple of this: every warp's 32 reads are STRIDE apart (rows >= 32)


@cuda.jit(cache=not BACKEND.simulated)
def read_coalesced_kernel(a, out):
    """out[i] = a[i]: a warp reads 32 neighbours, 128 bytes, 4 sectors."""
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i]


@cuda.jit(cache=not BACKEND.simulated)
def read_strided_kernel(a, out):
    """out[i] = a[j] with j STRIDE elements from its neighbour's: a warp's read touches 32 sectors."""
    i = cuda.grid(1)
    rows = a.size // STRIDE
    if i < rows * STRIDE:
        out[i] = a[(i % rows) * STRIDE + i // rows]


# How the Launch config page's trace launches them (gpu/core/launch_spec.py): the compile
# gate compiles every kernel in gpu/, these two included, for every GPU target.
LAUNCHES = {
    "read_coalesced_kernel": Launch(("void(float32[::1], float32[::1])",), threads_per_block=256),
    "read_strided_kernel": Launch(("void(float32[::1], float32[::1])",), threads_per_block=256),
}


__all__ = ["LAUNCHES", "STRIDE", "read_coalesced_kernel", "read_strided_kernel"]
