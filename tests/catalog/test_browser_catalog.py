"""The Kernels and Roofline pages in a real browser: run a kernel, see its charts drawn,
then find its steps on the roofline in the same session. Screenshots go to docs/."""


import pytest

import gpu
from tests.conftest import doc_screenshot, screenshot, wait_for_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_kernels_then_roofline_in_one_session(page, app_url):
    page.set_viewport_size({"width": 1400, "height": 3000})
    page.goto(f"{app_url}/Kernels")
    wait_for_app(page)
    page.get_by_text("CUDA simulator — timings are not GPU performance").first.wait_for()
    box = page.get_by_role("combobox", name="Kernel")  # typed, not only clicked: see test_browser_compile.py
    box.click()
    box.press_sequentially("Matrix")
    page.get_by_role("option", name="Matrix multiply").click()
    wait_for_app(page)
    n_box = page.get_by_label("N (the matrices are N × N)", exact=True)
    n_box.fill("16")
    n_box.press("Tab")
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_text("implementations that ran agree").wait_for(timeout=180_000)
    charts = page.locator('[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg')
    charts.first.wait_for()  # in the simulator: your CPU's chart (simulated steps are tabled, never charted)
    assert charts.count() >= 1
    page.get_by_text("Results agree").first.wait_for()  # the simulator's headline: what is real there
    if gpu.BACKEND.simulated:
        page.get_by_text("The simulated GPU steps are not charted").first.wait_for()  # they are in the table
        page.locator('[data-testid="stDataFrame"]').first.wait_for()
    else:
        page.get_by_text("3 · register tiling (8 × 8 per thread)").first.wait_for()
    page.wait_for_timeout(1500)  # let the charts finish their layout before the picture
    doc_screenshot(page, "kernels.png")

    page.get_by_role("link", name="Roofline").first.click()  # same browser session: this run's points
    wait_for_app(page)
    page.get_by_text("not from hardware counters").first.wait_for()
    page.get_by_text("this session").first.wait_for()
    chart = page.locator('[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg')
    chart.first.wait_for()
    page.get_by_text("Matrix multiply").first.wait_for()  # in the points table under the chart
    page.wait_for_timeout(1500)
    doc_screenshot(page, "roofline.png")


def test_roofline_alone_shows_a_recorded_gpu_run(page, app_url):
    page.goto(f"{app_url}/Roofline")
    wait_for_app(page)
    page.get_by_text("recorded:").first.wait_for()
    page.locator('[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg').first.wait_for()
    page.get_by_text("Vector add").first.wait_for()
    page.wait_for_timeout(1500)
    screenshot(page, "roofline_recorded")
