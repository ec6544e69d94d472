"""The real app in a real browser: open Vector add, run it, see the charts render."""

import pytest

from tests.conftest import screenshot, wait_for_app, wait_for_backend_badge

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_vector_add_runs_and_draws_charts_in_the_browser(page, app_url):
    page.set_viewport_size({"width": 1400, "height": 2800})  # tall enough for the whole result
    page.goto(f"{app_url}/Vector_add")
    wait_for_app(page)
    wait_for_backend_badge(page)
    n_box = page.get_by_label("N (elements per vector)", exact=True)
    n_box.fill("1000")
    n_box.press("Tab")
    page.get_by_role("button", name="Run", exact=True).click()  # not the help button of "Also run it as in the article"
    page.get_by_text("Results agree").wait_for(timeout=120_000)
    charts = page.locator('[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg')
    charts.nth(1).wait_for()  # every chart drawn before counting
    assert charts.count() >= 2
    screenshot(page, "vector_add")
