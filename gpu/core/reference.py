"""Reference implementations: ``a + b`` through CuPy and PyTorch, timed like the kernel.

Both are optional. Each is imported only when asked for; when it cannot be imported
(or there is no GPU for it) ``unavailable_reason`` says why and the caller records the
reference as skipped. Inputs are copied to the device once, outside the timed region,
and the output is preallocated, so each sample times exactly the work the Numba
kernel does: read a and b, write c, on device-resident data. Samples come from the
library's own CUDA events recorded on its own stream, in seconds.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
import numpy as np

from gpu.core.backend import BACKEND
from gpu.core.timing import RepeatPolicy, Stats, collect

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
    name: str, a: np.ndarray, b: np.ndarray, policy: RepeatPolicy, expected: np.ndarray | None = None
) -> ReferenceTiming:
    """Time ``c = a + b`` on the GPU through library ``name`` per ``policy``.

    ``expected`` is NumPy's a + b when the caller has it (computed here otherwise).
    Raises ReferenceUnavailable when the library cannot run here. Device memory the
    library cached is released before returning, so the next size starts clean.
    """
    reason = unavailable_reason(name)
    if reason is not None:
        raise ReferenceUnavailable(reason)
    timer = _cupy_timer if name == "cupy" else _torch_timer
    return timer(a, b, policy, np.add(a, b) if expected is None else expected)


def _cupy_timer(a: np.ndarray, b: np.ndarray, policy: RepeatPolicy, expected: np.ndarray) -> ReferenceTiming:
    import cupy as cp

    try:
        # prepare: device-resident inputs and output, events created once
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            d_a, d_b = cp.asarray(a), cp.asarray(b)
            d_c = cp.empty_like(d_a)
        stream.synchronize()
        start, end = cp.cuda.Event(), cp.cuda.Event()

        def once() -> dict[str, float]:
            with stream:
                start.record(stream)
                cp.add(d_a, d_b, out=d_c)
                end.record(stream)
            end.synchronize()
            return {"ref": cp.cuda.get_elapsed_time(start, end) / 1e3}  # ms -> s

        stats = collect(once, policy, noise_key="ref")["ref"]
        agree = bit_identical(cp.asnumpy(d_c), expected)
        del d_a, d_b, d_c
        return ReferenceTiming("cupy", a.size, stats, agree)
    finally:
        cp.get_default_memory_pool().free_all_blocks()


def _torch_timer(a: np.ndarray, b: np.ndarray, policy: RepeatPolicy, expected: np.ndarray) -> ReferenceTiming:
    import torch

    try:
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            d_a = torch.from_numpy(a).to("cuda", non_blocking=False)
            d_b = torch.from_numpy(b).to("cuda", non_blocking=False)
            d_c = torch.empty_like(d_a)
        stream.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)

        def once() -> dict[str, float]:
            with torch.cuda.stream(stream):
                start.record(stream)
                torch.add(d_a, d_b, out=d_c)
                end.record(stream)
            end.synchronize()
            return {"ref": start.elapsed_time(end) / 1e3}  # ms -> s

        stats = collect(once, policy, noise_key="ref")["ref"]
        agree = bit_identical(d_c.cpu().numpy(), expected)
        del d_a, d_b, d_c
        return ReferenceTiming("torch", a.size, stats, agree)
    finally:
        torch.cuda.empty_cache()


def bit_identical(c: np.ndarray, expected: np.ndarray) -> bool:
    """True when two float32 arrays hold the same bits everywhere (cheap: no float64 copies)."""
    return c.shape == expected.shape and bool(np.array_equal(c.view(np.uint32), expected.view(np.uint32)))


def available_references() -> dict[str, str | None]:
    """Every reference -> None (usable) or why not. Imports the libraries: call lazily."""
    return {name: unavailable_reason(name) for name in REFERENCES}


__all__ = ["LABELS", "REFERENCES", "ReferenceTiming", "ReferenceUnavailable", "available_references", "bit_identical", "time_reference", "unavailable_reason"]
