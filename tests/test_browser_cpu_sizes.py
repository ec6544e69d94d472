"""The CPU side at its own size, in a real browser: Vector add at N = 10^6 without a GPU shows your CPU,
measured now, beside the recorded real GPU, and the simulated kernel at its cap."""

import re

import pytest

import gpu
from tests.conftest import screenshot, wait_for_app, wait_for_backend_badge

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not gpu.BACKEND.simulated, reason="the simulator's kernel cap only exists without a GPU"),
]


def test_vector_add_at_a_million_shows_your_cpu_beside_the_recorded_gpu(page, app_url):
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{app_url}/Vector_add")
    wait_for_app(page)
    wait_for_backend_badge(page)
    for label, value in (("N (elements per vector)", "1e6"), ("Repeats", "1")):
        box = page.get_by_label(label, exact=True)
        box.fill(value)
        box.press("Tab")
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_text("Results agree").wait_for(timeout=240_000)
    wait_for_app(page)
    panel = page.locator(".st-key-cpu_vs_recorded")
    panel.get_by_text("Your CPU beside a real GPU").wait_for()
    assert panel.get_by_text("your CPU, measured now").first.is_visible()
    assert panel.get_by_text(re.compile(r"NVIDIA H200, recorded 4 Dec 2026")).first.is_visible()  # today's rules
    assert panel.get_by_text("The GPU column is at N = 1,048,576, not yours").is_visible()
    text = panel.inner_text()
    assert "faster than your NumPy" in text and "e-0" not in text
    charts = panel.locator('[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg')
    charts.first.wait_for()
    box = panel.bounding_box()
    chart_box = charts.first.bounding_box()
    assert chart_box["x"] + chart_box["width"] <= box["x"] + box["width"] + 1, "the chart fits its panel"
    # tall enough for the whole page: Streamlit scrolls inside the app, so full_page alone shows one screen
    page.set_viewport_size({"width": 1400, "height": 5200})
    wait_for_app(page)
    screenshot(page, "vector_add_1e6_simulator")
