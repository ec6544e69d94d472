"""The real app in a real browser: a finished run shows up in History, charted and exportable."""

import pytest

import gpu
from tests.conftest import screenshot, wait_for_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_run_appears_in_history_with_a_comparison_chart(page, app_url):
    page.goto(f"{app_url}/Vector_add")
    wait_for_app(page)
    n_box = page.get_by_label("N (elements per vector)", exact=True)
    n_box.fill("512")
    n_box.press("Tab")
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_text("Results agree").wait_for(timeout=120_000)
    page.get_by_text("Saved to History as run").wait_for()

    # through the sidebar, not a reload: the same browser session, so the run is under "Your runs"
    page.get_by_role("link", name="History").first.click()
    wait_for_app(page)
    page.get_by_role("tab", name="Your runs").wait_for()
    if gpu.BACKEND.simulated:  # on a GPU the run was not simulated: nothing to say
        page.get_by_text("ran in the CUDA simulator").first.wait_for()
    table = page.locator('[data-testid="stDataFrame"]').first
    table.wait_for()
    charts = page.locator('[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg')
    charts.first.wait_for()
    page.get_by_role("button", name="Runs with all samples (JSON)").wait_for()
    wait_for_app(page)
    assert page.get_by_role("button", name="Delete").count() == 0
    screenshot(page, "history")
