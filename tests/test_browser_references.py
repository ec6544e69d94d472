"""In a real browser, in the simulator: Home has a proper title, entry and the headline, its ratios naming both
sides; no emoji (they render as empty boxes without an emoji font); Vector add's metrics read in words. (Every
page's first look, the recorded GPU's panels included: tests/test_browser_first_look.py.)"""

import re

import pytest

from tests.conftest import POLL_MS, wait_for_app
from tests.test_browser_first_look import EMOJI

pytestmark = [pytest.mark.browser, pytest.mark.slow]

def test_home_has_a_title_a_home_entry_the_headline_and_the_article(page, app_url):
    page.goto(app_url)
    wait_for_app(page)
    page.wait_for_function("() => document.title === 'Kernel Lab'", timeout=15_000, polling=POLL_MS)
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Home", exact=True).wait_for()
    assert sidebar.get_by_text("app", exact=True).count() == 0
    main = page.locator('[data-testid="stMain"]')
    for text in ("Start here", "The answer on a real GPU", "84.50x", "250x faster", "published", "The article",
                 "H200 kernel vs H200 host's NumPy", "under today's measurement rules"):
        main.get_by_text(text).first.wait_for()
    assert not EMOJI.search(main.inner_text() + sidebar.inner_text())


def test_vector_add_metrics_read_in_words_in_the_simulator(page, app_url):
    page.set_viewport_size({"width": 1400, "height": 3000})
    page.goto(f"{app_url}/Vector_add")
    wait_for_app(page)
    page.get_by_label("N (elements per vector)", exact=True).fill("512")
    page.get_by_label("Repeats", exact=True).fill("1")
    page.get_by_label("Repeats", exact=True).press("Tab")
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_text("Results agree").wait_for(timeout=120_000)
    wait_for_app(page)
    # every metric drawn (the launch's is the row's last; under load the row appears a metric at a time)
    page.locator('[data-testid="stMetricValue"]').filter(has_text="2 × 256").first.wait_for()
    values = page.locator('[data-testid="stMetricValue"]').all_inner_texts()
    assert values and not any(re.search(r"\de-\d", v) or v.endswith("…") for v in values), values
    # the simulator's headline is your CPU's times and the launch, never a ratio against a simulated time
    assert not any(v.endswith("slower") or v.endswith("faster") for v in values), values
    assert "2 × 256" in values, values
    bad = page.get_by_label("Threads per block", exact=True)
    bad.fill("5000")
    bad.press("Tab")
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_text("threads per block must be between 1 and").wait_for()
    page.get_by_text("results below are from the previous run").wait_for()
