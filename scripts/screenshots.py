"""Full-page screenshots of every page in Chromium, for docs/ and for looking at changes.

    .venv/bin/python scripts/screenshots.py OUT_DIR [--run [--button TEXT]] [--pages vector_add,history] [--click
    TEXT ...]

Starts ``streamlit run app.py`` on a free port (simulator unless a GPU is present, a
throwaway history database), opens each page, optionally presses each page's main
button (its first primary button — a form's Run — or the one labelled ``--button``), waits for
every chart to draw and saves ``OUT_DIR/<page>.png``.

The pages are the sidebar's (``ui/navigation.py: all_links``, from the declarations and
the pages' own ``PAGE``): a new page is photographed with no edit here. A page's name is
its URL path in lower case ("vector_add" for pages/1_Vector_add.py, "home" for app.py).
After the pages come the panels docs/ shows alone (``PANELS``: on_a_real_gpu, vector_add_cpu_vs_recorded).
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def url_path(script: str) -> str:
    """Streamlit's URL path of a page file: its name less the order prefix ("" for app.py)."""
    return "" if script == "app.py" else re.sub(r"^\d+_", "", Path(script).stem)


def pages() -> dict[str, str]:
    """Every page of the sidebar, in its order: name ("vector_add") -> URL path ("Vector_add")."""
    sys.path.insert(0, str(ROOT))
    from ui.navigation import all_links

    return {(url_path(link.script) or "home").lower(): url_path(link.script) for link in all_links()}


# Panels saved on their own, as docs/ shows them: (page path, viewport width, inputs to fill by label,
# button to press or None, the heading that opens the bordered panel to save). Asked for by name
# (--pages on_a_real_gpu) and made by default after the pages.
PANELS = {
    "on_a_real_gpu": ("Scaling", 1400, {}, None, "On a real GPU: NVIDIA H200"),
    "vector_add_cpu_vs_recorded": (
        "Vector_add",
        1400,
        {"N (elements per vector)": "1e6", "Repeats": "1"},
        "Run",
        "Your CPU beside a real GPU",
    ),
}


def save_panel(browser, url: str, name: str, out: Path) -> None:
    """The bordered container a panel's heading opens, alone, after filling its inputs and pressing its button."""
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
    title = page.get_by_role("heading", name=heading).first
    title.wait_for()
    # the nearest vertical block around the heading is the bordered container it opens
    title.locator("xpath=ancestor::div[@data-testid='stVerticalBlock'][1]").first.screenshot(
        path=str(out / f"{name}.png")
    )
    print(out / f"{name}.png", flush=True)
    context.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_idle(page, timeout_ms: int = 180_000) -> None:
    page.wait_for_selector('[data-testid="stApp"]')
    page.wait_for_timeout(800)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout_ms)
    page.wait_for_timeout(1500)  # vega draws after the script finishes



@contextmanager
def serving_app(db: str | None = None):
    """``streamlit run app.py`` on a free port (a throwaway history database unless ``db`` or
    $KERNEL_LAB_DB names one) and Debian's chromium: yields (url, browser); stops both after."""
    sys.path.insert(0, str(ROOT))
    from gpu.core import settings as lab_settings

    port = free_port()
    given = lab_settings.settings()
    db = db or given.db or str(Path(tempfile.mkdtemp()) / "history.sqlite3")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.headless", "true"],
        cwd=ROOT,
        env={**os.environ, lab_settings.DB.name: db},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
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
            browser = pw.chromium.launch(
                executable_path=given.chromium,
                headless=True,
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
            )
            try:
                yield url, browser
            finally:
                browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--run", action="store_true", help="press each page's main button first")
    parser.add_argument("--pages", default=None, help="comma-separated page names (default: every page of the sidebar)")
    parser.add_argument("--button", default=None, metavar="TEXT",
                        help="with --run, press the button labelled TEXT instead of the page's first primary button")
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument(
        "--click",
        action="append",
        default=[],
        metavar="TEXT",
        help="after the run, click the first element showing TEXT (a tab, an expander); repeat for several",
    )
    args = parser.parse_args()
    known = pages()
    names = args.pages.split(",") if args.pages else [*known, *PANELS]
    unknown = [n for n in names if n not in known and n not in PANELS]
    if unknown:
        parser.error(
            f"no page called {unknown[0]!r}; the sidebar's pages: {', '.join(known)}; panels: {', '.join(PANELS)}"
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with serving_app() as (url, browser):
        for name in names:
            if name in PANELS:
                save_panel(browser, url, name, out)
                continue
            path = known[name]
            context = browser.new_context(viewport={"width": args.width, "height": 1000})
            page = context.new_page()
            page.set_default_timeout(180_000)
            page.goto(f"{url}/{path}")
            wait_idle(page)
            if args.run:
                button = (page.get_by_role("button", name=args.button, exact=True) if args.button
                          else page.locator('button[data-testid^="stBaseButton-primary"]').filter(visible=True))
                if button.count():  # pages with nothing to run (Home, History...) have no primary button
                    button.first.click()
                    wait_idle(page)
            for text in args.click:  # a tab of that name first: its name also stands in the pages' prose
                tab = page.get_by_role("tab", name=text).filter(visible=True)
                (tab if tab.count() else page.get_by_text(text, exact=False).filter(visible=True)).first.click()
                wait_idle(page)
            # Streamlit scrolls inside its main section: grow the viewport to its height first
            height = page.evaluate(
                "() => { const m = document.querySelector('[data-testid=\"stMain\"]'); return m ? m.scrollHeight : "
                "1000; }"
            )
            page.set_viewport_size({"width": args.width, "height": min(max(int(height) + 40, 1000), 16000)})
            page.wait_for_timeout(1500)
            page.screenshot(path=str(out / f"{name}.png"), full_page=True)
            print(out / f"{name}.png", flush=True)
            context.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
