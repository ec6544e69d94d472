"""The article's experiment: c = a + b on the GPU and on the CPU, checked and timed.

``run_vector_add`` is the careful method: inputs copied in, the output allocated on
the device, each phase timed with CUDA events on one stream, warm-up excluded, many
samples. ``run_article_method`` reproduces the article's own numbers (copy c in too,
average of three wall-clock runs) so the two can be compared side by side.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from gpu.catalog.base import CheckSection, Experiment, PageLink, Param, Part, PerBackend, Progress, Recorded
from gpu.catalog.registry import register
from gpu.core import cpu
from gpu.core.agreement import check_bits
from gpu.core.arrays import vector_inputs
from gpu.core.backend import BACKEND
from gpu.core.device import device_info
from gpu.core.hold import stream_hold_problem
from gpu.core.limits import (
    VECTORISED_WORK_SHARE,
    InputError,
    check_cpu_n,
    check_cpu_work,
    check_n,
    check_repeats,
    check_threads,
    kernel_n,
    parse_flag,
    parse_seconds,
    threads_per_block_warnings,
)
from gpu.core.telemetry import TelemetryMonitor
from gpu.core.timing import (
    RepeatPolicy,
)
from gpu.experiments.vector_add.article import ARTICLE_RUNS, ArticleRun, measure_article_method
from gpu.experiments.vector_add.partial import ARTICLE, PartialRun, run_order
from gpu.experiments.vector_add.result import VectorAddRun
from gpu.kernels.geometry import blocks_for
from gpu.kernels.vector_add import compile_vector_add
from gpu.kernels.vector_add_timing import (
    DEFAULT_PYTHON_BUDGET_S,
    CpuTiming,
    time_cpu,
    time_gpu_phases,
)

# --- running -----------------------------------------------------------------------


def run_vector_add(
    n: int,
    threads_per_block: int = 256,
    policy: RepeatPolicy | None = None,
    cpu_impls: Iterable[str] = tuple(cpu.IMPLEMENTATIONS),
    *,
    python_budget_s: float = DEFAULT_PYTHON_BUDGET_S,
    seed: int = 0,
    max_n: int | None = None,
    gpu_n: int | None = None,
    on_progress: Progress | None = None,
) -> VectorAddRun:
    """Run and time the vector add on the GPU and the chosen CPU implementations.

    Validates its inputs first (InputError says what is allowed). ``policy`` defaults
    to 10 timed runs after one warm-up. The CPU implementations run at ``n``; the GPU
    part at ``gpu_n`` (default ``gpu.core.limits.kernel_n(n)``: ``n`` on a GPU, at most
    the simulator's cap in the simulator) on the first ``gpu_n`` elements of the same
    inputs, and its result is checked against NumPy's at that N.

    This is the entry for callers with raw values (``gpu check``, scripts, tests); the
    declared run (``_run``) hands ``measure_vector_add`` the values its ``Param``s parsed.
    """
    n = check_cpu_n(n, max_n)
    gpu_n = kernel_n(n, vectorised=vectorised()) if gpu_n is None else check_n(gpu_n, n, "the GPU's N")
    threads_per_block = check_threads(threads_per_block, device_info().max_threads_per_block)
    impls = _cpu_names(cpu_impls)
    return measure_vector_add(
        n, gpu_n, threads_per_block, policy or RepeatPolicy.count(10), impls,
        python_budget_s=python_budget_s, seed=seed, progress=Progress.of(on_progress),
    )


def measure_vector_add(
    n: int,
    gpu_n: int,
    threads_per_block: int,
    policy: RepeatPolicy,
    impls: Sequence[str],
    *,
    python_budget_s: float,
    seed: int = 0,
    progress: Progress,
    later: Sequence[str] = (),
) -> VectorAddRun:
    """The measurement itself, on values already parsed (``run_vector_add`` or the declaration's ``Param``s):
    nothing here parses, checks a limit or applies the simulator's cap again.

    The GPU part runs first, then the CPU implementations in ``run_order`` (the Python loop last); after
    the GPU part and after each CPU implementation ``progress.partial`` gets a ``PartialRun`` of what is
    measured so far. ``later`` names the steps the caller runs after this (``ARTICLE``): they are listed
    as still running in every partial run. The returned run lists the CPU in the order of ``impls``.
    """
    warnings = threads_per_block_warnings(threads_per_block)
    hold = stream_hold_problem() if not BACKEND.simulated else None
    if hold is not None:
        warnings.append(hold)
    from gpu.core.l2 import flush_problem

    if (flush := flush_problem()) is not None:
        warnings.append(flush)

    # prepare inputs and the reference
    a, b = vector_inputs(n, seed)
    reference = a + b

    # GPU: compile once (timed apart), then the phases per the policy, at its own N
    progress.begin("compile", "compiling the kernel")
    compile_s = compile_vector_add()
    progress.begin(
        "gpu", "timing the GPU kernel and copies" + (f" at N = {gpu_n:,} (the simulator's cap)" if gpu_n < n else "")
    )
    gpu_out = np.empty(gpu_n, dtype=np.float32)
    # contiguous prefixes: views, no copy; the reference's prefix is exactly their sum
    gpu_a, gpu_b = a[:gpu_n], b[:gpu_n]
    with TelemetryMonitor() as monitor:  # clocks and throttling before, during and after the GPU work
        gpu_stats = time_gpu_phases(gpu_a, gpu_b, gpu_out, threads_per_block, policy)
    gpu_stats.pop("with_launch")  # launch + kernel are shown as their two parts here
    agreement = {"gpu": check_bits("gpu", gpu_out, reference[:gpu_n])}
    del gpu_out

    device = device_info()
    telemetry = monitor.summary()

    def result(cpu_done: Mapping[str, CpuTiming]) -> VectorAddRun:
        """The run with the CPU implementations done so far, in the chosen order (fresh dicts: a snapshot)."""
        return VectorAddRun(
            n=n,
            threads_per_block=threads_per_block,
            blocks_per_grid=blocks_for(gpu_n, threads_per_block),
            backend=BACKEND.kind,
            device=device,
            policy=policy,
            compile_s=compile_s,
            gpu=dict(gpu_stats),
            cpu={name: cpu_done[name] for name in impls if name in cpu_done},
            agreement={name: agreement[name] for name in ("gpu", *impls) if name in agreement},
            warnings=tuple(warnings),
            seed=seed,
            telemetry=telemetry,
            gpu_n=gpu_n if gpu_n < n else None,
        )

    # CPU implementations, each checked against the reference too; the compiled ones first
    cpu_results: dict[str, CpuTiming] = {}
    order = run_order(impls)
    if order or later:  # the GPU's figures and agreement, shown while the CPU runs
        progress.partial(PartialRun(result(cpu_results), (*order, *later)))
    cpu_out = np.empty(n, dtype=np.float32)
    for i, name in enumerate(order):
        progress.begin(f"cpu:{name}", f"timing the CPU: {cpu.LABELS[name]}")
        timing = time_cpu(name, a, b, cpu_out, policy, python_budget_s)
        cpu_results[name] = timing
        if timing.stats is not None:
            agreement[name] = check_bits(name, cpu_out, reference)
        if i + 1 < len(order) or later:  # the last step's result is the run itself, returned below
            progress.partial(PartialRun(result(cpu_results), (*order[i + 1:], *later)))
    return result(cpu_results)


# --- the declaration ---------------------------------------------------------------


def _cpu_names(value) -> tuple[str, ...]:
    names = [part.strip() for part in value.split(",")] if isinstance(value, str) else [str(v) for v in value]
    names = [name for name in dict.fromkeys(names) if name]
    unknown = [name for name in names if name not in cpu.IMPLEMENTATIONS]
    if unknown:
        raise InputError(f"unknown CPU implementation {unknown[0]!r}; choose from {', '.join(cpu.IMPLEMENTATIONS)}")
    return tuple(names)


def _python_budget(value) -> float:
    return parse_seconds(value, "the Python-loop budget")


def _threads(value) -> int:
    return check_threads(value, device_info().max_threads_per_block)


def vectorised() -> bool:
    """Whether the vector-add kernel runs in the lab simulator's vectorised tier now (a larger cap applies)."""
    if not BACKEND.lab_simulator:
        return False
    from gpu.kernels.vector_add import vector_add_kernel
    from gpu.sim import vector

    return vector.runs_vectorised(vector_add_kernel)


def sizes(params) -> tuple[int, int]:
    """``(n, gpu_n)`` of a run: the N its ``Param`` parsed, and the N of its GPU part. The one place
    the simulator's cap is applied to a vector add's N (the plan, admission and the run all ask here)."""
    return params["n"], kernel_n(params["n"], vectorised=vectorised())


def _run(params, progress: Progress) -> VectorAddRun:
    n, gpu_n = sizes(params)  # parsed by the Params, admitted before the run: nothing is parsed again
    threads, budget_s = params["threads_per_block"], params["python_budget_s"]
    run = measure_vector_add(
        n, gpu_n, threads, RepeatPolicy.count(params["repeats"]), params["cpu"], python_budget_s=budget_s,
        progress=progress, later=(ARTICLE,) if params["article"] else (),
    )
    if params["article"]:
        # all of the article's method at one N: in the simulator, the kernel's (its speedup compares the two)
        progress.begin(
            "article", "the article's method" + (f" at N = {gpu_n:,} (the simulator's cap)" if gpu_n < n else "")
        )
        run = replace(run, article=measure_article_method(gpu_n, threads, python_budget_s=budget_s))
    return run


# Seconds per simulated GPU thread: numba-cuda's simulator about 0.1-0.2 ms (DESIGN.md), the lab's
# about 0.3-0.7 µs for this barrier-free kernel (benchmarks/simulator_speed.md).
SIMULATED_S_PER_THREAD = 5e-7 if BACKEND.lab_simulator else 1.5e-4


def _plan(params, simulated: bool) -> list[tuple[str, float]]:
    """The run's phases (step ids) in the order ``run_vector_add`` begins them, with an estimate each (s).

    In the simulator the kernel launches dominate (one simulated thread each); on a GPU
    everything but the Python loop is short.
    """
    launches = params["repeats"] + 1
    n, gpu_n = sizes(params)
    per_thread_s = SIMULATED_S_PER_THREAD / VECTORISED_WORK_SHARE if vectorised() else SIMULATED_S_PER_THREAD
    per_launch = gpu_n * per_thread_s if simulated else 0.01
    python_s = (
        min(cpu.estimate_python_loop_s(n), params["python_budget_s"]) * launches if "python" in params["cpu"] else 0.0
    )
    steps = [("compile", 0.5), ("gpu", launches * per_launch * (1 if simulated else 2))]
    for name in run_order(params["cpu"]):
        compiled_s = (0.05 + n * CPU_S_PER_ELEMENT) * launches + (0.5 if "numba" in name else 0)
        steps.append((f"cpu:{name}", python_s if name == "python" else compiled_s))
    if params["article"]:
        article_python_s = (
            min(cpu.estimate_python_loop_s(gpu_n), params["python_budget_s"]) * 3
            if gpu_n < n
            else python_s / launches * 3
        )
        steps.append(("article", 4 * per_launch + article_python_s))
    return steps


CPU_S_PER_ELEMENT = 2e-9  # NumPy / Numba at large N: about 1-2 ns per element on a laptop (memory bound)
COMPILED_CPU = tuple(name for name in cpu.IMPLEMENTATIONS if name != "python")  # bounded by element-passes


def _work(params) -> int:
    """Element-passes of the GPU part (simulated kernels in the simulator), for ``admit``.

    The CPU side is counted apart and refused here when over ``KERNEL_LAB_MAX_CPU_WORK``:
    N x passes for each compiled CPU implementation (the Python loop has its own time
    budget). In the simulator the kernel (and the article's method) run at ``kernel_n``.
    """
    (n, gpu_n), passes = sizes(params), params["repeats"] + 1
    compiled = sum(name in COMPILED_CPU for name in params["cpu"])
    check_cpu_work(n * passes * compiled, "Vector add")
    # warm-up + repeats, and the article's own 3 runs + 1 compile run when asked; a vectorised kernel's
    # element-passes cost a fraction of a per-thread one's
    launches = gpu_n * (passes + (ARTICLE_RUNS + 1 if params["article"] else 0))
    return -(-launches // VECTORISED_WORK_SHARE) if vectorised() else launches


def _measures(run: VectorAddRun) -> dict[str, float]:
    # GPU figures at another N than the row's (the simulator's cap) are not the row's: left out
    out = {} if run.gpu_capped else {
        "gpu_total_s": run.gpu["total"].median_s,
        "kernel_s": run.gpu["kernel"].median_s,
        "kernel_gbps": run.kernel_bandwidth_gbps,
    }
    out.update({f"cpu_{name}_s": timing.median_s for name, timing in run.cpu.items()})
    return out


def read_recorded(ref) -> tuple:
    """Every result this experiment's "On a real GPU" panel draws from a committed run
    (``Recorded.read``): raises if one cannot be rebuilt."""
    return (VectorAddRun.recorded(ref),)


def no_records(section: Mapping[str, Any], sections: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A section that holds no History row of its own (the correctness launches)."""
    return []


def breakdown_records(section: Mapping[str, Any], sections: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The vector-add run, with the article's method (its own section) folded in: one row per run."""
    if not isinstance(section.get("run"), Mapping):
        return []
    run = dict(section["run"])
    article = (sections.get("article") or {}).get("article")
    if article is not None:
        run["article"] = article
    return [run]


EXPERIMENT = register(
    Experiment(
        key="vector-add",
        title="Vector add",
        summary="time c = a + b on the GPU and the CPU, phase by phase, and check the results agree",
        params=(
            Param(
                "n",
                "N (elements per vector)",
                check_cpu_n,
                PerBackend(10_000_000, 10_000_000),  # the article's N: your CPU there, beside the recorded GPU
                "A whole number such as 1000000, 1e6 or 2^20. Without a GPU the CPU runs at this N and the "
                "simulated kernel at most at the simulator's cap.",
            ),
            Param(
                "threads_per_block",
                "Threads per block",
                _threads,
                256,
                "1 to the device's limit (1024); multiples of 32 keep every warp full.",
                widget="int",
            ),
            Param(
                "repeats",
                "Repeats",
                check_repeats,
                PerBackend(10, 5),
                "Timed runs after one warm-up run.",
                widget="int",
            ),
            Param(
                "cpu",
                "CPU implementations",
                _cpu_names,
                tuple(cpu.IMPLEMENTATIONS),
                f"Comma-separated, from {','.join(cpu.IMPLEMENTATIONS)}.",
                widget="multiselect",
                options=tuple(cpu.IMPLEMENTATIONS),
                option_label=lambda name: cpu.LABELS[name],
            ),
            Param(
                "python_budget_s",
                "Python-loop budget (s)",
                _python_budget,
                DEFAULT_PYTHON_BUDGET_S,
                "Seconds the Python loop may take before it is only estimated.",
                widget="float",
                flag="--python-budget",
                page=False,
            ),
            Param(
                "article",
                "Also run it as in the article (copy c in too, mean of three wall-clock runs)",
                parse_flag,
                PerBackend(False, True),
                "Reproduce the article's own measurement beside the careful one.",
                widget="checkbox",
            ),
        ),
        run=_run,
        work=_work,
        measures=_measures,
        plan=_plan,
        result_type=VectorAddRun,
        page=PageLink(
            "Vector add",
            ":material/add_circle:",
            10,
            "the article's experiment, one size, full breakdown",
            "pages/1_Vector_add.py",
        ),
        order=10,
        history_columns=("n", "threads_per_block", "repeats"),
        check=(
            # the correctness launches hold no result of a type: bounded, no History row
            # each run by check.py's function of its name (correctness_section...)
            CheckSection("correctness", records=no_records),
            CheckSection("breakdown", parts=(Part(("run",), VectorAddRun, required=True),), records=breakdown_records),
            CheckSection("article", parts=(Part(("article",), ArticleRun, record=False, required=True),)),
        ),
        recorded=Recorded("vector-add", read=read_recorded),  # drawn by ui/views/experiments/vector_add.py: recorded
        legacy_keys={
            "n": "n",
            "threads_per_block": "threads_per_block",
            "repeats": "repeats",
            "cpu": "cpu_impls",
            "article": "article",
        },
    )
)
