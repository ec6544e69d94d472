"""The memory-access trace: run a kernel at a small size in Kernel Lab's CUDA simulator with every
global and shared memory access recorded (through the simulator's own hooks, gpu/sim/recording.py),
and report races (barriers and syncwarp ordering, atomics included), out-of-bounds accesses,
barrier divergence, sectors per warp request and bank conflicts (issues 21 and 26).

``record`` (the recorder) -> ``analysis`` (pure findings) -> ``report.TraceReport``; ``lab``
names the lab's kernels, ``child`` traces them in a fresh process for the app, ``submission``
traces a learner's kernel in the write-a-kernel sandbox, ``cli`` is ``python -m gpu trace``.
"""

# The traced size's bound, for the Kernels page's size input and ``python -m gpu trace --n``: a trace's work (its
# catalog cost: N elements, N × N for a matrix, N³ multiply-adds for matmul) at most 65,536, so N ≤ 65,536 for a
# vector, ≤ 256 for a matrix, ≤ 40 for matmul. At most DEFAULT_MAX_BLOCKS (8) blocks run whatever the size, so above
# this a trace only costs time (a grid-stride step's threads loop over all of it): at the bound the slowest lab
# kernel traces in under 10 s on a 2-core machine (measured for docs/simulator.md), which keeps the pages interactive.
MAX_TRACE_WORK = 2**16
