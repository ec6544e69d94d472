"""Load and failure test for the shared demo, run in the CUDA simulator; prints its figures.

    PYTHONPATH=. .venv/bin/python benchmarks/load_test.py [--sessions 16] [--n 1024] [--repeats 2]

Scenarios (each against its own fresh history database in a temporary folder):

1. ``--sessions`` AppTest sessions of the real Vector add page submit a run at the same
   instant (a barrier releases all threads together). Pass: every run completes, zero
   exceptions or error messages, one history row per run, and the GPU lock's recorded
   intervals (``FifoLock.intervals()``) never overlap (nor do the CPU lock's).
2. Out of memory: a run whose work raises a CUDA out-of-memory error, then one that
   really fails a host allocation (NumPy MemoryError). Pass: a clear message, both locks
   released, and the next session's run succeeds and is saved.
3. A corrupt database file: moved aside, a fresh one started, the run saved.
   An unwritable database file (``chattr +i``; skipped where unsupported): the run still
   completes and shows a warning; nothing is written. An unusable folder: history is
   reported unavailable, the run still completes.
4. A real ``streamlit run`` server driven by chromium: one run saved, a second, long run
   started, then the server killed with SIGKILL mid-run. Pass: the saved rows are all
   there, ``PRAGMA quick_check`` is ok, and a restarted server lists them in History.
   Needs Playwright and chromium (``--skip-server`` leaves it out).

Exit status 0 when every check passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = Path(tempfile.mkdtemp(prefix="kernel-lab-load-"))
os.environ["KERNEL_LAB_DB"] = str(WORK / "concurrent.sqlite3")  # before anything opens a store
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

import gpu  # noqa: E402  (decides the backend first)
from gpu.service.locks import overlaps  # noqa: E402
from gpu.service.store import open_store  # noqa: E402
from ui.resources import cpu_lock, device_lock  # noqa: E402

PAGE = str(ROOT / "pages" / "1_Vector_add.py")
RESULTS: list[tuple[str, bool, str]] = []


def check(name: str, passed: bool, detail: str = "") -> bool:
    RESULTS.append((name, bool(passed), detail))
    print(f"  [{'PASS' if passed else 'FAIL'}] {name}{': ' + detail if detail else ''}", flush=True)
    return bool(passed)


def use_db(name: str) -> Path:
    path = WORK / name
    os.environ["KERNEL_LAB_DB"] = str(path)
    return path


def vector_add_session(n: int, repeats: int) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=600).run()
    if at.exception:
        raise RuntimeError(f"page failed to load: {at.exception}")
    at.text_input(key="n").set_value(str(n))
    at.text_input(key="repeats").input(str(repeats))
    at.multiselect(key="cpu_impls").set_value(["numpy", "numba"])
    at.checkbox(key="article").set_value(False)
    return at


def submit(at: AppTest) -> AppTest:
    at.get("form_submit_button")[0].click()
    return at.run()


def problems_of(at: AppTest) -> list[str]:
    return [str(e.value) for e in at.exception] + [e.value for e in at.error]


# --- 1. simultaneous sessions ----------------------------------------------------------


def scenario_concurrent(sessions: int, n: int, repeats: int) -> None:
    print(f"\n## 1. {sessions} simultaneous sessions, vector add N = {n:,}, {repeats} repeats, CPU: NumPy + Numba")
    path = use_db("concurrent.sqlite3")
    prepared = [vector_add_session(n, repeats) for _ in range(sessions)]
    lock, cpu = device_lock(0), cpu_lock()
    since = time.perf_counter()  # the locks keep a bounded history: select by time
    barrier = threading.Barrier(sessions)
    ends: dict[int, float] = {}
    crashes: list[str] = []

    def one(i: int) -> None:
        try:
            barrier.wait()
            submit(prepared[i])
            ends[i] = time.perf_counter()
        except Exception:
            crashes.append(traceback.format_exc(limit=3))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(sessions)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(900)
    wall_s = time.perf_counter() - started

    completed = [at for at in prepared if "vector_add.result" in at.session_state]
    problems = [p for at in prepared for p in problems_of(at)] + crashes
    lasts = [at.session_state["runner.last"] for at in completed if "runner.last" in at.session_state]
    waits = [last["waited_s"] for last in lasts]
    deepest = max((max(last["queued_behind"], default=0) for last in lasts), default=0)
    intervals = [iv for iv in lock.intervals() if iv.start_s >= since]
    cpu_intervals = [iv for iv in cpu.intervals() if iv.start_s >= since]
    held = [iv.end_s - iv.start_s for iv in intervals]
    rows = open_store(path).count()
    busy = sum(held) / wall_s if wall_s else 0
    print(
        f"  wall time for all {sessions} runs: {wall_s:.2f} s; GPU lock held {sum(held):.2f} s ({busy:.0%} of the wall "
        "time)"
    )
    if held:
        print(
            f"  per run, GPU lock held: median {statistics.median(held):.3f} s, min {min(held):.3f} s, max "
            f"{max(held):.3f} s"
        )
    if waits:
        print(
            f"  per run, time queued: median {statistics.median(waits):.2f} s, max {max(waits):.2f} s; deepest queue "
            f"position shown: {deepest}"
        )
    check("all sessions completed", len(completed) == sessions, f"{len(completed)}/{sessions}")
    check(
        "zero exceptions or error messages",
        not problems,
        f"{len(problems)}" + (f": {problems[0][:300]}" if problems else ""),
    )
    check("one history row per run", rows == sessions, f"{rows} rows")
    check("GPU intervals recorded, one per run", len(intervals) == sessions, f"{len(intervals)}")
    check("GPU intervals never overlap", not overlaps(intervals), f"{len(overlaps(intervals))} overlapping pairs")
    check("CPU-benchmark intervals never overlap", not overlaps(cpu_intervals), f"{len(cpu_intervals)} intervals")
    check("queued users saw their position", deepest >= 2, f"deepest position {deepest}")


# --- 2. out of memory ------------------------------------------------------------------

OOM_SCRIPT = """
import numpy as np
from ui.runner import run_experiment

def device_oom(progress):
    raise RuntimeError("[2] Call to cuMemAlloc results in CUDA_ERROR_OUT_OF_MEMORY")

def host_oom(progress):
    return np.empty(2**62, dtype=np.uint8)  # NumPy raises MemoryError (ArrayMemoryError)

run_experiment("device oom probe", device_oom)
run_experiment("host oom probe", host_oom)
"""


def scenario_oom(n: int) -> None:
    print("\n## 2. Out of memory during a run")
    path = use_db("oom.sqlite3")
    at = AppTest.from_string(OOM_SCRIPT, default_timeout=120).run()
    errors = [e.value for e in at.error]
    check("no exception reaches the page", not at.exception, str(at.exception)[:200])
    check(
        "device out-of-memory gives a clear message",
        any(e.startswith("Out of memory on ") for e in errors),
        errors[0][:120] if errors else "no message",
    )
    check(
        "host out-of-memory gives a clear message",
        any("Out of host (CPU) memory" in e for e in errors),
        errors[-1][:120] if errors else "no message",
    )
    check("both locks released", not device_lock(0).busy and not cpu_lock().busy)
    follower = submit(vector_add_session(n, 1))
    check(
        "the next user's run succeeds",
        "vector_add.result" in follower.session_state and not problems_of(follower),
        "; ".join(problems_of(follower))[:200],
    )
    check(
        "nothing saved for the failed runs, the next run saved",
        open_store(path).count() == 1,
        f"{open_store(path).count()} rows",
    )


# --- 3. damaged or unwritable database -------------------------------------------------


def scenario_bad_database(n: int) -> None:
    print("\n## 3. Corrupt, unwritable and unusable history databases")
    path = use_db("corrupt.sqlite3")
    path.write_bytes(b"this is not an SQLite database\n" * 512)
    at = submit(vector_add_session(n, 1))
    aside = list(WORK.glob("corrupt.sqlite3.corrupt-*"))
    check("corrupt: the run completes", "vector_add.result" in at.session_state and not problems_of(at))
    check("corrupt: the bad file is moved aside", len(aside) == 1, aside[0].name if aside else "not moved")
    check("corrupt: the run is saved in a fresh database", open_store(path).count() == 1)

    path = use_db("readonly.sqlite3")
    open_store(path)  # an existing, healthy, empty history ...
    immutable = subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode == 0
    if not immutable:
        print("  (chattr +i is not available here: the unwritable-file case is covered by tests/test_store.py)")
    else:
        try:
            at = submit(vector_add_session(n, 1))
            warnings = [w.value for w in at.warning if "not saved to History" in w.value]
            check("unwritable: the run completes", "vector_add.result" in at.session_state and not problems_of(at))
            check(
                "unwritable: the page says the run was not saved",
                bool(warnings),
                warnings[0][:140] if warnings else "no warning",
            )
            sidebar = [c.value for c in at.sidebar.caption if "read-only" in c.value]
            check("unwritable: history is marked read-only", bool(sidebar), sidebar[0][:140] if sidebar else "")
        finally:
            subprocess.run(["chattr", "-i", str(path)], check=False)
        check("unwritable: the file is untouched", open_store(path).count() == 0)

    blocker = WORK / "a-file-not-a-folder"
    blocker.write_text("x")
    os.environ["KERNEL_LAB_DB"] = str(blocker / "history.sqlite3")
    at = submit(vector_add_session(n, 1))
    said = [w.value for w in at.warning if "History is unavailable" in w.value]
    check("unusable folder: the run completes", "vector_add.result" in at.session_state and not problems_of(at))
    check("unusable folder: history is reported unavailable", bool(said), said[0][:140] if said else "no warning")


# --- 4. server killed mid-run ----------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_server(db: Path, port: int, log: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "KERNEL_LAB_DB": str(db),
        "NUMBA_ENABLE_CUDASIM": os.environ.get("NUMBA_ENABLE_CUDASIM", "1" if gpu.BACKEND.simulated else "0"),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.headless", "true"],
        cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://localhost:{port}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"streamlit did not start: {log.read_text()[-1500:]}")


def _wait_idle(page) -> None:
    page.wait_for_selector('[data-testid="stApp"]')
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=180_000)


def scenario_killed_server() -> None:
    print("\n## 4. Server killed with SIGKILL in the middle of a run")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("  (Playwright is not installed: skipped)")
        return
    chromium = os.environ.get("KERNEL_LAB_CHROMIUM", "/usr/bin/chromium")
    if not Path(chromium).exists():
        print(f"  (no chromium at {chromium}: skipped)")
        return
    db = WORK / "killed.sqlite3"
    port = _free_port()
    server = _start_server(db, port, WORK / "server1.log")
    url = f"http://localhost:{port}"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        page.set_default_timeout(120_000)
        try:
            page.goto(f"{url}/Vector_add")
            _wait_idle(page)
            page.get_by_label("N (elements per vector)", exact=True).fill("256")
            page.get_by_label("N (elements per vector)", exact=True).press("Tab")
            page.get_by_role("button", name="Run").click()
            page.get_by_text("Saved to History as run").wait_for()
            saved = open_store(db).runs()
            page.get_by_label("N (elements per vector)", exact=True).fill("16384")
            page.get_by_label("N (elements per vector)", exact=True).press("Tab")
            page.get_by_label("Repeats", exact=True).fill("20")
            page.get_by_label("Repeats", exact=True).press("Tab")
            page.get_by_role("button", name="Run").click()
            page.get_by_text("Running vector add").first.wait_for()
            time.sleep(2.0)  # well inside the ~40 s simulated run
            server.send_signal(signal.SIGKILL)
            server.wait(30)
            killed_mid_run = server.returncode == -signal.SIGKILL
        finally:
            if server.poll() is None:
                server.kill()
        after = open_store(db)
        check("server killed mid-run", killed_mid_run, f"exit status {server.returncode}")
        check(
            "earlier runs all kept",
            [r.run_id for r in after.runs()] == [r.run_id for r in saved],
            f"{len(saved)} rows before, {after.count()} after",
        )
        check(
            "database stays readable (quick_check ok, nothing moved aside)",
            after.integrity() == "ok" and after.moved_aside is None and after.problem is None,
        )
        server = _start_server(db, port, WORK / "server2.log")
        try:
            page.goto(f"{url}/History")
            _wait_idle(page)
            shown = f"{len(saved)} runs, newest first"  # the table's caption (its cells are drawn on a canvas)
            page.get_by_text(shown).first.wait_for(timeout=60_000)
            check("a restarted server lists the saved runs in History", True, f"'{shown}'")
        except Exception as exc:
            check("a restarted server lists the saved runs in History", False, str(exc)[:200])
        finally:
            server.terminate()
            server.wait(30)
            browser.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--n", type=int, default=1024, help="elements per vector in each run (simulator: keep small)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--skip-server", action="store_true", help="leave out the real-server kill scenario")
    args = parser.parse_args()
    print(
        f"# Kernel Lab load test — backend: {gpu.BACKEND.label} ({gpu.BACKEND.reason}); {os.cpu_count()} CPUs; work "
        f"folder {WORK}"
    )
    started = time.perf_counter()
    scenario_concurrent(args.sessions, args.n, args.repeats)
    scenario_oom(args.n)
    scenario_bad_database(args.n)
    if not args.skip_server:
        scenario_killed_server()
    failed = [name for name, ok, _ in RESULTS if not ok]
    print(
        f"\n{len(RESULTS) - len(failed)}/{len(RESULTS)} checks passed in {time.perf_counter() - started:.1f} s"
        + (f"; FAILED: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
