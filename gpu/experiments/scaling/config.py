"""What a Scaling sweep will measure: the implementations a user can choose, the sizes of
a range, the repeat policy, and ``make_config``, which validates all of it before any work
(InputError says what is allowed)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from gpu.core import cpu, reference
from gpu.core.device import device_info
from gpu.core.limits import (
    InputError,
    check_cpu_n,
    check_threads,
    kernel_cap,
    max_cpu_vector_n,
    parse_int,
    parse_size,
)
from gpu.core.shape import Shaped, shaped
from gpu.core.timing import (
    RepeatPolicy,
)

# What a user can choose: the GPU kernel (end to end and kernel only come together),
# the CPU implementations, and the reference libraries.


# What a user can choose: the GPU kernel (end to end and kernel only come together),
# the CPU implementations, and the reference libraries.
IMPLS = ("gpu", "gpu-ilp", *cpu.IMPLEMENTATIONS, *reference.REFERENCES)


ON_DEVICE = ("gpu", "gpu-ilp", *reference.REFERENCES)  # implementations that hold device memory


IMPL_LABELS = {
    "gpu": "GPU kernel (Numba CUDA): end to end and kernel only",
    "gpu-ilp": "GPU kernel, 4 elements per thread (not the article's; kernel only)",
    **cpu.LABELS,
    **reference.LABELS,
}


SPACINGS = ("pow2", "decade")
SPACING_LABELS = {"pow2": "powers of two", "decade": "decades"}  # the form's words for each spacing


DEFAULT_MIN_N = 2**10


PYTHON_BUDGET_PER_POINT_S = 2.0  # per point: the Python loop beyond this is only estimated


def sweep_sizes(min_n: int, max_n: int, spacing: str = "pow2") -> tuple[int, ...]:
    """Sizes from ``min_n`` to ``max_n`` inclusive: every power of two (or of ten)
    in between, plus both ends. Empty when the range is inverted."""
    if spacing not in SPACINGS:
        raise InputError(f"spacing must be one of {', '.join(SPACINGS)}, got {spacing!r}")
    if min_n < 1 or max_n < min_n:
        return ()
    base = 2 if spacing == "pow2" else 10
    sizes = {min_n, max_n}
    power = 1
    while power <= max_n:
        if power >= min_n:
            sizes.add(power)
        power *= base
    return tuple(sorted(sizes))


L2_FLUSHED = "flushed before every GPU sample"


def _config_to_file(config: SweepConfig, data: dict) -> dict:
    """The file says "l2": "warm" or how it was flushed, and lists the sizes for its reader."""
    data["l2"] = "warm" if data.pop("warm_l2") else L2_FLUSHED
    return data


def _config_from_file(data: dict) -> dict:
    # a run recorded before the L2 flush has no "l2": its L2 was warm
    data["warm_l2"] = data.pop("l2", "warm") == "warm"
    if data.get("python_budget_s") is None:
        data["python_budget_s"] = 0.0
    return data


@shaped(
    derived={
        "sizes": lambda c: list(c.sizes),
        "policy_description": lambda c: c.policy.describe(),
        "dtype": lambda c: "float32",
        "kernel_skipped_sizes": lambda c: list(c.kernel_skipped_sizes),
    },
    to_file=_config_to_file,
    from_file=_config_from_file,
)
@dataclass(frozen=True)
class SweepConfig(Shaped):
    """A validated sweep: sizes, implementations, launch geometry and repeat policy."""

    min_n: int
    max_n: int
    spacing: str
    impls: tuple[str, ...]
    threads_per_block: int = 256
    policy: RepeatPolicy = field(default_factory=lambda: RepeatPolicy.count(5))
    python_budget_s: float = PYTHON_BUDGET_PER_POINT_S
    max_wall_s: float | None = None  # stop (keeping the points so far) after this long
    seed: int = 0
    descending: bool = False  # largest first: a time limit then drops the small sizes
    warm_l2: bool = False  # True: no L2 flush before GPU samples (to show the difference)
    # In the simulator: the largest N a (simulated) kernel runs at; above it only the CPU
    # implementations run. None: every implementation at every size (a GPU).
    kernel_max_n: int | None = None

    def __post_init__(self) -> None:
        if self.spacing not in SPACINGS:
            raise ValueError(f"spacing is {self.spacing[:60]!r}; expected one of {', '.join(SPACINGS)}")

    @property
    def sizes(self) -> tuple[int, ...]:
        """Sizes in the order they are measured."""
        sizes = sweep_sizes(self.min_n, self.max_n, self.spacing)
        return sizes[::-1] if self.descending else sizes

    def runs_at(self, impl: str, n: int) -> bool:
        """Whether ``impl`` is measured at ``n``: device implementations only up to ``kernel_max_n``."""
        return impl not in ON_DEVICE or self.kernel_max_n is None or n <= self.kernel_max_n

    @property
    def kernel_skipped_sizes(self) -> tuple[int, ...]:
        """Sizes above the simulator's kernel cap, where the chosen GPU implementations do not run."""
        if self.kernel_max_n is None or not any(impl in ON_DEVICE for impl in self.impls):
            return ()
        return tuple(n for n in sorted(self.sizes) if n > self.kernel_max_n)

    @property
    def steps(self) -> int:
        return sum(self.runs_at(impl, n) for n in self.sizes for impl in self.impls)


def repeat_policy(
    mode: str = "count",
    repeats: int | str = 5,
    *,
    max_noise: float = 0.02,
    budget_s: float | None = None,
    warmup: int = 1,
) -> RepeatPolicy:
    """A RepeatPolicy from user input: ``mode`` "count" (``repeats`` samples) or
    "until_stable" (until noise ≤ ``max_noise`` or ``budget_s`` seconds per point,
    at most ``repeats`` samples). Raises InputError with what is allowed."""
    n = parse_int(repeats, "repeats")
    if not 1 <= n <= RepeatPolicy.MAX_REPEAT:
        raise InputError(f"repeats must be between 1 and {RepeatPolicy.MAX_REPEAT}, got {n}")
    if mode not in ("count", "until_stable"):
        raise InputError(f"repeat mode must be 'count' or 'until_stable', got {mode!r}")
    if not 0 < max_noise < 1:
        raise InputError(f"the noise target must be between 0 and 1 (e.g. 0.02 for 2%), got {max_noise!r}")
    if mode == "count":  # the noise target only flags noisy points here
        return RepeatPolicy(n_repeat=n, warmup=warmup, max_noise=max_noise)
    if budget_s is None or not budget_s > 0:
        raise InputError(f"the time budget per point must be more than 0 seconds, got {budget_s!r}")
    return RepeatPolicy.until_stable(max_noise, budget_s, max_repeat=n, warmup=warmup)


def make_config(
    min_n: int | str = DEFAULT_MIN_N,
    max_n: int | str | None = None,
    impls: Iterable[str] = ("gpu", "numpy", "numba-parallel"),
    *,
    spacing: str = "pow2",
    threads_per_block: int | str = 256,
    policy: RepeatPolicy | None = None,
    python_budget_s: float = PYTHON_BUDGET_PER_POINT_S,
    max_wall_s: float | None = None,
    limit: int | None = None,
    seed: int = 0,
    descending: bool = False,
    warm_l2: bool = False,
    kernel_max_n: int | None | str = "auto",
) -> SweepConfig:
    """Validate everything before any work; return the SweepConfig.

    ``max_n`` None means the largest size that fits (``limit``, default
    ``max_cpu_vector_n()``: in the simulator the CPU side may run past the simulated
    kernel's cap). ``kernel_max_n`` is the largest N a device implementation runs at
    ("auto": the simulator's cap, ``gpu.core.limits.kernel_cap()``, None on a GPU).
    Raises InputError for an inverted or empty range, a range past memory, no or
    unknown implementations, or a budget ≤ 0.
    """
    limit = max_cpu_vector_n() if limit is None else limit
    if isinstance(kernel_max_n, str) and kernel_max_n != "auto":
        raise InputError(f"the kernel's largest N is a whole number, none, or 'auto', got {kernel_max_n!r}")
    kernel_cap_n = kernel_cap() if isinstance(kernel_max_n, str) else kernel_max_n
    if limit < 1:
        raise InputError("no memory is free for even one element; close other runs and try again")
    lo = parse_size(min_n, "min N")
    hi = limit if max_n is None or str(max_n).strip() == "" else parse_size(max_n, "max N")
    if lo > hi:
        raise InputError(f"the range is inverted: min N = {lo:,} is above max N = {hi:,}; min N must be at most max N")
    check_cpu_n(hi, limit, "max N")
    if spacing not in SPACINGS:
        raise InputError(f"spacing must be 'pow2' (powers of two) or 'decade' (powers of ten), got {spacing!r}")
    sizes = sweep_sizes(lo, hi, spacing)
    if not sizes:
        raise InputError(f"the range {lo:,} to {hi:,} holds no sizes")
    chosen = tuple(dict.fromkeys(impls))
    if not chosen:
        raise InputError(f"choose at least one implementation from: {', '.join(IMPLS)}")
    unknown = [name for name in chosen if name not in IMPLS]
    if unknown:
        raise InputError(f"unknown implementation {unknown[0]!r}; choose from {', '.join(IMPLS)}")
    tpb = check_threads(threads_per_block, device_info().max_threads_per_block)
    if not python_budget_s > 0:
        raise InputError(f"the Python-loop budget must be more than 0 seconds, got {python_budget_s!r}")
    if max_wall_s is not None and not max_wall_s > 0:
        raise InputError(f"the sweep's time limit must be more than 0 seconds, got {max_wall_s!r}")
    policy = policy or RepeatPolicy.count(5)
    if policy.budget_s is not None and not policy.budget_s > 0:
        raise InputError(f"the time budget per point must be more than 0 seconds, got {policy.budget_s!r}")
    return SweepConfig(
        lo,
        hi,
        spacing,
        chosen,
        tpb,
        policy,
        float(python_budget_s),
        max_wall_s,
        seed,
        descending,
        bool(warm_l2),
        kernel_cap_n,
    )
