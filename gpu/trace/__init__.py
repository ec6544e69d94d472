"""The memory-access trace: run a kernel at a small size in Numba's CUDA simulator with every
global and shared memory access recorded, and report races, out-of-bounds accesses, barrier
divergence, sectors per warp request and bank conflicts (issue 21).

``record`` (the interception, explained there) -> ``analysis`` (pure findings) ->
``report.TraceReport``; ``lab`` names the lab's kernels, ``child`` traces them in a fresh
process for the app, ``submission`` traces a learner's kernel in the write-a-kernel
sandbox, ``cli`` is ``python -m gpu trace``.
"""
