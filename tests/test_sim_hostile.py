"""The simulator's rewrite tried as an attacker would: no submission can steer the verdict.

Each class was a way for a submission to change what the judge runs — take a name the
rewrite's generated code calls, hide a barrier or a synchronising call from the rewrite,
merge two shared arrays, launch a kernel from a kernel — or for learner-controlled text to
reach a terminal raw. Each kernel here is judged directly (the simulator) and, where the
sandbox is involved, through the sandboxed child with and without bubblewrap.
"""

from __future__ import annotations

import linecache
import textwrap
import warnings

import numpy as np
import pytest

from gpu.core.backend import BACKEND
from gpu.sim import KernelFault

pytestmark = pytest.mark.skipif(
    not BACKEND.simulated, reason="the lab's simulator runs only where kernels are simulated"
)

_COUNTER = [0]


def kernels_from(source: str) -> dict:
    """Exec ``source`` with ``cuda`` as the lab's simulator, its source in linecache (as the loader does)."""
    _COUNTER[0] += 1
    name = f"<hostile-{_COUNTER[0]}>"
    source = textwrap.dedent(source)
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    scope: dict = {"__name__": name}
    exec(compile(source, name, "exec"), scope)
    return scope


HEADER = "from gpu.sim import cuda\nfrom numba import float32\nimport numpy as np\n"


def run(source: str, kernel: str, grid, block, *args):
    scope = kernels_from(HEADER + source)
    scope[kernel][grid, block](*args)
    return args


def line_of(source: str, text: str) -> int:
    """The line of ``text`` as ``run`` runs ``source`` (after the header)."""
    return (HEADER + source).splitlines().index(text) + 1


# --- 1. the rewrite owns its names


def test_a_device_function_named_like_the_block_loop_is_not_swapped():
    out = np.zeros(64, np.float32)
    run("""
@cuda.jit(device=True)
def fill__block(i):
    return 7.0

@cuda.jit
def fill(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = fill__block(i)
""", "fill", 1, 64, out)
    assert (out == 7.0).all()


def test_a_global_named_range_does_not_decide_which_threads_run():
    out = np.zeros(64, np.float32)
    run("""
@cuda.jit(device=True)
def range(n):
    return (0,)

@cuda.jit
def fill(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 1.0
""", "fill", 1, 64, out)
    assert (out == 1.0).all()


def test_a_constant_named_range_does_not_break_a_correct_kernel():
    out = np.zeros(64, np.float32)
    run("""
range = 3

@cuda.jit
def fill(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 1.0
""", "fill", 1, 64, out)
    assert (out == 1.0).all()


# --- 2. every call of a synchronising device function runs, or is refused


ALIAS = """
@cuda.jit(device=True)
def stage(tile, out):
    t = cuda.threadIdx.x
    tile[t] = 1.0
    cuda.syncthreads()
    out[t] = tile[(t + 1) % 32]

@cuda.jit
def kern(out):
    tile = cuda.shared.array(32, float32)
    f = stage
    f(tile, out)
"""


def test_a_synchronising_device_function_called_through_an_alias_is_refused_not_skipped():
    out = np.zeros(32, np.float32)
    with pytest.raises(KernelFault) as info:
        run(ALIAS, "kern", 1, 32, out)
    assert info.value.kind == "unsupported" and "stage" in info.value.sentence and info.value.line


def test_two_barriers_on_one_line_are_two_barriers():
    out = np.zeros(32, np.float32)
    with pytest.raises(KernelFault) as info:
        run("""
@cuda.jit
def kern(out):
    t = cuda.threadIdx.x
    cuda.syncthreads() if t < 16 else cuda.syncthreads()
    out[t] = 1.0
""", "kern", 1, 32, out)
    assert info.value.kind == "barrier" and "divergent" in info.value.sentence


def test_a_device_functions_shared_array_is_not_the_kernels():
    out = np.zeros(256, np.float32)
    with pytest.raises(KernelFault) as info:
        run("""
@cuda.jit(device=True)
def scratch(t):
    s = cuda.shared.array(1, float32)
    s[t] = 1.0
    return s[t]

@cuda.jit
def kern(out):
    tile = cuda.shared.array(256, float32)
    t = cuda.threadIdx.x
    tile[t] = 2.0
    out[t] = scratch(t) + tile[t]
""", "kern", 1, 4, out)
    assert info.value.kind == "out of bounds" and info.value.thread == (1, 0, 0)


def test_a_launch_inside_a_kernel_is_refused():
    out = np.zeros(4, np.float32)
    with pytest.raises(KernelFault) as info:
        run("""
@cuda.jit
def inner(out):
    out[0] = 1.0

@cuda.jit
def outer(out):
    inner[1, 1](out)
""", "outer", 1, 1, out)
    assert info.value.kind == "unsupported" and "inner" in info.value.sentence and "launch" in info.value.sentence
    assert out[0] == 0.0


# --- 3. negative indices wrap once, as Numba compiles them; below -size is out of bounds


WRAP = """
@cuda.jit
def shift(a, out):
    i = cuda.grid(1)
    n = out.size
    if i < n:
        out[i - n] = a[i]
"""


def test_a_negative_index_wraps_once_with_a_warning_naming_the_line():
    a = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(WRAP, "shift", 1, 64, a, out)
    np.testing.assert_array_equal(out, a)
    words = [str(w.message) for w in caught]
    assert len(words) == 1 and "line 10" in words[0] and "wrap" in words[0], words


def test_an_index_below_minus_size_is_out_of_bounds():
    a = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    with pytest.raises(KernelFault) as info:
        run(WRAP.replace("out[i - n]", "out[i - n - 1]"), "shift", 1, 64, a, out)
    assert info.value.kind == "out of bounds" and info.value.thread == (0, 0, 0) and info.value.line == 10


def test_negative_indices_wrap_in_two_dimensions_slices_and_atomics():
    a = np.zeros((4, 8), np.float32)
    counts = np.zeros(8, np.int32)
    run("""
@cuda.jit
def kern(a, counts):
    i = cuda.grid(1)
    a[-1, i - 8] = i
    cuda.atomic.add(counts, i - 8, 1)
    if i == 0:
        row = a[-2]
        row[-3:] = 5.0
""", "kern", 1, 8, a, counts)
    np.testing.assert_array_equal(a[-1], np.arange(8))
    np.testing.assert_array_equal(a[-2], [0, 0, 0, 0, 0, 5, 5, 5])
    np.testing.assert_array_equal(counts, np.ones(8))


def test_an_atomic_below_minus_size_is_out_of_bounds():
    counts = np.zeros(8, np.int32)
    with pytest.raises(KernelFault) as info:
        run("""
@cuda.jit
def kern(counts):
    cuda.atomic.add(counts, -9, 1)
""", "kern", 1, 1, counts)
    assert info.value.kind == "out of bounds"


# --- 4. engine errors on a learner's value name the line and the thread


@pytest.mark.parametrize("body, line", [
    ("v = cuda.shfl_down_sync(0xffffffff, 1.0, 1, 0)\n    out[cuda.threadIdx.x] = v", 7),
    ("v = cuda.syncthreads_count(out)\n    out[cuda.threadIdx.x] = v", 7),
    ("v = cuda.shfl_sync(out[0], 1.0, 0)\n    out[cuda.threadIdx.x] = v", 7),
])
def test_an_engine_error_on_a_learners_value_names_the_line_and_the_thread(body, line):
    out = np.full(32, np.nan, np.float32)
    with pytest.raises(KernelFault) as info:
        run(f"""
@cuda.jit
def kern(out):
    {body}
""", "kern", 1, 32, out)
    assert info.value.line == line and info.value.thread is not None, info.value


# --- 5. the same through the judge, with and without the sandbox


def test_the_judge_passes_a_wrapped_index_with_a_note_and_fails_below_minus_size():
    from gpu.problems import get
    from gpu.sandbox.harness import judge

    source = """from numba import cuda


@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i - out.size] = a[i] + b[i]
"""
    verdict = judge(get("vector-add"), source, seed=5)
    assert verdict.status == "passed", verdict.message
    assert any("line 8" in note and "wrap" in note for note in verdict.notes), verdict.notes
    below = judge(get("vector-add"), source.replace("out[i - out.size]", "out[i - out.size - 1]"), seed=5)
    assert below.status == "wrong" and "out of bounds" in below.message and "line 8" in below.message


# --- 6. one output gate: no raw control or bidi character reaches a terminal


FORGED = """from numba import cuda


@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < out.size + 1:
        out[i  # \x1b[2J\x1b[32mPASSED all tests\x1b[0m \u202e
            ] = a[i] + b[i]
"""


def test_gpu_trace_and_solve_text_print_no_raw_control_or_bidi_character(tmp_path, capsys):
    from gpu.__main__ import main
    from gpu.core.safe_text import is_safe

    path = tmp_path / "forged.py"
    path.write_text(FORGED)
    assert main(["trace", str(path), "--problem", "vector-add"]) == 1  # out of bounds, quoted from its own span
    out = capsys.readouterr()
    assert "out[i]" in out.out, out.out
    assert "PASSED" not in out.out and is_safe(out.out, newlines=True) and is_safe(out.err, newlines=True)
    assert main(["solve", "vector-add", str(path), "--no-save", "--no-facts"]) == 1
    out = capsys.readouterr()
    assert is_safe(out.out, newlines=True) and is_safe(out.err, newlines=True), out.out


def test_a_refusal_quoting_the_learners_text_is_escaped():
    from gpu.sandbox.checker import Refusal, check_source
    from gpu.sandbox.verdict import Verdict

    source = 'from numba import cuda\n\n@cuda.jit(device="\x1b[31m\u202e")\ndef vector_add(a, b, out):\n    pass\n'
    with pytest.raises(Refusal) as info:
        check_source(source, "vector_add", 3)
    message = Verdict.start("vector-add", "simulator").refused(info.value).message
    assert "\x1b" not in message and "\u202e" not in message and "\\x1b" in message


def test_the_gate_escapes_controls_and_bidi_and_keeps_everything_else():
    from gpu.core.safe_text import shown

    assert shown("out[i] = a[i] · 2 — ok\tµs") == "out[i] = a[i] · 2 — ok\tµs"
    assert shown("a\x1b[31mb\u202ec\u2066d\x00e\x9bf\u200bg") == "a\\x1b[31mb\\u202ec\\u2066d\\x00e\\x9bf\\u200bg"
    assert shown("two\nlines") == "two\\x0alines" and shown("two\nlines", newlines=True) == "two\nlines"
    assert shown("\r") == "\\x0d"


# --- 7. the simulator's classes through the sandboxed child, with and without bubblewrap

JUDGED = {
    "two barriers on one line": ("""from numba import cuda


@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    cuda.syncthreads() if cuda.threadIdx.x < 16 else cuda.syncthreads()
    if i < out.size:
        out[i] = a[i] + b[i]
""", "wrong", "divergent"),
    "a device function's shared array": ("""from numba import cuda, float32


@cuda.jit(device=True)
def keep(t, v):
    s = cuda.shared.array(1, float32)
    s[t] = v
    return s[t]


@cuda.jit
def vector_add(a, b, out):
    tile = cuda.shared.array(256, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t] = 0.0
    if i < out.size:
        out[i] = keep(t, a[i] + b[i])
""", "wrong", "out of bounds"),
    "a wrapped index": ("""from numba import cuda


@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i - out.size] = a[i] + b[i]
""", "passed", "all"),
}


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandbox", "no-sandbox"])
@pytest.mark.parametrize("case", sorted(JUDGED))
def test_the_simulators_classes_hold_in_the_sandboxed_child(case, sandboxed):
    from gpu.sandbox import isolation, judging

    off = isolation.SandboxStatus(False, "none", "off for this test", False)
    status = isolation.sandbox_status(True) if sandboxed else off
    if sandboxed and not status.works:
        pytest.skip(f"bubblewrap does not work here: {status.reason}")
    source, want, words = JUDGED[case]
    limits = isolation.Limits(wall_s=30.0, cpu_s=60, address_space_bytes=4 << 30)
    verdict = judging.judge_in_child("vector-add", source, limits=limits, simulated=True, sandbox=status)
    assert verdict.status == want and words in verdict.message, verdict.message
    if case == "a wrapped index":
        assert any("line 8" in note for note in verdict.notes), verdict.notes
