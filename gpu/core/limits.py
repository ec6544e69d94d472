"""Input validation and size limits, shared by the command line and the app.

Every check raises ``InputError`` with a message that says what was wrong, what is
allowed and what to do. Soft problems (a block size that leaves warps partly idle)
come back as warning strings instead.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Mapping

from gpu.core.backend import BACKEND

BYTES_PER_FLOAT32 = 4
MAX_THREADS_PER_BLOCK = 1024  # CUDA's limit on every current GPU
WARP_SIZE = 32
SIMULATOR_MAX_N = 16_384  # ~0.1 ms per simulated thread: one launch stays near 2 s
MAX_REPEATS = 1000  # more samples than this add nothing but waiting; configuration may lower it, never raise it
# Host arrays a vector-add run holds at once: a, b, the reference, the GPU result and
# one CPU output buffer, plus headroom for NumPy temporaries.
HOST_ARRAYS_PER_RUN = 6
# Device arrays: a, b and c.
DEVICE_ARRAYS_PER_RUN = 3
MEMORY_SAFETY = 0.8  # never plan to use more than this share of what is free


class InputError(ValueError):
    """A user-supplied value is out of range; the message is meant to be shown as is."""


# --- configured ceilings (admission limits) -----------------------------------------
# Read by the validators below and by gpu/service/admission.py (which says why these defaults).

ENV_MAX_N = "KERNEL_LAB_MAX_N"
ENV_MAX_REPEATS = "KERNEL_LAB_MAX_REPEATS"
ENV_MAX_SWEEP_POINTS = "KERNEL_LAB_MAX_SWEEP_POINTS"
ENV_MAX_WORK = "KERNEL_LAB_MAX_WORK"

# (hardware, simulator) defaults; see the module docstring for why.
DEFAULT_MAX_N = (2**30, SIMULATOR_MAX_N)
DEFAULT_MAX_REPEATS = (100, 100)
DEFAULT_MAX_SWEEP_POINTS = (24, 24)
DEFAULT_MAX_WORK = (2**32, 2**19)


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
        max_repeats=_read(env, ENV_MAX_REPEATS, DEFAULT_MAX_REPEATS[which], parse_int, problems, MAX_REPEATS),
        max_sweep_points=_read(env, ENV_MAX_SWEEP_POINTS, DEFAULT_MAX_SWEEP_POINTS[which], parse_int, problems),
        max_work=_read(env, ENV_MAX_WORK, DEFAULT_MAX_WORK[which], parse_size, problems),
    )
    return AdmissionConfig(config.max_n, config.max_repeats, config.max_sweep_points, config.max_work, tuple(problems))




_SIZE_RE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(?:(e|E)\s*(\d+)|\^\s*(\d+)|\*\*\s*(\d+))?\s*$")


def parse_size(text: str | int, name: str = "N") -> int:
    """Parse a positive element count: "10000000", "10_000_000", "10,000,000", "1e7", "2^20".

    Never evaluates code. Raises InputError for anything else.
    """
    if isinstance(text, bool):
        raise InputError(f"{name} must be a whole number, got {text!r}")
    if isinstance(text, int):
        value = text
    else:
        cleaned = str(text).replace("_", "").replace(",", "")
        match = _SIZE_RE.match(cleaned)
        if not match:
            raise InputError(
                f"{name} must be a whole number such as 1000000, 1e6 or 2^20; got {text!r}"
            )
        mantissa, _, exp10, pow_a, pow_b = match.groups()
        exponent = int(pow_a or pow_b or 1)
        if exp10 is not None and int(exp10) > 18 or exponent > 64:
            raise InputError(f"{name} is far too large: {text!r}")
        number = float(mantissa) * 10 ** int(exp10 or 0) if not (pow_a or pow_b) else float(mantissa) ** exponent
        if number > 2**62:
            raise InputError(f"{name} is far too large: {text!r}")
        if not number.is_integer():
            raise InputError(f"{name} must be a whole number, got {text!r}")
        value = int(number)
    if value <= 0:
        raise InputError(f"{name} must be at least 1, got {value}")
    return value


def host_available_bytes() -> int:
    """Host memory available to new allocations, in bytes (MemAvailable on Linux)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30  # unknown platform: assume a modest machine


def device_free_bytes() -> int | None:
    """Free device memory in bytes, or None in the simulator (it shares host memory)."""
    if BACKEND.simulated:
        return None
    from gpu.core.backend import cuda

    free, _total = cuda.current_context().get_memory_info()
    return int(free)


def max_vector_n(
    host_arrays: int = HOST_ARRAYS_PER_RUN, device_arrays: int = DEVICE_ARRAYS_PER_RUN
) -> int:
    """Largest float32 vector length a run may use now, from free host/device memory.

    Also capped by the configured admission limit (``KERNEL_LAB_MAX_N``, see
    gpu.service.admission), which in the simulator defaults to SIMULATOR_MAX_N so runs finish
    in seconds.
    """

    host = host_available_bytes() * MEMORY_SAFETY // (host_arrays * BYTES_PER_FLOAT32)
    limit = int(host)
    free = device_free_bytes()
    if free is not None:
        limit = min(limit, int(free * MEMORY_SAFETY // (device_arrays * BYTES_PER_FLOAT32)))
    limit = min(limit, load_config().max_n)
    return max(limit, 0)


def check_n(n: int | str, max_n: int | None = None, name: str = "N") -> int:
    """Validate an element count against memory (and the simulator cap); return it."""
    value = parse_size(n, name)

    limit = max_vector_n() if max_n is None else max_n
    if value > limit:
        configured = load_config().max_n
        if BACKEND.simulated and limit == SIMULATOR_MAX_N:
            why = "the CUDA simulator's cap (about 0.1 ms per simulated thread)"
        elif limit == configured:
            why = f"this server's admission limit ({ENV_MAX_N})"
        else:
            why = "what fits in free host and device memory now"
        raise InputError(f"{name} = {value:,} is too large: the limit is {limit:,}, {why}.")
    return value


def check_threads(threads: int | str, device_max: int = MAX_THREADS_PER_BLOCK) -> int:
    """Validate threads per block (1 to the device's limit); return it. Warnings: ``check_threads_per_block``."""
    value = parse_int(threads, "threads per block")
    if not 1 <= value <= device_max:
        raise InputError(f"threads per block must be between 1 and {device_max} (the device limit), got {value}")
    return value


def parse_seconds(value: float | str, name: str) -> float:
    """A positive, finite number of seconds from a number or its text; InputError naming ``name``."""
    if isinstance(value, bool):
        raise InputError(f"{name} must be a number of seconds, got {value!r}")
    try:
        seconds = float(str(value).strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number of seconds such as 2 or 0.5, got {value!r}") from None
    if not (seconds > 0 and seconds < float("inf")):
        raise InputError(f"{name} must be more than 0 seconds, got {value!r}")
    return seconds


_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def parse_flag(value: bool | int | str) -> bool:
    """A yes/no value from a bool, 0/1 or its text ("true", "no"...)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise InputError(f"expected yes or no (true/false, 1/0), got {value!r}")


def check_threads_per_block(threads: int | str, device_max: int = MAX_THREADS_PER_BLOCK) -> list[str]:
    """Validate threads per block; raise InputError or return warnings (may be empty)."""
    value = check_threads(threads, device_max)
    if value % WARP_SIZE:
        idle = WARP_SIZE - value % WARP_SIZE
        return [
            f"{value} threads per block is not a multiple of the warp size ({WARP_SIZE}): "
            f"the last warp of every block runs with {idle} of its {WARP_SIZE} lanes idle."
        ]
    return []


def check_repeats(repeats: int | str) -> int:
    """Validate a repeat count (1 to the configured KERNEL_LAB_MAX_REPEATS, at most MAX_REPEATS); return it."""

    value = parse_int(repeats, "repeats")
    limit = min(MAX_REPEATS, load_config().max_repeats)
    if not 1 <= value <= limit:
        where = f" (this server's limit, {ENV_MAX_REPEATS})" if limit < MAX_REPEATS else ""
        raise InputError(f"repeats must be between 1 and {limit}{where}, got {value}")
    return value


def parse_int(value: int | str, name: str) -> int:
    """A whole number from an int or its text, written as N is ("256", "1e3", "2^7", "1,000");
    zero and negatives pass (callers check ranges), anything else is InputError naming ``name``."""
    if isinstance(value, bool):
        raise InputError(f"{name} must be a whole number, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    text = str(value).strip()
    negative = text.startswith("-")
    try:
        magnitude = parse_size(text[1:] if negative else text, name) if text.lstrip("-") not in ("0", "") else 0
    except InputError:
        raise InputError(f"{name} must be a whole number such as 256, 1e3 or 2^8, got {value!r}") from None
    return -magnitude if negative else magnitude

def check_sweep_points(points: int | str, config: AdmissionConfig | None = None) -> int:
    """Validate the number of points (sizes, block sizes...) in a sweep; return it."""
    config = config or load_config()
    value = parse_int(points, "sweep points")
    if not 1 <= value <= config.max_sweep_points:
        raise InputError(f"a sweep may have 1 to {config.max_sweep_points} points ({ENV_MAX_SWEEP_POINTS}), got {value}")
    return value


def release_device_memory(collect: bool = True, context=None) -> bool:
    """Free what a run left behind: drop Python references, then flush Numba's pending frees.

    The one function every caller uses (the UI after out-of-memory, the Scaling sweep
    between sizes). Why ``memory_manager.deallocations`` (issue 10, item 12): Numba
    queues a device array's free on its context's memory manager, so clearing
    ``context.deallocations`` (as this once did) left the memory held; only the sweep
    cleared the right queue. ``collect`` runs the garbage collector first (tens of ms
    with PyTorch and CuPy loaded; needed after a failure, whose traceback can keep
    device arrays alive in a cycle). ``context`` is for tests (default: the current
    CUDA context). Returns True when a queue was flushed.
    """
    import gc

    if collect:
        gc.collect()
    if context is None:
        if BACKEND.simulated:
            return False
        try:
            from gpu.core.backend import cuda

            context = cuda.current_context()
        except Exception:  # best effort: the context may itself be broken after the failure
            return False
    try:
        context.memory_manager.deallocations.clear()
    except Exception:  # an external memory manager without the queue, or a broken context
        return False
    return True
