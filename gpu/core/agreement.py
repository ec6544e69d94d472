"""Does a result agree with its reference? Exactly, or within the bound float32 rounding allows.

Two checks, one result type (``Agreement``):

- ``ExactReference``: the result must hold the same bits as the reference everywhere
  (transpose moves values, a histogram counts integers, a stencil in the same operation
  order rounds the same way, a sum of ``ExactSumInputs`` rounds nowhere). Any difference
  is a mismatch.
- ``BoundedReference``: a sum in float32 depends on its order, so it is compared with a
  float64 reference. Any order of adding terms x_i whose summation tree is ``k``
  additions deep (the longest chain of additions a term goes through) returns
  ŝ = Σ x_i · Π(1 + δ_j), at most k factors per term with |δ_j| ≤ u, so
  |ŝ − s| ≤ ((1 + u)^k − 1) · Σ|x_i|, u = 2^-24 being float32's unit roundoff (Higham,
  *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §3.1 and §4.2). A fused
  multiply-add rounds once, so dot products with FMA obey the same bound. Higham's
  γ_k = k·u / (1 − k·u) is the usual simplification of (1 + u)^k − 1; it is not used
  here because it grows without limit as k·u approaches 1 (and is undefined past it),
  while (1 + u)^k − 1 is the bound itself, never larger than γ_k, finite for every k.
  The float64 reference has its own, far smaller error (the same formula with
  u = 2^-53), added to the bound so the check stays rigorous.

A bound that only holds for every order is useless for long sums: for N terms added in
an unknown order (atomics) k = N − 1, and at N = 2^24 the bound is about 1.7 Σ|x|, so a
result of zero would "agree". The reduction therefore does not use a bound: its inputs
(``ExactSumInputs``) are whole numbers whose partial sums are exact in float32 in every
order, and its results are checked bit for bit (see that class).

Every check can fail: tests run deliberately wrong kernels and wrong results through it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpu.core.shape import Shaped, shaped

U_FLOAT32 = 2.0**-24  # unit roundoff of IEEE binary32 (round to nearest)
U_FLOAT64 = 2.0**-53


def gamma(k: int, u: float = U_FLOAT32) -> float:
    """The relative rounding bound of a summation k additions deep: (1 + u)^k − 1 (0 for k ≤ 0).

    Computed as expm1(k · log1p(u)), accurate for every k. Higham's γ_k = k·u / (1 − k·u)
    bounds it from above and agrees to within k·u relative for small k·u, but blows up
    as k·u → 1, so it is not used (see the module docstring).
    """
    if k <= 0:
        return 0.0
    return math.expm1(k * math.log1p(u))


@shaped(derived={"passed": lambda a: a.passed, "text": lambda a: a.describe()})
@dataclass(frozen=True)
class Agreement(Shaped):
    """How one implementation's result compares with the reference.

    ``mode`` "exact": ``mismatches`` counts elements whose bits differ.
    ``mode`` "bounded": ``mismatches`` counts elements whose |error| exceeds
    ((1 + u)^k − 1)·Σ|terms|; ``bound`` and ``max_abs_error`` are at the element where
    error/bound is largest, ``gamma`` is the factor (1 + u)^k − 1.
    """

    implementation: str
    mode: str  # "exact" or "bounded"
    elements: int
    mismatches: int
    max_abs_error: float
    bound: float = 0.0  # 0 for exact
    depth: int | None = None  # k, the summation depth the bound assumes
    gamma: float | None = None  # (1 + u)^k − 1, the bound's factor
    worst_ratio: float = 0.0  # max |error| / bound (bounded); 0 or inf (exact)

    @property
    def passed(self) -> bool:
        return self.mismatches == 0

    def describe(self) -> str:
        """One line: 'bit-identical' or 'max |error| 1.2e-06 ≤ bound 3.4e-05 (((1 + u)^12 − 1) · Σ|terms|)'."""
        elements = f"{self.elements:,} element{'s' if self.elements != 1 else ''}"
        if self.mode == "exact":
            if self.passed:
                return f"bit-identical ({elements})"
            return f"{self.mismatches:,} of {elements} differ (max |difference| {self.max_abs_error:.3g})"
        relation = "≤" if self.passed else ">"
        return (
            f"max |error| {self.max_abs_error:.3g} {relation} bound {self.bound:.3g} "
            f"(((1 + u)^{self.depth:,} − 1) · Σ|terms|, factor {self.gamma:.3g})"
            + ("" if self.passed else f"; {self.mismatches:,} of {elements} over the bound")
        )


def same_bits(result: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Element-wise bit equality of two float arrays (NaN equals NaN of the same bits); ints by value."""
    if expected.dtype.kind != "f":
        return result == expected
    bits = np.dtype(f"u{expected.dtype.itemsize}")
    return np.ascontiguousarray(result).astype(expected.dtype, copy=False).view(bits) == np.ascontiguousarray(
        expected
    ).view(bits)


def identical(result: np.ndarray, expected: np.ndarray) -> bool:
    """True when ``result`` has ``expected``'s shape and the same bits everywhere."""
    return result.shape == expected.shape and bool(np.all(same_bits(result, expected)))


@shaped(derived={"mismatches": lambda a: a.mismatches, "passed": lambda a: a.passed})
@dataclass(frozen=True)
class BitAgreement(Shaped):
    """How a float32 result compares with NumPy's, bit for bit (vector add and its strategies).

    IEEE float32 addition rounds the same way on every device, so anything but
    bit-identity is a bug; ``max_abs_diff`` and ``allclose`` say how big the bug is.
    """

    implementation: str
    n: int
    identical: int  # elements whose float32 bits match exactly
    max_abs_diff: float
    allclose: bool

    @property
    def mismatches(self) -> int:
        return self.n - self.identical

    @property
    def passed(self) -> bool:
        """float32 addition is exact IEEE rounding everywhere: demand bit-identity."""
        return self.mismatches == 0


def check_bits(name: str, result: np.ndarray, reference: np.ndarray) -> BitAgreement:
    """Compare ``result`` with ``reference`` bit for bit (NaN-safe) and numerically."""
    if result.shape != reference.shape:
        raise ValueError(f"{name}: shape {result.shape} differs from the reference {reference.shape}")
    identical = int(np.count_nonzero(same_bits(result, reference)))
    if identical == result.size:  # equal bits: no difference to measure, and no float64 temporaries
        return BitAgreement(
            implementation=name, n=int(result.size), identical=identical, max_abs_diff=0.0, allclose=True
        )
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(result.astype(np.float64) - reference.astype(np.float64))
    max_diff = float(np.nanmax(diff)) if diff.size else 0.0
    return BitAgreement(
        implementation=name,
        n=int(result.size),
        identical=identical,
        max_abs_diff=max_diff,
        allclose=bool(np.allclose(result, reference, equal_nan=True)),
    )


def _same_shape(name: str, result: np.ndarray, expected: np.ndarray) -> None:
    if result.shape != expected.shape:
        raise ValueError(f"{name}: result shape {result.shape} differs from the reference {expected.shape}")


class ExactReference:
    """Bit-for-bit comparison with ``expected`` (floats by their bits, so NaN == NaN; ints by value)."""

    mode = "exact"

    def __init__(self, expected: np.ndarray):
        self.expected = np.ascontiguousarray(expected)

    def check(self, name: str, result: np.ndarray, depth: int | None = None) -> Agreement:
        result = np.ascontiguousarray(result)
        _same_shape(name, result, self.expected)
        same = same_bits(result, self.expected)
        mismatches = int(same.size - np.count_nonzero(same))
        max_diff = 0.0
        if mismatches:
            with np.errstate(invalid="ignore", over="ignore"):
                diff = np.abs(result.astype(np.float64) - self.expected.astype(np.float64))
            max_diff = float(np.nanmax(diff)) if not np.all(np.isnan(diff)) else float("nan")
        return Agreement(
            name, "exact", int(same.size), mismatches, max_diff, worst_ratio=math.inf if mismatches else 0.0
        )


class BoundedReference:
    """Comparison with a float64 reference within ((1 + u)^k − 1) · Σ|terms| per element.

    ``exact64`` is the float64 result, ``abs_terms64`` the float64 sum of the absolute
    values of the terms each element adds up (same shape).
    """

    mode = "bounded"

    def __init__(self, exact64: np.ndarray, abs_terms64: np.ndarray):
        self.exact64 = np.asarray(exact64, dtype=np.float64)
        self.abs_terms64 = np.asarray(abs_terms64, dtype=np.float64)
        if self.exact64.shape != self.abs_terms64.shape:
            raise ValueError("the reference and its sum of |terms| must have the same shape")

    def bound(self, depth: int) -> np.ndarray:
        """The per-element bound for summation depth ``depth`` (float32 rounding + the reference's own)."""
        return (gamma(depth) + gamma(depth, U_FLOAT64)) * self.abs_terms64

    def check(self, name: str, result: np.ndarray, depth: int | None = None) -> Agreement:
        if depth is None or depth < 0:
            raise ValueError(f"{name}: a bounded check needs the summation depth k, got {depth!r}")
        result = np.asarray(result)
        _same_shape(name, result, self.exact64)
        error = np.abs(result.astype(np.float64) - self.exact64)
        bound = self.bound(depth)
        error = np.where(np.isnan(error), np.inf, error)  # NaN never agrees
        over = error > bound
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(bound > 0, error / bound, np.where(error > 0, np.inf, 0.0))
        worst = int(np.argmax(ratio)) if ratio.size else 0
        return Agreement(
            name, "bounded", int(error.size), int(np.count_nonzero(over)),
            float(error.flat[worst]) if error.size else 0.0, float(bound.flat[worst]) if bound.size else 0.0,
            depth, gamma(depth), float(ratio.flat[worst]) if ratio.size else 0.0,
        )


# --- sums whose every order is exact ---------------------------------------------------

FLOAT32_EXACT_INTEGERS = 2**24  # float32 has a 24-bit significand: every whole number up to 2^24 is exact
SMALL_VALUE = 255  # the largest input value: small whole numbers, readable totals
REFERENCE_CHUNK = 1 << 24  # elements checked at a time by exact_sum_reference


@dataclass(frozen=True)
class ExactSumInputs:
    """Inputs for a float32 sum that is exact in every order of addition, at any N up to 2^30.

    Why: a bound that holds for every order (atomics land in any order; CuPy, PyTorch
    and the CPU choose their own) is ((1 + u)^(N−1) − 1)·Σ|x| ≈ 1.7 Σ|x| at N = 2^24, so
    it accepts zero. And uniform [0, 1) inputs really do lose most of the sum in float32
    at large N: a running sum stops growing at 2^24 once each term is below half an ulp
    (the atomic step returned ~87.5% low at N = 2^28). Instead the inputs make rounding
    impossible, so every correct implementation returns the same bits and anything else
    is wrong.

    How: every value is a whole number ≥ 0 and the total is at most 2^24. Then every
    partial sum of every order (of any subset of the values: a thread's running sum, a
    tree level, a block's warp sums, atomics landing in any order) is a whole number
    between 0 and the total, hence at most 2^24, hence exactly representable in float32
    (24-bit significand), so no addition ever rounds. The exact total, computed in
    integers, is the reference, compared bit for bit.

    - N ≤ 2^24: every value is a whole number from 1 to ``max_value`` = min(255, ⌊2^24 / N⌋),
      so the total is at most N · max_value ≤ 2^24 and every element is nonzero: a
      missing element, block or any part changes the sum.
    - N > 2^24: the values cannot all be nonzero (N ones would exceed 2^24), so each
      aligned run of ``spacing`` elements (the smallest power of two with N / spacing ≤
      2^24: 2 at N = 2^25, 16 at 2^28, 64 at 2^30) holds exactly one 1, at a random
      place in the run, and zeros elsewhere. At most 2^24 ones: the total stays exact.
      A block of ``spacing`` or more consecutive elements (aligned, as a thread block's
      are) always holds a 1, so a missing block changes the sum.

    Limit: with 32 threads per block and N > 2^29 there are more than 2^24 blocks, and no
    float32 input can give each a nonzero partial sum while keeping every order exact
    (more than 2^24 nonzero whole-number partials would need a total above 2^24). There a
    missing 32-element block is caught only when it holds one of the ones (half of them).

    Wrong results this rejects at every N: zero (the total is at least 1), the negated
    sum, a sum missing a block (per the rule above) or a single nonzero element, and a sum
    1% low (0.99 · T is not T for T ≥ 1) — bit-exact comparison rejects any change.
    """

    n: int
    spacing: int  # one nonzero value per aligned run of this many elements (1: every element)
    max_value: int  # nonzero values are whole numbers from 1 to this

    @classmethod
    def for_size(cls, n: int) -> ExactSumInputs:
        if n < 1:
            raise ValueError(f"a sum needs at least 1 element, got {n}")
        if n <= FLOAT32_EXACT_INTEGERS:
            return cls(n, 1, min(SMALL_VALUE, FLOAT32_EXACT_INTEGERS // n))
        spacing = 1 << math.ceil(math.log2(n / FLOAT32_EXACT_INTEGERS))
        return cls(n, spacing, 1)

    @property
    def nonzeros(self) -> int:
        return -(-self.n // self.spacing)

    @property
    def min_total(self) -> int:
        """The smallest total these inputs can have (every nonzero value 1)."""
        return self.nonzeros

    @property
    def max_total(self) -> int:
        """The largest total, and the largest partial sum of any order: ≤ 2^24, so exact in float32."""
        return self.nonzeros * self.max_value

    def catches_missing_run(self, elements: int) -> bool:
        """True when every aligned run of ``elements`` consecutive values (e.g. a thread
        block's) holds a nonzero value, so leaving any one out changes the sum."""
        return elements >= self.spacing

    def make(self, seed: int) -> np.ndarray:
        """The N float32 values, reproducible from ``seed``."""
        rng = np.random.default_rng(seed)
        if self.spacing == 1:
            return rng.integers(1, self.max_value, size=self.n, endpoint=True).astype(np.float32)
        x = np.zeros(self.n, dtype=np.float32)
        starts = np.arange(0, self.n, self.spacing, dtype=np.int64)
        x[starts + rng.integers(0, np.minimum(self.spacing, self.n - starts))] = 1.0  # the last run may be short
        return x


def exact_sum_reference(x: np.ndarray) -> ExactReference:
    """The bit-exact reference for the float32 sum of ``x``: its exact total, which must
    be a whole number ≤ 2^24 reached through whole-number partial sums (``ExactSumInputs``).

    Checked a chunk at a time, so N = 2^30 needs no 8 GB temporary; each chunk's float64
    sum is exact (whole numbers far below 2^53).
    """
    x = np.asarray(x).reshape(-1)
    total = 0
    for start in range(0, x.size, REFERENCE_CHUNK):
        chunk = x[start:start + REFERENCE_CHUNK]
        if not (np.all(chunk >= 0) and np.all(np.floor(chunk) == chunk)):
            raise ValueError("an exact float32 sum needs whole numbers ≥ 0 (see ExactSumInputs)")
        total += int(chunk.sum(dtype=np.float64))
    if total > FLOAT32_EXACT_INTEGERS:
        raise ValueError(f"the total {total:,} exceeds 2^24: partial sums would round in float32 (see ExactSumInputs)")
    return ExactReference(np.array([total], dtype=np.float32))

__all__ = ["Agreement", "BoundedReference", "ExactReference", "ExactSumInputs", "FLOAT32_EXACT_INTEGERS", "U_FLOAT32",
           "exact_sum_reference", "gamma"]
