"""Hostile sources found by trying the checker as an attacker would.

Each case was accepted, hung the checker, or crashed it before the fix. The checker runs in
the app's own process, so it must be total and bounded: every input gets a verdict (a
Refusal naming the rule and line, or a pass) within a fixed time, and nothing is evaluated.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu.sandbox.checker import Refusal, check_source

HEADER = "from numba import cuda, float32, int8\n"
# A check takes milliseconds; one that evaluated 2 ** 64 ** 64 or built (0,) * 10 ** 9 would take minutes or
# exhaust memory. The bound tells those apart with room for a loaded machine (a second was exceeded once under
# a full `make test`), so it never measures this machine's speed.
BOUNDED_S = 5.0


def kernel_file(top: str = "", body: str = "    pass\n", decorator: str = "@cuda.jit") -> str:
    return f"{HEADER}{top}\n{decorator}\ndef kernel(a, out):\n{body}"


def refused(source: str) -> Refusal:
    with pytest.raises(Refusal) as info:
        check_source(source, "kernel", 2)
    return info.value


# 1. No learner-controlled string is ever evaluated: numba-cuda eval()s a signature string.
@pytest.mark.parametrize("decorator", [
    '@cuda.jit("void(float32[:], float32[:])")',
    "@cuda.jit(\"__import__('os').system('id') or void()\")",
    '@cuda.jit("void()", "device")',  # a second positional string becomes device=
    "@cuda.jit(1)",
])
def test_no_positional_argument_to_jit_is_accepted(decorator):
    r = refused(kernel_file(decorator=decorator))
    assert r.rule == "decorator" and r.line == 3 and "signature" in r.message


@pytest.mark.parametrize("keyword", ["lineinfo=True", "max_registers=32", "debug=True", "cache=True", "device='x'"])
def test_only_device_fastmath_inline_with_booleans(keyword):
    r = refused(kernel_file(decorator=f"@cuda.jit({keyword})"))
    assert r.rule == "decorator" and r.line == 3


def test_fastmath_and_device_functions_still_pass():
    source = f"{HEADER}\n@cuda.jit(device=True, inline=True)\ndef twice(x):\n    return x * 2\n\n" \
             "@cuda.jit(fastmath=True)\ndef kernel(a, out):\n    out[0] = twice(a[0])\n"
    assert check_source(source, "kernel", 2).device_functions == ("twice",)


# 2. Constants: bounded without computing them first.
@pytest.mark.parametrize("top", [
    "A = 2 ** 64 ** 64\n", "A = 9 ** 9 ** 9\n", "A = 1 << 10 ** 9\n", "B = 10 ** 60\nA = B * B * B * B * B\n",
    "A = (0,) * 10 ** 9\n", "A = (0,) * 4\n", "A = 1e308 * 10\n", "A = int8(1000)\n", "A = float32(1e39)\n",
    "A = 2 ** 63 * 4\n",
])
def test_huge_or_overflowing_constants_are_refused_fast(top):
    start = time.perf_counter()
    r = refused(kernel_file(top=top))
    assert time.perf_counter() - start < BOUNDED_S
    assert r.rule == "constant" and r.line >= 2, r


def test_ordinary_constants_pass():
    top = "BLOCK = 256\nHALF = BLOCK // 2\nBIG = 1 << 20\nSHAPE = (16, 17)\nSCALE = float32(0.5)\nSMALL = int8(-128)\n"
    assert set(check_source(kernel_file(top=top), "kernel", 2).constants) == {
        "BLOCK",
        "HALF",
        "BIG",
        "SHAPE",
        "SCALE",
        "SMALL",
    }


# 3. The parser's and the checker's own failures are refusals.
@pytest.mark.parametrize("source", [
    "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n",
    "x = " + "-" * 15000 + "1\n",
    "x = 1" + " + 1" * 4900 + "\n",
    HEADER + "\n@cuda.jit\ndef kernel(a, out):\n    out[0] = " + "a[" * 3000 + "0" + "]" * 3000 + "\n",
    "a = 1\x00\n",
    "\udcff = 1\n",
    "def f(:\n",
])
def test_parser_and_checker_failures_are_refusals(source):
    r = refused(source)
    assert r.rule in ("syntax", "complexity", "size", "constant", "top-level", "kernel"), r


# 4. Allow by what is called, not by how it is spelled.
@pytest.mark.parametrize("body", [
    "    make = cuda.local.array\n    x = make(1 << 28, float32)\n",
    "    make = cuda.shared.array\n    x = make(10, float32)\n",
    "    sync = cuda.syncthreads\n    sync()\n",
    "    add = cuda.atomic.add\n    add(out, 0, 1.0)\n",
    "    ns = cuda.shared\n",
    "    x = (cuda.local.array, 1)\n",
])
def test_a_cuda_function_may_be_called_not_stored(body):
    r = refused(kernel_file(body=body))
    assert r.rule == "cuda-api" and r.line >= 5 and "call" in r.message, r


@pytest.mark.parametrize("body", [
    "    n = a.size\n    x = cuda.shared.array(n, float32)\n",
    "    x = cuda.local.array(shape=1 << 28, dtype=float32)\n",
    "    x = cuda.local.array((1024, 1024), float32)\n",
])
def test_array_sizes_apply_however_the_shape_is_written(body):
    assert refused(kernel_file(body=body)).rule in ("array-shape", "array-size")


def test_thread_indices_and_warpsize_are_read_not_called():
    body = (
        "    i = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x\n    w = cuda.warpsize\n    out[i] = a[i] + w\n"
    )
    check_source(kernel_file(body=body), "kernel", 2)


# The property: any source gets a verdict within the bound, and only a Refusal is ever raised.
ATOMS = st.sampled_from(["0", "1", "2", "9", "64", "10", "-1", "1.5", "1e308", "BLOCK", "(0,)", "(1, 2)", "float32(2)",
                         "int8(300)", "a[0]", "cuda.grid(1)", "cuda.local.array", "'s'"])
OPS = st.sampled_from(["+", "-", "*", "//", "/", "%", "**", "<<", ">>", "&", "|", "^", "@"])


@st.composite
def expressions(draw, depth=0):
    if depth > 6 or draw(st.booleans()):
        return draw(ATOMS)
    left, right = draw(expressions(depth=depth + 1)), draw(expressions(depth=depth + 1))
    return f"({left} {draw(OPS)} {right})" if draw(st.booleans()) else f"{left} {draw(OPS)} {right}"


@st.composite
def sources(draw):
    lines = ["from numba import cuda, float32, int8", "BLOCK = 256"]
    for index in range(draw(st.integers(0, 3))):
        lines.append(f"C{index} = {draw(expressions())}")
    decorator = draw(
        st.sampled_from(["@cuda.jit", "@cuda.jit(device=True)", "@cuda.jit('void()')", "@cuda.jit(fastmath=True)"])
    )
    lines += [decorator, "def kernel(a, out):", f"    x = {draw(expressions())}",
              f"    out[0] = {draw(expressions())}"]
    source = "\n".join(lines) + "\n"
    if draw(st.booleans()):  # cut or corrupt it somewhere
        cut = draw(st.integers(0, len(source)))
        source = source[:cut] + draw(st.text(max_size=8)) + source[cut:]
    return source


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sources())
def test_the_checker_is_total_and_bounded_on_generated_sources(source):
    start = time.perf_counter()
    try:
        check_source(source, "kernel", 2)
    except Refusal as refusal:
        assert refusal.rule and isinstance(refusal.line, int) and refusal.message
    assert time.perf_counter() - start < BOUNDED_S


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_the_checker_is_total_on_arbitrary_bytes(raw):
    start = time.perf_counter()
    try:
        check_source(raw.decode("utf-8", "surrogateescape"), "kernel", 2)
    except Refusal:
        pass
    assert time.perf_counter() - start < BOUNDED_S


# The simulator's rewrite owns its names and runs every barrier: forms that would hide either are refused here too.
SYNC_DEVICE = "@cuda.jit(device=True)\ndef stage(a):\n    cuda.syncthreads()\n    return a[0]\n"


@pytest.mark.parametrize("body, rule", [
    ("    f = stage\n    out[0] = f(a)\n", "device-call"),  # an alias: its barrier would be skipped
    ("    out[0] = stage(stage)\n", "device-call"),  # passed along
    ("    other[1, 1](a, out)\n", "kernel-launch"),  # a launch inside a kernel: NVVM refuses it
    ("    x = other\n", "kernel-launch"),
])
def test_a_function_is_only_called_by_its_name_and_a_kernel_never_launched_from_a_kernel(body, rule):
    top = SYNC_DEVICE + "\n@cuda.jit\ndef other(a, out):\n    pass\n"
    r = refused(kernel_file(top=top, body=body))
    assert r.rule == rule and r.line > 3, r


@pytest.mark.parametrize("top", ["range = 3\n", "@cuda.jit(device=True)\ndef range(n):\n    return n\n",
                                 "min = 1\n", "@cuda.jit(device=True)\ndef len(n):\n    return n\n"])
def test_a_top_level_name_may_not_shadow_an_allowed_builtin(top):
    r = refused(kernel_file(top=top))
    assert r.rule == "redefinition" and "builtin" in r.message, r


def test_calling_a_synchronising_device_function_by_its_name_still_passes():
    source = kernel_file(top=SYNC_DEVICE, body="    out[0] = stage(a)\n")
    assert check_source(source, "kernel", 2).device_functions == ("stage",)
