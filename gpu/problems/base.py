"""What a problem declares: the task, the kernel's signature and launch, tests, tolerance, cost and a solution.

A problem is data, like an experiment: one frozen ``Problem`` in one file of this package
(``PROBLEM = Problem(...)``), found by ``gpu.problems.problems()``. The harness
(``gpu/sandbox/harness.py``) does the rest the same way for every problem: fresh seeded
inputs per test, outputs filled with a sentinel, the launch, the comparison with the NumPy
reference, and on a GPU the timing of the performance size.

Sizes are plain dicts (``{"n": 1000}`` or ``{"rows": 33, "cols": 20}``) so they cross the
process boundary as JSON.

A kernel may also take scalars (``Problem.scalars``: name, dtype, a fixed value or one drawn
per test from the secret seed). They are named in ``params`` like the arrays, passed to the
kernel in that order as NumPy scalars of their dtype, and handed to ``reference`` beside the
inputs (``args(rng, sizes)`` makes both).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

Sizes = Mapping[str, int]
Arrays = dict[str, np.ndarray]
# Threads per block a learner may choose where the problem lets them (a multiple of the
# warp, at most the hardware's 1024 per block).
THREAD_CHOICES = (32, 64, 128, 256, 512, 1024)


def ceil_div(n: int, d: int) -> int:
    return -(-int(n) // int(d))


@dataclass(frozen=True)
class Refusal(Exception):
    """Why a source was refused: the rule broken, the line (1-based; 0 for the whole file), in words.

    Raised by the sandbox's checker (gpu/sandbox/checker.py) and by a problem's own launch
    rules (``Problem.threads_for``); defined here, below both, so a problem needs nothing
    from the sandbox that judges it."""

    rule: str
    line: int
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        return f"refused ({self.rule}): {where}{self.message}"

    def to_dict(self) -> dict:
        return {"rule": self.rule, "line": self.line, "message": self.message}


@dataclass(frozen=True)
class Tolerance:
    """How close is equal: exact (rtol = atol = 0) where the arithmetic allows, else a stated bound."""

    rtol: float = 0.0
    atol: float = 0.0
    why: str = "exact: every value is computed with the same single rounding as NumPy's"

    @property
    def exact(self) -> bool:
        return self.rtol == 0 and self.atol == 0

    def describe(self) -> str:
        return self.why if self.exact else f"|got − expected| ≤ {self.atol:g} + {self.rtol:g} × |expected|: {self.why}"

    def expected(self, want, dtype) -> np.ndarray:
        """The reference as compared: in the output's dtype when exact; else in float64, so a bound is
        measured from the exact value, not from a second float32 rounding of it."""
        return np.asarray(want, dtype=dtype if self.exact else np.float64)

    def close(self, got: np.ndarray, expected: np.ndarray) -> np.ndarray:
        """A boolean array: True where ``got`` is acceptable (NaN, the float sentinel, is never)."""
        if self.exact:
            return got == expected
        return np.abs(got.astype(np.float64) - expected.astype(np.float64)) <= self.atol + self.rtol * np.abs(
            expected.astype(np.float64)
        )


@dataclass(frozen=True)
class Scalar:
    """A scalar argument of the kernel: ``value`` fixed, or ``draw(rng, sizes)`` per test.

    A drawn value comes from the test's generator (seeded from the secret seed), after the
    arrays, so a kernel that hard-codes the value fails. ``about`` says its range in words
    (shown with the arrays). Passed as ``dtype`` (np.float32, np.int32): a Python float
    would reach Numba as float64 and change the arithmetic.
    """

    name: str
    dtype: type
    value: float | int | None = None
    draw: Callable[[np.random.Generator, Sizes], float | int] | None = None
    about: str = ""

    def __post_init__(self):
        if (self.value is None) == (self.draw is None):
            raise ValueError(f"scalar {self.name!r}: give a fixed value or a draw(rng, sizes), not both or neither")

    def make(self, rng: np.random.Generator, sizes: Sizes) -> np.generic:
        raw = self.value if self.draw is None else self.draw(rng, sizes)
        return np.dtype(self.dtype).type(raw)

    def describe(self) -> str:
        kind = np.dtype(self.dtype).name
        how = f"= {self.value!r}" if self.draw is None else "drawn per test"
        return f"`{self.name}` {kind} scalar, {how}" + (f" ({self.about})" if self.about else "")


@dataclass(frozen=True)
class Case:
    """One functional test (or the performance size): a name the learner reads and the sizes."""

    name: str
    sizes: Sizes

    def to_dict(self) -> dict:
        return {"name": self.name, "sizes": dict(self.sizes)}


@dataclass(frozen=True)
class Solution:
    """The lab's own best kernel for a problem: imported from ``gpu.kernels`` or, where the lab
    has none, source in the problem's file (checked and run exactly like a learner's).

    ``launch(sizes) -> (grid, block)`` where it differs from the problem's launch (a kernel
    tuned with its own geometry, such as register-tiled matmul).
    """

    source: str | None = None
    module: str | None = None
    name: str | None = None
    launch: Callable[[Sizes], tuple] | None = None
    note: str = ""


HINT_STAGES = ("a nudge", "the idea", "the line")


@dataclass(frozen=True)
class Hint:
    """A problem's hint in three stages, each opened on purpose (and recorded): ``nudge`` (a question and the lab page
    that teaches it), ``idea`` (what to do, in words), ``line`` (the code that does it). No stage alone is the whole
    answer until the last."""

    nudge: str
    idea: str
    line: str

    @property
    def stages(self) -> tuple[str, str, str]:
        return (self.nudge, self.idea, self.line)


@dataclass(frozen=True)
class Problem:
    key: str
    order: int
    title: str
    statement: str  # the task in a few sentences (Markdown)
    kernel_name: str
    params: tuple[str, ...]  # the kernel's arguments in order: inputs (arrays and scalars) and outputs
    arrays: str  # each argument's dtype and shape, in words
    inputs: Callable[[np.random.Generator, Sizes], Arrays]
    outputs: Callable[[Sizes], dict[str, tuple[tuple[int, ...], type]]]  # name -> (shape, dtype)
    reference: Callable[[dict[str, Any], Sizes], Arrays]  # NumPy: the expected outputs (arrays and scalars in)
    launch: Callable[[Sizes, int], tuple]  # (sizes, threads per block) -> (grid, block)
    launch_text: str
    starter: str
    hint: Hint
    page: str  # the lab page that teaches it, as its sidebar label
    tests: tuple[Case, ...]
    perf: Mapping[str, Case]  # "simulator" and "gpu": the size timed (simulator: checked only, never timed)
    bytes_moved: Callable[[Sizes], int]  # the least traffic: each input read once, each output written once
    flops: Callable[[Sizes], int]
    solution: Solution
    tolerance: Tolerance = Tolerance()
    threads: int = 256  # threads per block (1D), or the block's side for 2D problems
    thread_choices: tuple[int, ...] = ()  # empty: the launch is fixed; else THREADS_PER_BLOCK may be one of these
    accumulate: tuple[str, ...] = ()  # outputs the kernel adds into (atomics): zeroed, not sentinel-filled
    writer: str | None = None  # "1d" / "2d": one thread per output element, so a mismatch names its thread
    scalars: tuple[Scalar, ...] = ()  # scalar arguments (named in params too), see Scalar

    def __post_init__(self):
        if not isinstance(self.hint, Hint) or not all(self.hint.stages):
            raise ValueError(f"problem {self.key!r}: hint must be Hint(nudge, idea, line), each stage written")
        missing = [s.name for s in self.scalars if s.name not in self.params]
        if missing:
            raise ValueError(f"problem {self.key!r}: scalar(s) {missing} are not among its params {self.params}")

    @property
    def signature(self) -> str:
        return f"{self.kernel_name}({', '.join(self.params)})"

    @property
    def arguments(self) -> str:
        """Each argument in words: the arrays (``arrays``), then each scalar's dtype and value."""
        return "; ".join([self.arrays, *(s.describe() for s in self.scalars)])

    def args(self, rng: np.random.Generator, sizes: Sizes) -> dict[str, Any]:
        """The kernel's inputs for one test: the arrays, then each scalar (as its dtype), from ``rng``."""
        values: dict[str, Any] = dict(self.inputs(rng, sizes))
        for scalar in self.scalars:
            values[scalar.name] = scalar.make(rng, sizes)
        return values

    def threads_for(self, chosen: int | None) -> int:
        """The threads per block of a run: the learner's THREADS_PER_BLOCK if the problem allows a choice."""
        if chosen is None or not self.thread_choices:
            return self.threads
        if chosen not in self.thread_choices:
            raise Refusal(
                "launch",
                0,
                f"THREADS_PER_BLOCK = {chosen} is not allowed here; choose one of "
                f"{', '.join(map(str, self.thread_choices))}",
            )
        return chosen

    def summary(self) -> dict:
        return {
            "key": self.key, "order": self.order, "title": self.title, "statement": self.statement,
            "hint": dict(zip(("nudge", "idea", "line"), self.hint.stages)),
            "signature": self.signature, "arrays": self.arrays,
            "scalars": [{"name": s.name, "dtype": np.dtype(s.dtype).name, "value": s.value, "about": s.about,
                         "drawn_per_test": s.draw is not None} for s in self.scalars],
            "launch": self.launch_text, "threads_per_block_choices": list(self.thread_choices), "page": self.page,
            "tolerance": self.tolerance.describe(), "tests": [c.to_dict() for c in self.tests],
            "performance_size": {k: c.to_dict() for k, c in self.perf.items()},
            "reference_solution": self.solution.note, "starter": self.starter,
        }


# --- shared pieces of the declarations ---------------------------------------------------


def launch_1d(sizes: Sizes, threads: int) -> tuple:
    """One thread per element: ceil(n / threads) blocks (never one too many when it divides)."""
    return (ceil_div(sizes["n"], threads),), (threads,)


def launch_2d(sizes: Sizes, side: int) -> tuple:
    """One thread per element of a rows × cols result: x spans columns, y rows."""
    return (ceil_div(sizes["cols"], side), ceil_div(sizes["rows"], side)), (side, side)


def small_ints(rng: np.random.Generator, shape, low: int = -8, high: int = 8) -> np.ndarray:
    """float32 values that are small integers: sums and products stay exact in any order (below 2^24)."""
    return rng.integers(low, high + 1, size=shape).astype(np.float32)


def uniform(rng: np.random.Generator, shape) -> np.ndarray:
    return rng.random(shape, dtype=np.float32)


def n_cases(*ns: tuple[str, int]) -> tuple[Case, ...]:
    return tuple(Case(name, {"n": n}) for name, n in ns)


# The 1D sizes that catch the usual bugs at 256 threads per block.
EDGES_1D = n_cases(
    ("one element", 1), ("a block minus one", 255), ("a block and one more", 257), ("not a multiple of the block", 700)
)
EDGES_2D = (
    Case("1 × 1", {"rows": 1, "cols": 1}),
    Case("15 × 17 (less than a tile)", {"rows": 15, "cols": 17}),
    Case("33 × 20 (edges in both directions)", {"rows": 33, "cols": 20}),
    Case("40 × 48", {"rows": 40, "cols": 48}),
)
# Sums of small integers stored as float32 are exact in any order (below 2^24), so
# reductions can be checked bit for bit although threads add in a different order than NumPy.
INTEGER_SUMS = Tolerance(
    why="exact: the values are small integers, so every sum is exact in float32 whatever the order"
)
