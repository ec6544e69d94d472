"""The real app in a real browser: open Launch config, run the probe, see the thread grid;
run a tiny sweep and see its charts; the inspector tab answers."""

import pytest

import gpu
from tests.conftest import screenshot, wait_for_app, wait_for_backend_badge

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _charts(page):
    return page.locator('[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg')


def test_launch_config_explorer_and_sweep_in_the_browser(page, app_url):
    page.goto(f"{app_url}/Launch_config")
    wait_for_app(page)
    wait_for_backend_badge(page)

    # the explorer: N = 100 with 32 threads per block leaves 28 threads of the last block idle
    n_box = page.get_by_label("N (elements to cover)", exact=True)
    n_box.fill("100")
    n_box.press("Tab")
    tpb = page.get_by_label("Threads per block", exact=True).first
    tpb.fill("32")
    tpb.press("Tab")
    page.get_by_role("button", name="Run probe").click()
    page.get_by_text("match position = tx + bx * bw").wait_for(timeout=120_000)
    _charts(page).first.wait_for()
    page.get_by_text("28", exact=True).first.wait_for(
        timeout=60_000
    )  # the idle-threads metric (drawn after the verdict)
    screenshot(page, "launch_explorer")

    # the sweep, tiny: two block sizes, one grid-stride launch
    page.get_by_role("tab", name="Block-size sweep").click()
    sweep_n = page.get_by_label("N (elements per vector)", exact=True)
    sweep_n.fill("64")
    sweep_n.press("Tab")
    repeats = page.get_by_label("Repeats", exact=True)
    repeats.fill("1")
    repeats.press("Tab")
    page.get_by_role("button", name="Run sweep").click()
    page.get_by_text("Every configuration produced c = a + b bit for bit").wait_for(timeout=180_000)
    # the sweep's two charts draw after the verdict text (charts in other tabs and in the
    # recorded-GPU panel are hidden): wait for the visible ones, then count
    visible = page.locator(
        '[data-testid="stVegaLiteChart"] svg:visible, [data-testid="stVegaLiteChart"] canvas:visible'
    )
    if gpu.BACKEND.simulated:  # simulated times are never charted across configurations
        page.get_by_text("Simulated times are not charted across configurations").wait_for()
    else:
        visible.nth(1).wait_for()
        assert visible.count() >= 2
    screenshot(page, "launch_sweep")

    # the inspector
    page.get_by_role("tab", name="Kernel inspector").click()
    expected = "no PTX" if gpu.BACKEND.simulated else "The PTX lines that do the work"
    page.get_by_text(expected).first.wait_for()
    screenshot(page, "launch_inspector")
