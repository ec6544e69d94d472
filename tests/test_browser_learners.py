"""Learners and a teacher on one `make demo` server, in a real browser.

A learner picks a name, passes problem 1, opens a hint, reloads and opens a new tab: the name, the solved mark,
the hint and the runs are still theirs. A second learner with another name sees only their own, and cannot take
the first one's name. The Class page does not exist without the teacher's token, and with it shows both learners;
its CSV is the store's attempts, row for row.
"""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.classroom import (
    CORRECT,
    TEACHER_TOKEN,
    WRONG,
    demo_server,
    type_kernel,
    type_name,
    wait_for_analysis,
    wait_idle,
)
from tests.conftest import POLL_MS, doc_screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
ROOT = Path(__file__).resolve().parent.parent


def press_run(page) -> None:
    wait_idle(page)
    page.get_by_role("button", name="Run", exact=True).click()


def picker_says(page, line: str) -> None:
    """Wait until the problem picker's chosen line reads ``line`` (an input's value: not in the page's text)."""
    page.wait_for_function(
        "line => [...document.querySelectorAll('[data-testid=stSelectbox] *')]"
        ".some(e => (e.value || e.textContent || '').includes(line))", arg=line, timeout=30_000, polling=POLL_MS)


def store_csv(db: Path) -> list[list[str]]:
    """The attempts in the server's database, as the Class page's CSV should have them."""
    code = ("from gpu.sandbox.progress import ProgressStore, csv_text\n"
            "print(csv_text(ProgressStore().every_attempt()), end='')")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "KERNEL_LAB_DB": str(db)},
                         capture_output=True, text=True, check=True)
    return list(csv.reader(io.StringIO(out.stdout)))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("Debian's chromium is not at /usr/bin/chromium; `make test` installs it")
    with demo_server(tmp_path_factory.mktemp("learners")) as running:
        yield running


def test_learners_keep_their_own_work_and_the_teacher_sees_both(server, tmp_path, browser):
    # the session's chromium (conftest): a second sync Playwright in one worker would fail inside its asyncio loop
    ada_browser = browser.new_context(viewport={"width": 1400, "height": 1800}, accept_downloads=True)
    ada = ada_browser.new_page()
    ada.set_default_timeout(120_000)
    ada.goto(f"{server.url}/Write_a_kernel")
    wait_idle(ada)
    assert ada.get_by_role("button", name="Run", exact=True).is_disabled()  # no name yet
    type_name(ada, "Ada")
    type_kernel(ada, CORRECT)
    press_run(ada)
    ada.get_by_text("Passed:").first.wait_for()
    wait_for_analysis(ada)  # after the verdict, unasked
    ada.get_by_role("button", name="Next problem: 2. Map").wait_for()
    picker_says(ada, "1. Vector add — solved")  # the mark follows the verdict, before any reload
    # each click once the page's run has ended: a press while a run is still drawing the page (the analysis's own
    # rerun) can land on an element that run then replaces (a fresh clone's loaded `make test` lost one so)
    wait_idle(ada)
    ada.get_by_text("Hints and tests").click()
    wait_idle(ada)
    ada.get_by_role("button", name="Show a nudge").click()
    ada.get_by_text("1 of 3 opened").first.wait_for()
    wait_idle(ada)
    doc_screenshot(ada, "screenshots/write_a_kernel_progress.png")

    ada.reload()  # F5: a new session, the same browser
    wait_idle(ada)
    sidebar = ada.get_by_test_id("stSidebar")
    sidebar.get_by_text("Ada", exact=True).first.wait_for()
    picker_says(ada, "1. Vector add — solved")
    assert "out[i] = a[i] + b[i]" in ada.locator(".cm-content").inner_text()  # the draft: the latest submission
    ada.get_by_text("Hints and tests").click()
    ada.get_by_text("1 of 3 opened").first.wait_for()

    tab = ada_browser.new_page()  # a new tab, straight to History
    tab.goto(f"{server.url}/History")
    wait_idle(tab)
    tab.get_by_test_id("stSidebar").get_by_text("Ada", exact=True).first.wait_for()
    tab.get_by_role("tab", name="Kernels you wrote").click()
    tab.get_by_text("1 passing submissions").first.wait_for()

    bob_browser = browser.new_context(viewport={"width": 1400, "height": 1400})
    bob = bob_browser.new_page()
    bob.set_default_timeout(120_000)
    bob.goto(f"{server.url}/Write_a_kernel")
    wait_idle(bob)
    sidebar = bob.get_by_test_id("stSidebar")
    sidebar.get_by_label("Your name on the leaderboard", exact=True).and_(
        bob.get_by_test_id("stTextInputField")).fill("ADA")
    sidebar.get_by_role("button", name="Use this name").click()
    sidebar.get_by_text("taken by someone else").first.wait_for()
    type_name(bob, "Bob")
    picker_says(bob, "1. Vector add — new")
    type_kernel(bob, WRONG)
    press_run(bob)
    bob.get_by_text("Wrong result:").first.wait_for()
    wait_for_analysis(bob)
    picker_says(bob, "1. Vector add — tried")
    wait_idle(bob)
    bob.goto(f"{server.url}/History")
    wait_idle(bob)
    bob.get_by_role("tab", name="Kernels you wrote").click()
    bob.get_by_text("No kernel saved yet").first.wait_for()  # Ada's passing kernel is not Bob's to see
    assert "THREADS_PER_BLOCK = 128" not in bob.locator('[data-testid="stMain"]').inner_text()

    teacher_browser = browser.new_context(viewport={"width": 1400, "height": 1400}, accept_downloads=True)
    teacher = teacher_browser.new_page()
    teacher.set_default_timeout(60_000)
    teacher.goto(f"{server.url}/Class")
    wait_idle(teacher)
    teacher.get_by_text("There is no such page").first.wait_for()
    assert not teacher.get_by_test_id("stSidebar").get_by_text("Class", exact=True).count()
    teacher.goto(f"{server.url}/Class?teacher={TEACHER_TOKEN}")
    wait_idle(teacher)
    teacher.get_by_text("Per learner: the latest submission").first.wait_for()
    main = teacher.locator('[data-testid="stMain"]')
    teacher.get_by_test_id("stSidebar").get_by_text("Class", exact=True).first.wait_for()
    doc_screenshot(teacher, "screenshots/class.png")
    with teacher.expect_download() as download:
        main.get_by_role("button", name="Download every submission (CSV)").click()
    rows = list(csv.reader(io.StringIO(Path(download.value.path()).read_text())))
    assert rows == store_csv(server.db)
    assert {r[1] for r in rows[1:]} == {"Ada", "Bob"} and {r[4] for r in rows[1:]} == {"passed", "wrong result"}
    for context in (ada_browser, bob_browser, teacher_browser):  # the browser is the session's: leave it clean
        context.close()
