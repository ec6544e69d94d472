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

import os
from dataclasses import dataclass, field
from typing import Mapping

from gpu.core.backend import BACKEND
from gpu.core.limits import SIMULATOR_MAX_N, InputError, parse_int, parse_size

ENV_MAX_N = "KERNEL_LAB_MAX_N"
ENV_MAX_REPEATS = "KERNEL_LAB_MAX_REPEATS"
ENV_MAX_SWEEP_POINTS = "KERNEL_LAB_MAX_SWEEP_POINTS"
ENV_MAX_WORK = "KERNEL_LAB_MAX_WORK"

# (hardware, simulator) defaults; see the module docstring for why.
DEFAULT_MAX_N = (2**30, SIMULATOR_MAX_N)
DEFAULT_MAX_REPEATS = (100, 100)
DEFAULT_MAX_SWEEP_POINTS = (24, 24)
DEFAULT_MAX_WORK = (2**32, 2**19)
REPEAT_CEILING = 1000  # gpu.core.limits.MAX_REPEATS: configuration may lower it, never raise it


@dataclass(frozen=True)
class AdmissionConfig:
    """Configured ceilings for one run. ``max_work`` counts elements x passes (warm-up included)."""

    max_n: int
    max_repeats: int
    max_sweep_points: int
    max_work: int
    problems: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        return {
            "max_n": self.max_n,
            "max_repeats": self.max_repeats,
            "max_sweep_points": self.max_sweep_points,
            "max_work": self.max_work,
            "problems": list(self.problems),
        }


def _read(env: Mapping[str, str], name: str, default: int, parse, problems: list[str], ceiling: int | None = None) -> int:
    raw = env.get(name)
    if raw is None or not str(raw).strip():
        return default
    try:
        value = parse(raw, name)
        if value < 1:
            raise InputError(f"{name} must be at least 1")
    except InputError as exc:
        problems.append(f"{name}={raw!r} ignored ({exc}); using {default:,}")
        return default
    if ceiling is not None and value > ceiling:
        problems.append(f"{name}={raw!r} is above the hard ceiling {ceiling:,}; using {ceiling:,}")
        return ceiling
    return value


def load_config(env: Mapping[str, str] | None = None, simulated: bool | None = None) -> AdmissionConfig:
    """The limits in force: defaults for this backend, overridden by the environment."""
    env = os.environ if env is None else env
    which = int(BACKEND.simulated if simulated is None else simulated)
    problems: list[str] = []
    config = AdmissionConfig(
        max_n=_read(env, ENV_MAX_N, DEFAULT_MAX_N[which], parse_size, problems),
        max_repeats=_read(env, ENV_MAX_REPEATS, DEFAULT_MAX_REPEATS[which], parse_int, problems, REPEAT_CEILING),
        max_sweep_points=_read(env, ENV_MAX_SWEEP_POINTS, DEFAULT_MAX_SWEEP_POINTS[which], parse_int, problems),
        max_work=_read(env, ENV_MAX_WORK, DEFAULT_MAX_WORK[which], parse_size, problems),
    )
    return AdmissionConfig(config.max_n, config.max_repeats, config.max_sweep_points, config.max_work, tuple(problems))


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


def check_sweep_points(points: int | str, config: AdmissionConfig | None = None) -> int:
    """Validate the number of points (sizes, block sizes...) in a sweep; return it."""
    config = config or load_config()
    value = parse_int(points, "sweep points")
    if not 1 <= value <= config.max_sweep_points:
        raise InputError(f"a sweep may have 1 to {config.max_sweep_points} points ({ENV_MAX_SWEEP_POINTS}), got {value}")
    return value


def describe(config: AdmissionConfig | None = None, max_n_now: int | None = None) -> str:
    """One line for the sidebar: the limits a run is admitted under."""
    config = config or load_config()
    n_part = f"N ≤ {max_n_now:,} now" if max_n_now is not None else f"N ≤ {config.max_n:,}"
    return (
        f"{n_part} (configured {config.max_n:,}, and free memory) · repeats ≤ {config.max_repeats} · "
        f"sweeps ≤ {config.max_sweep_points} points · N × passes ≤ {config.max_work:,}"
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


# One function, defined with the memory primitives so the experiments (a lower layer)
# use the same one; re-exported here for the UI's out-of-memory path.
from gpu.core.limits import release_device_memory  # noqa: E402,F401
