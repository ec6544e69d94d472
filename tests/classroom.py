"""A class at once: one `make demo` server, many browsers pressing Run on Write a kernel together.

Shared by ``tests/test_browser_class.py`` (asserts) and ``benchmarks/class_submit.py`` (measures).
``demo_server()`` starts ``streamlit run app.py`` with the Makefile's ``demo`` flags and settings
(the sandbox required, uploads off, viewer toolbar...) plus a throwaway history database and lock
folder, and lowered submission limits so a kernel that never ends costs seconds, not a minute.
``run_class()`` opens one browser context per learner on Write a kernel (problem 1, vector add), types
each one's kernel, presses Run in all of them within a moment, and records in each page (a timer
in the page itself, so the figures do not depend on how fast this process polls 16 pages) every queue
line it showed and when its verdict appeared; a separate context loads Home at intervals meanwhile.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("KERNEL_LAB_CHROMIUM", "/usr/bin/chromium")
BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-renderer-backgrounding",  # 16 pages in one window: none is throttled as a background tab
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
]

# The Makefile's `demo` target, flag for flag (DEMO_UPLOADS=0), on a free port of localhost.
DEMO_FLAGS = [
    "--server.headless", "true",
    "--server.fileWatcherType", "none", "--server.runOnSave", "false",
    "--server.maxUploadSize", "1", "--server.enableStaticServing", "false",
    "--client.toolbarMode", "viewer", "--client.showErrorDetails", "none",
    "--browser.gatherUsageStats", "false", "--runner.fastReruns", "true",
]
TEACHER_TOKEN = "class-test-teacher-token"  # the demo's KERNEL_LAB_TEACHER_TOKEN here (the Class page's ?teacher=)
WALL_S = 20.0  # KERNEL_LAB_SUBMIT_WALL_S: a never-ending kernel costs this (6 s killed correct ones under load)
MEMORY_MB = 768  # KERNEL_LAB_SUBMIT_MEMORY_MB: the simulator's child needs ~250 MiB

CORRECT = """from numba import cuda

THREADS_PER_BLOCK = 128


@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] + b[i]
"""
BODY = "    if i < a.size:\n        out[i] = a[i] + b[i]\n"
WRONG = CORRECT.replace("if i < a.size:", "if i < a.size - 1:")  # the last element is never written
# The common mistake: the loop's index never reaches its bound. The simulator stops it at its loop limit in about a
# second, naming the thread and the line (gpu/sim/loops.py: loop_limit), a "Wrong result" whose test says so.
NEVER_ENDS = CORRECT.replace(BODY, "    while i >= 0:\n        i += 1\n")
# A loop whose every turn is a long loop of its own: the loop limit (each run of each loop) would take hours to reach;
# the work limit (every turn of the launch, gpu/sim/loops.py: work_limit) stops it in a fraction of a second, naming
# the inner loop's line. Until the work limit it ran to the wall clock: the class issue's time-out.
NESTED = CORRECT.replace(BODY, "    while i >= 0:\n        for j in range(60000):\n            i += 1\n")
# A never-ending loop whose every turn is long itself (128 array reads): the work limit's 2,097,152 turns would take
# half a minute and more to reach, so only the wall clock stops it (-> the time-limit rule, after
# KERNEL_LAB_SUBMIT_WALL_S).
_READS = " + ".join(["a[0]"] * 16)
RUNS_TOO_LONG = CORRECT.replace(BODY, "    while i >= 0:\n        for j in range(60000):\n"
                                + "".join(f"            i += {_READS}\n" for _ in range(8)))
# A shift whose count doubles each turn: with Python's ints it grew without bound until the memory limit stopped it;
# compiled (and now simulated: gpu/sim/arithmetic.py) the count reaches 64 at the seventh turn, where the shift is
# undefined in Numba, and the simulator faults there naming the line.
UNDEFINED_SHIFT = CORRECT.replace(
    BODY, "    if i == 0:\n        x = 1\n        s = 1\n        while s > 0:\n            x = x << s\n"
    "            s = s * 2\n        out[0] = x\n"
)

# kind -> (source, a text only its verdict shows)
KINDS = {
    "correct": (CORRECT, "Passed:"),
    "wrong": (WRONG, "First mismatch in"),
    "endless": (NEVER_ENDS, "loop limit"),
    "nested": (NESTED, "work limit"),
    "time-limit": (RUNS_TOO_LONG, "(time-limit rule)"),
    "undefined": (UNDEFINED_SHIFT, "undefined in compiled Numba"),
}
# kind -> the judge's verdict status (gpu/sandbox/verdict.py)
STATUS = {"correct": "passed", "wrong": "wrong", "endless": "wrong", "nested": "wrong", "time-limit": "refused",
          "undefined": "wrong"}
# kinds whose kernel ran: the compiler's facts and trace follow the verdict
ANALYSED = ("correct", "wrong", "endless", "nested", "undefined")
VERDICT_TEXTS = ("Passed:", "Wrong result:", "Refused (", "Could not finish:")
# the verdict's last line (ui/views/write_kernel.py: show_verdict): a kernel that ran, a refusal
VERDICT_ENDS = ("Sandbox:", "prints the same line")
QUEUE_TEXT = "Queued behind"
# The class issue's class: 8 correct, 4 wrong, 2 never-ending (one loop that never ends, stopped by the loop limit; one
# whose every turn is a long loop, stopped by the work limit: until that limit, by the wall clock), 2 undefined shifts
# (the memory hogs of Python's ints before gpu/sim/arithmetic.py), interleaved so every kind waits at every depth; the
# nested one early, most of the class behind it
CLASS = ["correct", "wrong", "correct", "nested", "correct", "wrong", "correct", "undefined",
         "correct", "wrong", "correct", "endless", "correct", "wrong", "correct", "undefined"]
# `make test`'s class (tests/test_browser_class.py): every kind, the one only the wall clock stops second with three
# kernels that ran pressed just after it, in half the browsers (the 16 pages' loading alone took a minute of `make
# test`); the benchmark (benchmarks/class_submit.py) keeps the whole class of 16
TEST_CLASS = ["correct", "time-limit", "wrong", "nested", "undefined", "endless", "correct", "wrong"]

# Runs in every learner's page: samples the page every 50 ms (queue lines seen, when the verdict showed). It reads the
# page's textContent, which forces no style or layout: reading innerText every 50 ms cost the four pages of a side by
# side about 0.8 s of Chromium's CPU in 10 s while idle and 1.6 s while queued, five times what the pages themselves
# used while queued (benchmarks/class_submit.md: "the observer's own cost"). The queue lines are the text nodes
# holding QUEUE_TEXT (found by XPath only while the page has one); the verdict's text is read once, as shown.
OBSERVER = """
() => {
  const rec = window.__class = {queued: [], verdictAt: null, verdict: null, clickedAt: null, analysisAt: null,
                                analysis: null};
  const kinds = %s;
  const queue = %s;
  const main = document.querySelector('[data-testid="stMain"]') || document.body;
  let changed = true;  // set by any change of the main area's nodes or text: an unchanged page is not read again
  new MutationObserver(() => { changed = true; }).observe(main, {subtree: true, childList: true, characterData: true});
  const tick = () => {
    if (!changed) return;
    changed = false;
    const text = main.textContent;
    if (text.includes(queue)) {
      const found = document.evaluate(`.//text()[contains(., "${queue}")]`, main, null,
                                      XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null);
      for (let k = 0; k < found.snapshotLength; k++) {
        const line = found.snapshotItem(k).data.trim();
        if (!rec.queued.includes(line)) rec.queued.push(line);
      }
    }
    if (rec.clickedAt !== null && rec.verdictAt === null && kinds.some(k => text.includes(k))) {
      rec.verdictAt = Date.now();
      rec.verdict = main.innerText;
    }
    if (rec.verdictAt !== null && rec.analysisAt === null) {
      if (text.includes('What the compiler says') && text.includes('What the trace shows')) {
        rec.analysisAt = Date.now(); rec.analysis = 'facts and trace';
      } else if (text.includes('Not ready within')) {
        rec.analysisAt = Date.now(); rec.analysis = 'said why not';
      }
    }
  };
  window.__classTimer = setInterval(tick, 50);
}
"""
CLICK = """
() => {
  const button = [...document.querySelectorAll('button')].find(b => b.innerText.trim().endsWith('Run'));
  window.__class.clickedAt = Date.now();
  button.click();
  return window.__class.clickedAt;
}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    url: str
    db: Path
    log: Path
    env: dict
    judge_log: Path  # KERNEL_LAB_JUDGE_LOG: each submission's milestones on the server (gpu/service/judge_log.py)


@contextmanager
def demo_server(workdir: Path, wall_s: float = WALL_S, memory_mb: int = MEMORY_MB) -> Iterator[Server]:
    """`make demo`'s server on a free port, with its own database and lock folder under ``workdir``."""
    port = free_port()
    db = workdir / "history.sqlite3"
    env = {
        **os.environ,
        "KERNEL_LAB_UPLOADS": "0",
        "KERNEL_LAB_REQUIRE_SANDBOX": "1",
        "KERNEL_LAB_CLASS": "1",
        "KERNEL_LAB_TEACHER_TOKEN": TEACHER_TOKEN,
        "KERNEL_LAB_DB": str(db),
        "KERNEL_LAB_LOCK_DIR": str(workdir / "locks"),
        "KERNEL_LAB_COMPILE_CACHE": str(workdir / "compile-cache"),
        "KERNEL_LAB_SUBMIT_WALL_S": str(wall_s),
        "KERNEL_LAB_SUBMIT_MEMORY_MB": str(memory_mb),
        "KERNEL_LAB_JUDGE_LOG": str(workdir / "judges.jsonl"),
    }
    env.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    log = workdir / "streamlit.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.address", "127.0.0.1",
             "--server.port", str(port), *DEMO_FLAGS],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not start; log: {log.read_text()[-2000:]}")
            time.sleep(0.3)
        yield Server(url, db, log, env, workdir / "judges.jsonl")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


# In a class each browser runs on its own machine; here all of them share the server's 2 cores, and
# their rendering (about a second of JavaScript for a fresh page) would decide "Home within 2 s" more
# than the server does. So the learners' chromium runs at LEARNERS_NICENESS, its session's too (it gets
# what the server, the sandbox and Home's browser leave), and Home's browser, a visitor's own machine,
# at VISITOR_NICENESS ahead of the server (where this user may raise a priority: root, as in CI; else 0).
LEARNERS_NICENESS = 15
VISITOR_NICENESS = -5


# The kernel's CPU weight of a nice value (kernel/sched/core.c: sched_prio_to_weight), for a browser's cpu cgroup.
NICE_WEIGHT = {-5: 3121, 0: 1024, 5: 335, 10: 110, 15: 36, 19: 15}
CPU_CGROUPS = Path("/sys/fs/cgroup/cpu")


def browser_cgroup(folder: str, niceness: int) -> Path | None:
    """A cpu cgroup (v1) whose weight is that of ``niceness``, for one browser and every process it starts; None
    where this host does not let us make one. Chromium running as root sets its renderers' nice values itself
    (measured: the learners' renderers at nice 0, though their browser was started at 15), so a nice value alone
    does not hold for a browser; a cgroup's weight does."""
    if niceness not in NICE_WEIGHT or not os.access(CPU_CGROUPS, os.W_OK):
        return None
    path = CPU_CGROUPS / f"kernel-lab-browser-{os.getpid()}-{Path(folder).name}-{niceness}"
    try:
        path.mkdir()
        (path / "cpu.shares").write_text(str(NICE_WEIGHT[niceness]))
    except OSError:
        return None
    return path


def remove_cgroup(path: Path | None) -> None:
    if path is None:
        return
    for _ in range(100):  # the browser's processes are still leaving
        try:
            path.rmdir()
            return
        except OSError:
            time.sleep(0.05)


def _launch(pw, folder: str, niceness: int, cgroup: Path | None = None):
    executable = CHROMIUM
    if niceness:
        executable = str(Path(folder) / f"chromium-nice-{int(niceness)}")
        # Playwright starts the browser in a session of its own, where (autogroup) a nice value weighs only
        # against the session's own processes: the session's weight is set too (gpu/sandbox/child.py); and, where
        # the host allows, the browser and all it starts go into a cpu cgroup of that weight (``browser_cgroup``).
        into_cgroup = f'echo $$ > "{cgroup}/cgroup.procs" 2>/dev/null\n' if cgroup is not None else ""
        Path(executable).write_text(
            "#!/bin/sh\n"
            + into_cgroup
            + f'if [ "$(ps -o sid= -p $$ | tr -d " ")" = "$$" ]; then echo {int(niceness)} > /proc/self/autogroup; fi '
            "2>/dev/null\n"
            f'exec nice -n {int(niceness)} {CHROMIUM} "$@"\n'
        )
        os.chmod(executable, 0o755)
    return pw.chromium.launch(executable_path=executable, headless=True, args=BROWSER_ARGS)


@contextmanager
def chromium(*niceness: int) -> Iterator:
    """Debian's chromium through Playwright, one browser per niceness given (default: one at 0).

    A niceness above 0 starts that browser, and so every renderer of it, at that niceness.
    Yields the browser, or a tuple of browsers when more than one niceness is given.
    """
    from playwright.sync_api import sync_playwright

    wanted = niceness or (0,)
    with tempfile.TemporaryDirectory(prefix="kernel-lab-chromium-") as folder, sync_playwright() as pw:
        cgroups = [browser_cgroup(folder, n) if n else None for n in wanted]
        try:
            browsers = [_launch(pw, folder, n, cgroup) for n, cgroup in zip(wanted, cgroups)]
            try:
                yield browsers[0] if len(browsers) == 1 else tuple(browsers)
            finally:
                for browser in browsers:
                    browser.close()
        finally:
            for cgroup in cgroups:
                remove_cgroup(cgroup)


def wait_idle(page, timeout_ms: int = 120_000) -> None:
    page.wait_for_selector('[data-testid="stApp"]')
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout_ms,
                           polling=100)  # not at every frame (tests/conftest.py: POLL_MS)


def wait_for_analysis(page, timeout_ms: int = 240_000) -> str:
    """The facts and trace, drawn unasked when ready; past the page's bound it says why not and offers to look again
    (on this shared machine other work may hold the sandboxed children back); an analysis that failed (its child
    ran past its limit) ends with the reason in place of the trace ("not traced: ..."). Returns the main text."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    main = page.locator('[data-testid="stMain"]')
    shown = main.get_by_text("What the trace shows")
    said_why = main.get_by_text("not traced:")
    again = main.get_by_role("button", name="Look again")
    for _ in range(timeout_ms // 5_000):
        shown.or_(said_why).or_(again).first.wait_for(timeout=timeout_ms)
        if shown.count() or said_why.count():
            main.get_by_text("What the compiler says").first.wait_for()  # its facts, or why they are unavailable
            return main.inner_text()
        page.wait_for_timeout(5_000)
        try:
            again.click(timeout=2_000)
        except PlaywrightTimeout:  # the result arrived meanwhile and took the button's place
            pass
        wait_idle(page)
    raise AssertionError("the facts and trace never arrived")


def type_name(page, name: str) -> None:
    """Claim ``name`` in the sidebar (a class's demo asks once; the browser's cookie keeps it)."""
    sidebar = page.get_by_test_id("stSidebar")
    box = sidebar.get_by_label("Your name on the leaderboard", exact=True).and_(page.get_by_test_id("stTextInputField"))
    box.fill(name)
    sidebar.get_by_role("button", name="Use this name").click()
    sidebar.get_by_text(name, exact=True).first.wait_for()


def type_kernel(page, source: str) -> None:
    """The learner's kernel, typed as a learner would (the code editor, or its plain fallback). Waits for one of
    them first: the editor mounts a moment after the page's text, and a page that looked too early took the
    editor for the fallback text box (both are labelled "Your kernel") and pressed Ctrl+Enter in it, a run."""
    page.locator('.cm-content, textarea[aria-label="Your kernel"]').first.wait_for()
    editor = page.locator(".cm-content")
    if editor.count():
        editor.click()
        page.keyboard.press("Control+a")
        page.keyboard.insert_text(source)
        editor.blur()  # the editor sends its text on blur
    else:
        area = page.get_by_label("Your kernel", exact=True).and_(page.get_by_role("textbox"))
        area.fill(source)
        area.press("Control+Enter")


@dataclass
class Learner:
    name: str
    kind: str
    page: object = None
    clicked_at: float = 0.0  # ms since the epoch, in the page
    verdict_at: float | None = None
    verdict: str = ""
    analysis_at: float | None = None  # the facts and trace drawn, or the page saying why not (ms since the epoch)
    analysis: str = ""  # "facts and trace" or "said why not"
    queued: list[str] = field(default_factory=list)

    @property
    def latency_s(self) -> float | None:
        return None if self.verdict_at is None else (self.verdict_at - self.clicked_at) / 1000

    @property
    def analysis_s(self) -> float | None:
        """Seconds from the verdict to the facts and trace (or the page's reason why not)."""
        return None if self.verdict_at is None or self.analysis_at is None else (
            self.analysis_at - self.verdict_at) / 1000


@dataclass
class ClassRun:
    learners: list[Learner]
    home_s: list[float | None]  # Home's load times from the presses on (goto -> its headline drawn; None: not in 30 s)
    spread_s: float  # first Run press to last
    wall_s: float  # first Run press to the last verdict
    home_cold_s: float | None = None  # Home's first load in the visitor's browser, before the class (cold cache)
    home_during: int = 0  # how many of home_s started while some verdict was still pending

    @property
    def home_drawn(self) -> list[float]:
        """The loads of Home that drew its content (all of them, unless the server was held)."""
        return [s for s in self.home_s if s is not None]


def load_home(context, url: str) -> float | None:
    """Seconds from opening Home in a new tab of ``context`` to its content drawn (the 'Start here' section),
    or None when it was not drawn within 30 s.

    Each tab is a new Streamlit session: the server runs Home's script for it from the start.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page = context.new_page()
    try:
        started = time.perf_counter()
        page.goto(url, timeout=30_000)
        page.get_by_text("Start here").first.wait_for(timeout=30_000)
        return time.perf_counter() - started
    except PlaywrightTimeout:
        return None
    finally:
        page.close()


def run_class(browser, url: str, kinds: list[str] = CLASS, home_every_s: float = 5.0,
              timeout_s: float = 240.0, home_browser=None) -> ClassRun:
    """Open a page per learner, type each kernel, press Run in all together, wait for every verdict.

    Meanwhile Home is loaded every ``home_every_s`` in a new tab of a visitor's browser, ``home_browser``
    (default: ``browser``), which opened the lab once before the class (``ClassRun.home_cold_s``): a browser
    that has seen the lab keeps Streamlit's scripts in its cache, as every learner's does. The cold load is
    mostly the browser compiling about 5 MB of JavaScript: the visitor's machine's work, not the server's.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    home_browser = home_browser or browser
    learners = [Learner(f"student-{i + 1:02d}-{kind}", kind) for i, kind in enumerate(kinds)]
    visitor = home_browser.new_context(viewport={"width": 1400, "height": 1000})
    contexts = [visitor]
    try:
        home_cold_s = load_home(visitor, url)  # the visitor's first visit, before the class
        # each step in every page before waiting for any: the 16 pages load and rerun side by side
        for learner in learners:
            context = browser.new_context(viewport={"width": 1200, "height": 1400})
            contexts.append(context)
            learner.page = page = context.new_page()
            page.set_default_timeout(120_000)
            page.goto(f"{url}/Write_a_kernel", wait_until="commit")
        for learner in learners:
            wait_idle(learner.page)
            learner.page.get_by_text("vector_add(a, b, out)").first.wait_for()
            type_name(learner.page, learner.name)
        for learner in learners:
            wait_idle(learner.page)
            type_kernel(learner.page, KINDS[learner.kind][0])
        for learner in learners:
            wait_idle(learner.page)
            learner.page.evaluate(OBSERVER % (list(VERDICT_TEXTS), json.dumps(QUEUE_TEXT)))
        for learner in learners:  # as together as 16 people can: one JS click each, no waiting between
            learner.clicked_at = learner.page.evaluate(CLICK)
        home_s: list[float | None] = []
        home_during = 0
        next_home = time.monotonic()  # the first load at once: the class has only just pressed Run
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if time.monotonic() >= next_home:
                home_s.append(load_home(visitor, url))
                home_during += 1
                next_home = time.monotonic() + home_every_s
            pending = 0
            for learner in learners:
                # a kernel that ran gets its compiler facts and trace after the verdict: wait for those too
                analysed = learner.kind in ANALYSED
                if learner.verdict_at is None or (analysed and learner.analysis_at is None):
                    rec = learner.page.evaluate("() => window.__class")
                    learner.queued = rec["queued"]
                    if rec["verdictAt"] is not None and learner.verdict_at is None:
                        learner.verdict_at, learner.verdict = rec["verdictAt"], rec["verdict"]
                    if rec["analysisAt"] is not None:
                        learner.analysis_at, learner.analysis = rec["analysisAt"], rec["analysis"]
                    if learner.verdict_at is None or (analysed and learner.analysis_at is None):
                        pending += 1
            if not pending:
                break
            time.sleep(0.5)
        home_s.append(load_home(visitor, url))  # and once more after the last verdict
        for learner in learners:  # the verdict's first frame may still be drawing: read it once its own text shows
            if learner.verdict_at is not None:
                # (not once the page is idle: each page's compiler facts and trace follow its verdict, queued
                # behind the whole class's judges)
                main = learner.page.locator('[data-testid="stMain"]')
                try:
                    main.get_by_text(KINDS[learner.kind][1]).first.wait_for(timeout=30_000)
                    # and the verdict's last line ("waited ... behind N runs" is in it): a page rerun when its facts
                    # and trace arrived draws its elements again one by one, the last ones a moment later
                    main.get_by_text(VERDICT_ENDS[0]).or_(main.get_by_text(VERDICT_ENDS[1])).first.wait_for(
                        timeout=30_000)
                except PlaywrightTimeout:  # the assertions report what the page shows instead
                    pass
                rec = learner.page.evaluate("() => window.__class")
                learner.queued = rec["queued"]
                learner.verdict = main.inner_text()
        clicks = [lr.clicked_at for lr in learners]
        ends = [lr.verdict_at for lr in learners if lr.verdict_at is not None]
        return ClassRun(learners, home_s, (max(clicks) - min(clicks)) / 1000,
                        ((max(ends) if ends else time.time() * 1000) - min(clicks)) / 1000, home_cold_s,
                        home_during)
    finally:
        for context in contexts:
            context.close()


@dataclass(frozen=True)
class Split:
    """One submission's Submit → verdict in three parts, from the page's clock and the server's judge log (one
    machine, one clock): the press reaching the server, the server's part (press received → verdict kept by the
    page's run, ``gpu/service/judge_log.py``), and the verdict reaching the browser and being drawn."""

    to_server_s: float
    server_s: float
    to_screen_s: float


def splits(learners: list[Learner], judge_log: Path) -> dict[str, Split]:
    """Each learner's ``Split``, by name, for those whose submission the log has from received to kept."""
    from gpu.service.judge_log import read

    logged = read(judge_log) if judge_log.exists() else {}
    out = {}
    for learner in learners:
        rows = [r for r in logged.values() if r.get("learner") == learner.name and "received" in r and "kept" in r]
        if learner.verdict_at is None or len(rows) != 1:  # (one press each: a second would be ambiguous)
            continue
        row = rows[0]
        out[learner.name] = Split(row["received"] - learner.clicked_at / 1000, row["kept"] - row["received"],
                                  learner.verdict_at / 1000 - row["kept"])
    return out


@dataclass(frozen=True)
class AnalysisSplit:
    """One analysis's seconds from the judge log (``analysis-*`` events) and the page's clock: the verdict kept →
    the analysis launched (the page looked again), launched → its turn in the queue (None: served from the caches,
    no turn), its turn → done, and done → its panels drawn (None: the page had said why not by then), that last in
    three: done → the page's next look found it (``looked_s``), → the page's rerun had drawn its panels on the
    server (``rerun_s``), → the browser showed them (``browser_s``); None where the log lacks the milestone."""

    seen_s: float
    queued_s: float | None
    work_s: float
    to_screen_s: float | None
    looked_s: float | None = None
    rerun_s: float | None = None
    browser_s: float | None = None


def analysis_splits(learners: list[Learner], judge_log: Path) -> dict[str, AnalysisSplit]:
    """Each learner's ``AnalysisSplit``, by name, for those whose analysis the log has from kept to done."""
    from gpu.service.judge_log import read

    logged = read(judge_log) if judge_log.exists() else {}
    out = {}
    for learner in learners:
        rows = [r for r in logged.values() if r.get("learner") == learner.name and "analysis-done" in r]
        if len(rows) != 1 or "kept" not in rows[0] or "analysis-launched" not in rows[0]:
            continue
        row = rows[0]
        turn = row.get("analysis-turn")
        start = turn if turn is not None else row["analysis-launched"]
        drawn = (learner.analysis_at / 1000 - row["analysis-done"]
                 if learner.analysis_at is not None and learner.analysis == "facts and trace" else None)
        seen, sent = row.get("analysis-seen"), row.get("analysis-sent")
        out[learner.name] = AnalysisSplit(
            row["analysis-launched"] - row["kept"], None if turn is None else turn - row["analysis-launched"],
            row["analysis-done"] - start, drawn,
            looked_s=None if seen is None else seen - row["analysis-done"],
            rerun_s=None if seen is None or sent is None else sent - seen,
            browser_s=None if drawn is None or sent is None else learner.analysis_at / 1000 - sent)
    return out


def kinds_summary(kinds: list[str]) -> str:
    """"8 correct, 4 wrong, ...": how many of each kind, in the order they first appear."""
    return ", ".join(f"{n} {kind}" for kind, n in Counter(kinds).items())


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) by linear interpolation between order statistics."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = (len(ordered) - 1) * q
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def leaderboard_names(db: Path) -> list[str]:
    """The vector-add leaderboard's names in the server's database (the simulator's device name)."""
    env = {**os.environ, "KERNEL_LAB_DB": str(db)}
    code = ("from gpu.sandbox.submissions import SubmissionStore\n"
            "print('\\n'.join(e.name for e in SubmissionStore().leaderboard('vector-add', 'CUDA simulator')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return [line for line in out.stdout.splitlines() if line]


def machine() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{os.cpu_count()} cores, load average {load} (1, 5, 15 min)"


def tmpdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="kernel-lab-class-"))
