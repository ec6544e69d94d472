"""The source checker: the Numba CUDA subset is accepted, everything else is refused with its rule and line."""

from __future__ import annotations

import pytest

from gpu.sandbox.checker import MAX_SOURCE_BYTES, Refusal, check_source

GOOD = '''"""My kernel."""
import math
from math import sqrt
from numba import cuda, float32

BLOCK = 256
HALF = BLOCK // 2
SCALE = float32(0.5)
SHAPE = (BLOCK, 2)


@cuda.jit(device=True)
def twice(x):
    return x * 2


@cuda.jit
def kernel(a, out):
    tile = cuda.shared.array(BLOCK, float32)
    i = cuda.grid(1)
    tx = cuda.threadIdx.x
    if i < a.size:
        tile[tx] = a[i]
    cuda.syncthreads()
    acc = float32(0.0)
    for k in range(min(HALF, a.shape[0])):
        acc += abs(tile[k]) * SCALE
    while acc > 100:
        acc = acc / 2
    if i < out.size:
        out[i] = twice(acc) + math.sqrt(abs(acc)) + sqrt(1.0)
        cuda.atomic.add(out, 0, 1.0)
'''


def refusal(body: str, kernel: str = "kernel", n_args: int = 2) -> Refusal:
    with pytest.raises(Refusal) as info:
        check_source(body, kernel, n_args)
    return info.value


def test_the_numba_cuda_subset_passes():
    checked = check_source(GOOD, "kernel", 2)
    assert checked.kernels == {"kernel": ["a", "out"]} and checked.device_functions == ("twice",)
    assert set(checked.constants) == {"BLOCK", "HALF", "SCALE", "SHAPE"}


def kernel_with(line: str, header: str = "from numba import cuda\n") -> str:
    return f"{header}\n@cuda.jit\ndef kernel(a, out):\n    i = cuda.grid(1)\n    {line}\n"


@pytest.mark.parametrize("source, rule, line", [
    ("import os\n", "import", 1),
    ("import subprocess\n", "import", 1),
    ("from socket import socket\n", "import", 1),
    ("import numba\n", "import", 1),
    ("from numba import njit\n", "import", 1),
    ("from . import x\n", "import", 1),
    (kernel_with("open('/etc/passwd')"), "builtin", 6),
    (kernel_with("exec('1')"), "builtin", 6),
    (kernel_with("eval('1')"), "builtin", 6),
    (kernel_with("__import__('os')"), "dunder", 6),
    (kernel_with("getattr(a, 'size')"), "builtin", 6),
    (kernel_with("x = ().__class__.__bases__"), "dunder", 6),
    (kernel_with("x = a.__class__"), "dunder", 6),
    (kernel_with("x = a._data"), "dunder", 6),
    (kernel_with("a.tofile('/tmp/x')"), "attribute", 6),
    (kernel_with("x = cuda.sys"), "cuda-api", 6),
    (kernel_with("x = cuda.simulator.kernel"), "cuda-api", 6),
    (kernel_with("cuda.event = 0"), "attribute-assignment", 6),
    (kernel_with("x = [1, 2]"), "kernel-subset", 6),
    (kernel_with("x = lambda: 0"), "kernel-subset", 6),
    (kernel_with("global CACHE"), "kernel-subset", 6),
    (kernel_with("import os"), "kernel-subset", 6),
    (kernel_with("x = os.getpid()"), "name", 6),
    (kernel_with("x = __builtins__"), "dunder", 6),
    (kernel_with("print(i)"), "builtin", 6),
    (kernel_with("cuda = 1"), "redefinition", 6),
    (kernel_with("x = 'a' * 10 ** 10"), "constant", 6),
    (kernel_with("f = cuda.jit"), "cuda-api", 6),
    ("from numba import cuda\nCACHE = []\n", "constant", 2),
    ("from numba import cuda\nX = 2 ** 10 ** 10\n", "constant", 2),
    ("from numba import cuda\nX = open('f')\n", "constant", 2),
    ("from numba import cuda\ncuda.jit = None\n", "top-level", 2),
    ("from numba import cuda\nfor i in range(3):\n    pass\n", "top-level", 2),
    ("from numba import cuda\nwhile True:\n    pass\n", "top-level", 2),
    ("from numba import cuda\nclass K:\n    pass\n", "top-level", 2),
    ("from numba import cuda\ndef kernel(a, out):\n    pass\n", "decorator", 2),
    ("from numba import cuda\n@cuda.jit\n@cuda.jit\ndef kernel(a, out):\n    pass\n", "decorator", 4),
    ("from numba import cuda\n@cuda.jit(debug=True)\ndef kernel(a, out):\n    pass\n", "decorator", 2),
    ("from numba import cuda\n@cuda.jit\ndef kernel(a, out=None):\n    pass\n", "signature", 3),
    ("from numba import cuda\n@cuda.jit\ndef kernel(a):\n    pass\n", "signature", 3),
    ("from numba import cuda\n@cuda.jit\ndef other(a, out):\n    pass\n", "kernel", 0),
    ("from numba import cuda\n@cuda.jit(device=True)\ndef kernel(a, out):\n    pass\n", "kernel", 0),
    ("def kernel(a, out:\n", "syntax", 1),
])
def test_refused_with_rule_and_line(source, rule, line):
    r = refusal(source)
    assert (r.rule, r.line) == (rule, line), str(r)
    text = str(r)
    assert text.startswith(f"refused ({rule})") and (f"line {line}:" in text or line == 0)


def test_messages_say_what_is_allowed():
    assert "allowed imports" in str(refusal("import os\n"))
    assert "range, min, max, abs, len" in str(refusal(kernel_with("open('x')")))


def test_oversized_source_is_refused():
    assert refusal("x = 1\n" * (MAX_SOURCE_BYTES // 5)).rule == "size"


@pytest.mark.parametrize("line, rule", [
    ("t = cuda.shared.array(1 << 30, float32)", "array-size"),
    ("t = cuda.local.array((4096, 4096), float32)", "array-size"),
    ("t = cuda.shared.array(a.size, float32)", "array-shape"),
])
def test_array_shapes_are_constant_and_bounded(line, rule):
    r = refusal(kernel_with(line, "from numba import cuda, float32\n"))
    assert r.rule == rule and r.line == 6


def test_module_state_cannot_be_written():
    r = refusal("from numba import cuda\nCACHE = (0, 0)\n\n@cuda.jit\ndef kernel(a, out):\n    CACHE[0] = a[0]\n")
    assert (r.rule, r.line) == ("module-state", 6)
