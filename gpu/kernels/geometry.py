"""Launch geometry shared by the catalog kernels: ceil division and grid-stride grids."""

from __future__ import annotations

from gpu.kernels.vector_add import blocks_for

# Threads one SM keeps resident on compute capability 7.0, 8.0 and 9.0 (fewer on 7.5,
# 8.6 and 8.9). A grid-stride kernel launches just enough blocks to fill every SM once:
# more blocks only add per-block work (a final atomic, a shared histogram to merge).
THREADS_PER_SM = 2048
# The simulator has no SMs; pretend to have one so a grid-stride launch still loops.
SIMULATED_SMS = 1


def resident_blocks(n: int, threads_per_block: int, multiprocessors: int | None) -> int:
    """Blocks for a grid-stride launch: one full wave of the device, never more than ``n`` needs."""
    per_sm = max(1, THREADS_PER_SM // threads_per_block)
    wave = (multiprocessors or SIMULATED_SMS) * per_sm
    return max(1, min(blocks_for(n, threads_per_block), wave))


def grid_2d(rows: int, cols: int, tile_rows: int, tile_cols: int) -> tuple[int, int]:
    """(blocks in x, blocks in y) covering a rows × cols matrix with tiles (x spans columns)."""
    return blocks_for(cols, tile_cols), blocks_for(rows, tile_rows)


__all__ = ["THREADS_PER_SM", "blocks_for", "grid_2d", "resident_blocks"]
