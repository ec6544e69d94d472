"""Admission limits for a shared machine: how big a run may be, from configuration and free memory.

One user's run must not hold the GPU (or the host) for minutes while others queue, so
the largest N, repeat count and sweep length are bounded by configuration, and a run's
total work (elements x passes) by a budget. Defaults keep one run under about a minute:

- hardware: N up to 2^30 (4 GiB per float32 vector), repeats up to 100, 24 sweep points,
  and N x (repeats + 1 warm-up) up to 2^32 elements — about 20 s of copies, kernels and
  CPU baselines at the largest N on a current workstation;
- simulator (about 0.1 ms per simulated GPU thread): N up to 16,384 and N x (repeats + 1)
  up to 2^19, about 50 s of simulated kernels.

Environment variables override them (read on every call, so a restart is not needed):
``KERNEL_LAB_MAX_N``, ``KERNEL_LAB_MAX_REPEATS``, ``KERNEL_LAB_MAX_SWEEP_POINTS``,
``KERNEL_LAB_MAX_WORK`` (elements x passes). The free host and device memory at the
moment still bound N (``gpu.core.limits.max_vector_n``). A malformed value is ignored (the
default applies) and reported in ``AdmissionConfig.problems``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from gpu.core.backend import BACKEND
from gpu.core.limits import ENV_MAX_WORK, AdmissionConfig, InputError, kernel_cap, load_config

if TYPE_CHECKING:
    from gpu.catalog.base import Experiment, Progress

def admit(experiment: Experiment, params: Mapping[str, Any], config: AdmissionConfig | None = None) -> int:
    """Refuse a run of ``experiment`` whose work is over the budget, before it queues.

    Every surface (page form, CLI, cluster submission) calls this with parsed parameters,
    so no experiment can hold the shared device longer than the budget allows. Returns
    the run's work in element-passes; raises InputError saying what to change.
    """
    config = config or load_config()
    work = int(experiment.work(params))
    if work > config.max_work:
        raise InputError(
            f"This {experiment.title} run is too long for the shared machine: {work:,} "
            f"{'simulated-kernel ' if BACKEND.simulated else ''}element-passes, "
            f"over the budget of {config.max_work:,} ({ENV_MAX_WORK}). Use a smaller size or fewer repeats."
        )
    return work


def admit_and_run(
    name: str, raw_params: Mapping[str, Any], progress: Progress | Callable[[str], None] | None = None
) -> Any:
    """Parse, admit and run one experiment by name: what a cluster worker or a script calls.

    Only plain parameters cross this boundary, never code. Raises InputError for bad
    parameters or a run over the admission limits, before any work starts.
    """
    from gpu.catalog.registry import get

    experiment = get(name)
    params = experiment.parse(raw_params, BACKEND.simulated)
    admit(experiment, params)
    return experiment.execute(params, progress)


def check_work(n: int, repeats: int, points: int = 1, warmup: int = 1, config: AdmissionConfig | None = None) -> int:
    """Refuse a run whose elements x passes exceed the work budget; return the work in elements.

    ``points`` is the number of sizes in a sweep (use the sum of sizes / n when they differ:
    pass ``n`` as the largest size for a conservative bound).
    """
    config = config or load_config()
    work = int(n) * (int(repeats) + int(warmup)) * int(points)
    if work > config.max_work:
        passes = int(repeats) + int(warmup)
        most = max(config.max_work // (int(n) * int(points)) - int(warmup), 0)
        hint = f"at N = {int(n):,} use at most {most} repeats" if most >= 1 else "use a smaller N"
        raise InputError(
            f"This run is too long for the shared machine: N = {int(n):,} x {passes} passes"
            f"{f' x {points} sizes' if points > 1 else ''} = {work:,} element-passes, over the budget of "
            f"{config.max_work:,} ({ENV_MAX_WORK}); {hint}."
        )
    return work




def describe(config: AdmissionConfig | None = None, max_n_now: int | None = None) -> str:
    """One line for the sidebar: the limits a run is admitted under."""
    config = config or load_config()
    n_part = f"N ≤ {max_n_now:,} now" if max_n_now is not None else f"N ≤ {config.max_n:,}"
    kernels = "simulated kernels: " if BACKEND.simulated else ""
    vector_cap = kernel_cap(config, vectorised=True)
    vector = ""
    if vector_cap is not None and vector_cap != config.max_n:  # the same cap the Vector add form states
        vector = f"; N ≤ {vector_cap:,} where the simulator's vectorised tier runs the kernel (Vector add)"
    cpu = (f" · CPU side of Vector add and Scaling: N ≤ {config.max_cpu_n:,} (and free memory), "
           f"N × passes ≤ {config.max_cpu_work:,}") if BACKEND.simulated else ""  # counted apart
    return (
        f"{kernels}{n_part} (configured {config.max_n:,}, and free memory){vector} · repeats ≤ {config.max_repeats} · "
        f"sweeps ≤ {config.max_sweep_points} points · N × passes ≤ {config.max_work:,}{cpu}"
    )


# --- running out of memory -------------------------------------------------------------

_OOM_TYPES = {"OutOfMemoryError", "CUDARuntimeError", "CudaAPIError", "CudaDriverError"}


def is_out_of_memory(exc: BaseException) -> bool:
    """True for host MemoryError and for device out-of-memory from Numba, CuPy or PyTorch."""
    if isinstance(exc, MemoryError):
        return True
    text = str(exc).upper()
    named = type(exc).__name__ in _OOM_TYPES or "CUDA" in text
    return type(exc).__name__ == "OutOfMemoryError" or (named and ("OUT_OF_MEMORY" in text or "OUT OF MEMORY" in text))


def out_of_memory_message(exc: BaseException, device_name: str) -> str:
    """What a user sees after an out-of-memory failure: where, what was released, what to do."""
    where = "host (CPU) memory" if isinstance(exc, MemoryError) else f"memory on {device_name}"
    return (
        f"Out of {where}: the run needed more than was free at that moment (other users' runs "
        "and programs share this machine). Nothing was saved for this run; the GPU has been "
        "released and its memory freed. Try a smaller N or fewer repeats, or try again later."
    )
