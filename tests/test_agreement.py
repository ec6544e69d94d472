"""gpu.core.agreement: the exact check and the γ_k bound, each shown to fail when it should."""

import math

import numpy as np
import pytest

from gpu.core.agreement import U_FLOAT32, BoundedReference, ExactReference, gamma


def test_the_bound_factor_is_one_plus_u_to_the_k_minus_one_and_never_blows_up():
    assert gamma(0) == 0.0
    assert gamma(10) == pytest.approx((1 + U_FLOAT32) ** 10 - 1, rel=1e-9)
    classic = lambda k: k * U_FLOAT32 / (1 - k * U_FLOAT32)  # noqa: E731  Higham's γ_k, which bounds it
    for k in (10, 2**10, 2**20, 2**23):
        assert gamma(k) <= classic(k)
    near_one = 2**24 - 2**4  # k·u = 0.999999: γ_k ≈ 10^6, (1 + u)^k − 1 ≈ e − 1
    assert classic(near_one) > 1e5 and gamma(near_one) == pytest.approx(math.e - 1, rel=1e-5)
    assert gamma(2**25) == pytest.approx(math.e**2 - 1, rel=1e-6)  # k·u = 2: γ_k undefined, this stays finite


def test_exact_check_counts_a_one_ulp_difference_and_passes_identical_bits():
    expected = np.arange(10, dtype=np.float32) / 3
    assert ExactReference(expected).check("same", expected.copy()).passed
    wrong = expected.copy()
    wrong[4] = np.nextafter(wrong[4], np.float32(10))
    agreement = ExactReference(expected).check("one ulp", wrong)
    assert not agreement.passed and agreement.mismatches == 1 and agreement.max_abs_error > 0
    assert "1 of 10 elements differ" in agreement.describe()


def test_exact_check_compares_integer_counts_by_value():
    counts = np.array([3, 0, 7], dtype=np.uint32)
    assert ExactReference(counts).check("ok", counts.copy()).passed
    assert ExactReference(counts).check("off by one", counts + np.uint32(1)).mismatches == 3


def test_bounded_check_accepts_float32_rounding_and_rejects_a_dropped_term():
    rng = np.random.default_rng(0)
    x = rng.random(4096, dtype=np.float32)
    reference = BoundedReference(np.array([x.astype(np.float64).sum()]), np.array([np.abs(x.astype(np.float64)).sum()]))
    float32_sum = np.array([np.float32(0) + np.cumsum(x, dtype=np.float32)[-1]])  # sequential: depth 4095
    ok = reference.check("sequential", float32_sum, depth=x.size - 1)
    assert ok.passed and 0 < ok.max_abs_error <= ok.bound and ok.worst_ratio <= 1
    dropped = np.array([np.sum(x[1:], dtype=np.float32)])
    bad = reference.check("one term dropped", dropped, depth=x.size - 1)
    assert not bad.passed and bad.worst_ratio > 1 and "over the bound" in bad.describe()


def test_bounded_check_fails_on_nan_and_needs_a_depth():
    reference = BoundedReference(np.ones(2), np.ones(2))
    assert not reference.check("nan", np.array([1.0, np.nan], dtype=np.float32), depth=1).passed
    with pytest.raises(ValueError, match="summation depth"):
        reference.check("no depth", np.ones(2, dtype=np.float32))


def test_shapes_must_match():
    with pytest.raises(ValueError, match="shape"):
        ExactReference(np.zeros(3)).check("short", np.zeros(2))
