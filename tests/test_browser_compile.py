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
    page.get_by_text("compiled here for NVIDIA H100/H200 (sm_90) by NVVM/ptxas", exact=False).first.wait_for(
        timeout=120_000
    )
    page.get_by_text("static facts from the compiler, not measurements", exact=False).first.wait_for()
    page.get_by_text("What the simulator cannot tell", exact=False).first.wait_for()

    # pick the T4: the sentence follows. Type into the picker rather than only clicking it: a
    # click can land while the page's script is still drawing (the trace below) and leave
    # the box focused but closed; typing opens the filtered list whatever the timing.
    box = page.get_by_role("combobox", name="Compile for")
    box.click()
    box.press_sequentially("sm_75")
    page.get_by_role("option", name="T4 · sm_75").click()
    page.get_by_text("compiled here for NVIDIA T4 (sm_75)", exact=False).first.wait_for(timeout=120_000)
    page.get_by_text("PTX for sm_75", exact=False).first.click()
    page.get_by_text(".target sm_75", exact=False).first.wait_for()
    screenshot(page, "launch_compile_facts")
