"""The host side of the lab's simulator: a module that stands where ``numba.cuda`` stands.

``jit`` and the kernel objects are the lab's (gpu/sim/kernel.py); memory, streams and
events are numba-cuda's simulated ones (``to_device`` returns its FakeCUDAArray, whose
NumPy array a kernel reads and writes in place). Simulated events time nothing a GPU
did: the lab marks every simulated time as simulated and never shows it as GPU time.
"""

from __future__ import annotations

import importlib
import types

from gpu.sim.engine import SHUFFLE_ENV, set_shuffle
from gpu.sim.kernel import MODULE_SENTINEL, jit


class SimulatorModule(types.ModuleType):
    """``cuda`` for the lab's simulator: the lab's ``jit``; everything else from numba-cuda's simulator."""

    jit = staticmethod(jit)
    lab_simulator = True

    def __getattr__(self, name: str):
        return getattr(importlib.import_module("numba.cuda"), name)


MODULE = SimulatorModule("gpu.sim.cuda", __doc__)
MODULE_SENTINEL[0] = MODULE

__all__ = ["MODULE", "SHUFFLE_ENV", "SimulatorModule", "set_shuffle"]
