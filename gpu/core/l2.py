"""Flushing the GPU's L2 cache before a timed sample, as nvbench does.

Why: a kernel re-run on the same buffers finds them in L2 when they fit (50 MB on an
H200), and then reads at cache speed, not memory speed — a 4 MB vector add "reached"
3,932 GB/s on an H200, above the HBM peak. nvbench writes a scratch buffer as large as
the L2 before every sample; here it is twice the L2 (``FLUSH_FACTOR``), so nothing of
the previous sample survives whatever the replacement policy. The flush is queued on
the measured stream before the stream hold, so it is never inside the timed interval.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from gpu.core.backend import BACKEND, cuda

FLUSH_FACTOR = 2  # scratch = 2 x L2: written through, it evicts every line of the last sample


def l2_cache_bytes() -> int | None:
    """The current device's L2 size in bytes (device attribute), None when unknown or simulated."""
    if BACKEND.simulated:
        return None
    try:
        size = int(cuda.get_current_device().L2_CACHE_SIZE)
    except Exception:  # attribute unknown to this driver or binding
        return None
    return size or None


def fits_in_l2(working_set_bytes: int, l2_bytes: int | None) -> bool:
    """True when a working set fits in the L2, so a warm re-run could be served from cache."""
    return bool(l2_bytes) and working_set_bytes <= l2_bytes


@lru_cache(maxsize=8)
def _scratch(device_id: int, nbytes: int):
    # allocated once per device and kept: allocating per sample would cost more than the flush
    return cuda.device_array(nbytes, dtype=np.uint8)


def flush_l2(stream) -> bool:
    """Queue a write of FLUSH_FACTOR x L2 bytes on ``stream``; False when there is nothing to flush."""
    size = l2_cache_bytes()
    if not size:
        return False
    nbytes = FLUSH_FACTOR * size
    scratch = _scratch(cuda.get_current_device().id, nbytes)
    cuda.cudadrv.driver.device_memset(scratch, 0, nbytes, stream)
    return True


__all__ = ["FLUSH_FACTOR", "fits_in_l2", "flush_l2", "l2_cache_bytes"]
