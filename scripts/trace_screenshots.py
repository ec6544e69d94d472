"""Screenshots of the memory trace's sections: Kernels (transpose, every step traced) and Launch config.

    .venv/bin/python scripts/trace_screenshots.py OUT_DIR

Starts the app like scripts/screenshots.py, turns the trace on and saves
``OUT_DIR/kernels_trace.png``, ``OUT_DIR/launch_trace.png`` and, after submitting problem 7
without its first ``syncthreads``, ``OUT_DIR/write_a_kernel_trace.png`` (each from the
section's heading down).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from screenshots import serving_app, wait_idle


def missing_sync() -> str:
    """Problem 7's solution without the syncthreads after the loads: a race the tests may not catch."""
    from gpu.problems import get

    return get("shared").solution.source.replace("    cuda.syncthreads()\n    stride", "    stride")


def section(page, heading: str, out: Path, width: int, above: int = 20) -> None:
    height = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    page.set_viewport_size({"width": width, "height": min(int(height) + 40, 16000)})
    page.wait_for_timeout(2500)
    top = page.get_by_text(heading).first.bounding_box()["y"] - above
    full = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    page.screenshot(path=str(out), clip={"x": 0, "y": max(top, 0), "width": width, "height": max(full - top, 400)})
    print(out, flush=True)


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    width = 1400
    with serving_app(str(Path(tempfile.mkdtemp()) / "history.sqlite3")) as (url, browser):
        page = browser.new_page(viewport={"width": width, "height": 1000})
        page.set_default_timeout(180_000)
        page.goto(f"{url}/Kernels")
        wait_idle(page)
        page.locator('[data-testid="stSelectbox"]').first.click()
        page.get_by_role("option", name="Matrix transpose").click()
        wait_idle(page)
        page.get_by_text("Trace every step").click()
        wait_idle(page)
        section(page, "What the trace shows", out / "kernels_trace.png", width)
        page.set_viewport_size({"width": width, "height": 1000})
        page.goto(f"{url}/Launch_config")
        wait_idle(page)
        page.get_by_text("Trace both kernels").click()
        wait_idle(page)
        section(page, "Coalesced and strided: the same data, read two ways", out / "launch_trace.png", width)
        page.set_viewport_size({"width": width, "height": 1000})
        page.goto(f"{url}/Write_a_kernel")
        wait_idle(page)
        page.locator('[data-testid="stSelectbox"]').first.click()
        page.get_by_role("option", name="7. Shared memory").click()
        wait_idle(page)
        editor = page.locator(".cm-content").last  # the code editor; the previous problem's may linger in the DOM
        editor.click()
        page.keyboard.press("Control+a")
        page.keyboard.insert_text(missing_sync())
        page.keyboard.press("Control+Enter")  # runs
        page.get_by_text("What the trace shows").first.wait_for()
        wait_idle(page)
        section(page, "What the trace shows", out / "write_a_kernel_trace.png", width, above=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
