"""Grid sizes, in one place: how many blocks a launch needs.

- ``blocks_for(n, threads_per_block)``: one thread per element (ceil division);
- ``resident_blocks(...)``: a grid-stride launch of one full wave of the device, from the
  theoretical occupancy of ``gpu.core.arch`` (threads, blocks, registers and shared memory
  per SM); ``kernel_resident_blocks`` adds the compiled kernel's registers on a GPU;
- ``grid_2d(...)``: tiles covering a matrix.
"""

from __future__ import annotations

import sys

from gpu.core.arch import DEFAULT_TARGET, TARGETS, Target, theoretical_occupancy
from gpu.core.backend import BACKEND


def blocks_for(n: int, threads_per_block: int) -> int:
    """Blocks needed to give every one of ``n`` elements a thread (ceil division)."""
    return (n + threads_per_block - 1) // threads_per_block


# The simulator has no SMs; pretend to have one so a grid-stride launch still loops.
SIMULATED_SMS = 1


def _target_for(cc: tuple[int, int] | str | None) -> Target:
    """The per-SM limits for a compute capability: its row of gpu.core.arch's table, else
    the newest row not newer than it (the oldest row for older GPUs), else the
    H100/H200 row (unknown device, or the simulator)."""
    wanted: tuple[int, ...] | None
    if isinstance(cc, str):
        try:
            wanted = tuple(int(x) for x in cc.split(".")[:2])
        except ValueError:
            wanted = None
    else:
        wanted = cc
    if not wanted:
        return TARGETS[DEFAULT_TARGET]
    older = [t for t in TARGETS.values() if t.cc <= wanted]
    return older[-1] if older else next(iter(TARGETS.values()))


def resident_blocks(
    n: int,
    threads_per_block: int,
    multiprocessors: int | None,
    cc: tuple[int, int] | str | None = None,
    registers_per_thread: int = 0,
    shared_bytes_per_block: int = 0,
) -> int:
    """Blocks for a grid-stride launch: one full wave of the device, never more than ``n`` needs.

    A wave is what every SM holds at once: the theoretical occupancy of gpu.core.arch
    (threads, the blocks-per-SM limit, registers and shared memory) for compute
    capability ``cc``. More blocks than a wave only add per-block work (a final atomic,
    a shared histogram to merge) and a second, partial wave.
    """
    target = _target_for(cc)
    per_sm = theoretical_occupancy(
        target, threads_per_block, registers_per_thread, shared_bytes_per_block
    ).blocks_per_sm
    wave = (multiprocessors or SIMULATED_SMS) * max(1, per_sm)
    return max(1, min(blocks_for(n, threads_per_block), wave))


def kernel_resident_blocks(kernel, n: int, threads_per_block: int, device) -> int:
    """``resident_blocks`` for one kernel on ``device`` (a gpu.core.device.DeviceInfo).

    On a GPU, with the registers and shared memory of the kernel as compiled for this
    device (numba compiles it once per process, and the launch needs it anyway; the
    signature is the first of its module's LAUNCHES). In the simulator nothing is
    compiled, so the table's thread and block limits alone decide.
    """
    registers = shared = 0
    if not BACKEND.simulated:
        fn = kernel.py_func
        launches = getattr(sys.modules[fn.__module__], "LAUNCHES", {})
        if fn.__name__ in launches:
            compiled = kernel.compile(launches[fn.__name__].signatures[0])
            registers, shared = int(compiled.regs_per_thread), int(compiled.shared_mem_per_block)
    return resident_blocks(n, threads_per_block, device.multiprocessors, device.compute_capability, registers, shared)


def grid_2d(rows: int, cols: int, tile_rows: int, tile_cols: int) -> tuple[int, int]:
    """(blocks in x, blocks in y) covering a rows × cols matrix with tiles (x spans columns)."""
    return blocks_for(cols, tile_cols), blocks_for(rows, tile_rows)


__all__ = ["blocks_for", "grid_2d", "kernel_resident_blocks", "resident_blocks"]
