"""Every page runs without an exception; the Vector add page runs, shows agreement and
a chart holding the phases, and rejects bad input with a message."""

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import gpu
from ui.frame import SIMULATOR_TITLE, simulator_banner

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["app.py", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py"))]


def live_charts(at: AppTest) -> list:
    """Charts of this session's runs (the "On a real GPU" panel's are subtitled "recorded: ...")."""
    return [chart for chart in at.get("vega_lite_chart") if "recorded: " not in chart.proto.spec]


def chart_specs(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in live_charts(at)]


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_without_exception_and_shows_the_backend(page):
    at = AppTest.from_file(str(ROOT / page), default_timeout=60).run()
    assert not at.exception, at.exception
    warnings = [w.value for w in at.warning]
    if gpu.BACKEND.simulated:
        # the full warning, not just "CUDA" somewhere on the page (which any page text matches)
        # the full warning, or its title followed by the page's own note (what its simulated run can and cannot show)
        assert any(w.startswith(simulator_banner()) or w.startswith(f"{SIMULATOR_TITLE} ") for w in warnings), warnings
        assert simulator_banner().startswith(SIMULATOR_TITLE)
        assert SIMULATOR_TITLE == "**CUDA simulator — timings are not GPU performance.**"
        assert any(
            ":orange-badge[CUDA simulator] timings are not GPU performance" == m.value for m in at.sidebar.markdown
        )
    else:
        assert not any("not GPU performance" in w for w in warnings)  # on a GPU there is no simulator banner
        assert any(m.value.startswith(":green-badge[CUDA]") for m in at.sidebar.markdown)


def vector_add_page() -> AppTest:
    return AppTest.from_file(str(ROOT / "pages/1_Vector_add.py"), default_timeout=120).run()


def test_vector_add_run_shows_agreement_and_a_chart_of_the_phases():
    at = vector_add_page()
    at.text_input(key="n").input("777")
    at.text_input(key="repeats").input("2")
    at.multiselect(key="cpu_impls").set_value(["numpy", "python"])
    at.button[0].click().run()
    assert not at.exception
    assert not at.error, [e.value for e in at.error]
    assert any("bit-identical" in s.value for s in at.success)
    specs = json.dumps(chart_specs(at))
    for measure in ("NumPy", "Python loop"):  # your CPU, charted
        assert measure in specs
    assert "(simulated)" not in specs and "SIMULATED" not in specs  # simulated phases: in the table, never charted
    assert any("Results match: True" in c.value for c in at.code)  # the article's lines
    # in words: the method ran and matched, the CPU time; no simulated GPU-vs-CPU ratio
    words = " ".join(c.value for c in at.caption) + " ".join(i.value for i in at.info)
    assert "the article's method ran (in the CUDA simulator) and the results matched" in words
    assert "slower than" not in words and "faster than" not in words
    # in the simulator no simulated time or ratio is a headline: your CPU's times and the launch (honest pages)
    metrics = {m.label: m.value for m in at.metric}
    assert set(metrics) == {"Your Python loop", "Your NumPy", "Your Numba parallel", "GPU launch"}, metrics
    assert metrics["GPU launch"] == "4 × 256" and metrics["Your Numba parallel"] == "not run"
    assert "Kernel (simulated)" in set(at.dataframe[-1].value["measure"])
    assert any("The simulated kernel (N = " in c.value and "is not charted" in c.value for c in at.caption)
    details = next(d.value for d in at.dataframe if "max |difference|" in d.value.columns)  # headers a reader knows
    assert "GPU kernel" in set(details["implementation"]) and "max_abs_diff" not in details.columns


def test_vector_add_clears_its_partial_results_and_saves_only_the_completed_run():
    """While it runs the page draws partial results in one place; once the run is complete that place is
    empty, the completed run is drawn in full and History holds one row for it."""
    from ui.resources import current_store

    at = vector_add_page()
    at.text_input(key="n").input("3000")
    at.text_input(key="repeats").input("2")
    before = current_store().count()
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert not any(i.value.startswith("Still running:") for i in at.info), [i.value for i in at.info]
    assert not any(d.value["kind"].eq("still running").any() for d in at.dataframe if "kind" in d.value)
    run = at.session_state["vector_add.result"]
    assert set(run.cpu) == {"python", "numpy", "numba", "numba-parallel"} and run.article is not None
    assert len(at.session_state["runner.last"]["run_ids"]) == 1 and current_store().count() == before + 1


@pytest.mark.parametrize("bad,message", [("0", "at least 1"), ("ten", "whole number"), ("1e12", "too large")])
def test_vector_add_bad_n_shows_an_error_and_runs_nothing(bad, message):
    at = vector_add_page()
    at.text_input(key="n").input(bad)
    at.button[0].click().run()
    assert not at.exception
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    assert not live_charts(at)


def test_a_bad_input_keeps_the_previous_result_on_screen():
    at = vector_add_page()
    at.text_input(key="n").input("300")
    at.text_input(key="repeats").input("1")
    at.multiselect(key="cpu_impls").set_value(["numpy"])
    at.checkbox(key="article").uncheck()
    at.button[0].click().run()
    assert live_charts(at)
    at.text_input(key="n").input("-1")
    at.button[0].click().run()
    assert at.error and live_charts(at), "the earlier run must stay visible"
    assert any("results below are from the previous run (N = 300" in w.value for w in at.warning), (
        "and be marked as such"
    )


@pytest.mark.parametrize(
    "field,bad,message",
    [
        ("threads_per_block", "2048", "between 1 and"),
        ("threads_per_block", "0", "between 1 and"),
        ("threads_per_block", "many", "whole number"),
        ("repeats", "1e9", "repeats must be between"),
    ],
)
def test_vector_add_rejects_bad_threads_and_repeats_with_a_visible_message(field, bad, message):
    at = vector_add_page()
    at.text_input(key=field).input(bad)
    at.button[0].click().run()
    assert not at.exception
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    assert not live_charts(at)


def test_vector_add_reads_1e3_as_a_thousand_not_one():
    at = vector_add_page()
    at.text_input(key="n").input("1e3")
    at.text_input(key="threads_per_block").input("2^7")
    at.text_input(key="repeats").input("1")
    at.multiselect(key="cpu_impls").set_value(["numpy"])
    at.checkbox(key="article").uncheck()
    at.button[0].click().run()
    assert not at.error, [e.value for e in at.error]
    run = at.session_state["vector_add.result"]
    assert (run.n, run.threads_per_block) == (1000, 128)


def test_home_has_a_glossary_of_the_pages_jargon():
    """n<3, sectors per request, sm_90, occupancy and barrier interval explained, with a short glossary."""
    from ui.glossary import GLOSSARY

    for term in ("n<3", "sectors per request", "sm_90", "occupancy", "barrier interval"):
        assert term in GLOSSARY and len(GLOSSARY[term]) > 40, term
    at = AppTest.from_file("../app.py", default_timeout=60).run()
    assert not at.exception
    assert any(e.label.startswith("Glossary") for e in at.expander)
    text = " ".join(m.value for m in at.markdown)
    assert all(f"**{term}**" in text for term in GLOSSARY)


@pytest.mark.parametrize("script", ["../pages/1_Vector_add.py", "../pages/2_Scaling.py"])
def test_a_long_default_run_states_its_estimate_before_it_starts(script):
    """A run that may take over ~2 s says so under the form, before Run is pressed."""
    at = AppTest.from_file(script, default_timeout=60).run()
    assert not at.exception
    estimate = [c.value for c in at.caption if "At these settings a run takes about" in c.value]
    assert estimate, [c.value for c in at.caption]
