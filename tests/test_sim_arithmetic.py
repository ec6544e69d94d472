"""Arithmetic in the simulator as a compiled kernel does it (gpu/sim/arithmetic.py, rewrite 6).

Numba types a kernel's Python ints as int64: a product past 64 bits wraps, and a shift by 64 places or more (or by a
negative count) is undefined. The per-thread tier ran Python's ints, which never wrap: a kernel squaring a number grew
it without bound until the sandbox stopped it for its memory. Each expected value here is NumPy's int64 arithmetic,
which wraps as LLVM's ``mul`` does. A division by zero raises nothing in a compiled kernel (NumPy's error model):
a whole number gives 0, a float IEEE's inf or nan; Python raised, and the simulator reported a ZeroDivisionError.
"""

from __future__ import annotations

import dis
import time

import numpy as np
import pytest

from gpu.core.backend import BACKEND
from gpu.sim import KernelFault
from gpu.sim import arithmetic as int64
from gpu.sim.rewrite import INT, function_node, rewrite
from tests.test_sim_hostile import HEADER, line_of, run

pytestmark = pytest.mark.skipif(not BACKEND.lab_simulator, reason="the lab's simulator's integer arithmetic")


def numpy_int64(values, step, turns: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = np.asarray(values, np.int64)
        for _ in range(turns):
            x = step(x)
        return x


def test_wrap_keeps_the_low_64_bits_as_twos_complement():
    assert int64.wrap(0) == 0 and int64.wrap(int64.HIGH) == int64.HIGH and int64.wrap(int64.LOW) == int64.LOW
    assert int64.wrap(int64.HIGH + 1) == int64.LOW
    assert int64.wrap(int64.LOW - 1) == int64.HIGH
    assert int64.wrap(1 << 64) == 0 and int64.wrap(-(1 << 64) - 5) == -5
    big = 3**200
    assert int64.wrap(big) == int(np.array([big % (1 << 64)], np.uint64).view(np.int64)[0])


SQUARES = """
@cuda.jit
def squares(out, turns):
    i = cuda.grid(1)
    x = 3 + i
    for k in range(turns):
        x = x * x
    out[i] = x
"""


def test_a_product_past_64_bits_wraps_as_numpy_int64_does(tier):
    out = np.zeros(64, np.int64)
    started = time.perf_counter()
    run(SQUARES, "squares", 2, 32, out, 200)  # 2**200 bits as Python ints: never finishing
    assert time.perf_counter() - started < 30  # (a bound on not hanging, not a timing)
    expected = numpy_int64(np.arange(3, 67), lambda x: x * x, 200)
    np.testing.assert_array_equal(out, expected)
    assert not np.all(expected == 0)  # odd numbers stay odd: the check could fail


AUGMENTED = """
@cuda.jit
def augmented(out):
    i = cuda.grid(1)
    x = 7 + i
    for k in range(70):
        x *= 3
    out[i] = x ** 5 + (x << 3)
"""


def test_augmented_products_powers_and_shifts_wrap_too(tier):
    out = np.zeros(32, np.int64)
    run(AUGMENTED, "augmented", 1, 32, out)
    x = numpy_int64(np.arange(7, 39), lambda x: x * np.int64(3), 70)
    with np.errstate(over="ignore"):
        expected = x**5 + (x << np.int64(3))
    np.testing.assert_array_equal(out, expected)


def test_a_power_is_computed_modulo_2_to_the_64_without_the_huge_number():
    assert int64.power(3, 10**18) == int64.wrap(pow(3, 10**18, 1 << 64))  # at once: never 10**18 digits
    assert int64.power(-7, 5) == -16807
    assert int64.power(2, 63) == int64.LOW and int64.power(2, 64) == 0
    assert int64.power(2, -1) == 0.5  # a negative power: Python's float (the docs' table says so)
    assert int64.power(2.5, 2) == 6.25


SHIFT = """
@cuda.jit
def shift(out, s):
    i = cuda.grid(1)
    x = 1 + i
    out[i] = x << s
"""

SHIFT_RIGHT = """
@cuda.jit
def shift_right(out, s):
    i = cuda.grid(1)
    x = -1000 - i
    out[i] = x >> s
"""


def test_shifts_within_0_to_63_are_numpys(tier):
    out = np.zeros(32, np.int64)
    run(SHIFT, "shift", 1, 32, out, 63)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, np.arange(1, 33, dtype=np.int64) << np.int64(63))
    assert out[0] == int64.LOW  # 1 << 63 wrapped to the sign bit
    run(SHIFT_RIGHT, "shift_right", 1, 32, out, 5)
    np.testing.assert_array_equal(out, np.arange(-1000, -1032, -1, dtype=np.int64) >> 5)


@pytest.mark.parametrize(("source", "kernel", "count", "words"), [
    (SHIFT, "shift", 64, "1 << 64: a shift by 64 places or more"),
    (SHIFT, "shift", -1, "1 << -1: a shift by a negative count"),
    (SHIFT_RIGHT, "shift_right", 64, "-1000 >> 64: a shift by 64 places or more"),
])
def test_a_shift_by_64_or_more_or_a_negative_count_is_a_fault_naming_the_line(tier, source, kernel, count, words):
    out = np.zeros(32, np.int64)
    with pytest.raises(KernelFault) as caught:
        run(source, kernel, 1, 32, out, count)
    fault = caught.value
    assert fault.kind == "undefined"
    assert (fault.block, fault.thread) == ((0, 0, 0), (0, 0, 0))
    assert fault.line == line_of(source, "    out[i] = x << s" if kernel == "shift" else "    out[i] = x >> s")
    assert words in fault.sentence and "undefined in compiled Numba" in fault.sentence


DOUBLING = """
@cuda.jit
def doubling(out):
    i = cuda.grid(1)
    if i == 0:
        x = 1
        s = 1
        while s > 0:
            x = x << s
            s = s * 2
        out[0] = x
"""


def test_the_shift_that_grew_without_bound_now_faults_at_once(tier):
    """The class benchmark's old memory hog: with Python's ints, ``x`` had 2**k bits after k turns (about 1 GiB in
    30); compiled, ``s`` reaches 64 at the seventh turn, where the shift is undefined."""
    out = np.zeros(1, np.int64)
    started = time.perf_counter()
    with pytest.raises(KernelFault) as caught:
        run(DOUBLING, "doubling", 1, 32, out)
    assert time.perf_counter() - started < 30
    assert caught.value.kind == "undefined" and caught.value.line == line_of(DOUBLING, "            x = x << s")
    assert "<< 64" in caught.value.sentence


def int_checks(source: str, name: str) -> int:
    """How many inline int64 checks the rewritten kernel's own code has (each loads ``lab$int`` once; the block loop
    made from its body has the same ones)."""
    node = function_node(HEADER + source, name, 1)
    code = rewrite(node, "<test>", frozenset({"cuda"}), frozenset()).code
    stack, count = [code], 0
    while stack:
        c = stack.pop()
        if c.co_name == name:
            count += sum(1 for ins in dis.get_instructions(c) if ins.argval == INT and "LOAD" in ins.opname)
        stack.extend(k for k in c.co_consts if hasattr(k, "co_code"))
    return count


def test_floats_and_literals_are_left_as_they_are():
    """Only the store is checked where the product has a float literal; a product of two values is checked too."""
    plain = "@cuda.jit\ndef k(a, out):\n    i = cuda.grid(1)\n    out[i] = a[i] * 0.5 + 2 * 3\n"
    product = "@cuda.jit\ndef k(a, out):\n    i = cuda.grid(1)\n    out[i] = a[i] * i\n"
    assert int_checks(plain, "k") == 1 and int_checks(product, "k") == 2
    a, out = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    run(plain, "k", 1, 32, a, out)
    np.testing.assert_array_equal(out, a * np.float32(0.5) + np.float32(6))


SUMS = """
@cuda.jit
def sums(out, big):
    i = cuda.grid(1)
    x = big + big + i
    out[i] = x
    out[i] += big + big
"""


def test_a_sum_past_64_bits_is_wrapped_where_it_is_stored(tier):
    out = np.zeros(32, np.int64)
    big = int64.HIGH - 5
    run(SUMS, "sums", 1, 32, out, big)
    with np.errstate(over="ignore"):
        b = np.int64(big)
        x = b + b + np.arange(32, dtype=np.int64)
        np.testing.assert_array_equal(out, x + (b + b))


DIVISIONS = """
@cuda.jit
def divisions(quotients, floors, remainders, x):
    i = cuda.grid(1)
    d = i - 2
    quotients[i] = x / d
    floors[i] = 7 // d
    remainders[i] = 7 % d
"""


@pytest.mark.filterwarnings("ignore::gpu.sim.errors.DividedByZero")  # (the note: the test below)
def test_a_division_by_zero_gives_what_numbas_error_model_gives(tier):
    """Thread 2 divides by zero: 1.5 / 0 is inf, 0.0 / 0 nan, 7 // 0 and 7 % 0 are 0 (an int's), no fault."""
    quotients, floors, remainders = np.zeros(8), np.zeros(8, np.int64), np.zeros(8, np.int64)
    run(DIVISIONS, "divisions", 1, 8, quotients, floors, remainders, 1.5)
    d = np.arange(8) - 2
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(quotients, 1.5 / d)
        np.testing.assert_array_equal(floors, np.floor_divide(7, d))
        np.testing.assert_array_equal(remainders, np.remainder(7, d))
    assert quotients[2] == np.inf and floors[2] == 0 and remainders[2] == 0
    run(DIVISIONS, "divisions", 1, 8, quotients, floors, remainders, 0.0)
    assert np.isnan(quotients[2]) and quotients[3] == 0.0


@pytest.mark.filterwarnings("ignore::gpu.sim.errors.DividedByZero")
def test_float_floor_division_and_remainder_by_zero_are_ieees():
    assert int64.floordiv(1.0, 0) == np.inf and int64.floordiv(-1.0, 0.0) == -np.inf
    assert np.isnan(int64.mod(1.0, 0.0)) and int64.mod(7, 0) == 0 and int64.floordiv(-7, 0) == 0
    assert int64.truediv(-3, 0) == -np.inf and np.isnan(int64.truediv(0, 0))
    assert type(int64.truediv(1, 0)) is float and type(int64.floordiv(7, 0)) is int  # Python's types, as before
    assert int64.truediv(7, 2) == 3.5 and int64.floordiv(-7, 2) == -4 and int64.mod(-7, 2) == 1  # else Python's


def test_a_division_by_zero_is_noted_once_per_line_per_launch(tier):
    """Right as Numba compiles it, rarely what was meant (and undefined for an integer in CUDA C): a warning the
    verdict shows as a note, naming the line and the value it gave."""
    import warnings

    from gpu.sim.errors import DividedByZero

    quotients, floors, remainders = np.zeros(8), np.zeros(8, np.int64), np.zeros(8, np.int64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(DIVISIONS, "divisions", 1, 8, quotients, floors, remainders, 1.5)
    noted = [w.message for w in caught if isinstance(w.message, DividedByZero)]
    lines = {name: line_of(DIVISIONS, text) for name, text in (
        ("/", "    quotients[i] = x / d"), ("//", "    floors[i] = 7 // d"), ("%", "    remainders[i] = 7 % d"))}
    assert sorted((n.line, n.op) for n in noted) == sorted((line, op) for op, line in lines.items())  # once each
    by_op = {n.op: str(n) for n in noted}
    assert by_op["/"].startswith(f"line {lines['/']}: / by zero gave inf, a float's result as Numba compiles it")
    assert "// by zero gave 0, an integer's result" in by_op["//"] and "CUDA C" in by_op["//"]


NARROW = """
@cuda.jit
def narrow(bytes_out, words_out, big):
    i = cuda.grid(1)
    bytes_out[i] = 250 + i
    words_out[i] = big * (i + 1)
    bytes_out[i] += 300
"""


def test_an_int_stored_into_a_narrower_integer_array_keeps_its_low_bits_as_numbas_store_does(tier):
    """Numba casts the int64 to the element's type on a store (LLVM's trunc); NumPy 2 raised OverflowError for a
    Python int that does not fit. An int64 is what the store now gets, which NumPy casts the same way."""
    bytes_out, words_out = np.zeros(32, np.uint8), np.zeros(32, np.int32)
    run(NARROW, "narrow", 1, 32, bytes_out, words_out, 3_000_000_000)
    lanes = np.arange(32, dtype=np.int64)
    np.testing.assert_array_equal(bytes_out, ((250 + lanes) + 300).astype(np.uint8))
    np.testing.assert_array_equal(words_out, (3_000_000_000 * (lanes + 1)).astype(np.int32))
    assert bytes_out[10] == (260 + 300) % 256 and words_out[0] == 3_000_000_000 - (1 << 32)
    assert int64.stored(1 << 64) == 0 and type(int64.stored(5)) is np.int64
