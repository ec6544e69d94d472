"""Decide between hardware CUDA and Numba's CUDA simulator, then import numba.cuda.

Numba fixes its choice when ``numba.cuda`` is first imported and cannot switch later,
so this module must run first: every module in ``gpu`` imports ``cuda`` from here.

Rule: if ``NUMBA_ENABLE_CUDASIM`` is already set, respect it. Otherwise probe the CUDA
driver library directly (``cuInit`` and a device count, through ctypes, without
importing numba.cuda) and fall back to the simulator when there is no usable GPU.

Which simulator: the lab's own (``gpu/sim``, docs/simulator.md) unless
``KERNEL_LAB_SIMULATOR=numba`` asks for numba-cuda's. Either way ``cuda`` here is what
kernels are written against: ``numba.cuda`` on a GPU and under numba-cuda's simulator,
``gpu.sim.cuda`` (the lab's ``jit``, numba-cuda's simulated memory) under the lab's.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from dataclasses import dataclass
from typing import Any

from gpu.core import settings as _settings  # the standard library only: safe before numba.cuda

_ENV = "NUMBA_ENABLE_CUDASIM"
SIMULATOR_ENV = _settings.SIMULATOR.name  # "lab" (the default) or "numba"
SIMULATORS = _settings.SIMULATORS


@dataclass(frozen=True)
class Backend:
    """Where kernels run: ``kind`` is "cuda" or "simulator"; ``reason`` says why.

    ``engine`` is "cuda" on a GPU, else which simulator runs kernels: "lab" (gpu/sim) or
    "numba" (numba-cuda's).
    """

    kind: str
    reason: str
    engine: str = "cuda"

    @property
    def simulated(self) -> bool:
        return self.kind == "simulator"

    @property
    def lab_simulator(self) -> bool:
        return self.simulated and self.engine == "lab"

    @property
    def label(self) -> str:
        if not self.simulated:
            return "CUDA"
        return "Kernel Lab's CUDA simulator" if self.engine == "lab" else "Numba's CUDA simulator"


def probe_driver() -> str | None:
    """Return None when a CUDA driver reports at least one device, else why not."""
    if sys.platform == "win32":
        names = ["nvcuda.dll"]
    else:
        names = ["libcuda.so.1", "libcuda.so", ctypes.util.find_library("cuda")]
    lib = None
    for name in filter(None, names):
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            continue
    if lib is None:
        return "no CUDA driver library (libcuda) found"
    try:
        status = lib.cuInit(0)
        if status != 0:
            return f"the CUDA driver failed to initialise (cuInit error {status})"
        count = ctypes.c_int(0)
        status = lib.cuDeviceGetCount(ctypes.byref(count))
    except (AttributeError, OSError) as exc:  # a library without the driver API
        return f"the CUDA driver library is unusable ({exc})"
    if status != 0 or count.value < 1:
        return "the CUDA driver reports no devices"
    return None


def _decide() -> str:
    """Set NUMBA_ENABLE_CUDASIM if needed; return the reason for the choice."""
    if _ENV in os.environ:
        return f"{_ENV}={os.environ[_ENV]!r} was set in the environment"
    why_not = probe_driver()
    if why_not is None:
        return "a CUDA driver and device were found"
    os.environ[_ENV] = "1"
    return f"{why_not}; using a CUDA simulator"


def simulator_choice() -> str:
    """The simulator ``KERNEL_LAB_SIMULATOR`` names ("lab" when unset); a bad value is an error that says so."""
    return _settings.settings().simulator


_reason = _decide()

# numba-cuda 0.30 registers an overload for np.row_stack, which NumPy 2.5 removed:
# without this alias, compiling any kernel fails with AttributeError under NumPy 2.5.
import numpy as _np  # noqa: E402

if not hasattr(_np, "row_stack"):
    _np.row_stack = _np.vstack

from numba import cuda as _numba_cuda  # noqa: E402  (must follow the decision above)
from numba.cuda import config as _cuda_config  # noqa: E402

# numba.cuda, numba's simulator or Kernel Lab's (gpu.sim.cuda): three modules with one duck type, chosen at
# import, so the type checker sees the name as Any rather than the one module it would otherwise pick.
cuda: Any = _numba_cuda

# Report what numba actually chose: if numba.cuda was imported before this module,
# its choice stands whatever the environment says now.
_simulated = bool(vars(_cuda_config)["ENABLE_CUDASIM"])  # set by numba at import: not an attribute mypy sees
_engine = simulator_choice() if _simulated else "cuda"
BACKEND = Backend(
    kind="simulator" if _simulated else "cuda",
    reason=_reason + (f"; {'Kernel Lab' if _engine == 'lab' else 'Numba'}'s simulator runs the kernels" * _simulated),
    engine=_engine,
)
if BACKEND.lab_simulator:
    from gpu.sim import cuda as _lab_cuda

    cuda = _lab_cuda

__all__ = ["BACKEND", "SIMULATORS", "SIMULATOR_ENV", "Backend", "cuda", "probe_driver", "simulator_choice"]
