"""Does a result agree with its reference? Exactly, or within the bound float32 rounding allows.

Two checks, one result type (``Agreement``):

- ``ExactReference``: the result must hold the same bits as the reference everywhere
  (transpose moves values, a histogram counts integers, a stencil in the same operation
  order rounds the same way). Any difference is a mismatch.
- ``BoundedReference``: a sum in float32 depends on its order, so it is compared with a
  float64 reference. Any order of adding terms x_i whose summation tree is ``k``
  additions deep (the longest chain of additions a term goes through) returns
  ŝ with |ŝ − s| ≤ γ_k · Σ|x_i|, where γ_k = k·u / (1 − k·u) and u = 2^-24 is float32's
  unit roundoff (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
  §3.1 and §4.2). A fused multiply-add rounds once, so dot products with FMA obey the
  same bound. Where k·u ≥ 1, γ_k is undefined and the bound used is (1 + u)^k − 1, the
  expression γ_k bounds. The float64 reference has its own, far smaller error
  (the same formula with u = 2^-53), added to the bound so the check stays rigorous.

Every check can fail: tests run deliberately wrong kernels through it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

U_FLOAT32 = 2.0**-24  # unit roundoff of IEEE binary32 (round to nearest)
U_FLOAT64 = 2.0**-53


def gamma(k: int, u: float = U_FLOAT32) -> float:
    """γ_k = k·u / (1 − k·u) where k·u < 1, else (1 + u)^k − 1 (which γ_k bounds); 0 for k ≤ 0."""
    if k <= 0:
        return 0.0
    ku = k * u
    if ku < 1:
        return ku / (1 - ku)
    return math.expm1(k * math.log1p(u))


@dataclass(frozen=True)
class Agreement:
    """How one implementation's result compares with the reference.

    ``mode`` "exact": ``mismatches`` counts elements whose bits differ.
    ``mode`` "bounded": ``mismatches`` counts elements whose |error| exceeds γ_k·Σ|terms|;
    ``bound`` and ``max_abs_error`` are at the element where error/bound is largest.
    """

    implementation: str
    mode: str  # "exact" or "bounded"
    elements: int
    mismatches: int
    max_abs_error: float
    bound: float = 0.0  # 0 for exact
    depth: int | None = None  # k, the summation depth the bound assumes
    gamma: float | None = None
    worst_ratio: float = 0.0  # max |error| / bound (bounded); 0 or inf (exact)

    @property
    def passed(self) -> bool:
        return self.mismatches == 0

    def describe(self) -> str:
        """One line: 'bit-identical' or 'max |error| 1.2e-06 ≤ bound 3.4e-05 (γ_12 · Σ|terms|)'."""
        if self.mode == "exact":
            if self.passed:
                return f"bit-identical ({self.elements:,} elements)"
            return f"{self.mismatches:,} of {self.elements:,} elements differ (max |difference| {self.max_abs_error:.3g})"
        relation = "≤" if self.passed else ">"
        return (
            f"max |error| {self.max_abs_error:.3g} {relation} bound {self.bound:.3g} "
            f"(γ_{self.depth:,} · Σ|terms|, γ = {self.gamma:.3g})"
            + ("" if self.passed else f"; {self.mismatches:,} of {self.elements:,} elements over the bound")
        )

    def to_dict(self) -> dict:
        return {
            "implementation": self.implementation,
            "mode": self.mode,
            "elements": self.elements,
            "mismatches": self.mismatches,
            "max_abs_error": self.max_abs_error,
            "bound": self.bound,
            "depth": self.depth,
            "gamma": self.gamma,
            "worst_ratio": self.worst_ratio,
            "passed": self.passed,
            "text": self.describe(),
        }


def same_bits(result: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Element-wise bit equality of two float arrays (NaN equals NaN of the same bits); ints by value."""
    if expected.dtype.kind != "f":
        return result == expected
    bits = np.dtype(f"u{expected.dtype.itemsize}")
    return np.ascontiguousarray(result).astype(expected.dtype, copy=False).view(bits) == np.ascontiguousarray(expected).view(bits)


def identical(result: np.ndarray, expected: np.ndarray) -> bool:
    """True when ``result`` has ``expected``'s shape and the same bits everywhere."""
    return result.shape == expected.shape and bool(np.all(same_bits(result, expected)))


@dataclass(frozen=True)
class BitAgreement:
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

    def to_dict(self) -> dict:
        return {
            "implementation": self.implementation,
            "n": self.n,
            "identical": self.identical,
            "mismatches": self.mismatches,
            "max_abs_diff": self.max_abs_diff,
            "allclose": self.allclose,
            "passed": self.passed,
        }


def check_bits(name: str, result: np.ndarray, reference: np.ndarray) -> BitAgreement:
    """Compare ``result`` with ``reference`` bit for bit (NaN-safe) and numerically."""
    if result.shape != reference.shape:
        raise ValueError(f"{name}: shape {result.shape} differs from the reference {reference.shape}")
    identical = int(np.count_nonzero(same_bits(result, reference)))
    if identical == result.size:  # equal bits: no difference to measure, and no float64 temporaries
        return BitAgreement(implementation=name, n=int(result.size), identical=identical, max_abs_diff=0.0, allclose=True)
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
        return Agreement(name, "exact", int(same.size), mismatches, max_diff, worst_ratio=math.inf if mismatches else 0.0)


class BoundedReference:
    """Comparison with a float64 reference within γ_k · Σ|terms| per element.

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


__all__ = ["Agreement", "BoundedReference", "ExactReference", "U_FLOAT32", "gamma"]
