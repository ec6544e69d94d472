"""``cuda.fp16`` in the lab's simulator: IEEE half precision, each operation rounded to half.

A GPU computes a half operation exactly and rounds once to half. Here each is computed in
float32 (float64 for ``hfma``) and rounded to ``float16``: for +, -, *, / and sqrt of halves
float32 has more than twice half's 11 significant bits plus two, so the double rounding gives
the correctly rounded half (round to nearest, ties to even), bit for bit; a product of two
halves is exact in float32, so ``hfma``'s one rounding after the add is kept in float64. The
transcendental functions (``hsin``, ``hexp``...) are float32's rounded to half: a GPU's
approximations may differ in the last bit. Comparisons return a ``bool``; ``hmax``/``hmin``
return the other operand where one is NaN, as CUDA's ``__hmax``/``__hmin``.
"""

from __future__ import annotations

import numpy as np

_HALF = np.float16
_F32 = np.float32


def _h(x) -> np.float16:
    return _HALF(x)


def _f(x) -> np.float32:
    return _F32(_HALF(x))  # a value is a half first: an operand wider than half is rounded to it, as Numba types it


class Fp16:
    """The functions of ``numba.cuda.fp16``."""

    @staticmethod
    def hadd(a, b):
        return _h(_f(a) + _f(b))

    @staticmethod
    def hsub(a, b):
        return _h(_f(a) - _f(b))

    @staticmethod
    def hmul(a, b):
        return _h(_f(a) * _f(b))

    @staticmethod
    def hdiv(a, b):
        with np.errstate(all="ignore"):
            return _h(_f(a) / _f(b))

    @staticmethod
    def hfma(a, b, c):
        return _h(np.float64(_f(a)) * np.float64(_f(b)) + np.float64(_f(c)))

    @staticmethod
    def hneg(a):
        return _h(-_f(a))

    @staticmethod
    def habs(a):
        return _h(abs(_f(a)))

    @staticmethod
    def hmax(a, b):
        return _h(np.fmax(_f(a), _f(b)))

    @staticmethod
    def hmin(a, b):
        return _h(np.fmin(_f(a), _f(b)))

    @staticmethod
    def heq(a, b):
        return bool(_f(a) == _f(b))

    @staticmethod
    def hne(a, b):
        return bool(_f(a) != _f(b))

    @staticmethod
    def hge(a, b):
        return bool(_f(a) >= _f(b))

    @staticmethod
    def hgt(a, b):
        return bool(_f(a) > _f(b))

    @staticmethod
    def hle(a, b):
        return bool(_f(a) <= _f(b))

    @staticmethod
    def hlt(a, b):
        return bool(_f(a) < _f(b))


def _unary(numpy_function):
    def apply(x):
        with np.errstate(all="ignore"):
            return _h(numpy_function(_f(x)))

    return staticmethod(apply)


for _name, _function in {
    "hsqrt": np.sqrt, "hrsqrt": lambda x: _F32(1) / np.sqrt(x), "hrcp": lambda x: _F32(1) / x,
    "hsin": np.sin, "hcos": np.cos, "hexp": np.exp, "hexp2": np.exp2, "hexp10": lambda x: np.power(_F32(10), x),
    "hlog": np.log, "hlog2": np.log2, "hlog10": np.log10, "hceil": np.ceil, "hfloor": np.floor,
    "htrunc": np.trunc, "hrint": np.rint,
}.items():
    setattr(Fp16, _name, _unary(_function))

FP16 = Fp16()

__all__ = ["FP16", "Fp16"]
