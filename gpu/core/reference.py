"""Reference implementations: ``a + b`` through CuPy and PyTorch, timed like the kernel.

Both are optional. Each is imported only when asked for; when it cannot be imported
(or there is no GPU for it) ``unavailable_reason`` says why and the caller records the
reference as skipped. Inputs are copied to the device once, outside the timed region,
and the output is preallocated, so each sample times exactly the work the Numba
kernel does: read a and b, write c, on device-resident data.

Timed exactly as the Numba kernel is: the library's own stream is
wrapped with ``cuda.external_stream``, and ``gpu.core.kernel_timing.time_on_device`` flushes
the L2, holds that stream, and records the events around the library's ``add`` on
it, checking the hold. Timing ``a + b`` with plain events once counted the library's
launch overhead too, and at small N made the Numba kernel look 3–4x faster than
PyTorch when it was not.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import numpy as np

from gpu.core.agreement import identical
from gpu.core.backend import BACKEND
from gpu.core.kernel_timing import time_on_device
from gpu.core.timing import RepeatPolicy, Stats

REFERENCES = ("cupy", "torch")
LABELS = {"cupy": "CuPy a + b", "torch": "PyTorch a + b"}
_MODULES = {"cupy": "cupy", "torch": "torch"}


class ReferenceUnavailable(RuntimeError):
    """The library cannot run here; the message says why."""


@dataclass(frozen=True)
class ReferenceTiming:
    """One reference at one size: event-timed samples (seconds) and agreement with NumPy."""

    name: str
    n: int
    stats: Stats
    agree: bool  # the library's c is bit-identical to NumPy's a + b


def unavailable_reason(name: str) -> str | None:
    """None when ``name`` can run on this machine, else a one-line reason."""
    if name not in REFERENCES:
        return f"unknown reference {name!r}; choose from {', '.join(REFERENCES)}"
    if BACKEND.simulated:
        return f"{LABELS[name]} needs a real GPU; kernels run in the CUDA simulator here"
    try:
        module = importlib.import_module(_MODULES[name])
    except Exception as exc:  # ImportError, or a broken install raising anything else
        return f"{_MODULES[name]} is not importable ({type(exc).__name__}: {exc})"
    try:
        if name == "torch" and not module.cuda.is_available():
            return "PyTorch is installed without a usable CUDA device"
        if name == "cupy" and module.cuda.runtime.getDeviceCount() < 1:
            return "CuPy sees no CUDA device"
    except Exception as exc:
        return f"{_MODULES[name]} cannot reach the GPU ({type(exc).__name__}: {exc})"
    return None


def time_reference(
    name: str,
    a: np.ndarray,
    b: np.ndarray,
    policy: RepeatPolicy,
    expected: np.ndarray | None = None,
    *,
    flush_l2: bool = True,
    ops=None,
    resident=None,
) -> ReferenceTiming:
    """Time ``c = a + b`` on the GPU through library ``name`` per ``policy``.

    ``expected`` is NumPy's a + b when the caller has it (computed here otherwise).
    ``resident`` (``gpu.core.resident.ResidentInputs``): read a and b from it without a copy
    and check the result against its a + b on the device, instead of uploading and comparing
    on the host.
    Raises ReferenceUnavailable when the library cannot run here. Device memory the
    library cached is released before returning, so the next size starts clean.
    """
    reason = unavailable_reason(name)
    if reason is not None:
        raise ReferenceUnavailable(reason)
    library = LIBRARIES[name]()
    expected = np.add(a, b) if expected is None else expected
    return time_on_library_stream(name, library, a, b, policy, expected, flush_l2=flush_l2, ops=ops,
                                  resident=resident)


def time_on_library_stream(
    name: str,
    library,
    a: np.ndarray,
    b: np.ndarray,
    policy: RepeatPolicy,
    expected: np.ndarray,
    *,
    flush_l2: bool = True,
    ops=None,
    resident=None,
) -> ReferenceTiming:
    """The one timing path of every reference: ``time_on_device`` on the library's stream.

    ``library`` is an adapter (``LIBRARIES``): upload, wrap (a device array, without a copy),
    empty_like, add (queued on its stream), synchronize, download, free, and ``stream_ptr``,
    the raw CUDA stream. With ``resident`` the inputs are its device arrays and the result
    is checked on the device.
    """
    try:
        # prepare: device-resident inputs and output on the library's stream
        if resident is not None:
            d_a, d_b = library.wrap(resident.a), library.wrap(resident.b)
        else:
            d_a, d_b = library.upload(a), library.upload(b)
        d_c = library.empty_like(d_a)
        library.synchronize()
        stream = external_stream(library.stream_ptr)  # the same stream, seen by Numba
        # the closure reads d_a, d_b and d_c while time_on_device runs, before the del below
        stats = time_on_device(queue=lambda: library.add(d_a, d_b, d_c), stream=stream, policy=policy,  # noqa: F821
                               launch_label=f"{LABELS[name]} on its own stream", working_set_bytes=3 * a.nbytes,
                               flush_l2=flush_l2, telemetry=False, ops=ops).stats
        if resident is not None:
            library.synchronize()
            agree = resident.identical(d_c)
        else:
            agree = identical(library.download(d_c), expected)
        del d_a, d_b, d_c
        return ReferenceTiming(name, a.size, stats, agree)
    finally:
        library.free()


def external_stream(ptr: int):
    """Numba's view of a CUDA stream another library created (``cuda.external_stream``)."""
    from gpu.core.backend import cuda

    return cuda.external_stream(ptr)


class _CuPy:
    """CuPy's ``cp.add(a, b, out=c)`` on a non-blocking stream of its own."""

    def __init__(self):
        import cupy as cp

        self.cp = cp
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.stream_ptr = int(self.stream.ptr)

    def upload(self, x):
        with self.stream:
            return self.cp.asarray(x)

    def wrap(self, device_array):
        """A CuPy view of a Numba device array (``__cuda_array_interface__``): no copy."""
        return self.cp.asarray(device_array)

    def empty_like(self, x):
        with self.stream:
            return self.cp.empty_like(x)

    def add(self, x, y, out):
        with self.stream:
            self.cp.add(x, y, out=out)

    def synchronize(self):
        self.stream.synchronize()

    def download(self, x):
        self.stream.synchronize()
        return self.cp.asnumpy(x)

    def free(self):
        self.stream.synchronize()
        self.cp.get_default_memory_pool().free_all_blocks()


class _Torch:
    """PyTorch's ``torch.add(a, b, out=c)`` on a stream of its own."""

    def __init__(self):
        import torch

        self.torch = torch
        self.stream = torch.cuda.Stream()
        self.stream_ptr = int(self.stream.cuda_stream)

    def upload(self, x):
        with self.torch.cuda.stream(self.stream):
            return self.torch.from_numpy(x).to("cuda", non_blocking=False)

    def wrap(self, device_array):
        """A PyTorch view of a Numba device array (``__cuda_array_interface__``): no copy."""
        return self.torch.as_tensor(device_array, device="cuda")

    def empty_like(self, x):
        with self.torch.cuda.stream(self.stream):
            return self.torch.empty_like(x)

    def add(self, x, y, out):
        with self.torch.cuda.stream(self.stream):
            self.torch.add(x, y, out=out)

    def synchronize(self):
        self.stream.synchronize()

    def download(self, x):
        self.stream.synchronize()
        return x.cpu().numpy()

    def free(self):
        self.stream.synchronize()
        self.torch.cuda.empty_cache()


# Every reference and its library adapter; all are timed by time_on_library_stream.
LIBRARIES = {"cupy": _CuPy, "torch": _Torch}




def available_references() -> dict[str, str | None]:
    """Every reference -> None (usable) or why not. Imports the libraries: call lazily."""
    return {name: unavailable_reason(name) for name in REFERENCES}


__all__ = [
    "LABELS",
    "REFERENCES",
    "ReferenceTiming",
    "ReferenceUnavailable",
    "available_references",
    "time_on_library_stream",
    "time_reference",
    "unavailable_reason",
]
