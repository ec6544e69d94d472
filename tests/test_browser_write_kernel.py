"""Write a kernel in a real browser: a correct kernel passes, a wrong one shows its first mismatch,
a hostile one is refused. Screenshots go to docs/screenshots/write_a_kernel*.png."""


import pytest

from tests.classroom import wait_for_analysis
from tests.conftest import doc_screenshot, wait_for_app, wait_for_backend_badge

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CORRECT = """from numba import cuda

THREADS_PER_BLOCK = 128


@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] + b[i]
"""
WRONG = CORRECT.replace("if i < a.size:", "if i < a.size - 1:")
HOSTILE = "import os\n\n" + CORRECT.replace("out[i] = a[i] + b[i]", "out[i] = a[i] + b[i]  # os.system('rm -rf ~')")


def submit(page, source: str) -> None:
    editor = page.locator(".cm-content")  # the code editor (CodeMirror); the plain text box without its bundle
    if editor.count():
        editor.click()
        page.keyboard.press("Control+a")
        page.keyboard.insert_text(source)
        editor.blur()  # the editor sends its text on blur
    else:
        area = page.get_by_label("Your kernel", exact=True).and_(page.get_by_role("textbox"))
        area.fill(source)
        area.press("Control+Enter")  # Streamlit keeps a text area's edit on Ctrl+Enter or blur
    wait_for_app(page)
    page.get_by_role("button", name="Run", exact=True).click()


def test_write_a_kernel_pass_mismatch_and_refusal(page, app_url):
    page.set_viewport_size({"width": 1400, "height": 2400})
    page.goto(f"{app_url}/Write_a_kernel")
    wait_for_app(page)
    wait_for_backend_badge(page)
    page.get_by_text("vector_add(a, b, out)").first.wait_for()

    submit(page, CORRECT)
    page.get_by_text("Passed:").first.wait_for(timeout=120_000)  # the verdict (not the leaderboard's "Passed at")
    wait_for_analysis(page)  # the facts and trace follow the verdict; past the page's bound, "Look again"
    page.get_by_role("cell", name="you", exact=True).first.wait_for()  # on the leaderboard: the one local user
    page.wait_for_timeout(1000)
    doc_screenshot(page, "screenshots/write_a_kernel.png")

    submit(page, WRONG)
    page.get_by_text("Wrong result").first.wait_for(timeout=120_000)
    page.get_by_text("First mismatch").first.wait_for()
    page.get_by_text("never written").first.wait_for()
    page.wait_for_timeout(1000)
    doc_screenshot(page, "screenshots/write_a_kernel_mismatch.png")

    submit(page, HOSTILE)
    page.get_by_text("import rule, line 1").first.wait_for(timeout=60_000)
    page.wait_for_timeout(500)
    doc_screenshot(page, "screenshots/write_a_kernel_refused.png")
