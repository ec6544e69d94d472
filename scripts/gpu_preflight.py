"""Preflight for `make gpu-verify`: prove, in seconds, that the run ahead will use a real GPU.

Each check returns the one reason it failed, or None. The first failure is printed as one
line ("preflight failed: ...") and the exit status is 3, so a lent GPU's minutes are not
spent on a run that would skip every GPU test and pass anyway (the simulator in the
environment, libcuda not loading, numba choosing the simulator, versions off the pins).
"""

from __future__ import annotations

import ctypes
import importlib.metadata as metadata
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def pins() -> dict[str, str]:
    """The exact versions requirements.txt pins (numba, numba-cuda)."""
    found = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        match = re.match(r"^(numba|numba-cuda)==([\w.]+)", line.strip())
        if match:
            found[match[1]] = match[2]
    return found


def no_simulator_requested() -> str | None:
    value = os.environ.get("NUMBA_ENABLE_CUDASIM", "")
    if value not in ("", "0"):
        return f"NUMBA_ENABLE_CUDASIM={value} is set: numba would run its CUDA simulator, not the GPU; unset it"
    return None


def driver_answers() -> str | None:
    if shutil.which("nvidia-smi") is None:
        return "nvidia-smi is not on PATH: no NVIDIA driver on this machine"
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        return "nvidia-smi did not answer within 10 s"
    if done.returncode != 0 or not done.stdout.strip():
        return f"nvidia-smi failed (exit {done.returncode}): {(done.stderr or done.stdout).strip()[:200]}"
    return None


def libcuda_loads() -> str | None:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return (
            f"libcuda.so.1 does not load ({exc}): the driver's CUDA library is missing, so numba cannot reach the GPU"
        )
    return None


def versions_match_the_pins() -> str | None:
    for name, pinned in pins().items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            return f"{name} is not installed (the project pins {name}=={pinned})"
        if installed != pinned:
            return (f"{name} {installed} is installed but the project pins {name}=={pinned} (its cache key and "
                    "behaviour differ)")
    return None


def numba_chose_the_gpu() -> str | None:
    from numba import config, cuda

    if config.ENABLE_CUDASIM:
        return "numba.config.ENABLE_CUDASIM is on: numba chose its simulator"
    if not cuda.is_available():
        return "numba.cuda.is_available() is False: numba found no usable GPU (driver or toolkit)"
    try:
        cuda.get_current_device()
    except Exception as exc:  # any failure here is the one reason to report
        return f"numba could not open the GPU: {exc}"
    return None


def a_kernel_runs_and_agrees() -> str | None:
    """Compile (NVVM, ptxas, the driver's loader) and run one vector add; bit-identical to NumPy."""
    import numpy as np
    from numba import cuda

    @cuda.jit
    def add(a, b, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a[i] + b[i]

    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(4096, dtype=np.float32) for _ in range(2))
    try:
        out = cuda.device_array_like(a)
        add[16, 256](cuda.to_device(a), cuda.to_device(b), out)
        got = out.copy_to_host()
    except Exception as exc:
        return f"a tiny kernel did not compile or run on the GPU: {str(exc).splitlines()[0][:300]}"
    if not np.array_equal(got, a + b):
        return f"a tiny vector add on the GPU disagreed with NumPy at {int(np.sum(got != a + b))} of 4096 elements"
    return None


CHECKS = (no_simulator_requested, driver_answers, libcuda_loads, versions_match_the_pins, numba_chose_the_gpu,
          a_kernel_runs_and_agrees)


def main() -> int:
    start = time.perf_counter()
    for check in CHECKS:
        reason = check()
        if reason:
            print(f"preflight failed: {reason}", file=sys.stderr)
            return 3
    from numba import cuda

    device = cuda.get_current_device()
    name = device.name.decode() if isinstance(device.name, bytes) else device.name
    print(
        f"preflight ok in {time.perf_counter() - start:.1f} s: {name} (sm_{device.compute_capability[0]}"
        f"{device.compute_capability[1]}), numba {metadata.version('numba')}, numba-cuda "
        f"{metadata.version('numba-cuda')}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
