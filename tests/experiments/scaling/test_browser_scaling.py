"""The real app in a real browser: open Scaling, run a small sweep, see the charts render."""

import pytest

import gpu
from tests.conftest import screenshot, wait_for_app, wait_for_backend_badge

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_scaling_sweep_runs_and_draws_charts_in_the_browser(page, app_url):
    page.goto(f"{app_url}/Scaling")
    wait_for_app(page)
    wait_for_backend_badge(page)
    for label, value in (("Smallest N", "64"), ("Largest N", "256")):
        box = page.get_by_label(label, exact=True)
        box.fill(value)
        box.press("Tab")
    page.get_by_role("button", name="Run sweep").click()
    page.get_by_text("bit-identical to NumPy's at every size").wait_for(timeout=120_000)
    wait_for_app(page)
    charts = page.locator('[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg')
    charts.nth(1).wait_for()  # every chart drawn before counting
    assert charts.count() >= 2
    if gpu.BACKEND.simulated:  # simulated kernel times are compared with nothing
        assert page.get_by_text("never beats", exact=False).count() == 0
        page.get_by_text("Simulated kernel times are not compared with your CPU").wait_for()
    else:
        assert page.get_by_text("never beats NumPy", exact=False).count() >= 1
    screenshot(page, "scaling")
