"""Shared fixtures. Tests run in Numba's CUDA simulator unless a GPU is present.

The browser fixtures start the app with ``streamlit run`` on a free port and drive
Debian's chromium through Playwright (no browser download).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("KERNEL_LAB_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts"

import gpu  # noqa: E402  (decide the backend once, before any test imports numba.cuda)
from ui.script_compile import guard  # noqa: E402

guard()  # AppTest compiles pages in many threads at once (eight sessions in one test): under the parser lock

requires_gpu = pytest.mark.skipif(gpu.BACKEND.simulated, reason=f"needs a CUDA GPU: {gpu.BACKEND.reason}")


# A test that uses one of these fixtures drives a browser against a Streamlit server: marked ``browser``
# whether or not its file says so, so the fast lane (``make test-fast``, ``-m "not browser"``) never starts one.
BROWSER_FIXTURES = frozenset({"app_url", "browser", "visitor", "page"})
# A test that uses one of these starts processes of its own (a local Ray instance and its workers): ``slow``.
PROCESS_FIXTURES = frozenset({"cluster"})
# ``make test-fast`` sets this: a test that starts a child process (a sandboxed submission, the compiler's
# worker, the CLI in a subprocess, a server) is skipped when it tries (``_no_child_process_in_the_fast_lane``).
FAST_LANE = os.environ.get("KERNEL_LAB_FAST_LANE") == "1"


# The files that take longest, 20-90 s each of one pytest-xdist worker here (mostly waiting on a browser, sandboxed
# children, a Ray instance, notebooks in numba's simulator), longest first: `make test` hands them out before the rest
# (``--no-loadscope-reorder`` keeps this order), so the many short files even out the workers' ends. In xdist's own
# order, most tests first, a 39 s browser file ran alone at the end: the three workers ended at 363, 374 and 400 s;
# in this order at 383, 392 and 392 s (one run each, the main run 416 s and 410 s).
# A file missing here just runs in its turn; the rest follow by their number of tests, as xdist would order them.
LONGEST_FIRST = (
    "tests/test_free_gpu_experiments.py",
    "tests/test_cluster.py",
    "tests/test_solve_cli.py",
    "tests/test_browser_first_look.py",
    "tests/test_browser_write_kernel.py",
    "tests/test_trace_pages.py",
    "tests/test_browser_code_editor.py",
    "tests/test_sandbox_hostile.py",
    "tests/test_browser_learners.py",
    "tests/test_class_progress.py",
    "tests/test_warm_judge.py",
    "tests/test_write_kernel_page.py",
    "tests/test_compile_gate.py",
    "tests/test_free_gpu.py",
    "tests/test_compile_unavailable.py",
    "tests/test_class_pages.py",
    "tests/experiments/vector_add/test_browser_vector_add.py",
    "tests/test_pages.py",
    "tests/test_sim_differential.py",
    "tests/catalog/test_browser_catalog.py",
)


def scheduled(items: list) -> list:
    """``items`` by file: the longest files first (``LONGEST_FIRST``), then the files with most tests; a file's tests
    keep their order."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    count = Counter(item.nodeid.split("::")[0] for item in items)

    def key(item) -> tuple:
        name = item.nodeid.split("::")[0]
        return (rank.get(name, len(rank)), -count[name], name)

    return sorted(items, key=key)


def pytest_collection_modifyitems(config, items):
    items[:] = scheduled(items)
    for item in items:
        if item.get_closest_marker("gpu") and gpu.BACKEND.simulated:
            item.add_marker(pytest.mark.skip(reason=f"needs a CUDA GPU: {gpu.BACKEND.reason}"))
        if BROWSER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.browser)
        if PROCESS_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


class ChildProcessRefused(RuntimeError):
    """Raised in the fast lane where a test would start a child process; the test is then reported skipped."""


@pytest.fixture(autouse=True)
def _no_child_process_in_the_fast_lane(request, monkeypatch):
    """In the fast lane a child process is never started: the attempt raises (in whatever thread makes it)
    and the test is reported skipped, whatever became of the error (``pytest_runtest_makereport``)."""
    if FAST_LANE:
        import multiprocessing.process

        attempts = request.node.stash.setdefault(CHILD_ATTEMPTS, [])

        def refuse(*args, **_kwargs):
            attempts.append(str(args[1] if len(args) > 1 else "a process")[:80])
            raise ChildProcessRefused("the fast lane starts no child process")

        monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
        monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refuse)
    yield


@pytest.fixture(autouse=True)
def _no_spare_judges_in_this_process(monkeypatch):
    """A page run in this process (AppTest) would start spare judge and analysis children (``gpu.sandbox.warm``)
    that outlive its test and change how the next test's judges start: the process-wide keepers stay off here.
    Their own tests make keepers of their own; the app under the browser tests, a server of its own, keeps spares
    as it does."""
    from gpu.sandbox import warm

    monkeypatch.setattr(warm.KEEPER, "enable", lambda: None)
    monkeypatch.setattr(warm.ANALYSES, "enable", lambda: None)
    yield


CHILD_ATTEMPTS = pytest.StashKey[list]()
PHASE_FAILED = pytest.StashKey[bool]()  # a phase of the test (setup, call) failed: browser tests keep a screenshot


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    item.stash[PHASE_FAILED] = item.stash.get(PHASE_FAILED, False) or report.failed
    if FAST_LANE and report.when != "teardown" and item.stash.get(CHILD_ATTEMPTS, None) and report.outcome != "skipped":
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0,
                           "Skipped: starts a child process (sandbox, compiler, CLI, server): `make test` runs it")


@pytest.fixture(autouse=True)
def _a_trace_cache_per_test(monkeypatch):
    """The process keeps the traces it made (``gpu.sandbox.trace_submission.TRACES``): each test starts with none, so
    a test that counts or fakes the analysis child sees its own traces made, not another test's kept."""
    from gpu.sandbox import trace_submission

    monkeypatch.setattr(trace_submission, "TRACES", trace_submission.TraceCache())


SIM_TIERS = ("thread", "auto")  # the lab simulator's tiers: per thread, and vectorised where it can


@pytest.fixture(params=SIM_TIERS)
def tier(request):
    """The lab simulator's tier for this test's launches (gpu/sim/vector.py: set_tier), "auto" again after it."""
    from gpu.sim import vector

    vector.set_tier(request.param)
    yield request.param
    vector.set_tier("auto")


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """A page test's own database and lock folder, the plain text area for the editor (AppTest cannot drive the code
    editor, a custom component), and the sandbox as this host has it (neither required nor switched off)."""
    from gpu.sandbox import isolation

    monkeypatch.setenv("KERNEL_LAB_DB", str(tmp_path / "h.sqlite3"))
    monkeypatch.setenv("KERNEL_LAB_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("KERNEL_LAB_PLAIN_EDITOR", "1")
    monkeypatch.delenv(isolation.ENV_REQUIRE, raising=False)
    monkeypatch.delenv(isolation.ENV_SANDBOX, raising=False)


@pytest.fixture(autouse=True, scope="session")
def _isolated_data_dir(tmp_path_factory):
    """Keep tests away from the user's real history database."""
    path = tmp_path_factory.mktemp("kernel-lab-data") / "history.sqlite3"
    os.environ.setdefault("KERNEL_LAB_DB", str(path))
    # compiled-kernel facts (gpu/core/compile_cache.py): one cache for the session, not the user's; shared by the
    # session's xdist workers (their base folders sit side by side in the run's), so a kernel one compiled the other
    # reuses (each entry is written whole, then renamed into place: gpu/core/compile_cache.py: put)
    base = tmp_path_factory.getbasetemp()
    shared = base.parent / "compile-cache" if os.environ.get("PYTEST_XDIST_WORKER") else base / "compile-cache"
    shared.mkdir(exist_ok=True)
    os.environ.setdefault("KERNEL_LAB_COMPILE_CACHE", str(shared))
    yield


@pytest.fixture(autouse=True)
def _analyses_end_with_their_test():
    """Write a kernel's compiler facts and trace run in a background thread (ui/views/analysis.py, threads named
    "analysis-..."): one a test started must end before the next test, which may count sandboxed children."""
    yield
    import threading

    for thread in threading.enumerate():
        if thread.name.startswith("analysis-"):
            thread.join(timeout=180)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def app_url():
    """A real `streamlit run app.py` server for the browser tests; yields its URL."""
    port = _free_port()
    env = {
        **os.environ,
        "NUMBA_ENABLE_CUDASIM": os.environ.get("NUMBA_ENABLE_CUDASIM", "1" if gpu.BACKEND.simulated else "0"),
    }
    log = tempfile.NamedTemporaryFile(prefix="streamlit-", suffix=".log", delete=False)
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.headless", "true"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://localhost:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"streamlit did not start; log: {Path(log.name).read_text()[-2000:]}")
        time.sleep(0.3)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian's chromium is not at {CHROMIUM}; `make test` installs it")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def visitor(browser):
    """The browser context the worker's pages open in, one for the session: its HTTP cache and compiled scripts
    are kept from one test to the next, as a returning visitor's are. A fresh context per test cost Chromium
    about 0.5 s of CPU per page load (6 loads: 6.7-7.0 s cold, 3.7-4.6 s warm, one script side by side).
    The lab keeps nothing a test could inherit in the browser but cookies (a class's display name), cleared
    after each test; a test that needs a visitor of its own opens its own context."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    yield context
    context.close()


@pytest.fixture
def page(visitor, app_url, request):
    """A new browser page; a failed test leaves its last look at test-artifacts/failed-<test>.png."""
    page = visitor.new_page()
    page.set_default_timeout(60_000)
    yield page
    if request.node.stash.get(PHASE_FAILED, False):
        try:
            screenshot(page, f"failed-{request.node.name}")
        except Exception as exc:
            print(f"no screenshot of the failed page: {exc}")
    page.close()
    visitor.clear_cookies()


def screenshot(page, name: str) -> Path:
    """Save a full-page screenshot under test-artifacts/ and return its path."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def doc_screenshot(page, relative: str) -> Path:
    """A full-page screenshot of a picture the docs show (``relative`` under docs/, e.g.
    "screenshots/write_a_kernel.png"): into test-artifacts/docs/ on every run, so `make test`
    leaves the checkout as it found it; into docs/ itself only with KERNEL_LAB_UPDATE_DOCS=1
    (`make docs-screenshots`), to refresh the committed pictures."""
    base = ROOT / "docs" if os.environ.get("KERNEL_LAB_UPDATE_DOCS") == "1" else ARTIFACTS / "docs"
    path = base / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True)
    return path


# How often a browser test's wait_for_function looks: Playwright's default, "raf", evaluates it at every animation
# frame and keeps the page drawing frames while it waits (measured here: 5 s of waiting on an idle page cost Chromium
# 0.31 s of CPU at "raf", 0.02 s every 100 ms; Chromium is a quarter of `make test`'s CPU)
POLL_MS = 100

# The script's state as the app root reports it (Streamlit's ScriptRunState: initial, running, rerunRequested,
# notRunning, ...). The 'Running...' widget alone is not enough: it appears a moment after a run starts, so a page
# still drawing its results (metrics half drawn) looked idle.
SCRIPT_IDLE = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  const state = app && app.getAttribute('data-test-script-state');
  return app && state !== 'running' && state !== 'rerunRequested'
    && !document.querySelector('[data-testid="stStatusWidget"]');
}"""


def wait_for_app(page) -> None:
    """Wait until Streamlit has finished running the script (its state not running, no 'Running...' widget)."""
    page.wait_for_selector('[data-testid="stApp"]')
    page.wait_for_function(SCRIPT_IDLE, timeout=120_000, polling=POLL_MS)


def wait_for_backend_badge(page) -> None:
    """Wait for the frame's backend badge: the simulator's full warning here, the device's
    name on a GPU (where there is no simulator banner to wait for)."""
    if gpu.BACKEND.simulated:
        page.get_by_text("CUDA simulator — timings are not GPU performance").first.wait_for()
    else:
        from gpu.core.device import device_info

        page.get_by_text(device_info().name).first.wait_for()
