"""The kernel catalog in the simulator: every step agrees with its reference, a deliberately
wrong kernel fails the same check, bad inputs are refused with a clear message, and the
results carry what the pages and History need. Sizes are tiny (~0.1 ms per simulated thread)."""

from dataclasses import replace

import pytest
from numba import float32, uint32

import gpu
from gpu.catalog.declare import FLOPS_PER_ELEMENT_PASS, KERNELS, kernel_module, step_sources
from gpu.catalog.registry import get
from gpu.catalog.steps import run_kernel
from gpu.core.backend import cuda
from gpu.core.limits import InputError, load_config
from gpu.core.timing import RepeatPolicy
from gpu.experiments.histogram import experiment as histogram
from gpu.experiments.matmul import experiment as matmul
from gpu.experiments.reduction import experiment as reduction
from gpu.experiments.stencil import experiment as stencil
from gpu.experiments.transpose import experiment as transpose
from gpu.service.admission import admit

ONE = RepeatPolicy.count(1, warmup=0)
ALL_CPU = ("python", "numpy", "numba", "numba-parallel")
TINY = {
    "reduction": {"n": 200, "threads_per_block": 64},
    "transpose": {"n": 16},
    "histogram": {"n": 256, "threads_per_block": 64, "distribution": "skewed"},
    "stencil": {"n": 16},
    "matmul": {"n": 12},
}
# every catalog kernel's module, derived (a kernel added later is tested at its simulator defaults)
MODULES = {key: kernel_module(key) for key in KERNELS}
for _key in KERNELS:
    TINY.setdefault(
        _key, {k: v for k, v in get(_key).defaults(True).items() if k not in ("repeats", "cpu", "cpu_budget_s")}
    )


@pytest.fixture(scope="module")
def runs():
    """One run of every catalog kernel, all steps and all CPU implementations, shared by the tests."""
    return {key: run_kernel(MODULES[key].SPEC, TINY[key], ONE, ALL_CPU) for key in KERNELS}


@pytest.mark.parametrize("key", KERNELS)
def test_every_step_that_runs_here_agrees_with_the_reference(runs, key):
    run = runs[key]
    assert run.agree, str(run)
    for step in MODULES[key].SPEC.steps:
        result = run.get(step.key)
        if step.needs and gpu.BACKEND.simulated and not gpu.BACKEND.lab_simulator:
            assert not result.measured and "simulator has no warp shuffles" in result.skipped
        else:
            assert result.measured and result.agreement.passed, result.agreement.describe()
    for key_cpu in ALL_CPU:
        assert run.get(key_cpu).agreement.passed


def test_agreement_mode_is_exact_where_the_arithmetic_allows_and_bounded_for_dot_products(runs):
    modes = {key: run.agreement_mode for key, run in runs.items()}
    # The reduction's inputs make every order of addition exact (ExactSumInputs): bit for bit.
    assert modes == {
        "reduction": "exact",
        "transpose": "exact",
        "histogram": "exact",
        "stencil": "exact",
        "matmul": "bounded",
    }
    tree = runs["reduction"].get("tree").agreement
    assert tree.passed and tree.max_abs_error == 0 and tree.describe() == "bit-identical (1 element)"
    assert runs["matmul"].get("register").agreement.depth == 12  # a dot product of length N: k = N


def test_derived_figures_come_from_the_declared_bytes_and_flops(runs):
    run = runs["matmul"]
    assert run.bytes_moved == 12 * 12**2 and run.flops == 2 * 12**3 and run.intensity == pytest.approx(2 * 12 / 12)
    naive = run.get("naive")
    assert run.gbps(naive) == pytest.approx(run.bytes_moved / naive.seconds / 1e9)
    assert run.gflops(naive) == pytest.approx(run.flops / naive.seconds / 1e9)
    assert run.fraction_of_peak(naive) is None and run.vs_best_library(naive) is None  # no roofs, no libraries here
    assert runs["transpose"].gflops(runs["transpose"].get("naive")) is None  # no FLOPs: no GFLOP/s


def test_gpu_steps_report_copies_and_kernel_phases_and_no_allocation_phase(runs):
    phases = runs["stencil"].get("tiled").phases
    assert {"h2d", "kernel", "d2h", "total"} <= set(phases) and "alloc" not in phases
    assert sum(phases[p].median_s for p in ("h2d", "kernel", "d2h")) <= phases["total"].median_s * 1.05
    assert phases["kernel"].held is False  # the simulator has no hold: the kernel's samples include the launch


def test_device_buffers_are_allocated_and_the_launch_configured_before_any_sample(monkeypatch):
    from gpu.catalog import steps
    from gpu.core import hold

    log: list[str] = []
    real_alloc, real_configure, real_flush = cuda.device_array, steps.configured_launch, hold.SimulatedOps.flush_l2
    monkeypatch.setattr(cuda, "device_array", lambda *a, **k: log.append("alloc") or real_alloc(*a, **k))
    monkeypatch.setattr(steps, "configured_launch", lambda *a: log.append("configure") or real_configure(*a))
    monkeypatch.setattr(
        hold.SimulatedOps, "flush_l2", lambda self, stream: log.append("sample") or real_flush(self, stream)
    )
    stats, _, _, _ = steps.time_step(stencil.SPEC, stencil.SPEC.steps[0], TINY["stencil"],
                                     stencil.SPEC.make_inputs(TINY["stencil"], 0), RepeatPolicy.count(3, warmup=1))
    first_sample = log.index("sample")
    assert log.count("sample") == 4 and "alloc" not in log[first_sample:] and "configure" not in log[first_sample:]
    assert log.count("configure") == 1 and stats["total"].n_samples == 3


def test_a_step_that_raises_is_recorded_in_its_own_row_and_the_others_stay(monkeypatch):
    from gpu.catalog import steps
    from gpu.core.kernel_timing import HoldExpired

    real = steps.time_step

    def failing(spec, step, *a, **k):
        if step.key == "tiled":
            raise HoldExpired("the stream hold finished before the work was queued 6 times in a row")
        return real(spec, step, *a, **k)

    monkeypatch.setattr(steps, "time_step", failing)
    run = run_kernel(stencil.SPEC, TINY["stencil"], ONE, ("numpy",))
    tiled = run.get("tiled")
    assert not tiled.measured and tiled.error.startswith("HoldExpired") and "failed: HoldExpired" in tiled.why_not
    assert run.get("naive").measured and run.get("numpy").measured  # the other rows keep their results
    assert run.to_dict()["implementations"]["tiled"]["error"].startswith("HoldExpired")
    assert "failed: HoldExpired" in str(run)


def test_fewer_than_three_samples_are_marked_in_rows_json_text_and_frame(runs):
    run = runs["reduction"]  # one sample per figure (ONE)
    rows = [r for r in run.summary_rows() if r["seconds"] is not None and not r["estimated"]]
    assert rows and all(r["few_samples"] and r["marks"].startswith("*") for r in rows)
    assert all(v["phases"] is None or v["phases"][next(iter(v["phases"]))]["few_samples"]
               for v in run.to_dict()["implementations"].values())
    assert "* fewer than 3 samples" in str(run)
    frame = run.to_frame()
    assert frame.loc[~frame["estimated"], "few_samples"].all()


def test_l2_resident_gpu_rows_are_marked_when_the_bytes_fit_the_l2(runs):
    fits = replace(runs["stencil"], l2_bytes=50 << 20)
    rows = {r["key"]: r for r in fits.summary_rows()}
    assert rows["naive"]["l2_resident"] and rows["naive"]["marks"].endswith("°")
    assert not rows["numpy"]["l2_resident"]  # a CPU row is never marked
    assert "fit in the" in str(fits) and fits.to_dict()["l2_resident"] is True
    assert not runs["stencil"].l2_resident  # the simulator reports no L2


def test_cpu_implementations_get_a_warm_up_run_even_in_the_simulator(monkeypatch):
    from gpu.catalog import steps

    calls = []
    impl = replace(reduction.SPEC.cpu_impl("numpy"), fn=lambda *a: calls.append(1))
    result, _ = steps.time_cpu(
        reduction.SPEC,
        impl,
        TINY["reduction"],
        reduction.SPEC.make_inputs(TINY["reduction"], 0),
        RepeatPolicy.count(2, warmup=0),
        10.0,
    )
    assert len(calls) == 3 and result.main.n_samples == 2  # one warm-up, two samples


def test_the_cpu_budget_bounds_every_cpu_implementation_not_only_the_budgeted_ones():
    # On the H200 NumPy's a.T copy took 6.1 s a run and all ten repeats ran (a minute of a
    # fifteen-minute GPU lease): a slow CPU row stops at the budget, after the minimum samples.
    import time

    from gpu.catalog import steps

    calls = []

    def slow(*_args):
        calls.append(1)
        time.sleep(0.05)

    impl = replace(reduction.SPEC.cpu_impl("numpy"), fn=slow)
    params = TINY["reduction"]
    result, _ = steps.time_cpu(reduction.SPEC, impl, params, reduction.SPEC.make_inputs(params, 0),
                               RepeatPolicy.count(10, warmup=0), 0.08)
    assert result.main.n_samples == RepeatPolicy().min_samples  # not 10
    assert len(calls) == 1 + result.main.n_samples  # one warm-up, then the samples


def test_to_dict_and_to_frame_carry_every_implementation(runs):
    run = runs["histogram"]
    data = run.to_dict()
    assert data["experiment"] == "histogram" and data["agree"] is True and data["agreement_mode"] == "exact"
    assert set(data["implementations"]) == {"global", "shared", "cupy", "torch", *ALL_CPU}
    assert data["implementations"]["cupy"]["skipped"]  # no library in the simulator, and it says so
    frame = run.to_frame()
    assert {"kernel", "size", "implementation", "kind", "phase", "sample", "seconds", "estimated"} <= set(frame.columns)
    assert set(frame["implementation"]) >= {"global", "shared", "numpy"}
    assert "Histogram" in str(run)


def test_transpose_yardstick_copy_is_timed_but_not_held_to_the_transpose(runs):
    copy = runs["transpose"].get("d2d-copy")
    assert copy.measured and copy.agreement is None and not copy.same_work
    assert runs["transpose"].best_library is None  # a copy is a yardstick, never "the best library"


# --- deliberately wrong kernels fail the same check ---------------------------------


@cuda.jit
def reduce_drops_first_kernel(x, total):
    i = cuda.grid(1)
    if 0 < i < x.size:  # wrong: element 0 is never added
        cuda.atomic.add(total, 0, x[i])


@cuda.jit
def copy_not_transpose_kernel(a, out):
    col, row = cuda.grid(2)
    if row < a.shape[0] and col < a.shape[1]:
        out[row, col] = a[row, col]  # wrong: no transposition


@cuda.jit
def histogram_off_by_one_kernel(data, hist):
    i = cuda.grid(1)
    if i < data.size:
        cuda.atomic.add(hist, 255 - data[i], uint32(1))  # wrong bin (the data is skewed, so it shows)


@cuda.jit
def blur_missing_neighbour_kernel(u, out):
    col, row = cuda.grid(2)
    rows, cols = u.shape
    if 0 < row < rows - 1 and 0 < col < cols - 1:
        out[row, col] = (
            u[row, col] + u[row - 1, col] + u[row + 1, col] + u[row, col - 1] + u[row, col - 1]
        ) * stencil.FIFTH
    elif row < rows and col < cols:
        out[row, col] = u[row, col]


@cuda.jit
def matmul_short_dot_kernel(a, b, c):
    col, row = cuda.grid(2)
    if row < c.shape[0] and col < c.shape[1]:
        acc = float32(0.0)
        for k in range(a.shape[1] - 1):  # wrong: the last product is left out
            acc += a[row, k] * b[k, col]
        c[row, col] = acc


WRONG = {
    "reduction": (reduce_drops_first_kernel, reduction.SPEC.steps[0]),
    "transpose": (copy_not_transpose_kernel, transpose.SPEC.steps[0]),
    "histogram": (histogram_off_by_one_kernel, histogram.SPEC.steps[0]),
    "stencil": (blur_missing_neighbour_kernel, stencil.SPEC.steps[0]),
    "matmul": (matmul_short_dot_kernel, matmul.SPEC.steps[0]),
}


@pytest.mark.parametrize("key", KERNELS)
def test_a_deliberately_wrong_kernel_fails_the_agreement_check(key):
    kernel, template = WRONG[key]
    spec = replace(MODULES[key].SPEC, steps=(replace(template, key="wrong", kernel=kernel),), libraries=())
    run = run_kernel(spec, TINY[key], ONE)
    agreement = run.get("wrong").agreement
    assert not run.agree and not agreement.passed and agreement.mismatches > 0, agreement.describe()


# --- inputs ---------------------------------------------------------------------------


@pytest.mark.parametrize("key,raw,message", [
    ("reduction", {"n": "0"}, "at least 1"),
    ("reduction", {"n": "1e12"}, "too large"),
    ("reduction", {"threads_per_block": "96"}, "power of two"),
    ("reduction", {"threads_per_block": "16"}, "power of two"),
    ("transpose", {"n": "ten"}, "whole number"),
    ("stencil", {"n": "1e6"}, "N ≤"),
    ("histogram", {"distribution": "gaussian"}, "uniform, skewed, single"),
    ("matmul", {"cpu": "fortran"}, "unknown CPU implementation 'fortran'"),
    ("matmul", {"repeats": "0"}, "repeats"),
])
def test_bad_inputs_are_refused_with_a_message_saying_what_is_allowed(key, raw, message):
    with pytest.raises(InputError, match=message):
        get(key).parse(raw, gpu.BACKEND.simulated)


@pytest.mark.parametrize("key", KERNELS)
def test_default_parameters_are_admitted_on_both_backends(key):
    experiment = get(key)
    for simulated in (True, False):
        params = {p.name: p.default_for(simulated) for p in experiment.params}
        assert experiment.work(params) <= load_config({}, simulated=simulated).max_work, (key, simulated)
    admit(experiment, experiment.parse({}, gpu.BACKEND.simulated))


def test_admission_charges_flop_heavy_kernels_by_flops():
    params = get("matmul").parse({"n": 64}, True)
    assert get("matmul").work(params) >= 2 * 64**3 // FLOPS_PER_ELEMENT_PASS


def test_slow_cpu_implementations_are_estimated_not_run_over_the_budget():
    run = run_kernel(matmul.SPEC, {"n": 64}, ONE, ("python",), cpu_budget_s=1e-4)
    python = run.get("python")
    assert not python.measured and python.estimate_s > 1e-4 and "budget" in python.skipped
    assert run.summary_rows()[-1]["estimated"] is True


# --- sources ---------------------------------------------------------------------------


def test_step_sources_mark_what_changed_and_keep_the_why_as_prose():
    sources = step_sources(transpose.SPEC)
    assert [s.key for s in sources] == [step.key for step in transpose.SPEC.steps]
    assert [s.key for s in sources][:3] == ["naive", "tiled", "padded"]
    padded = sources[2]
    assert "bank" in padded.why and '"""' not in padded.source
    changed = [text for tag, text in padded.lines if tag == "+"]
    assert len(changed) == 1 and "PADDED_TILE" in changed[0] and padded.changed == 2  # only the padding changed
    assert all(tag == "+" for tag, _ in sources[0].lines[2:])  # the first step is all new (after decorator and def)


def test_shuffle_steps_show_the_device_functions_they_call():
    sources = {s.key: s for s in step_sources(reduction.SPEC)}
    assert "shfl_down_sync" in sources["shuffle"].helpers and "for i in range" in sources["grid-stride"].source


def test_gpu_check_section_of_a_kernel_passes_in_the_simulator_and_reports_targets(tmp_path):
    from gpu.catalog.declare import catalog_section
    from gpu.report.check import SECTIONS, run_check

    assert {f"{key}_section" for key in KERNELS} <= {section.__name__ for section in SECTIONS}
    report = run_check(tmp_path, quick=True, sections=[catalog_section("matmul")])
    assert report.passed, report.markdown()
    markdown = (tmp_path / "check.md").read_text()
    assert "## Matrix multiply" in markdown and "register-tiled step's throughput ÷ cuBLAS FP32's" in markdown
    assert "not measurable here" in markdown  # no cuBLAS in the simulator: the target is not claimed


def test_catalog_libraries_are_timed_by_the_primitive_and_a_host_waiting_call_without_the_hold(monkeypatch):
    from gpu.catalog import libraries
    from gpu.core import hold
    from tests.test_timing import FakeOps

    ops = FakeOps()
    monkeypatch.setattr(hold, "default_ops", lambda clock=None: ops)
    spec, params = transpose.SPEC, TINY["transpose"]
    inputs = spec.make_inputs(params, 0)
    copy = next(lib for lib in spec.libraries if lib.key == "d2d-copy")
    timing, _ = libraries.time_library(copy, inputs, spec.output.zeros(params), RepeatPolicy.count(3, warmup=0),
                                          working_set_bytes=spec.bytes_moved(params))
    assert timing.sample_held == (True, True, True) and timing.working_set_bytes == spec.bytes_moved(params)
    assert ops.log.count("hold") == 3 and ops.log[:3] == ["flush", "sync", "hold"]
    waiting = replace(copy, hold=False)  # as CuPy's and PyTorch's bincount: no hold can hide their launch
    ops.log.clear()
    timing, _ = libraries.time_library(waiting, inputs, spec.output.zeros(params), RepeatPolicy.count(3, warmup=0),
                                          working_set_bytes=spec.bytes_moved(params))
    assert timing.sample_held == (False, False, False) and "hold" not in ops.log and "no hold" in timing.launch
    assert all(lib.hold is False and "includes the launch" in lib.note for lib in histogram.SPEC.libraries)
