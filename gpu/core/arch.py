"""Per-architecture limits of one streaming multiprocessor, and theoretical occupancy.

The figures are those of the CUDA C++ Programming Guide, "Compute Capabilities" ->
"Technical Specifications per Compute Capability" (the table of maximum resident grids,
blocks, warps and threads per SM, 32-bit registers per SM, and shared memory per SM and
per block). They let the compile gate state an occupancy for a GPU that is not here:
the compiler reports registers and shared memory per thread and block, this table says
how many such blocks one SM of that architecture can hold.

Occupancy here is *theoretical*: resident warps / the SM's maximum, from resources alone.
It is a static fact of the compiled kernel at a block size, not a measurement.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

WARP_SIZE = 32
# Registers are allocated per warp in units of 256 (the Programming Guide's occupancy
# section and the CUDA occupancy calculator): 33 registers per thread cost 40 per thread.
REGISTER_ALLOCATION_UNIT = 256
MAX_THREADS_PER_BLOCK = 1024  # every architecture listed here
MAX_REGISTERS_PER_THREAD = 255  # every architecture listed here
# Static __shared__ arrays (what cuda.shared.array with a constant shape makes) are
# capped at 48 KB per block on every architecture; more needs dynamic shared memory.
MAX_STATIC_SHARED_PER_BLOCK = 48 * 1024


@dataclass(frozen=True)
class Target:
    """One GPU architecture to compile for: its name (``sm_90``), compute capability,
    an example product for people (``label``), and the per-SM limits of the Guide's table.

    ``min_toolkit`` is the first CUDA release whose ptxas knows the architecture.
    """

    name: str
    cc: tuple[int, int]
    label: str
    gpus: str  # the short product names a picker shows
    max_threads_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    shared_memory_per_sm: int  # bytes, the largest carve-out
    shared_memory_per_block: int  # bytes, with opt-in
    reserved_shared_per_block: int  # bytes the driver keeps per resident block
    min_toolkit: tuple[int, int] = (11, 0)

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // WARP_SIZE

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "cc": list(self.cc),
            "label": self.label,
            "max_threads_per_sm": self.max_threads_per_sm,
            "max_warps_per_sm": self.max_warps_per_sm,
            "max_blocks_per_sm": self.max_blocks_per_sm,
            "registers_per_sm": self.registers_per_sm,
            "shared_memory_per_sm": self.shared_memory_per_sm,
            "shared_memory_per_block": self.shared_memory_per_block,
        }


KB = 1024
# The Guide's table, one row per compute capability (threads/SM, blocks/SM, 32-bit
# registers/SM, shared memory per SM and per block, reserved shared memory per block).
_ROWS = (
    Target("sm_75", (7, 5), "NVIDIA T4 (sm_75)", "T4", 1024, 16, 65536, 64 * KB, 64 * KB, 0),
    Target("sm_80", (8, 0), "NVIDIA A100 (sm_80)", "A100", 2048, 32, 65536, 164 * KB, 163 * KB, 1 * KB),
    Target(
        "sm_86", (8, 6), "NVIDIA A10 / RTX 30 series (sm_86)", "A10, RTX 30", 1536, 16, 65536, 100 * KB, 99 * KB, 1 * KB
    ),
    Target(
        "sm_89", (8, 9), "NVIDIA L4 / RTX 40 series (sm_89)", "L4, RTX 40", 1536, 24, 65536, 100 * KB, 99 * KB, 1 * KB
    ),
    Target("sm_90", (9, 0), "NVIDIA H100/H200 (sm_90)", "H100/H200", 2048, 32, 65536, 228 * KB, 227 * KB, 1 * KB),
    Target("sm_100", (10, 0), "NVIDIA B200 (sm_100)", "B200", 2048, 32, 65536, 228 * KB, 227 * KB, 1 * KB, (12, 8)),
    Target(
        "sm_120",
        (12, 0),
        "NVIDIA RTX 50 series (sm_120)",
        "RTX 50",
        1536,
        32,
        65536,
        100 * KB,
        99 * KB,
        1 * KB,
        (12, 8),
    ),
)
TARGETS: OrderedDict[str, Target] = OrderedDict((t.name, t) for t in _ROWS)
DEFAULT_TARGET = "sm_90"  # the GPU the catalog's targets were set on (H200)


def target_named(name: str) -> Target:
    """The Target called ``name`` (``sm_90``, or ``9.0``); InputError-style ValueError otherwise."""
    key = name.strip().lower()
    if key in TARGETS:
        return TARGETS[key]
    for t in TARGETS.values():
        if key in (f"{t.cc[0]}.{t.cc[1]}", f"sm{t.cc[0]}{t.cc[1]}", f"{t.cc[0]}{t.cc[1]}"):
            return t
    raise ValueError(f"unknown target {name!r}: choose one of {', '.join(TARGETS)}")


def target_for_cc(cc: tuple[int, int]) -> Target | None:
    """The table's row for a compute capability (None when it has none)."""
    return next((t for t in TARGETS.values() if t.cc == tuple(cc)), None)


@dataclass(frozen=True)
class TheoreticalOccupancy:
    """Blocks and warps of one kernel one SM holds at ``threads_per_block``, and what limits it.

    ``limiter`` is the resource that binds ("threads", "blocks", "registers", "shared
    memory", or "block too large" when the block cannot launch at all).
    """

    threads_per_block: int
    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    limiter: str

    @property
    def fraction(self) -> float:
        """Resident warps / the SM's maximum (0 when the block cannot run)."""
        return self.warps_per_sm / self.max_warps_per_sm

    @property
    def percent(self) -> str:
        """"100%", "50%", "12.5%": whole percents unless that would round."""
        value = 100 * self.fraction
        return f"{value:.0f}%" if value == round(value) else f"{value:.1f}%"

    def to_dict(self) -> dict:
        return {
            "threads_per_block": self.threads_per_block,
            "blocks_per_sm": self.blocks_per_sm,
            "warps_per_sm": self.warps_per_sm,
            "max_warps_per_sm": self.max_warps_per_sm,
            "fraction": self.fraction,
            "limiter": self.limiter,
        }


def theoretical_occupancy(
    target: Target, threads_per_block: int, registers_per_thread: int = 0, shared_bytes_per_block: int = 0
) -> TheoreticalOccupancy:
    """Resident blocks per SM for a kernel using ``registers_per_thread`` and
    ``shared_bytes_per_block`` (static + dynamic), as the CUDA occupancy calculator does:
    the smallest of the threads, blocks, registers and shared memory bounds.
    """
    if not 1 <= threads_per_block <= MAX_THREADS_PER_BLOCK:
        raise ValueError(f"threads per block must be 1 to {MAX_THREADS_PER_BLOCK}, got {threads_per_block}")
    warps_per_block = -(-threads_per_block // WARP_SIZE)
    bounds = {
        "threads": target.max_warps_per_sm // warps_per_block,
        "blocks": target.max_blocks_per_sm,
    }
    if registers_per_thread:
        if registers_per_thread > MAX_REGISTERS_PER_THREAD:
            return TheoreticalOccupancy(threads_per_block, 0, 0, target.max_warps_per_sm, "registers")
        unit = REGISTER_ALLOCATION_UNIT
        registers_per_warp = -(-registers_per_thread * WARP_SIZE // unit) * unit
        bounds["registers"] = (target.registers_per_sm // registers_per_warp) // warps_per_block
    if shared_bytes_per_block:
        if shared_bytes_per_block > target.shared_memory_per_block:
            return TheoreticalOccupancy(threads_per_block, 0, 0, target.max_warps_per_sm, "shared memory")
        per_block = shared_bytes_per_block + target.reserved_shared_per_block
        bounds["shared memory"] = target.shared_memory_per_sm // per_block
    limiter = min(bounds, key=lambda name: bounds[name])  # first listed wins a tie: threads before blocks, ...
    blocks = bounds[limiter]
    return TheoreticalOccupancy(threads_per_block, blocks, blocks * warps_per_block, target.max_warps_per_sm, limiter)


__all__ = [
    "DEFAULT_TARGET",
    "MAX_STATIC_SHARED_PER_BLOCK",
    "REGISTER_ALLOCATION_UNIT",
    "TARGETS",
    "Target",
    "TheoreticalOccupancy",
    "WARP_SIZE",
    "target_for_cc",
    "target_named",
    "theoretical_occupancy",
]
