"""In a real browser: the Launch config inspector states the compiler's facts for the
H100/H200, and the target picker recompiles for a T4."""

import pytest

from tests.conftest import screenshot, wait_for_app, wait_for_backend_badge

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_inspector_shows_the_compilers_facts_and_switches_target(page, app_url):
    page.goto(f"{app_url}/Launch_config")
    wait_for_app(page)
    wait_for_backend_badge(page)
    page.get_by_role("tab", name="Kernel inspector").click()
    page.get_by_text("compiled here for NVIDIA H100/H200 (sm_90) by NVVM/ptxas", exact=False).first.wait_for(timeout=120_000)
    page.get_by_text("static facts from the compiler, not measurements", exact=False).first.wait_for()
    page.get_by_text("What the simulator cannot tell", exact=False).first.wait_for()

    # pick the T4: the sentence follows. Wait for the script to finish first: a rerun still
    # drawing the page (the trace section below) closes a dropdown opened meanwhile.
    wait_for_app(page)
    page.get_by_test_id("stSelectbox").filter(has_text="Compile for").first.click()
    page.get_by_role("option", name="T4 · sm_75").click()
    page.get_by_text("compiled here for NVIDIA T4 (sm_75)", exact=False).first.wait_for(timeout=120_000)
    page.get_by_text("PTX for sm_75", exact=False).first.click()
    page.get_by_text(".target sm_75", exact=False).first.wait_for()
    screenshot(page, "launch_compile_facts")
