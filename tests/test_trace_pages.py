"""What the trace shows, in AppTest: the Kernels page per step, Launch config's coalesced vs
strided pair, and a Write-a-kernel submission with a missing syncthreads."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.analysis_wait import wait_for_analysis

ROOT = Path(__file__).resolve().parent.parent
KERNELS = str(ROOT / "pages/7_Kernels.py")
LAUNCH = str(ROOT / "pages/3_Launch_config.py")
WRITE = str(ROOT / "pages/9_Write_a_kernel.py")


def _texts(at) -> str:
    return "\n".join([m.value for m in at.markdown] + [s.value for s in at.success] + [e.value for e in at.error]
                     + [i.value for i in at.info] + [c.value for c in at.caption])


def test_the_kernels_page_traces_every_transpose_step_on_request():
    at = AppTest.from_file(KERNELS, default_timeout=180).run()
    at.selectbox(key="kernels.kernel").set_value("transpose").run()
    assert "Trace every step" in [t.label for t in at.toggle]
    assert not any("sectors** per warp request" in m.value for m in at.markdown)  # nothing traced until asked
    at.toggle(key="trace.kernels.on").set_value(True).run()
    assert not at.exception, at.exception
    text = _texts(at)
    assert "`out[col, row]` (line" in text and "**32.0 sectors** per warp request (ideal 4.0)" in text  # naive stores
    assert "**32-way bank conflict**" in text and "shared memory has no bank conflicts" in text  # tiled vs padded
    from gpu.experiments.transpose.experiment import SPEC as TRANSPOSE

    assert sum("No race, no out-of-bounds access" in s.value for s in at.success) == len(TRANSPOSE.steps)
    assert len(at.get("vega_lite_chart")) == 1  # the sectors chart
    maps = [m for m in at.markdown if m.value.startswith("<svg")]  # one access map per step
    assert len(maps) == len(TRANSPOSE.steps) and all(m.allow_html for m in maps)


def test_the_reduction_traces_every_step_warp_shuffles_included():
    at = AppTest.from_file(KERNELS, default_timeout=180).run()
    at.toggle(key="trace.kernels.on").set_value(True).run()  # reduction is the first kernel
    assert not at.exception, at.exception
    text = _texts(at)
    assert "**9 barrier intervals** per block (8 syncthreads)" in text
    from gpu.experiments.reduction.experiment import SPEC

    assert "Not traced" not in text
    assert sum("No race, no out-of-bounds access" in s.value for s in at.success) == len(SPEC.steps)
    shuffles = sum(1 for s in SPEC.steps if s.needs)  # the steps numba-cuda's simulator could not run
    assert text.count("warp collectives: **") == shuffles and "shfl_down_sync" in text


def test_the_learner_chooses_the_traced_size_within_its_bound():
    at = AppTest.from_file(KERNELS, default_timeout=180).run()
    at.selectbox(key="kernels.kernel").set_value("transpose").run()
    at.toggle(key="trace.kernels.on").set_value(True).run()
    size = at.number_input(key="trace.kernels.transpose.n")
    assert size.value == 32 and size.max == 256  # N × N elements: 256² = 65,536, the trace's bound
    size.set_value(64).run()
    assert not at.exception, at.exception
    assert "transpose-naive, 64 × 64 float32" in _texts(at)
    at.selectbox(key="kernels.kernel").set_value("matmul").run()
    matmul = at.number_input(key="trace.kernels.matmul.n")
    assert matmul.max == 40  # N³ multiply-adds: 40³ = 64,000 ≤ 65,536


def test_launch_config_compares_coalesced_and_strided_reads():
    at = AppTest.from_file(LAUNCH, default_timeout=180).run()
    at.toggle(key="trace.launch.on").set_value(True).run()
    assert not at.exception, at.exception
    values = {m.label: m.value for m in at.metric}
    assert values["Sectors per warp load, coalesced: a[i]"] == "4"
    assert values["Sectors per warp load, strided: 32 elements apart"] == "32"


def test_a_submission_missing_its_syncthreads_gets_the_race_with_threads_and_lines(isolated):
    from gpu.problems import get

    missing_sync = get("shared").solution.source.replace("    cuda.syncthreads()\n    stride", "    stride")
    at = AppTest.from_file(WRITE, default_timeout=180).run()
    at.selectbox(key="write_kernel.problem").set_value("shared").run()
    at.text_area(key="write_kernel.draft.shared").input(missing_sync)
    at.selectbox(key="trace.write_kernel.test.shared").set_value("a block minus one")  # the traced size, chosen
    at.button(key="write_kernel.run").click().run()
    assert not at.exception, at.exception
    wait_for_analysis(at)  # the trace follows the verdict
    assert "test “a block minus one” (n = 255)" in _texts(at)
    race = next(e.value for e in at.error if "race" in e.value.lower())
    assert race.startswith("Found 1 race")
    items = [m.value for m in at.markdown if m.value.startswith("- race on shared `partial")]
    assert items and "line 14 (`partial[tid]`)" in items[0] and "line 18" in items[0] and "thread (" in items[0]


def test_the_traced_test_picker_shows_its_default_on_every_run(isolated):
    """The picker's default is an option of its own (ui/views/trace.py: AUTOMATIC): when it was None, Streamlit drew
    the kept None as no choice at all ("Choose an option") from the page's second run on."""
    from ui.views.trace import AUTOMATIC

    at = AppTest.from_file(WRITE, default_timeout=60).run()
    for _ in range(2):  # the first run, then one with the value kept in the session
        picker = at.selectbox(key="trace.write_kernel.test.vector-add")
        assert picker.proto.HasField("default") and picker.proto.default == 0, "drawn with no option chosen"
        assert picker.value == AUTOMATIC and picker.options[0].startswith("automatic: the smallest test")
        at.run()
    assert not at.exception, at.exception
