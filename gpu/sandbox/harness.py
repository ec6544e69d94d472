"""The judge inside the child process: check, load, run every test, time the performance size.

The harness owns everything a submission could game: it makes the inputs (fresh, from a
seed the submission never sees), fills the outputs with a sentinel before every run (so
an output the kernel never wrote cannot pass by luck or by a value left over from an
earlier run), checks the inputs came back unchanged, compares with the NumPy reference,
and times with the lab's own ``time_on_device`` (L2 flush, verified stream hold, events).
The learner's source is only exec'd after the checker passed, in a restricted namespace.
"""

from __future__ import annotations

import traceback
import warnings
from dataclasses import replace
from typing import Any

import numpy as np

from gpu.problems.base import Case, Problem
from gpu.sandbox.checker import Refusal
from gpu.sandbox.loader import solution_kernel
from gpu.sandbox.verdict import Verdict, mismatch_text
from gpu.sim.errors import NOTES

GPU_SAMPLES = 20  # timed runs of the performance size, each after a fresh sentinel fill
ROOF_MARGIN = 1.05  # a kernel measured over 105 % of the memory roof moved less than the problem needs: flagged
SOURCE_NAME = "submission.py"


# A quiet NaN with a payload of its own, per float width: never the simulator's poison (the canonical NaN a
# shared or local array starts as, which a kernel reading unwritten memory writes on), so the verdict can tell
# "never written" (these exact bits) from "wrote NaN". A copy keeps the bits; arithmetic on the canonical NaN
# never makes them.
_FLOAT_SENTINEL_BITS = {2: (np.uint16, 0x7E5E), 4: (np.uint32, 0x7FC5E47E), 8: (np.uint64, 0x7FF85E47E5E47E5E)}


def sentinel(dtype) -> Any:
    """The value an output holds before the kernel runs: a NaN with its own payload for floats (see above), an
    unlikely extreme for integers. A scalar of ``dtype``."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        bits_type, bits = _FLOAT_SENTINEL_BITS[dtype.itemsize]
        return np.array([bits], bits_type).view(dtype)[0]
    info = np.iinfo(dtype)
    return dtype.type(info.max if dtype.kind == "u" else info.min)


def is_sentinel(values: np.ndarray) -> np.ndarray:
    """True where ``values`` still hold the sentinel, bit for bit (for floats: not any NaN, this one)."""
    values = np.asarray(values)
    if values.dtype.kind == "f":
        bits_type, bits = _FLOAT_SENTINEL_BITS[values.dtype.itemsize]
        return values.view(bits_type) == bits
    return values == sentinel(values.dtype)


def fresh_outputs(problem: Problem, sizes) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name, (shape, dtype) in problem.outputs(sizes).items():
        out[name] = np.zeros(shape, dtype) if name in problem.accumulate else np.full(shape, sentinel(dtype), dtype)
    return out


def case_inputs(problem: Problem, seed: int, index: int, sizes) -> dict[str, Any]:
    """Inputs of test ``index`` (arrays, and the problem's scalars as NumPy scalars): a generator seeded
    from the secret seed and the test's position."""
    return problem.args(np.random.default_rng([seed, index]), sizes)


def is_array(value) -> bool:
    """An array argument (copied to the device), not a scalar (passed as it is)."""
    return isinstance(value, np.ndarray)


def device_args(problem: Problem, inputs: dict[str, Any], outputs: dict[str, np.ndarray], stream=0) -> list:
    """The kernel's arguments in ``problem.params`` order: arrays copied to the device, scalars as they are."""
    from gpu.core.backend import cuda

    values = {**inputs, **outputs}
    return [cuda.to_device(values[p], stream=stream) if is_array(values[p]) else values[p] for p in problem.params]


def writer_of(problem: Problem, index: tuple, block: tuple) -> str | None:
    """The thread that should have written output element ``index``, where one thread writes one element."""
    if problem.writer == "1d" and len(index) == 1:
        t = block[0]
        return f"block {index[0] // t}, thread {index[0] % t}"
    if problem.writer == "2d" and len(index) == 2:
        side = block[0]
        r, c = index
        return f"block (x={c // side}, y={r // side}), thread (x={c % side}, y={r % side})"
    return None


def plain(value) -> float | int | str:
    """A value as the learner wrote it: float32 in its shortest form (0.9752211, not 0.9752210974693298)."""
    if isinstance(value, np.floating):
        return float(str(value)) if np.isfinite(value) else str(value)
    return value.item() if hasattr(value, "item") else value


def inputs_at(inputs: dict[str, np.ndarray] | None, index: tuple, shape: tuple) -> dict:
    """The inputs a learner reads at a mismatching element: each input of the output's shape, at that index."""
    if not inputs:
        return {}
    return {name: plain(array[index]) for name, array in inputs.items() if is_array(array) and array.shape == shape}


def scalars_of(inputs: dict[str, Any] | None) -> dict:
    """The scalar arguments of a test, as the learner reads them (``alpha = 2.5``)."""
    return {name: plain(value) for name, value in (inputs or {}).items() if not is_array(value)}


def first_mismatch(
    problem: Problem,
    case: Case,
    name: str,
    got: np.ndarray,
    expected: np.ndarray,
    block: tuple,
    inputs: dict[str, np.ndarray] | None = None,
) -> dict | None:
    ok = problem.tolerance.close(got, expected)
    if got.shape != expected.shape:
        return {
            "test": case.name,
            "output": name,
            "index": None,
            "expected": f"shape {expected.shape}",
            "got": f"shape {got.shape}",
        }
    if ok.all():
        return None
    flat = int(np.flatnonzero(~ok.reshape(-1))[0])
    index = tuple(int(i) for i in np.unravel_index(flat, got.shape))
    value = got[index]
    never = name not in problem.accumulate and bool(is_sentinel(got[index]))
    wrote_nan = not never and got.dtype.kind == "f" and bool(np.isnan(value))
    return {
        "test": case.name,
        "output": name,
        "index": list(index),
        "expected": plain(expected[index]),
        "got": plain(value),
        "never_written": bool(never),
        "wrote_nan": wrote_nan,
        "wrong_count": int((~ok).sum()),
        "thread": writer_of(problem, index, block),
        "inputs": inputs_at(inputs, index, got.shape),
        "scalars": scalars_of(inputs),
    }


def error_line(exc: BaseException) -> int | None:
    """The submission's line where a kernel raised: the simulator's fault names it; else the traceback's last frame
    in the submission, where there is one."""
    fault_line = getattr(exc, "line", None)
    if getattr(exc, "kind", None) and isinstance(fault_line, int) and fault_line > 0:  # the lab simulator's KernelFault
        return fault_line
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == SOURCE_NAME:
            line = frame.lineno
    return line


def kernel_error(exc: BaseException) -> str:
    """One line for a kernel that raised: the exception and the submission's line where known."""
    describe = getattr(exc, "describe", None)
    if callable(describe) and getattr(exc, "kind", None):  # the lab simulator's KernelFault: kind, thread, line
        return f"the kernel failed: {describe()[:400]}"
    line = error_line(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    where = f" at line {line}" if line else ""
    return f"the kernel raised {type(exc).__name__}{where}: {text[:300]}"


def run_case(problem: Problem, kernel, case: Case, index: int, seed: int, launch) -> tuple[dict, dict | None]:
    """Run one test: returns (the test's line, the first mismatch or None)."""
    from gpu.core.backend import cuda

    sizes = case.sizes
    inputs = case_inputs(problem, seed, index, sizes)
    originals = {k: v.copy() for k, v in inputs.items()}
    outputs = fresh_outputs(problem, sizes)
    grid, block = launch(sizes)
    d_args = device_args(problem, inputs, outputs)
    try:
        with warnings.catch_warnings(record=True) as caught:  # the simulator's notes (NOTES)
            warnings.simplefilter("always")
            kernel[grid, block](*d_args)
            cuda.synchronize()
    except Exception as exc:  # a kernel that raises (simulator: out of bounds) fails this test, never the harness
        message, line = kernel_error(exc), error_line(exc)
        return {"name": case.name, "sizes": dict(sizes), "passed": False, "message": message}, {
            "test": case.name,
            "error": message,
            **({"line": line} if line else {}),  # the editor marks it
        }
    notes = [str(w.message) for w in caught if isinstance(w.message, NOTES)]
    for p, d in zip(problem.params, d_args):
        if is_array(originals.get(p, outputs.get(p))):
            (inputs if p in inputs else outputs)[p] = d.copy_to_host()
    for name, before in originals.items():
        if not np.array_equal(before, inputs[name], equal_nan=True):
            where = int(np.flatnonzero((before != inputs[name]).reshape(-1))[0])
            message = f"the kernel changed its input {name!r} (first at flat index {where}); inputs must stay unchanged"
            return {"name": case.name, "sizes": dict(sizes), "passed": False, "message": message}, {
                "test": case.name,
                "error": message,
            }
    expected = problem.reference(originals, sizes)
    for name, want in expected.items():
        miss = first_mismatch(
            problem, case, name, outputs[name], problem.tolerance.expected(want, outputs[name].dtype), block, originals
        )
        if miss:
            return {"name": case.name, "sizes": dict(sizes), "passed": False, "message": mismatch_text(miss),
                    "notes": notes}, miss
    return {"name": case.name, "sizes": dict(sizes), "passed": True, "message": "passed", "notes": notes}, None


_TIMING_OPS = None  # the device seam of time_on_device (None: the real one; tests put a fake hold here)


def time_case(problem: Problem, kernel, case: Case, seed: int, launch) -> dict:
    """Time the performance size on a GPU with the lab's one timer (``time_on_device``: L2 flushed,
    verified hold, events), one sample per call so the outputs get a fresh sentinel before every
    timed run and are checked after it."""
    from gpu.core.backend import cuda
    from gpu.core.kernel_timing import time_on_device
    from gpu.core.timing import RepeatPolicy, Stats

    sizes = case.sizes
    inputs = case_inputs(problem, seed, 10_000, sizes)
    expected = problem.reference({k: v.copy() for k, v in inputs.items()}, sizes)
    blank = fresh_outputs(problem, sizes)
    stream = cuda.stream()
    args = device_args(problem, inputs, blank, stream=stream)
    d = dict(zip(problem.params, args))
    grid, block = launch(sizes)
    working_set = sum(a.nbytes for a in inputs.values()) + sum(a.nbytes for a in blank.values())
    samples, retries, held = [], 0, True
    def reset() -> None:  # before every attempt: a retried attempt has already added into the outputs
        for name in blank:
            d[name].copy_to_device(blank[name], stream=stream)  # outside the timed region

    for i in range(GPU_SAMPLES + 1):  # the first is a warm-up, discarded
        timed = time_on_device(kernel, args, grid, block, policy=RepeatPolicy.count(1, warmup=0), stream=stream,
                               working_set_bytes=working_set, telemetry=False, reset=reset, ops=_TIMING_OPS)
        for name, want in expected.items():
            got = d[name].copy_to_host(stream=stream)
            stream.synchronize()
            miss = first_mismatch(problem, case, name, got, problem.tolerance.expected(want, got.dtype), block, inputs)
            if miss:
                return {"error": f"timed run {i}: " + mismatch_text(miss)}
        if i:
            samples.append(timed.median_s)
            retries += timed.stats.retries
            held = held and timed.held
    for name, before in inputs.items():
        if is_array(before) and not np.array_equal(before, d[name].copy_to_host(), equal_nan=True):
            return {"error": f"the kernel changed its input {name!r} during the timed runs"}
    return {"stats": Stats(tuple(samples), retries=retries, held=held), "l2_note": timed.l2_note}


def figures(problem: Problem, case: Case, median_s: float, peak_gbps: float | None) -> dict:
    nbytes, flops = problem.bytes_moved(case.sizes), problem.flops(case.sizes)
    gbps = nbytes / median_s / 1e9
    out = {"median_s": median_s, "bytes": nbytes, "flops": flops, "gbps": gbps,
           "gflops": flops / median_s / 1e9 if flops else None, "peak_gbps": peak_gbps,
           "percent_of_peak": 100 * gbps / peak_gbps if peak_gbps else None}
    out["faster_than_roof"] = bool(peak_gbps and gbps > ROOF_MARGIN * peak_gbps)
    return out


def judge(problem: Problem, source: str, seed: int) -> Verdict:
    """Everything for one submission in this (fresh, sandboxed) process; never raises."""
    from gpu.core.backend import BACKEND
    from gpu.sandbox.loader import load_module

    verdict = Verdict.start(problem.key, BACKEND.kind)
    try:
        reference_time = None
        if not BACKEND.simulated:  # the lab's kernel, timed before the learner's code is even loaded
            ref_launch = problem.solution.launch or (lambda s: problem.launch(s, problem.threads))
            timed = time_case(
                problem, solution_kernel(problem.solution, problem.kernel_name), problem.perf["gpu"], seed, ref_launch
            )
            reference_time = timed["stats"].median_s if "stats" in timed else None
        try:
            scope = load_module(source, problem.kernel_name, len(problem.params))
            chosen = scope.get("THREADS_PER_BLOCK")
            threads = problem.threads_for(chosen if isinstance(chosen, int) else None)
        except Refusal as refusal:
            return verdict.refused(refusal)
        verdict = replace(verdict, threads_per_block=threads)
        kernel = scope[problem.kernel_name]

        def launch(sizes):
            return problem.launch(sizes, threads)

        tests: list[dict] = []
        notes: list = []
        mismatch = None
        cases = list(problem.tests) + [problem.perf["simulator" if BACKEND.simulated else "gpu"]]
        for index, case in enumerate(cases):
            line, miss = run_case(problem, kernel, case, index, seed, launch)
            notes += [note for note in line.pop("notes", ()) if note not in notes]
            if BACKEND.lab_simulator:  # which of the lab simulator's tiers ran it, and why not the vectorised one
                from gpu.sim import vector

                line["tier"] = str(vector.last_tier())
            tests.append(line)
            mismatch = mismatch if mismatch is not None else miss
            # after each case: a refusal raised by a later one keeps the tests run so far
            verdict = replace(verdict, tests=list(tests), notes=list(notes), mismatch=mismatch)
        if mismatch is not None:
            return verdict.finish("wrong")
        if not BACKEND.simulated:
            timed = time_case(problem, kernel, problem.perf["gpu"], seed, launch)
            if "error" in timed:
                return replace(verdict, mismatch={"test": problem.perf["gpu"].name, "error": timed["error"]}).finish(
                    "wrong")
            from gpu.core.device import device_info

            info = device_info(0)
            stats = timed["stats"]
            fig = figures(problem, problem.perf["gpu"], stats.median_s, info.peak_bandwidth_gbps)
            fig.update(
                samples=stats.n_samples,
                noise=stats.noise,
                held=stats.held,
                l2_note=timed.get("l2_note"),
                reference_median_s=reference_time,
                ratio_to_reference=(stats.median_s / reference_time) if reference_time else None,
                size=problem.perf["gpu"].to_dict(),
            )
            verdict = replace(verdict, device=info.name, timing=fig)
        return verdict.finish("passed")
    except Refusal as refusal:
        return verdict.refused(refusal)
    except Exception as exc:  # a harness failure is reported as one line, never a traceback to the learner
        return verdict.failed(f"the harness could not finish: {type(exc).__name__}: {str(exc).strip()[:300]}")


__all__ = [
    "GPU_SAMPLES", "ROOF_MARGIN", "device_args", "first_mismatch", "is_sentinel", "judge", "run_case", "sentinel",
]
