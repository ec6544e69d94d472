"""Kernel Lab's own CUDA simulator: kernels written against ``numba.cuda`` run on the CPU.

How it works, what it models and what it does not: docs/simulator.md. In short,
``gpu.sim.cuda`` stands where ``numba.cuda`` stands; ``@cuda.jit`` returns a kernel whose
source is rewritten once (bounds-checked indices, ``yield`` at barriers and warp
collectives) and run block by block, a block's threads in order, switching only where
threads wait for each other. GPU-defined errors (out of bounds, an index below -size
included: one in [-size, 0) wraps once, as Numba compiles it; divergent barriers; a warp mask
naming an absent lane) raise ``KernelFault`` with the thread and the line.
``SimKernel.record(grid, block, args, recorder)`` is a launch that tells a recorder every
global and shared access, atomic, barrier and warp collective (gpu/sim/recording.py: the
memory trace, gpu/trace/record.py, is its user).

This package imports nothing else of the lab's: the engine's backend (gpu/core/backend.py)
chooses it.
"""

from gpu.sim.errors import KernelFault
from gpu.sim.host import MODULE as cuda
from gpu.sim.host import SHUFFLE_ENV, set_shuffle
from gpu.sim.kernel import SimKernel, jit

__all__ = ["SHUFFLE_ENV", "KernelFault", "SimKernel", "cuda", "jit", "set_shuffle"]
