"""Grid sizes, in one place: how many blocks a launch needs.

- ``blocks_for(n, threads_per_block)``: one thread per element (ceil division);
- ``resident_blocks(...)``: a grid-stride launch of one full wave of the device — from the
  kernel's real occupancy (``gpu.core.occupancy.kernel_occupancy(...).blocks_per_sm``)
  when the caller has it, else from the per-SM thread limit;
- ``grid_2d(...)``: tiles covering a matrix.
"""

from __future__ import annotations

# Threads one SM keeps resident on compute capability 7.0, 8.0 and 9.0 (fewer on 7.5,
# 8.6 and 8.9): the wave when the kernel's own occupancy is not known. A grid-stride
# kernel launches just enough blocks to fill every SM once: more blocks only add
# per-block work (a final atomic, a shared histogram to merge).
THREADS_PER_SM = 2048
# The simulator has no SMs; pretend to have one so a grid-stride launch still loops.
SIMULATED_SMS = 1


def blocks_for(n: int, threads_per_block: int) -> int:
    """Blocks needed to give every one of ``n`` elements a thread (ceil division)."""
    return (n + threads_per_block - 1) // threads_per_block


def resident_blocks(n: int, threads_per_block: int, multiprocessors: int | None, blocks_per_sm: int | None = None) -> int:
    """Blocks for a grid-stride launch: one full wave of the device, never more than ``n`` needs.

    ``blocks_per_sm`` is the kernel's real occupancy at this block size when known (it
    counts registers and shared memory); without it, the per-SM thread limit decides.
    """
    per_sm = blocks_per_sm if blocks_per_sm else max(1, THREADS_PER_SM // threads_per_block)
    wave = (multiprocessors or SIMULATED_SMS) * per_sm
    return max(1, min(blocks_for(n, threads_per_block), wave))


def grid_2d(rows: int, cols: int, tile_rows: int, tile_cols: int) -> tuple[int, int]:
    """(blocks in x, blocks in y) covering a rows × cols matrix with tiles (x spans columns)."""
    return blocks_for(cols, tile_cols), blocks_for(rows, tile_rows)


__all__ = ["THREADS_PER_SM", "blocks_for", "grid_2d", "resident_blocks"]
