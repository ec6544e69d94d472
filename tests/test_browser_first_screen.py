"""In a real browser: on every page the form comes first, its Run button inside the first screen.

A newcomer at 1400 × 1000 sees the page's sentence, the form and its button without scrolling
(Vector add's button once sat about 1,940 px down, under a banner, a recorded-GPU panel and charts).
"""

import pytest

from tests.conftest import wait_for_app, wait_for_backend_badge

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SCREEN_PX = 1000
MARGIN_PX = 100  # the button whole and clear of the screen's edge, not half cut off
PAGES_WITH_A_RUN = ["Vector_add", "Scaling", "Launch_config", "Transfers", "Kernels"]


@pytest.mark.parametrize("path", PAGES_WITH_A_RUN)
def test_the_first_run_button_is_in_the_first_screen(page, app_url, path):
    page.set_viewport_size({"width": 1400, "height": SCREEN_PX})
    page.goto(f"{app_url}/{path}")
    wait_for_app(page)
    wait_for_backend_badge(page)
    button = page.locator('button[data-testid^="stBaseButton-primary"]').filter(visible=True).first
    button.wait_for()
    box = button.bounding_box()
    assert box is not None
    scrolled = page.evaluate(
        "() => { const m = document.querySelector('[data-testid=\"stMain\"]'); return m ? m.scrollTop : 0; }"
    )
    assert scrolled == 0
    bottom = box["y"] + box["height"]
    assert bottom <= SCREEN_PX - MARGIN_PX, f"{path}: the Run button ends at {bottom:.0f} px"


def test_write_a_kernel_opens_on_its_editor_in_the_first_screen(page, app_url):
    """Its form is the editor (Ctrl+Enter runs it); the Run button sits under the editor's lines."""
    page.set_viewport_size({"width": 1400, "height": SCREEN_PX})
    page.goto(f"{app_url}/Write_a_kernel")
    wait_for_app(page)
    editor = page.locator(".cm-content")  # Playwright's CSS pierces the component's shadow root
    editor.wait_for()
    box = editor.bounding_box()
    assert box is not None and box["y"] + 4 * 20 <= SCREEN_PX, f"the editor starts at {box and box['y']:.0f} px"
