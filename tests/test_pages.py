"""Every page runs without an exception; the Vector add page runs, shows agreement and
a chart holding the phases, and rejects bad input with a message."""

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import gpu
from ui.frame import simulator_banner

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["app.py", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py"))]


def chart_specs(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart")]


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_without_exception_and_shows_the_backend(page):
    at = AppTest.from_file(str(ROOT / page), default_timeout=60).run()
    assert not at.exception, at.exception
    warnings = [w.value for w in at.warning]
    if gpu.BACKEND.simulated:
        # the full warning, not just "CUDA" somewhere on the page (which any page text matches)
        assert simulator_banner() in warnings, warnings
        assert "**CUDA simulator — timings are not GPU performance.**" in simulator_banner()
        assert any(":orange-badge[CUDA simulator] timings are not GPU performance" == m.value for m in at.sidebar.markdown)
    else:
        assert not any("not GPU performance" in w for w in warnings)  # on a GPU there is no simulator banner
        assert any(m.value.startswith(":green-badge[CUDA]") for m in at.sidebar.markdown)


def vector_add_page() -> AppTest:
    return AppTest.from_file(str(ROOT / "pages/1_Vector_add.py"), default_timeout=120).run()


def test_vector_add_run_shows_agreement_and_a_chart_of_the_phases():
    at = vector_add_page()
    at.text_input(key="n").input("777")
    at.text_input(key="repeats").input(str(2))
    at.multiselect(key="cpu_impls").set_value(["numpy", "python"])
    at.button[0].click().run()
    assert not at.exception
    assert not at.error, [e.value for e in at.error]
    assert any("bit-identical" in s.value for s in at.success)
    specs = json.dumps(chart_specs(at))
    for measure in ("H2D copy", "Kernel", "D2H copy", "GPU end to end", "NumPy", "Python loop"):
        assert measure in specs
    assert any("Results match: True" in c.value for c in at.code)  # the article's lines


@pytest.mark.parametrize("bad,message", [("0", "at least 1"), ("ten", "whole number"), ("1e9", "too large")])
def test_vector_add_bad_n_shows_an_error_and_runs_nothing(bad, message):
    at = vector_add_page()
    at.text_input(key="n").input(bad)
    at.button[0].click().run()
    assert not at.exception
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    assert not at.get("vega_lite_chart")


def test_a_bad_input_keeps_the_previous_result_on_screen():
    at = vector_add_page()
    at.text_input(key="n").input("300")
    at.text_input(key="repeats").input(str(1))
    at.multiselect(key="cpu_impls").set_value(["numpy"])
    at.checkbox(key="article").uncheck()
    at.button[0].click().run()
    assert at.get("vega_lite_chart")
    at.text_input(key="n").input("-1")
    at.button[0].click().run()
    assert at.error and at.get("vega_lite_chart"), "the earlier run must stay visible"
