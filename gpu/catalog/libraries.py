"""The catalog's library references on the GPU (CuPy, PyTorch, a device copy), timed as the Numba steps are.

A ``Library`` (one of a catalog kernel's ``KernelSpec.libraries``, gpu/catalog/steps.py) queues its work on Numba's
stream, through each library's wrapper of that stream, so that ``gpu.core.kernel_timing.time_on_device`` times it
exactly as it times a step: on device-resident inputs, copied in once outside the timing. ``library_problem`` says
why one cannot run here (the simulator, a library not installed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from gpu.catalog.base import Params
from gpu.core.backend import BACKEND, cuda
from gpu.core.kernel_timing import KernelTiming, time_on_device
from gpu.core.reference import unavailable_reason
from gpu.core.timing import RepeatPolicy


@dataclass(frozen=True)
class Library:
    """A reference on the GPU. ``fn(xp, inputs, out)`` queues the work with library ``module``
    ("cupy", "torch"), or with Numba (``module`` None: ``fn(stream, inputs, out)``).
    ``same_work`` False: a yardstick (a copy of the same bytes), not the same computation.
    ``hold`` False: the call waits on the GPU from the host (CuPy's and PyTorch's
    ``bincount`` read the input's maximum), so behind a stream hold every sample would
    expire; it is timed without one and every sample says it includes the launch.
    ``note``: shown beside its figures (e.g. it moves more bytes than the GB/s assumes)."""

    key: str
    label: str
    module: str | None
    fn: Callable[..., None]
    depth: Callable[[Params], int] | None = None
    same_work: bool = True
    hold: bool = True
    note: str | None = None


def _stream_pointer(stream) -> int:
    handle = stream.handle
    return int(getattr(handle, "value", handle) or 0)


def _library_launcher(lib: Library, d_in: list, d_out, stream) -> Callable[[], None]:
    """A zero-argument launch that queues ``lib``'s work on ``stream`` (Numba's), so that
    ``time_on_device`` times it exactly as it times the Numba steps."""
    if lib.module is None:
        return lambda: lib.fn(stream, d_in, d_out)
    if lib.module == "cupy":
        import cupy as cp

        outer = cp.cuda.ExternalStream(_stream_pointer(stream))
        ins, out = [cp.asarray(d) for d in d_in], cp.asarray(d_out)

        def launch() -> None:
            with outer:
                lib.fn(cp, ins, out)

        return launch
    import torch

    outer = torch.cuda.ExternalStream(_stream_pointer(stream))
    # PyTorch has few uint32 kernels; counts below 2^31 have the same bits as int32
    as_torch = lambda d: torch.as_tensor(d.view(np.int32) if d.dtype == np.uint32 else d, device="cuda")  # noqa: E731
    ins, out = [as_torch(d) for d in d_in], as_torch(d_out)

    def torch_launch() -> None:
        with torch.cuda.stream(outer):
            lib.fn(torch, ins, out)

    return torch_launch


def time_library(
    lib: Library,
    inputs: Mapping[str, np.ndarray],
    host_out: np.ndarray,
    policy: RepeatPolicy,
    *,
    zeroed: bool = False,
    working_set_bytes: int,
    l2_bytes: int | None = None,
) -> tuple[KernelTiming, np.ndarray]:
    """Time ``lib`` on device-resident inputs (copied in once, outside the timing); returns (KernelTiming, output).

    ``host_out``: the output's host array, zeroed (the device's starts as a copy of it). A ``zeroed`` (accumulating)
    output is zeroed on the device again after the timing and read after one more run, so the check sees one run's
    counts. ``working_set_bytes``: the bytes the problem must move at least (whether the L2 could hold them).
    """
    stream = cuda.stream()
    d_in = [cuda.to_device(a, stream=stream) for a in inputs.values()]
    d_out = cuda.to_device(host_out, stream=stream)
    stream.synchronize()
    launcher = _library_launcher(lib, d_in, d_out, stream)
    label = f"{lib.label} on Numba's stream" + (
        "" if lib.hold else ", no hold: the call waits on the GPU from the host"
    )
    timing = time_on_device(
        queue=launcher,
        stream=stream,
        policy=policy,
        hold=lib.hold,
        launch_label=label,
        working_set_bytes=working_set_bytes,
        l2_bytes=l2_bytes,
        telemetry=False,
    )
    if zeroed:  # every run added into it: one clean run for the check
        d_out.copy_to_device(host_out, stream=stream)
        launcher()
    d_out.copy_to_host(host_out, stream=stream)
    stream.synchronize()
    return timing, host_out


def library_problem(lib: Library) -> str | None:
    """None when ``lib`` can run here, else why not."""
    if lib.module is None:
        return None
    if BACKEND.simulated:
        return f"{lib.label} needs a real GPU; kernels run in the CUDA simulator here"
    return unavailable_reason(lib.module)


__all__ = ["Library", "library_problem", "time_library"]
