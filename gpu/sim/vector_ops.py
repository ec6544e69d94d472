"""The values of the vectorised tier, and arithmetic on them with the per-thread tier's exact types.

In the per-thread tier a thread's values are Python numbers (``tid = cuda.threadIdx.x``, ``acc =
0.0``) and NumPy scalars (``a[i]``, ``float32(0.0)``), combined by NumPy 2's rules: a Python
number is *weak* (``np.float32(x) + 1`` stays float32) and a NumPy scalar is *strong*. The
vectorised tier holds one value for every lane of a chunk, so each value here is one of:

- a **uniform** value, the same in every lane: a Python number or a NumPy scalar, exactly what a
  thread would hold (arithmetic on two of them is the thread's own arithmetic);
- a **lane array** of a NumPy type (an ``ndarray``, strong, one element per lane);
- a :class:`Weak` lane array: Python ints, floats or bools of every lane, held as int64, float64
  or bool, and combined with strong values as the weak numbers they stand for.

Whatever this module cannot do exactly as a thread would raises :class:`Bail`: the launch is
then run again by the per-thread tier from the memory as it was before the launch.
"""

from __future__ import annotations

import ast
import builtins
import math
import operator

import numpy as np


class Bail(Exception):
    """This launch leaves the vectorised tier's subset here: run it per thread instead (``why`` says where)."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


class PastLoopLimit(Bail):
    """A loop ran past the launch's loop limit: the per-thread tier faults there in milliseconds (one thread reaches it
    first), where this tier takes every lane to it (about 0.5 s), so the kernel's later launches skip this tier."""


class Weak:
    """One Python number per lane: ``a`` is int64 (ints), float64 (floats) or bool (bools)."""

    __slots__ = ("a", "kind")

    def __init__(self, a: np.ndarray):
        self.a = a
        self.kind = a.dtype.kind  # 'i', 'f' or 'b'


BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.RShift: operator.rshift,
    ast.LShift: operator.lshift,
}
COMPARE = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_COMPARE_OPS = frozenset(COMPARE.values())
_DIVIDE = (operator.truediv, operator.floordiv, operator.mod)
_BITS = (operator.and_, operator.or_, operator.xor, operator.rshift, operator.lshift)
_SAFE_INT = 1 << 62  # a product or shift of Python ints that could pass int64 is left to the per-thread tier


def is_lane(value) -> bool:
    return isinstance(value, (Weak, np.ndarray))


def _split(value):
    """(array or scalar, weak kind 'i'/'f'/'b', or None for a NumPy-typed value)."""
    if isinstance(value, Weak):
        return value.a, value.kind
    if isinstance(value, (np.ndarray, np.generic)):  # first: np.float64 is a Python float too
        return value, None
    if isinstance(value, bool):
        return value, "b"
    if isinstance(value, int):
        return value, "i"
    if isinstance(value, float):
        return value, "f"
    raise Bail(f"a value of type {type(value).__name__}")


def _active(values, mask):
    return values if mask is None or not isinstance(values, np.ndarray) else values[mask]


def _fits(values, dtype: np.dtype, mask) -> None:
    """Bail unless the Python ints ``values`` (active lanes) fit ``dtype``: a thread would raise OverflowError."""
    info = np.iinfo(dtype)
    live = _active(values, mask)
    if np.size(live) and (np.min(live) < info.min or np.max(live) > info.max):
        raise Bail(f"a Python int outside {dtype}")


def to_strong(values, kind: str, dtype: np.dtype, mask):
    """A weak value converted to ``dtype`` as NumPy converts a Python number meeting a NumPy value."""
    if kind == "b" or dtype.kind == "b":
        raise Bail("a bool in arithmetic")
    if kind == "i" and dtype.kind in "iu":
        _fits(values, dtype, mask)
    if kind == "f" and dtype.kind in "iu":
        raise Bail("a Python float converted to an integer type")
    return np.asarray(values).astype(dtype) if isinstance(values, np.ndarray) else dtype.type(values)


def binary(op, x, y, mask):
    """``op(x, y)`` for every active lane, typed as a thread's ``x op y`` would be."""
    if not is_lane(x) and not is_lane(y):
        try:
            return op(x, y)
        except (ArithmeticError, ValueError, TypeError) as exc:
            raise Bail(f"{type(exc).__name__} in arithmetic") from None
    xa, xk = _split(x)
    ya, yk = _split(y)
    compare = op in _COMPARE_OPS
    if not compare and "b" in (xk, yk):
        raise Bail("a bool in arithmetic")
    if xk is not None and yk is not None:
        return _weak_binary(op, xa, xk, ya, yk, mask, compare)
    if xk is None and yk is None or not isinstance(xa if xk else ya, np.ndarray):
        # Both NumPy-typed, or a Python scalar with a NumPy lane array: NumPy applies the weak rule itself.
        try:
            return op(xa, ya)
        except (OverflowError, TypeError, ValueError) as exc:
            raise Bail(f"{type(exc).__name__} in arithmetic") from None
    try:
        return _mixed(op, xa, xk, ya, yk, mask, compare)
    except (OverflowError, TypeError, ValueError) as exc:
        raise Bail(f"{type(exc).__name__} in arithmetic") from None


def _mixed(op, xa, xk, ya, yk, mask, compare):
    """One weak lane array and one NumPy-typed value: the weak side converted as NumPy converts a Python number."""
    weak, kind, strong = (xa, xk, ya) if xk else (ya, yk, xa)
    dtype = np.asarray(strong).dtype if isinstance(strong, np.ndarray) else np.dtype(type(strong))
    if kind == "f" and dtype.kind in "iu":
        converted_strong = np.asarray(strong).astype(np.float64)
        return op(weak, converted_strong) if xk else op(converted_strong, weak)  # float64, NumPy-typed
    if compare and kind == "i" and dtype.kind in "iu":
        return op(xa, ya)  # NumPy compares a Python int with a NumPy int by value
    converted = to_strong(weak, kind, dtype, mask)
    return op(converted, ya) if xk else op(xa, converted)


def _weak_binary(op, xa, xk, ya, yk, mask, compare):
    """Python numbers of every lane with each other: int64/float64 give Python's results where checked."""
    if op in _DIVIDE and np.any(np.asarray(_active(ya, mask)) == 0):
        raise Bail("a division by zero (ZeroDivisionError in a thread)")
    if op in _BITS and "f" in (xk, yk):
        raise Bail("a bit operation on a float")
    if op in (operator.mul, operator.lshift, operator.rshift) and xk == "i" and yk == "i":
        big_x, big_y = _magnitude(_active(xa, mask)), _magnitude(_active(ya, mask))
        if op is operator.mul:
            safe = big_x * big_y < _SAFE_INT
        else:  # a shift: by 0 to 61 places, and (left) not past 62 bits
            safe = big_y < 62 and int(np.min(_active(ya, mask), initial=0)) >= 0
            safe = safe and (op is operator.rshift or big_x << big_y < _SAFE_INT)
        if not safe:
            raise Bail("a Python int that may pass 64 bits")
    try:
        out = op(xa, ya)
    except (OverflowError, TypeError, ValueError) as exc:
        raise Bail(f"{type(exc).__name__} in arithmetic") from None
    if not isinstance(out, np.ndarray):
        return out
    if compare:
        return Weak(out.astype(bool, copy=False))
    if out.dtype.kind not in "if":
        raise Bail(f"Python numbers giving {out.dtype}")
    return Weak(out)


def _magnitude(values) -> int:
    """The largest absolute value among int lanes (or of one int), in two passes and no temporary array."""
    if not isinstance(values, np.ndarray):
        return abs(int(values))
    if not values.size:
        return 0
    return max(abs(int(values.min())), abs(int(values.max())))


def negate(value, mask):
    if isinstance(value, Weak):
        if value.kind == "b":
            raise Bail("a bool in arithmetic")
        return Weak(-value.a)
    return -value


def invert(value):
    if isinstance(value, Weak):
        if value.kind != "i":
            raise Bail("~ on a value that is not an int")
        return Weak(~value.a)
    if isinstance(value, np.ndarray) and value.dtype.kind not in "iu":
        raise Bail("~ on a value that is not an int")
    return ~value


def truth(value):
    """Whether each lane's value is true (a bool array), or one bool for a uniform value."""
    if isinstance(value, Weak):
        return value.a if value.kind == "b" else value.a != 0
    if isinstance(value, np.ndarray):
        return value if value.dtype.kind == "b" else value != 0
    if not isinstance(value, (bool, int, float, np.generic)):  # an array as a predicate: the per-thread tier's fault
        raise Bail(f"a truth value of {type(value).__name__}")
    return bool(value)


def category(value):
    """What a value is to a thread, for merging two lanes' values: ('weak', kind) or ('numpy', dtype)."""
    if isinstance(value, Weak):
        return ("weak", value.kind)
    if isinstance(value, (np.ndarray, np.generic)):  # first: np.float64 is a Python float too
        return ("numpy", value.dtype)
    if isinstance(value, bool):
        return ("weak", "b")
    if isinstance(value, int):
        return ("weak", "i")
    if isinstance(value, float):
        return ("weak", "f")
    return ("object", id(value))


_WEAK_DTYPE = {"i": np.int64, "f": np.float64, "b": np.bool_}


def lanes_of(value, count: int) -> np.ndarray:
    """The value as a lane array of ``count`` lanes (its NumPy data; weak values as int64/float64/bool)."""
    if isinstance(value, Weak):
        return value.a
    if isinstance(value, np.ndarray):
        return value
    kind, what = category(value)
    dtype = _WEAK_DTYPE[what] if kind == "weak" else what
    return np.full(count, value, dtype=dtype)


def merge(mask, new, old, count: int):
    """``new`` where ``mask`` is true, ``old`` elsewhere; Bail when the lanes would hold different types."""
    if new is old:
        return new
    kind_new, kind_old = category(new), category(old)
    if kind_new[0] == "object" or kind_new != kind_old:
        if kind_new == ("weak", "b") and kind_old == ("numpy", np.dtype(bool)) or (
            kind_old == ("weak", "b") and kind_new == ("numpy", np.dtype(bool))
        ):
            pass  # a Python bool and a NumPy bool behave alike wherever the tier lets a bool go
        else:
            raise Bail("a variable that holds values of different types in different lanes")
    merged = np.where(mask, lanes_of(new, count), lanes_of(old, count))
    return Weak(merged) if kind_new[0] == "weak" else merged


def cast(dtype: np.dtype, value, mask):
    """``float32(x)``, ``int32(x)``, ...: a thread's NumPy scalar constructor, for every lane."""
    if not is_lane(value):
        try:
            return dtype.type(value)
        except (OverflowError, ValueError, TypeError) as exc:
            raise Bail(f"{type(exc).__name__} converting to {dtype}") from None
    data, kind = _split(value)
    if kind == "i" and dtype.kind in "iu":
        _fits(data, dtype, mask)
    if dtype.kind in "iu" and data.dtype.kind in "fc":
        _float_fits(_active(data, mask), dtype)
    return data.astype(dtype)


def _float_fits(live, dtype: np.dtype) -> None:
    """Bail unless every float in ``live`` truncates to a value of the integer ``dtype`` (a thread may raise)."""
    info = np.iinfo(dtype)
    if np.size(live) and (
        not np.all(np.isfinite(live)) or np.min(live) <= info.min - 1 or np.max(live) >= info.max + 1
    ):
        raise Bail(f"a float outside {dtype} converted to it")


def store_value(dtype: np.dtype, value, mask):
    """What a store of ``value`` into an array of ``dtype`` writes (NumPy's setitem conversion)."""
    data, kind = _split(value)
    if dtype.kind in "iu" and (kind == "f" or (kind is None and np.asarray(data).dtype.kind in "fc")):
        _float_fits(_active(data, mask) if isinstance(data, np.ndarray) else data, dtype)
    if kind == "i" and dtype.kind in "iu":
        _fits(data, dtype, mask)
    if isinstance(data, np.ndarray):
        return data.astype(dtype, copy=False)
    return dtype.type(data)


def int_index(value):
    """An index value as int64 lanes or one int; Bail for anything a thread could not index with."""
    if isinstance(value, Weak):
        if value.kind != "i":
            raise Bail("an index that is not an int")
        return value.a
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iu":
            raise Bail("an index that is not an int")
        return value.astype(np.int64, copy=False)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise Bail("an index that is not an int")
    return int(value)


# Python's own functions the vectorised tier runs lane by lane: builtins (by identity) and ``math`` (by name)
BUILTINS = {builtins.min: "min", builtins.max: "max", builtins.abs: "abs"}
MATH = {"sqrt": np.sqrt, "fabs": np.fabs}


def global_id(block_idx, size: int, thread_idx):
    """``blockIdx * blockDim + threadIdx`` on one axis: Weak lanes, or a Python int where it is uniform."""
    value = (block_idx.a if isinstance(block_idx, Weak) else block_idx) * size + (
        thread_idx.a if isinstance(thread_idx, Weak) else thread_idx
    )
    return Weak(value) if isinstance(value, np.ndarray) else int(value)


def both(a, b):
    """``a and b`` lane by lane (Python's value where both are uniform)."""
    ta, tb = truth(a), truth(b)
    if not isinstance(ta, np.ndarray) and not isinstance(tb, np.ndarray):
        return a if not ta else b
    return Weak(np.logical_and(ta, tb))


def bool_only(value, line: int) -> None:
    """Bail unless ``value`` is bools: ``and``/``or`` of other values differing between lanes is not a lane merge."""
    kind = category(value)
    if kind not in (("weak", "b"), ("numpy", np.dtype(bool))):
        raise Bail(f"and/or over values that are not bools, differing between lanes (line {line})")


def math_call(name: str, args, mask, line: int):
    """``math.<name>(x)`` (a name of ``MATH``) as each lane's thread would call it, or Bail."""
    if len(args) != 1:
        raise Bail(f"math.{name} with {len(args)} arguments (line {line})")
    (x,) = args
    if not is_lane(x):
        try:
            return getattr(math, name)(x)
        except (ValueError, TypeError, OverflowError) as exc:
            raise Bail(f"math.{name}: {exc} (line {line})") from None
    data = x.a if isinstance(x, Weak) else x
    if isinstance(x, Weak) and x.kind == "b":
        raise Bail(f"math.{name} of a bool (line {line})")
    as_float = data.astype(np.float64)
    if name == "sqrt":
        live = as_float if mask is None else as_float[mask]
        if (live < 0).any():
            raise Bail(f"math.sqrt of a negative number (line {line})")
    return Weak(MATH[name](as_float))


def builtin_call(name: str, args, mask, lanes: int, line: int):
    """``min``, ``max`` or ``abs`` (``BUILTINS``) as each lane's thread would call it, or Bail."""
    if not any(is_lane(a) for a in args):
        try:
            return getattr(builtins, name)(*args)
        except (TypeError, ValueError) as exc:
            raise Bail(f"{name}: {exc} (line {line})") from None
    if name == "abs":
        (x,) = args
        if isinstance(x, Weak):
            if x.kind == "b":
                raise Bail(f"abs of a bool (line {line})")
            return Weak(np.abs(x.a))
        return np.abs(x)
    if len(args) != 2:
        raise Bail(f"{name} of {len(args)} values (line {line})")
    a, b = args
    if category(a) != category(b):
        raise Bail(f"{name} of values of different types (line {line})")
    # Python's min(a, b) is b if b < a else a; max(a, b) is b if b > a else a (NaN: the first).
    take_b = truth(binary(COMPARE[ast.Lt if name == "min" else ast.Gt], b, a, mask))
    return merge(take_b, b, a, lanes)


__all__ = ["BINARY", "BUILTINS", "COMPARE", "MATH", "Bail", "PastLoopLimit", "Weak", "binary", "bool_only", "both",
           "builtin_call", "cast", "global_id", "int_index", "math_call", "merge", "truth"]
