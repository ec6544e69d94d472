"""The kernel catalog in the simulator: every step agrees with its reference, a deliberately
wrong kernel fails the same check, bad inputs are refused with a clear message, and the
results carry what the pages and History need. Sizes are tiny (~0.1 ms per simulated thread)."""

from dataclasses import replace

import pytest
from numba import float32, uint32

import gpu
from gpu.core.backend import cuda
from gpu.core.limits import InputError, load_config
from gpu.core.timing import RepeatPolicy
from gpu.experiments import histogram, matmul, reduction, stencil, transpose
from gpu.experiments.catalog import FLOPS_PER_ELEMENT_PASS, KERNELS, step_sources
from gpu.experiments.registry import get
from gpu.experiments.steps import run_kernel
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
MODULES = {"reduction": reduction, "transpose": transpose, "histogram": histogram, "stencil": stencil, "matmul": matmul}


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
        if step.needs and gpu.BACKEND.simulated:
            assert not result.measured and "simulator has no warp shuffles" in result.skipped
        else:
            assert result.measured and result.agreement.passed, result.agreement.describe()
    for key_cpu in ALL_CPU:
        assert run.get(key_cpu).agreement.passed


def test_agreement_mode_is_exact_where_the_arithmetic_allows_and_bounded_for_dot_products(runs):
    modes = {key: run.agreement_mode for key, run in runs.items()}
    # The reduction's inputs make every order of addition exact (ExactSumInputs): bit for bit.
    assert modes == {"reduction": "exact", "transpose": "exact", "histogram": "exact", "stencil": "exact", "matmul": "bounded"}
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


def test_gpu_steps_report_allocation_copies_and_kernel_phases(runs):
    phases = runs["stencil"].get("tiled").phases
    assert {"alloc", "h2d", "kernel", "d2h", "total"} <= set(phases)
    assert sum(phases[p].median_s for p in ("alloc", "h2d", "kernel", "d2h")) <= phases["total"].median_s * 1.05


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
        out[row, col] = (u[row, col] + u[row - 1, col] + u[row + 1, col] + u[row, col - 1] + u[row, col - 1]) * stencil.FIFTH
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
    assert [s.key for s in sources] == ["naive", "tiled", "padded"]
    padded = sources[2]
    assert "bank" in padded.why and '"""' not in padded.source
    changed = [text for tag, text in padded.lines if tag == "+"]
    assert len(changed) == 1 and "PADDED_TILE" in changed[0] and padded.changed == 2  # only the padding changed
    assert all(tag == "+" for tag, _ in sources[0].lines[2:])  # the first step is all new (after decorator and def)


def test_shuffle_steps_show_the_device_functions_they_call():
    sources = {s.key: s for s in step_sources(reduction.SPEC)}
    assert "shfl_down_sync" in sources["shuffle"].helpers and "for i in range" in sources["grid-stride"].source


def test_gpu_check_section_of_a_kernel_passes_in_the_simulator_and_reports_targets(tmp_path):
    from gpu.report.check import SECTIONS, catalog_section, run_check

    assert {f"{key}_section" for key in KERNELS} <= {section.__name__ for section in SECTIONS}
    report = run_check(tmp_path, quick=True, sections=[catalog_section("matmul")])
    assert report.passed, report.markdown()
    markdown = (tmp_path / "check.md").read_text()
    assert "## Matrix multiply" in markdown and "register-tiled step's throughput ÷ cuBLAS FP32's" in markdown
    assert "not measurable here" in markdown  # no cuBLAS in the simulator: the target is not claimed
