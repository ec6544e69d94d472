"""The reduction's agreement check at every size a page or `gpu check` allows (N up to 2^30):
wrong results are rejected, every step's correct result is accepted.

The design (gpu/core/agreement.py, ``ExactSumInputs``): whole-number inputs with a total of
at most 2^24, so every partial sum of every order is exact in float32 and results are
compared bit for bit with the exact total. The large sizes use the inputs' arithmetic
(counts, totals) and float32 sums of the nonzero values only, never an array of N values:
adding a zero is exact, so the partial sums of any order over all N values are partial
sums over the nonzero ones.
"""

import numpy as np
import pytest

from gpu.core.agreement import (
    FLOAT32_EXACT_INTEGERS,
    ExactReference,
    ExactSumInputs,
    exact_sum_reference,
    gamma,
)

SIZES = (2**20, 2**24, 2**28, 2**30)
THREADS_PER_BLOCK = (32, 64, 256, 1024)  # what the reduction's form accepts: powers of two from 32 to 1024


def _float32(value) -> np.ndarray:
    return np.array([value], dtype=np.float32)


def test_a_bound_for_any_order_could_not_reject_zero_which_is_why_the_reduction_is_exact():
    n = 2**24
    assert gamma(n - 1) > 1  # |0 − Σx| = Σ|x| for x ≥ 0: inside ((1 + u)^(N−1) − 1)·Σ|x|


@pytest.mark.parametrize("n", SIZES)
def test_inputs_keep_every_partial_sum_a_float32_whole_number(n):
    plan = ExactSumInputs.for_size(n)
    assert 1 <= plan.min_total <= plan.max_total <= FLOAT32_EXACT_INTEGERS
    assert plan.nonzeros * plan.spacing >= n and plan.spacing & (plan.spacing - 1) == 0
    if n <= 2**24:
        assert plan.spacing == 1  # every element nonzero
    else:
        assert plan.spacing == n // 2**24 and plan.max_value == 1  # 16 at 2^28, 64 at 2^30


@pytest.mark.parametrize("n", SIZES)
def test_every_steps_order_returns_the_exact_total_even_for_the_largest_inputs(n):
    """The worst case for rounding is the largest total (every nonzero at ``max_value``)."""
    plan = ExactSumInputs.for_size(n)
    worst = np.full(plan.nonzeros, plan.max_value, dtype=np.float32)
    total = np.float32(plan.max_total)
    # Atomics in the worst order, a CPU loop: one chain of N − 1 float32 additions.
    assert np.cumsum(worst, dtype=np.float32)[-1] == total
    # Trees and warp shuffles: pairwise levels (NumPy's float32 sum is pairwise too).
    assert np.sum(worst, dtype=np.float32) == total
    # Blocks of 256 summed first (tree, shuffles, grid-stride running sums), then their atomics in a chain.
    whole = worst.size // 256 * 256
    per_block = worst[:whole].reshape(-1, 256).sum(axis=1, dtype=np.float32)
    assert np.cumsum(np.append(per_block, worst[whole:]), dtype=np.float32)[-1] == total
    # And the check accepts it, whatever the total within the inputs' range.
    for exact in (plan.min_total, plan.max_total):
        assert ExactReference(_float32(exact)).check("correct", _float32(exact)).passed


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("threads", THREADS_PER_BLOCK)
def test_zero_the_negated_sum_a_missing_block_and_one_percent_low_are_rejected(n, threads):
    plan = ExactSumInputs.for_size(n)
    for total in (plan.min_total, plan.max_total):
        reference = ExactReference(_float32(total))
        wrong = {
            "zero": 0.0,
            "negated": -total,
            "1% low": np.float32(total) * np.float32(0.99),
            "a nonzero element missing": total - 1,
        }
        if plan.catches_missing_run(threads):  # every block holds a value ≥ 1
            wrong["missing block"] = total - 1
        for name, value in wrong.items():
            agreement = reference.check(name, _float32(value))
            assert not agreement.passed and agreement.mismatches == 1, (n, threads, name)


def test_a_missing_block_is_caught_at_every_size_but_32_thread_blocks_past_2_to_the_29():
    """Past 2^29 elements, 32-element blocks outnumber the 2^24 ones an exact total can hold."""
    for log2_n in range(0, 31):
        plan = ExactSumInputs.for_size(2**log2_n)
        for threads in THREADS_PER_BLOCK:
            assert plan.catches_missing_run(threads) == (threads > 32 or log2_n <= 29), (log2_n, threads)
    assert ExactSumInputs.for_size(2**30).catches_missing_run(64)


@pytest.mark.parametrize("n", [1, 1000, 2**20, 2**24 + 2**20 + 1])
def test_real_inputs_sum_exactly_and_every_block_counts(n):
    plan = ExactSumInputs.for_size(n)
    x = plan.make(seed=7)
    assert x.dtype == np.float32 and x.size == n and np.array_equal(x, plan.make(seed=7))
    reference = exact_sum_reference(x)
    total = int(reference.expected[0])
    assert plan.min_total <= total <= plan.max_total
    assert reference.check("sequential float32", _float32(np.cumsum(x, dtype=np.float32)[-1])).passed
    assert reference.check("pairwise float32", _float32(np.sum(x, dtype=np.float32))).passed
    runs = np.add.reduceat(x.astype(np.int64), np.arange(0, n, plan.spacing))
    assert np.all(runs >= 1)  # each aligned run of `spacing` values holds a nonzero (the last run may be short)
    if n >= 64:
        assert not reference.check("first 64 missing", _float32(total - x[:64].sum())).passed


def test_the_reference_refuses_inputs_whose_sum_could_round():
    with pytest.raises(ValueError, match="whole numbers"):
        exact_sum_reference(np.array([0.5, 1.0], dtype=np.float32))
    with pytest.raises(ValueError, match="whole numbers"):
        exact_sum_reference(np.array([-1.0, 2.0], dtype=np.float32))
    with pytest.raises(ValueError, match="exceeds 2\\^24"):
        exact_sum_reference(np.full(2, 2.0**23 + 1, dtype=np.float32))
    with pytest.raises(ValueError, match="at least 1"):
        ExactSumInputs.for_size(0)
