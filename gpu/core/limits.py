"""Input validation and size limits, shared by the command line and the app.

Every check raises ``InputError`` with a message that says what was wrong, what is
allowed and what to do; every ``check_*`` returns the checked value. Soft problems (a
block size that leaves warps partly idle) come from ``threads_per_block_warnings``,
which never raises.

One size notion per purpose:

==========================  ============================================================
``parse_size``               any element count as written ("1e6", "2^20"), no limit
``check_n``                  an N the *device* runs at: fits free host and device memory
                             and ``KERNEL_LAB_MAX_N`` (the simulator's cap there)
                             — its ceiling is ``max_vector_n()``
``check_cpu_n``              an N the *CPU side* runs at (in the simulator larger than
                             the kernel's): free host memory and ``KERNEL_LAB_MAX_CPU_N``
                             — its ceiling is ``max_cpu_vector_n()``
``kernel_n(n)``              the N the kernel part of a run at ``n`` uses: ``n`` on a GPU,
                             at most ``kernel_cap()`` (the simulator's cap) in the simulator
==========================  ============================================================

Numbers: ``parse_int`` (whole numbers written as N is), ``parse_positive`` (the one float
parser: a positive, finite number) and ``parse_seconds`` (it, for durations).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from gpu.core import settings as _settings
from gpu.core.backend import BACKEND

BYTES_PER_FLOAT32 = 4
MAX_THREADS_PER_BLOCK = 1024  # CUDA's limit on every current GPU
WARP_SIZE = 32
# The most elements a simulated kernel takes. numba-cuda's simulator runs about 4,000
# threads/s (one OS thread per CUDA thread): 16,384 keeps a launch near 4 s. The lab's runs
# a barrier-free kernel at about 3 million threads/s and a barrier-heavy one at about
# 400,000 (benchmarks/simulator_speed.md): 2^20 keeps a launch near 1 s to 3 s.
NUMBA_SIMULATOR_MAX_N = 16_384
LAB_SIMULATOR_MAX_N = 1 << 20
SIMULATOR_MAX_N = LAB_SIMULATOR_MAX_N if BACKEND.lab_simulator else NUMBA_SIMULATOR_MAX_N
# A kernel the lab simulator's vectorised tier runs (gpu/sim/vector.py: NumPy array operations over
# whole blocks) goes further: vector add runs at tens of millions of threads/s there
# (benchmarks/simulator_speed.md), so its cap is past the article's N = 10^7, unless
# KERNEL_LAB_MAX_N sets another. Its admitted work is counted at 1/VECTORISED_WORK_SHARE.
VECTORISED_MAX_N = 1 << 24
VECTORISED_WORK_SHARE = 16  # the tier runs vector add more than 10x faster than the per-thread tier
# What a simulated thread costs, in words, for the forms' limit captions.
SIMULATED_THREAD_COST = (
    "0.3-3 µs per simulated thread" if BACKEND.lab_simulator else "0.1 ms per simulated thread"
)
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

ENV_MAX_N = _settings.MAX_N.name
ENV_MAX_REPEATS = _settings.MAX_REPEATS.name
ENV_MAX_SWEEP_POINTS = _settings.MAX_SWEEP_POINTS.name
ENV_MAX_WORK = _settings.MAX_WORK.name
# The CPU side, counted apart: in the simulator KERNEL_LAB_MAX_N and
# KERNEL_LAB_MAX_WORK bound the simulated kernels only, and these bound the CPU baselines.
ENV_MAX_CPU_N = _settings.MAX_CPU_N.name
ENV_MAX_CPU_WORK = _settings.MAX_CPU_WORK.name

# (hardware, simulator) defaults; see the module docstring for why.
DEFAULT_MAX_N = (2**30, SIMULATOR_MAX_N)
DEFAULT_MAX_REPEATS = (100, 100)
DEFAULT_MAX_SWEEP_POINTS = (24, 24)
# Simulated: about 5 s of the lab's simulator on a barrier-free kernel (2^24), or of
# numba-cuda's at 16,384 elements (2^19).
DEFAULT_MAX_WORK = (2**32, 2**24 if BACKEND.lab_simulator else 2**19)
# CPU N: the hardware default N on both (4 GiB per float32 vector; host memory bounds it too).
DEFAULT_MAX_CPU_N = (2**30, 2**30)
# CPU element-passes of the compiled baselines (NumPy, Numba; the Python loop has its own
# time budget). A pass costs about 1 ns per element on a laptop, so 2^32 is a few seconds
# per implementation: N = 10^7 with 10 repeats is 3.3 x 10^8 for the three of them. On
# hardware it is 4 x max_work, so it never binds before the GPU's own budget does.
DEFAULT_MAX_CPU_WORK = (2**34, 2**32)


@dataclass(frozen=True)
class AdmissionConfig:
    """Configured ceilings for one run. ``max_work`` counts elements x passes (warm-up included)."""

    max_n: int
    max_repeats: int
    max_sweep_points: int
    max_work: int
    problems: tuple[str, ...] = field(default_factory=tuple)
    # the CPU side: in the simulator max_n / max_work bound the simulated kernels only
    max_cpu_n: int = DEFAULT_MAX_CPU_N[0]
    max_cpu_work: int = DEFAULT_MAX_CPU_WORK[0]

    def to_dict(self) -> dict:
        return {
            "max_n": self.max_n,
            "max_repeats": self.max_repeats,
            "max_sweep_points": self.max_sweep_points,
            "max_work": self.max_work,
            "max_cpu_n": self.max_cpu_n,
            "max_cpu_work": self.max_cpu_work,
            "problems": list(self.problems),
        }


def _read(
    raw: str | None, name: str, default: int, parse, problems: list[str], ceiling: int | None = None
) -> int:
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
    """The limits in force: defaults for this backend, overridden by the environment (``env``: instead of it)."""
    given = _settings.settings(env)
    which = int(BACKEND.simulated if simulated is None else simulated)
    problems: list[str] = []
    config = AdmissionConfig(
        max_n=_read(given.max_n, ENV_MAX_N, DEFAULT_MAX_N[which], parse_size, problems),
        max_repeats=_read(
            given.max_repeats, ENV_MAX_REPEATS, DEFAULT_MAX_REPEATS[which], parse_int, problems, MAX_REPEATS
        ),
        max_sweep_points=_read(
            given.max_sweep_points, ENV_MAX_SWEEP_POINTS, DEFAULT_MAX_SWEEP_POINTS[which], parse_int, problems
        ),
        max_work=_read(given.max_work, ENV_MAX_WORK, DEFAULT_MAX_WORK[which], parse_size, problems),
        max_cpu_n=_read(given.max_cpu_n, ENV_MAX_CPU_N, DEFAULT_MAX_CPU_N[which], parse_size, problems),
        max_cpu_work=_read(given.max_cpu_work, ENV_MAX_CPU_WORK, DEFAULT_MAX_CPU_WORK[which], parse_size, problems),
    )
    return replace(config, problems=tuple(problems))




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
            why = f"the CUDA simulator's cap (about {SIMULATED_THREAD_COST})"
        elif limit == configured:
            why = f"this server's admission limit ({ENV_MAX_N})"
        else:
            why = "what fits in free host and device memory now"
        raise InputError(f"{name} = {value:,} is too large: the limit is {limit:,}, {why}.")
    return value


# --- the CPU side at its own size ------------------------------------------
# In the simulator a simulated kernel costs about 0.1 ms per thread, but the CPU
# baselines run on the user's real CPU: they may run at the article's N = 10^7 while
# the simulated kernel runs at its own cap. On hardware both run at the same N.


def kernel_cap(config: AdmissionConfig | None = None, vectorised: bool = False) -> int | None:
    """The largest N a simulated kernel runs at (``KERNEL_LAB_MAX_N``); None on a GPU (no separate cap).

    ``vectorised``: the kernel runs in the lab simulator's vectorised tier, whose cap is
    ``VECTORISED_MAX_N`` unless ``KERNEL_LAB_MAX_N`` is set to something other than the default.
    """
    if not BACKEND.simulated:
        return None
    config = config or load_config()
    if vectorised and BACKEND.lab_simulator and config.max_n == DEFAULT_MAX_N[1]:
        return VECTORISED_MAX_N
    return config.max_n


def kernel_n(n: int, config: AdmissionConfig | None = None, vectorised: bool = False) -> int:
    """The N the GPU part of a run at ``n`` uses: ``n`` on a GPU, at most the simulator's cap in the simulator."""
    cap = kernel_cap(config, vectorised)
    return n if cap is None else min(n, cap)


def max_cpu_vector_n(host_arrays: int = HOST_ARRAYS_PER_RUN) -> int:
    """Largest N the CPU side of a run may use now: free host memory and ``KERNEL_LAB_MAX_CPU_N``.

    On a GPU the kernel runs at the same N, so ``max_vector_n()`` (device memory,
    ``KERNEL_LAB_MAX_N``) bounds it too; in the simulator it does not (see ``kernel_n``).
    """
    config = load_config()
    host = int(host_available_bytes() * MEMORY_SAFETY // (host_arrays * BYTES_PER_FLOAT32))
    limit = min(host, config.max_cpu_n)
    if not BACKEND.simulated:
        limit = min(limit, max_vector_n(host_arrays))
    return max(limit, 0)


def check_cpu_n(n: int | str, max_n: int | None = None, name: str = "N") -> int:
    """Validate a size whose CPU side runs at full N (the simulated kernel at ``kernel_n``); return it."""
    value = parse_size(n, name)
    limit = max_cpu_vector_n() if max_n is None else max_n
    if value > limit:
        config = load_config()
        if limit == config.max_cpu_n:
            why = f"this server's limit for CPU runs ({ENV_MAX_CPU_N})"
        elif not BACKEND.simulated and limit == config.max_n:
            why = f"this server's admission limit ({ENV_MAX_N})"
        else:
            why = (
                "what fits in free host memory now"
                if BACKEND.simulated
                else "what fits in free host and device memory now"
            )
        raise InputError(f"{name} = {value:,} is too large: the limit is {limit:,}, {why}.")
    return value


def check_cpu_work(work: int, title: str, config: AdmissionConfig | None = None) -> int:
    """Refuse a run whose CPU element-passes exceed ``KERNEL_LAB_MAX_CPU_WORK``; return the work.

    Counted apart from the (simulated) kernel's element-passes, which admission checks
    against ``KERNEL_LAB_MAX_WORK``; the Python loop is bounded by its own time budget.
    """
    config = config or load_config()
    if work > config.max_cpu_work:
        raise InputError(
            f"This {title} run is too long for the shared machine's CPU: {work:,} CPU element-passes (N x passes for "
            "each "
            f"of NumPy and Numba), over the budget of {config.max_cpu_work:,} ({ENV_MAX_CPU_WORK}). "
            "Use a smaller N, fewer repeats or fewer CPU implementations."
        )
    return int(work)


def check_threads(threads: int | str, device_max: int = MAX_THREADS_PER_BLOCK) -> int:
    """Validate threads per block (1 to the device's limit); return it. Warnings: ``threads_per_block_warnings``."""
    value = parse_int(threads, "threads per block")
    if not 1 <= value <= device_max:
        raise InputError(f"threads per block must be between 1 and {device_max} (the device limit), got {value}")
    return value


def parse_positive(
    value: float | str, name: str, *, what: str = "a number", example: str = "2 or 0.5", unit: str = ""
) -> float:
    """A positive, finite number from a number or its text ("0.5", "1e-3"); InputError naming ``name``.

    The one float parser: ``what`` / ``example`` / ``unit`` only word its messages.
    """
    if isinstance(value, bool):
        raise InputError(f"{name} must be {what}, got {value!r}")
    try:
        number = float(str(value).strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be {what} such as {example}, got {value!r}") from None
    if not (number > 0 and number < float("inf")):
        raise InputError(f"{name} must be more than 0{unit}, got {value!r}")
    return number


def parse_seconds(value: float | str, name: str) -> float:
    """A positive, finite number of seconds from a number or its text; InputError naming ``name``."""
    return parse_positive(value, name, what="a number of seconds", example="2 or 0.5", unit=" seconds")


_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def parse_flag(value: bool | int | str) -> bool:
    """A yes/no value from a bool, 0/1 or its text ("true", "no"...)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise InputError(f"expected yes or no (true/false, 1/0), got {value!r}")


def threads_per_block_warnings(value: int) -> list[str]:
    """What a valid block size costs (never raises; ``check_threads`` validates): empty when nothing."""
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
        raise InputError(
            f"a sweep may have 1 to {config.max_sweep_points} points ({ENV_MAX_SWEEP_POINTS}), got {value}"
        )
    return value


def release_device_memory(collect: bool = True, context=None) -> bool:
    """Free what a run left behind: drop Python references, then flush Numba's pending frees.

    The one function every caller uses (the UI after out-of-memory, the Scaling sweep
    between sizes). Why ``memory_manager.deallocations``: Numba
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
