"""A property of the simulator's rewrite: a generated kernel agrees with a reference, or is refused with a sentence.

Hypothesis writes kernels that try what a submission could: globals named from the rewrite's
own vocabulary (``range``, ``neg``, ``shared``, ``kern__block``...), device functions that
synchronise called directly, through a device function that synchronises (nested), or
through an alias, several barriers on one line (all reached, or divergent), and negative
indices that wrap once. Each phase of a kernel is ``tile[t] = tile[(t + shift) % n] * scale
+ constant`` between barriers, so the reference is NumPy's ``roll``: per thread, what the
compiled kernel computes. An alias of a synchronising function must be refused
("unsupported"), a divergent barrier must be a "barrier" fault; nothing else may fail.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu.core.backend import BACKEND
from gpu.sim import KernelFault
from tests.test_sim_hostile import kernels_from

pytestmark = pytest.mark.skipif(
    not BACKEND.simulated, reason="the lab's simulator runs only where kernels are simulated"
)

# Names the rewrite's generated code used (or could use): a submission's globals may take any of them.
VOCABULARY = ("range", "neg", "shared", "block", "k1", "k2", "lab", "tidx", "count", "tx", "kern__block", "bar",
              "BAR", "site", "step__block", "len", "min")

phase = st.fixed_dictionaries({
    "shift": st.integers(0, 40),
    "scale": st.integers(1, 3),
    "constant": st.sampled_from(VOCABULARY),
    "wrap": st.booleans(),  # read tile[... - n]: Numba wraps it once, to the same element
    "barriers_on_a_line": st.integers(1, 3),
    "divergent_at": st.one_of(st.none(), st.integers(0, 64)),  # `bar() if t < h else bar()`
    "nested": st.booleans(),  # the barrier sits in a device function the phase's device function calls
    "alias": st.booleans(),  # call the phase through `f = step_k; f(...)`: must be refused
})
kernel_spec = st.fixed_dictionaries({
    "threads": st.sampled_from([32, 64]),
    "phases": st.lists(phase, min_size=1, max_size=4),
    "values": st.lists(st.integers(0, 5), min_size=len(VOCABULARY), max_size=len(VOCABULARY)),
})


def source_of(spec: dict) -> str:
    n = spec["threads"]
    top = [f"{name} = {value}" for name, value in zip(VOCABULARY, spec["values"])]
    lines = ["from gpu.sim import cuda", "from numba import int64", *top, ""]
    calls = []
    for k, p in enumerate(spec["phases"]):
        h = p["divergent_at"]
        bar = "; ".join(["cuda.syncthreads()"] * p["barriers_on_a_line"])
        if h is not None:
            bar = f"cuda.syncthreads() if t < {h} else cuda.syncthreads()"
        if p["nested"]:
            lines += ["@cuda.jit(device=True)", f"def sync_{k}(t):", f"    {bar}", "    return t", ""]
            bar = f"sync_{k}(t)"
        index = f"(t + {p['shift']}) % {n}" + (f" - {n}" if p["wrap"] else "")
        lines += [
            "@cuda.jit(device=True)",
            f"def step_{k}(tile, t):",
            f"    v = tile[{index}] * {p['scale']} + {p['constant']}",
            f"    {bar}",
            "    tile[t] = v",
            "    cuda.syncthreads()",
            "    return v",
            "",
        ]
        calls += ([f"    f{k} = step_{k}", f"    f{k}(tile, t)"] if p["alias"] else [f"    step_{k}(tile, t)"])
    lines += [
        "@cuda.jit",
        "def kern(out):",
        f"    tile = cuda.shared.array({n}, int64)",
        "    t = cuda.threadIdx.x",
        "    tile[t] = t",
        "    cuda.syncthreads()",
        *calls,
        "    out[t] = tile[t]",
        "",
    ]
    return "\n".join(lines)


def reference(spec: dict) -> np.ndarray:
    """Each thread's result as the compiled kernel computes it: every phase a roll, a scale and a constant."""
    values = dict(zip(VOCABULARY, spec["values"]))
    tile = np.arange(spec["threads"], dtype=np.int64)
    for p in spec["phases"]:
        tile = np.roll(tile, -p["shift"]) * p["scale"] + values[p["constant"]]
    return tile


def refusal_expected(spec: dict) -> str | None:
    n = spec["threads"]
    if any(p["alias"] for p in spec["phases"]):
        return "unsupported"  # at compile time, before anything runs
    if any(p["divergent_at"] is not None and 0 < p["divergent_at"] < n for p in spec["phases"]):
        return "barrier"
    return None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kernel_spec)
def test_the_rewritten_kernel_agrees_with_the_reference_or_is_refused_with_a_sentence(spec):
    source = source_of(spec)
    kern = kernels_from(source)["kern"]
    out = np.full(spec["threads"], -1, np.int64)
    expected = refusal_expected(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a wrapped index warns; that is tested elsewhere
        try:
            kern[1, spec["threads"]](out)
        except KernelFault as fault:
            assert fault.kind == expected and fault.sentence and fault.line, (fault, source)
            return
    assert expected is None, f"expected a {expected} fault:\n{source}"
    np.testing.assert_array_equal(out, reference(spec), err_msg=source)
