"""Occupancy: how many warps of a kernel fit on one multiprocessor at a block size.

From the driver where it answers (``cuOccupancyMaxActiveBlocksPerMultiprocessor``), else
calculated from the compiled kernel's registers and shared memory and the SM's limits
for its compute capability. Used by the block-size sweep (gpu/experiments/launch/experiment.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu.core.arch import REGISTER_ALLOCATION_UNIT  # registers are handed out per warp in chunks of 256
from gpu.core.backend import BACKEND, cuda
from gpu.core.limits import (
    WARP_SIZE,
)
from gpu.core.shape import Shaped, shaped


@shaped(derived={"fraction": lambda o: o.fraction})
@dataclass(frozen=True)
class Occupancy(Shaped):
    """How many of one configuration's blocks a multiprocessor holds at once.

    ``source`` is "driver" (cuOccupancyMaxActiveBlocksPerMultiprocessor for the compiled
    kernel) or "calculated" (from the kernel's registers and the device's per-SM limits,
    an approximation). ``limiter`` names the per-SM limit that binds, when calculated.
    """

    threads_per_block: int
    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    source: str
    limiter: str | None = None

    @property
    def fraction(self) -> float:
        """Theoretical occupancy: resident warps / the SM's maximum."""
        return self.warps_per_sm / self.max_warps_per_sm if self.max_warps_per_sm else float("nan")


@shaped()
@dataclass(frozen=True)
class SmLimits(Shaped):
    """Per-multiprocessor limits read from the device (None where not exposed)."""

    max_threads_per_sm: int | None
    max_blocks_per_sm: int | None
    registers_per_sm: int | None
    shared_memory_per_sm: int | None


def sm_limits() -> SmLimits | None:
    """The current device's per-SM limits; None in the simulator."""
    if BACKEND.simulated:
        return None
    dev = cuda.get_current_device()

    def attr(name: str) -> int | None:
        try:
            return int(getattr(dev, name))
        except Exception:  # attribute not exposed by this driver/binding
            return None

    return SmLimits(
        attr("MAX_THREADS_PER_MULTIPROCESSOR"),
        attr("MAX_BLOCKS_PER_MULTIPROCESSOR"),
        attr("MAX_REGISTERS_PER_MULTIPROCESSOR"),
        attr("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
    )




def calculated_occupancy(
    threads_per_block: int, regs_per_thread: int, shared_per_block: int, limits: SmLimits, warp_size: int = WARP_SIZE
) -> Occupancy | None:
    """Occupancy from per-SM limits, like CUDA's occupancy calculator (approximate)."""
    if not limits.max_threads_per_sm:
        return None
    warps_per_block = -(-threads_per_block // warp_size)
    max_warps = limits.max_threads_per_sm // warp_size
    bounds = {"threads per SM": max_warps // warps_per_block}
    if limits.max_blocks_per_sm:
        bounds["blocks per SM"] = limits.max_blocks_per_sm
    if limits.registers_per_sm and regs_per_thread:
        regs_per_warp = -(-regs_per_thread * warp_size // REGISTER_ALLOCATION_UNIT) * REGISTER_ALLOCATION_UNIT
        bounds["registers"] = (limits.registers_per_sm // regs_per_warp) // warps_per_block
    if limits.shared_memory_per_sm and shared_per_block:
        bounds["shared memory"] = limits.shared_memory_per_sm // shared_per_block
    limiter = min(bounds, key=lambda name: bounds[name])
    blocks = bounds[limiter]
    return Occupancy(threads_per_block, blocks, blocks * warps_per_block, max_warps, "calculated", limiter)


def kernel_occupancy(
    compiled, threads_per_block: int, limits: SmLimits | None, sm_count: int | None
) -> Occupancy | None:
    """Occupancy of a compiled kernel (numba-cuda ``_Kernel``) at one block size.

    Asks the driver (through the kernel's max_cooperative_grid_blocks, which is
    active blocks per SM x SM count); falls back to the calculation. None when neither
    works (and always in the simulator).
    """
    if compiled is None or limits is None:
        return None
    warps_per_block = -(-threads_per_block // WARP_SIZE)
    max_warps = (limits.max_threads_per_sm or 0) // WARP_SIZE
    calc = None
    try:
        calc = calculated_occupancy(threads_per_block, compiled.regs_per_thread, compiled.shared_mem_per_block, limits)
    except Exception:
        calc = None
    try:
        if sm_count and max_warps:
            per_sm = int(compiled.max_cooperative_grid_blocks(threads_per_block)) // sm_count
            return Occupancy(
                threads_per_block,
                per_sm,
                per_sm * warps_per_block,
                max_warps,
                "driver",
                calc.limiter if calc and calc.blocks_per_sm == per_sm else None,
            )
    except Exception:
        pass
    return calc
