"""Full-page screenshots of every page in Chromium, for docs/ and for looking at changes.

    .venv/bin/python scripts/screenshots.py OUT_DIR [--run] [--pages vector_add,history] [--click TEXT ...]

Starts ``streamlit run app.py`` on a free port (simulator unless a GPU is present, a
throwaway history database), opens each page, optionally presses each page's main
button, waits for every chart to draw and saves ``OUT_DIR/<page>.png``.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = {
    "home": ("", None),
    "vector_add": ("Vector_add", "Run"),
    "scaling": ("Scaling", "Run sweep"),
    "launch_config": ("Launch_config", "Run probe"),
    "transfers": ("Transfers", "Compare strategies"),
    "kernels": ("Kernels", "Run"),
    "roofline": ("Roofline", None),
    "write_a_kernel": ("Write_a_kernel", "Run"),  # the starter code: a refusal-free run that fails its tests
    "history": ("History", None),
    "device": ("Device", None),
}
# Panels saved on their own, as docs/ shows them: (page path, viewport width, inputs to fill by label,
# button to press or None, the heading that starts the bordered panel to save)
PANELS = {
    "on_a_real_gpu": ("Scaling", 1400, {}, None, "On a real GPU: NVIDIA H200"),
    "vector_add_cpu_vs_recorded": ("Vector_add", 1400, {"N (elements per vector)": "1e6", "Repeats": "1"}, "Run", "Your CPU beside a real GPU"),
}


def save_panel(page, heading: str, path: Path) -> None:
    """The bordered container that starts with ``heading``, alone."""
    title = page.get_by_role("heading", name=heading).first
    title.wait_for()
    # the nearest vertical block around the heading is the bordered container it opens
    title.locator("xpath=ancestor::div[@data-testid='stVerticalBlock'][1]").first.screenshot(path=str(path))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_idle(page, timeout_ms: int = 180_000) -> None:
    page.wait_for_selector('[data-testid="stApp"]')
    page.wait_for_timeout(800)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout_ms)
    page.wait_for_timeout(1500)  # vega draws after the script finishes


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--run", action="store_true", help="press each page's main button first")
    parser.add_argument("--pages", default=",".join([*PAGES, *PANELS]))
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--click", action="append", default=[], metavar="TEXT",
                        help="after the run, click the first element showing TEXT (a tab, an expander); repeat for several")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    db = Path(tempfile.mkdtemp()) / "history.sqlite3"
    env = {**os.environ, "KERNEL_LAB_DB": os.environ.get("KERNEL_LAB_DB", str(db))}
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.headless", "true"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://localhost:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=os.environ.get("KERNEL_LAB_CHROMIUM", "/usr/bin/chromium"), headless=True,
                                         args=["--no-sandbox", "--disable-gpu"])
            for name in args.pages.split(","):
                if name in PANELS:
                    path, width, fills, button, heading = PANELS[name]
                    context = browser.new_context(viewport={"width": width, "height": 2400})
                    page = context.new_page()
                    page.set_default_timeout(180_000)
                    page.goto(f"{url}/{path}")
                    wait_idle(page)
                    for label, value in fills.items():
                        box = page.get_by_label(label, exact=True)
                        box.fill(value)
                        box.press("Tab")
                        wait_idle(page)
                    if button:
                        page.get_by_role("button", name=button, exact=True).first.click()
                        wait_idle(page)
                    save_panel(page, heading, out / f"{name}.png")
                    print(out / f"{name}.png", flush=True)
                    context.close()
                    continue
                path, button = PAGES[name]
                context = browser.new_context(viewport={"width": args.width, "height": 1000})
                page = context.new_page()
                page.set_default_timeout(180_000)
                page.goto(f"{url}/{path}")
                wait_idle(page)
                if args.run and button:
                    page.get_by_role("button", name=button, exact=True).first.click()
                    wait_idle(page)
                for text in args.click:
                    page.get_by_text(text, exact=False).filter(visible=True).first.click()
                    wait_idle(page)
                # Streamlit scrolls inside its main section: grow the viewport to its height first
                height = page.evaluate("() => { const m = document.querySelector('[data-testid=\"stMain\"]'); return m ? m.scrollHeight : 1000; }")
                page.set_viewport_size({"width": args.width, "height": min(max(int(height) + 40, 1000), 16000)})
                page.wait_for_timeout(1500)
                page.screenshot(path=str(out / f"{name}.png"), full_page=True)
                print(out / f"{name}.png", flush=True)
                context.close()
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
