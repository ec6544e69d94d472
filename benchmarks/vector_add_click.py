"""Time the Vector add page in a real browser: from the Run click to its first chart, and to the completed run.

Usage: PYTHONPATH=. .venv/bin/python benchmarks/vector_add_click.py [--n 1e7] [--clicks 1]

Starts `streamlit run app.py` on a free port (a History database of its own, in a temporary folder),
opens the Vector add page in headless Chromium (Debian's, /usr/bin/chromium), sets N and leaves every
other field at the page's default, and clicks Run. A timer in the page, started by the click itself,
notes when each "Still running: ..." line of the partial results appears, when the partial results'
chart is first drawn, and when the completed run is drawn (its "Results agree" line, no row still
running, and the script idle again). Writes the timeline
to benchmarks/vector_add_click.md with the machine's load average at the start.
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"

# Runs in the page: from the Run click on, every 50 ms, note what changed and when (ms after the click).
# A chart counts once drawn (its canvas or svg exists); the charts already on the page before the click
# (the recorded GPU's panel) are the baseline.
WATCH = """() => {
  const drawn = (root) => Array.from(root.querySelectorAll('[data-testid="stVegaLiteChart"]'))
    .filter(c => c.querySelector('canvas, svg')).length;
  const alerts = () => Array.from(document.querySelectorAll('[data-testid="stAlert"]'));
  // the partial results' place: the block holding the "Still running: ..." line
  const live = () => alerts().find(a => a.innerText.includes('Still running:'));
  const idle = () => {
    const app = document.querySelector('[data-testid="stApp"]');
    const state = app && app.getAttribute('data-test-script-state');
    return state !== 'running' && state !== 'rerunRequested'
      && !document.querySelector('[data-testid="stStatusWidget"]');
  };
  window.__clickLog = {events: [], clicked: null};
  const log = window.__clickLog;
  document.addEventListener('click', () => {
    if (log.clicked !== null) return;
    log.clicked = performance.now();
    let last = {charts: 0, running: ''};
    const tick = setInterval(() => {
      const t = performance.now() - log.clicked;
      const alert = live();
      const text = alert ? alert.innerText : '';
      const running = text ? text.slice(text.indexOf('Still running:')).split('. ')[0] + '.' : '';
      const charts = alert ? drawn(alert.closest('[data-testid="stVerticalBlock"]')) : 0;
      if (running !== last.running) log.events.push({t, what: 'running', text: running});
      if (charts > last.charts) log.events.push({t, what: 'chart', count: charts});
      const agree = alerts().some(a => a.innerText.includes('Results agree'));
      if (agree && !alert && idle()) { log.events.push({t, what: 'complete'}); clearInterval(tick); }
      last = {charts, running};
    }, 50);
  }, true);
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server(port: int, data: Path) -> subprocess.Popen:
    env = {**os.environ, "KERNEL_LAB_DB": str(data / "history.sqlite3"), "PYTHONPATH": str(ROOT)}
    env.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.headless", "true"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(f"http://localhost:{port}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("streamlit did not start")
        time.sleep(0.3)


def click_once(page, url: str, n: str) -> list[dict]:
    """One click on a freshly loaded page; the timeline of what was drawn after it."""
    page.goto(f"{url}/Vector_add")
    page.wait_for_selector('[data-testid="stApp"]')
    page.get_by_text("CUDA simulator — timings are not GPU performance").first.wait_for(timeout=120_000)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=120_000)
    box = page.get_by_label("N (elements per vector)", exact=True)
    box.fill(n)
    box.press("Tab")
    page.wait_for_timeout(1000)  # the form's estimate line redrawn for the new N before the click
    page.evaluate(WATCH)
    page.get_by_role("button", name="Run", exact=True).click()
    try:
        page.wait_for_function(
            "() => window.__clickLog.events.some(e => e.what === 'complete')", timeout=300_000, polling=200
        )
    finally:  # what was seen, also when the run never completed
        events = page.evaluate("() => window.__clickLog.events")
        print(events, flush=True)
    return events


def describe(events: list[dict]) -> list[str]:
    lines = []
    for e in events:
        at = f"{e['t'] / 1000:6.2f} s"
        if e["what"] == "chart":
            lines.append(f"  {at}  partial results: chart drawn")
        elif e["what"] == "running":
            lines.append(f"  {at}  {e['text'] or 'the partial results cleared'}")
        else:
            lines.append(f"  {at}  completed run drawn (\"Results agree\", the script idle)")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="1e7", help="N typed into the form (default the article's 10^7)")
    parser.add_argument("--clicks", type=int, default=1, help="clicks, each on a freshly loaded page")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("vector_add_click.md"))
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    load = os.getloadavg()[0]
    lines = [
        "# Vector add page: from the Run click to the first chart and to the completed run",
        "",
        f"Command: `PYTHONPATH=. .venv/bin/python benchmarks/vector_add_click.py --n {args.n} --clicks {args.clicks}`",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, load average "
        f"{load:.2f} at start. Headless Chromium, the page's default form with N = {args.n}, the CUDA simulator.",
        "",
    ]
    with tempfile.TemporaryDirectory(prefix="kernel-lab-click-") as data:
        port = _free_port()
        server = _server(port, Path(data))
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox", "--disable-gpu"])
                page = browser.new_page(viewport={"width": 1400, "height": 4000})  # every chart in view
                for i in range(args.clicks):
                    events = click_once(page, f"http://localhost:{port}", args.n)
                    first = next(e["t"] for e in events if e["what"] in ("chart", "complete"))  # no partial: the end
                    done = next(e["t"] for e in events if e["what"] == "complete")
                    lines += [f"Click {i + 1}: first chart {first / 1000:.2f} s, completed run {done / 1000:.2f} s "
                              "after the click.", "", "```", *describe(events), "```", ""]
                    print("\n".join(lines[-6:]), flush=True)
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=20)
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
