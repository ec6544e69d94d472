"""Flushing the GPU's L2 cache before a timed sample, as nvbench does.

Why: a kernel re-run on the same buffers finds them in L2 when they fit (50 MB on an
H200), and then reads at cache speed, not memory speed — in the H200 runs recorded
before this flush (benchmarks/h200*), a 25 MB vector add (2^21 elements) "reached"
2,902 GB/s, 103% of the measured device copy (below the 4,814 GB/s theoretical peak). nvbench writes a scratch buffer
as large as
the L2 before every sample; here it is twice the L2 (``FLUSH_FACTOR``), so nothing of
the previous sample survives whatever the replacement policy. The flush is queued on
the measured stream before the stream hold, so it is never inside the timed interval.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np

from gpu.core import numba_internals
from gpu.core.backend import BACKEND, cuda

FLUSH_FACTOR = 2  # scratch = 2 x L2: written through, it evicts every line of the last sample

# The L2 size a device reports (device attribute L2_CACHE_SIZE), for recorded runs made
# before runs stored it (benchmarks/h200*): without it their cache-warm points — 2^21
# elements at 2,902 GB/s, 103% of the device copy — were drawn as beyond the L2. An
# H200 (GH100) reports 52,428,800 bytes (50 MiB), as an H100 does. Used only when a
# recorded run has no ``l2_bytes`` of its own, and said so where it is used.
RECORDED_DEVICE_L2_BYTES = {"NVIDIA H200": 50 * 2**20}


def recorded_l2_bytes(d: Mapping[str, Any]) -> int | None:
    """A recorded result's L2 size: its own ``l2_bytes``, else the size its device reports."""
    if d.get("l2_bytes"):
        return int(d["l2_bytes"])
    return RECORDED_DEVICE_L2_BYTES.get(str((d.get("device") or {}).get("name") or ""))


def l2_cache_bytes() -> int | None:
    """The current device's L2 size in bytes (device attribute), None when unknown or simulated."""
    if BACKEND.simulated:
        return None
    try:
        size = int(cuda.get_current_device().L2_CACHE_SIZE)
    except Exception:  # attribute unknown to this driver or binding
        return None
    return size or None


def flush_problem() -> str | None:
    """None when every GPU sample here can start with the L2 flushed, else what the result
    must say (the flush was skipped silently when the L2 size was unknown)."""
    if BACKEND.simulated:
        return None  # no cache to flush; the simulator warning already covers every figure
    if l2_cache_bytes() is None:
        return ("L2 not flushed: this device does not report its L2 size (L2_CACHE_SIZE), "
                "so GPU samples may be served partly from cache")
    return None


def fits_in_l2(working_set_bytes: int, l2_bytes: int | None) -> bool:
    """True when a working set fits in the L2, so a warm re-run could be served from cache."""
    return l2_bytes is not None and l2_bytes > 0 and working_set_bytes <= l2_bytes


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
    numba_internals.device_memset(scratch, 0, nbytes, stream)
    return True


__all__ = ["FLUSH_FACTOR", "fits_in_l2", "flush_l2", "flush_problem", "l2_cache_bytes"]
