"""Arithmetic in the per-thread tier as a compiled kernel does it: 64-bit whole numbers, Numba's division.

Numba types a Python int in a kernel (a literal, a loop counter, a thread index) as int64 and compiles
its arithmetic to LLVM's ``mul``, ``shl`` and ``ashr`` without overflow flags: a product past 64 bits
wraps, and a shift by 64 places or more, or by a negative count, is undefined (LLVM's result is
poison; numba-cuda's ``int_shl_impl`` and ``int_shr_impl`` pass the count on unchecked). The
simulator's per-thread tier runs kernels as Python, whose ints never wrap: ``x = x * x`` or
``x << s`` with ``s`` doubling grew without bound, until the sandbox stopped the submission for its
memory, where the compiled kernel would have ended in microseconds.

The rewrite (``gpu/sim/rewrite.py``, rewrite 6) sends every ``*``, ``**``, ``<<`` and ``>>`` through these
functions (a product inline, then ``wrap`` where it left int64), and makes every Python int stored into an
array element an int64 first (``stored``), which NumPy casts to the element's type as Numba's store does. A
result that is not a Python int (NumPy scalars wrap by themselves; floats) passes untouched; one past int64 is
wrapped to it; a shift count outside 0–63 is a KernelFault naming the line, loud where Numba
leaves the result undefined. ``+`` and ``-`` are left as Python does them: a sum grows one bit per step at
most, and wrapping it at the next product or store gives the same value modulo 2**64 as Numba's; a comparison
or a division of a sum past int64 is where the two still differ (docs/simulator.md).

Division: numba-cuda compiles kernels with NumPy's error model (``flags.error_model = "numpy"`` unless
``debug=True``), so a division by zero raises nothing: a whole number divided (``//``) or reduced (``%``) by
zero is 0 (``_int_divmod_impl`` stores the zero divisor), and a float is IEEE's (``1.0 / 0`` is inf, ``0.0 / 0``
nan, ``x % 0.0`` nan). Python raises ZeroDivisionError for the same code; ``/``, ``//`` and ``%`` go through
``truediv``, ``floordiv`` and ``mod``, which give the compiled kernel's value where Python raised.
"""

from __future__ import annotations

from typing import NoReturn

import numpy as np

from gpu.sim.device import divided_by_zero
from gpu.sim.errors import KernelFault

BITS = 64
LOW, HIGH = -(1 << (BITS - 1)), (1 << (BITS - 1)) - 1
_SPAN, _MASK = 1 << BITS, (1 << BITS) - 1


def wrap(value: int) -> int:
    """``value`` as a two's-complement int64 holds it: the same low 64 bits."""
    return ((value - LOW) & _MASK) + LOW


def stored(value: int, array=None):
    """A Python int about to be stored into ``array`` (None: an array the rewrite could not name), as Numba's store
    has it: an int64 (wrapped where it left int64) cast to the element's type, a narrower integer keeping the low bits
    (300 into a uint8 is 44; LLVM's trunc). NumPy raised OverflowError for an int that does not fit."""
    as_int64 = np.int64(value if LOW <= value <= HIGH else wrap(value))
    dtype = getattr(array, "dtype", None)
    if dtype is not None and dtype.kind in "iub" and dtype != as_int64.dtype:
        return as_int64.astype(dtype)  # a C cast: the low bits (a bool: whether it is not zero)
    return as_int64


def power(a, b):
    """``a ** b``; a Python int to a whole power ≥ 0 computed modulo 2**64 (never as a huge number first) and wrapped,
    as repeated int64 products give. A negative power is left to Python (a float), as is anything else."""
    if type(a) is int and type(b) is int and b >= 0:
        return wrap(pow(a, b, _SPAN))
    return a ** b


def truediv(a, b, line: int = 0):
    """``a / b``; by zero, IEEE's answer (±inf, or nan for 0 / 0), as Numba's error model for kernels gives."""
    try:
        return a / b
    except ZeroDivisionError:
        return _by_zero(np.true_divide, a, b, "/", line)


def floordiv(a, b, line: int = 0):
    """``a // b``; by zero, 0 for whole numbers and IEEE's ±inf or nan for floats, as Numba's error model gives."""
    try:
        return a // b
    except ZeroDivisionError:
        return _by_zero(np.floor_divide, a, b, "//", line)


def mod(a, b, line: int = 0):
    """``a % b``; by zero, 0 for whole numbers and nan for floats, as Numba's error model gives."""
    try:
        return a % b
    except ZeroDivisionError:
        return _by_zero(np.remainder, a, b, "%", line)


def _by_zero(ufunc, a, b, op: str, line: int):
    """Python raised where a compiled kernel does not: NumPy's scalar ufunc gives Numba's value (an int64 divided by
    zero is 0; a float is IEEE's), back as the Python number Python would have returned; a note says so, once per
    line per launch (``DividedByZero``: the verdict shows it)."""
    with np.errstate(all="ignore"):
        value = ufunc(_scalar(a), _scalar(b)).item()
    divided_by_zero(line, op, value)
    return value


def _scalar(value):
    if isinstance(value, int):  # (a bool too)
        return stored(value)
    if isinstance(value, float):
        return np.float64(value)
    return value


def shl(a, b, line: int):
    """``a << b``: a count outside 0–63 is a fault (undefined in compiled Numba); the result wrapped to int64."""
    _count(a, b, "<<", line)
    shifted = a << b
    if type(shifted) is int and not LOW <= shifted <= HIGH:
        return wrap(shifted)
    return shifted


def shr(a, b, line: int):
    """``a >> b``: a count outside 0–63 is a fault (undefined in compiled Numba); otherwise Python's (arithmetic)."""
    _count(a, b, ">>", line)
    return a >> b


def _count(a, b, op: str, line: int) -> None:
    try:
        inside = 0 <= b < BITS
    except TypeError:  # not a number: Python raises its own error at the shift
        return
    if not inside and _whole(a) and _whole(b):
        undefined_shift(a, b, op, line)


def _whole(value) -> bool:
    return isinstance(value, int) or getattr(getattr(value, "dtype", None), "kind", "") in ("i", "u")


def undefined_shift(a, b, op: str, line: int) -> NoReturn:
    raise KernelFault(
        "undefined",
        f"{_short(a)} {op} {_short(b)}: a shift by {'a negative count' if b < 0 else f'{BITS} places or more'} is "
        f"undefined in compiled Numba (a {BITS}-bit shift in LLVM, whose result is then poison: a GPU gives no "
        "defined value); the simulator stops here rather than guess one",
        line=line,
    )


def _short(value) -> str:
    text = str(int(value))
    return text if len(text) <= 24 else f"{text[:10]}…({len(text)} digits)"


__all__ = ["BITS", "HIGH", "LOW", "floordiv", "mod", "power", "shl", "shr", "stored", "truediv", "undefined_shift",
           "wrap"]
