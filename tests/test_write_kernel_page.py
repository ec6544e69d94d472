"""The Write-a-kernel page in AppTest: statement and starter, drafts kept per problem, a passing run
with its verdict and leaderboard entry, a refusal, and a server that requires a sandbox it lacks."""

import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from gpu.sandbox import isolation
from gpu.service import judge_log
from tests.analysis_wait import wait_for_analysis

ROOT = Path(__file__).resolve().parent.parent
PAGE = str(ROOT / "pages/9_Write_a_kernel.py")
GOOD = """from numba import cuda

THREADS_PER_BLOCK = 128


@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] + b[i]
"""
WRONG = GOOD.replace("if i < a.size:", "if i < a.size - 1:")


def test_statement_starter_and_drafts_per_problem(isolated):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    assert any("vector_add(a, b, out)" in m.value for m in at.markdown)
    area = at.text_area(key="write_kernel.draft.vector-add")
    assert "def vector_add(a, b, out)" in area.value
    area.input(GOOD).run()
    at.selectbox(key="write_kernel.problem").set_value("matmul").run()
    assert "def matmul(a, b, c)" in at.text_area(key="write_kernel.draft.matmul").value
    at.selectbox(key="write_kernel.problem").set_value("vector-add").run()
    assert at.text_area(key="write_kernel.draft.vector-add").value == GOOD  # the draft survived the switch
    assert any(c.language == "python" and "THREADS_PER_BLOCK = 128" in c.value for c in at.code)  # highlighted preview


def test_the_sidebar_has_one_device_line_drawn_by_the_run_panel(isolated):
    """Write a kernel's Run panel (a fragment) draws the sidebar's device line, which its judge's progress rewrites
    (ui/runner.py: fragment_lines); its frame leaves only the place. Another page draws the line itself."""
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    assert [c.value for c in at.sidebar.caption if c.value.startswith("Simulator:")] == ["Simulator: free"]
    other = AppTest.from_file(str(ROOT / "pages/1_Vector_add.py"), default_timeout=60).run()
    assert [c.value for c in other.sidebar.caption if c.value.startswith("Simulator:")] == ["Simulator: free"]


def test_a_passing_run_shows_every_test_and_joins_the_leaderboard(isolated):
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.text_area(key="write_kernel.draft.vector-add").input(GOOD)
    at.button(key="write_kernel.run").click().run()
    assert not at.exception, at.exception
    assert any("Passed" in s.value for s in at.success), [e.value for e in at.error]
    tests = at.table[0].value
    assert list(tests["Result"]) == ["pass"] * len(tests) and len(tests) == 5
    board = at.table[-1].value
    assert list(board["Name"]) == ["you"]  # on your own machine the one user is "you"
    # the simulator does not time kernels: no columns of blanks, and the caption says why
    assert list(board.columns) == ["Rank", "Name", "Passed at (UTC)"]
    assert any("does not time kernels" in c.value for c in at.caption)


def test_a_loop_that_never_ends_fails_every_test_in_one_sentence_said_once(isolated):
    """The simulator's loop limit (gpu/sim/device.py) gives a verdict with the thread and the line in about a second;
    the tests table says the sentence once, then "the same as the test above"."""
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.text_area(key="write_kernel.draft.vector-add").input(GOOD.replace(
        "    if i < a.size:\n        out[i] = a[i] + b[i]\n", "    while i >= 0:\n        i += 1\n"))
    at.button(key="write_kernel.run").click().run()
    assert not at.exception, at.exception
    assert any("Wrong result" in e.value and "0 of 5 tests passed" in e.value for e in at.error)
    details = list(at.table[0].value["Details"])
    assert "loop limit (thread (0, 0, 0) of block (0, 0, 0), line 9)" in details[0]
    assert details[1:] == ["the same as the test above"] * 4


def test_tests_table_repeats_no_failure_text_of_the_failing_test_just_above():
    from ui.views.write_kernel import SAME_AS_ABOVE, tests_table

    def case(name, passed, message="passed"):
        return {"name": name, "sizes": {"n": 1}, "passed": passed, "message": message}

    table = tests_table([case("a", False, "x"), case("b", False, "x"), case("c", True), case("d", False, "x"),
                         case("e", False, "y")])
    assert list(table["Details"]) == ["x", SAME_AS_ABOVE, "", "x", "y"]  # after a pass, the text is said again
    assert list(table["Result"]) == ["FAIL", "FAIL", "pass", "FAIL", "FAIL"]


def test_the_judge_log_has_each_milestone_of_a_submission_in_order(isolated, tmp_path, monkeypatch):
    log = tmp_path / "judges.jsonl"
    monkeypatch.setenv("KERNEL_LAB_JUDGE_LOG", str(log))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not log.exists()  # nothing submitted, nothing written
    at.text_area(key="write_kernel.draft.vector-add").input(WRONG).run()
    at.button(key="write_kernel.run").click().run()
    assert not at.exception, at.exception
    (row,) = judge_log.read(log).values()
    assert row["learner"] == "you" and row["status"] == "wrong"  # on your own machine the one user is "you"
    assert row["received"] <= row["turn"] <= row["verdict"] <= row["kept"], row
    assert not [event for event in row if event.startswith("analysis-")]  # launched at the page's next look
    wait_for_analysis(at)
    (row,) = judge_log.read(log).values()
    analysis = ["kept", "analysis-launched", "analysis-done", "analysis-seen", "analysis-sent"]
    assert [row[event] for event in analysis] == sorted(row[event] for event in analysis), row


def test_without_the_judge_log_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.delenv("KERNEL_LAB_JUDGE_LOG", raising=False)
    monkeypatch.chdir(tmp_path)
    judge_log.mark("received", "t", None)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv("KERNEL_LAB_JUDGE_LOG", str(tmp_path / "missing-folder" / "log.jsonl"))
    judge_log.mark("received", "t", None)  # cannot be written: dropped, never raised


def test_the_judge_log_reader_keeps_the_first_time_of_each_event_and_skips_bad_lines(tmp_path):
    log = tmp_path / "judges.jsonl"
    log.write_text(
        '{"at": 1.0, "event": "received", "token": "a", "learner": "ada"}\n'
        "not json\n"
        '{"event": "turn", "token": "a"}\n'
        '{"at": 2.0, "event": "verdict", "token": "a", "learner": "ada", "status": "passed"}\n'
        '{"at": 3.0, "event": "verdict", "token": "a", "learner": "ada", "status": "wrong"}\n'
    )
    assert judge_log.read(log) == {"a": {"learner": "ada", "received": 1.0, "verdict": 2.0, "status": "passed"}}


class GateLock:
    """A queue lock the test opens: its holder waits, told one run is ahead, until ``gate`` is set."""

    def __init__(self) -> None:
        self.gate = threading.Event()

    @contextmanager
    def hold(self, label, on_wait=None):
        if on_wait is not None:
            on_wait(1)
        assert self.gate.wait(60), "the test never opened the gate"
        yield


def test_a_judge_started_by_a_stopped_run_is_followed_and_kept_by_the_next_run(isolated):
    """Streamlit stops a run at its next element or session-state access when a newer one is asked for (an edit, a
    click): a stopped run cannot draw a verdict nor write the session's state. The judge runs in its own thread, so
    the next run follows the session's judge, keeps its verdict, and a press made meanwhile is judged after it:
    each press judged once, none lost."""
    from gpu.sandbox.isolation import sandbox_status
    from ui.views import judge_job

    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.text_area(key="write_kernel.draft.vector-add").input(GOOD).run()
    # As the stopped run left it: its press handed to a judge still queued, and a second press not yet judged
    lock = GateLock()
    older = judge_job.JudgeJob("vector-add", GOOD, None, sandbox_status(), [(lock, "the test's gate")])
    judge_job.jobs().add(older)
    older.start()
    at.session_state[judge_job.JUDGE_KEY] = {"token": older.token}
    at.session_state[judge_job.CLICKS_KEY] = judge_job.Clicks(pressed=2, handled=1)
    threading.Timer(1.0, lock.gate.set).start()  # the queue moves on while the next run follows the judge
    at.run()
    assert not at.exception, at.exception
    assert older.state == "done" and older.finished.is_set()
    assert any("Passed" in s.value for s in at.success), [e.value for e in at.error]
    clicks = at.session_state[judge_job.CLICKS_KEY]
    assert (clicks.pressed, clicks.handled) == (2, 2)  # the second press was judged too, after the first
    assert not at.session_state[judge_job.JUDGE_KEY]  # both verdicts kept: the session holds no judge
    before = len(judge_job.jobs())
    at.run()  # a rerun judges nothing again
    assert len(judge_job.jobs()) == before
    assert any("Passed" in s.value for s in at.success)


class CountdownLock:
    """A queue whose holder's place falls by one every ``step_s``, from ``first`` (once ``seen()``) to 1, before it
    lets it in."""

    def __init__(self, first: int, step_s: float, seen) -> None:
        self.first, self.step_s, self.seen = first, step_s, seen

    @contextmanager
    def hold(self, label, on_wait=None):
        for ahead in range(self.first, 0, -1):
            if on_wait is not None:
                on_wait(ahead)
            deadline = time.monotonic() + 60
            while ahead == self.first and not self.seen() and time.monotonic() < deadline:
                time.sleep(0.02)  # the first place stays until the page has drawn it
            time.sleep(self.step_s)
        yield


def test_a_queued_judges_place_is_drawn_again_at_most_once_a_recount(isolated, monkeypatch):
    """In a class's burst a page's place fell every few tenths of a second, and each new place was two elements (the
    page's line, the sidebar's) for its browser to draw before the verdict behind them: the page draws the first place
    at once, then a new one at most once per ``RECOUNT_S``, each lower than the last."""
    from gpu.sandbox.isolation import sandbox_status
    from ui import run_record
    from ui.views import judge_job

    drawn: list[tuple[float, int]] = []
    said = run_record.queue_message

    def counted(ahead, *args, **kwargs):
        drawn.append((time.monotonic(), ahead))
        return said(ahead, *args, **kwargs)

    monkeypatch.setattr(run_record, "queue_message", counted)
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.text_area(key="write_kernel.draft.vector-add").input(GOOD).run()
    queue = CountdownLock(12, 0.3, seen=lambda: bool(drawn))
    job = judge_job.JudgeJob("vector-add", GOOD, None, sandbox_status(), [(queue, "the test's queue")])
    judge_job.jobs().add(job)
    at.session_state[judge_job.JUDGE_KEY] = {"token": job.token}
    job.start()
    at.run()
    assert not at.exception, at.exception
    assert any("Passed" in s.value for s in at.success), [e.value for e in at.error]
    places = [ahead for _, ahead in drawn]
    assert places[0] == 12 and len(places) >= 2, places  # the first place at once, and the countdown seen
    assert places == sorted(places, reverse=True) and len(set(places)) == len(places), places
    span = drawn[-1][0] - drawn[0][0]
    assert len(drawn) <= 2 + span / judge_job.RECOUNT_S, (places, span)  # 11 more in 3.3 s: each one, before


def test_a_judge_that_cannot_run_says_why_once(isolated):
    """A judge that could not run (here: a traced test the problem does not have) fails in its thread; the page
    says why, once, and lets go of it."""
    from gpu.sandbox.isolation import sandbox_status
    from ui.views import judge_job

    at = AppTest.from_file(PAGE, default_timeout=120).run()
    job = judge_job.JudgeJob("vector-add", GOOD, None, sandbox_status(), [], trace_test="no-such-test")
    job.start()
    assert job.finished.wait(30) and job.state == "failed" and job.result is None
    assert "has no test 'no-such-test'" in job.error and "'one element'" in job.error  # names the tests there are
    judge_job.jobs().add(job)
    at.session_state[judge_job.JUDGE_KEY] = {"token": job.token}
    at.run()
    assert not at.exception, at.exception
    assert any("no-such-test" in e.value for e in at.error), [e.value for e in at.error]
    at.run()
    assert not any("no-such-test" in e.value for e in at.error)  # said once
    assert not at.session_state[judge_job.JUDGE_KEY]


def test_a_refused_source_names_the_rule_and_line(isolated):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.text_area(key="write_kernel.draft.vector-add").input("import os\n" + GOOD)
    at.button(key="write_kernel.run").click().run()
    assert not at.exception
    assert any(
        "Refused" in e.value and "(import rule, line 1)" in e.value and "allowed imports" in e.value for e in at.error
    )


def test_a_server_that_requires_a_sandbox_it_lacks_accepts_nothing(isolated, monkeypatch):
    monkeypatch.setenv(isolation.ENV_SANDBOX, "off")
    monkeypatch.setenv(isolation.ENV_REQUIRE, "1")
    from ui.views.write_kernel import cached_sandbox_status

    cached_sandbox_status.clear()
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    cached_sandbox_status.clear()
    assert not at.exception
    assert any("Submissions are off" in e.value and "bubblewrap" in e.value for e in at.error)
    assert at.button(key="write_kernel.run").disabled


def test_without_a_sandbox_the_page_warns_that_code_runs_as_you(isolated, monkeypatch):
    monkeypatch.setenv(isolation.ENV_SANDBOX, "off")
    from ui.views.write_kernel import cached_sandbox_status

    cached_sandbox_status.clear()
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    cached_sandbox_status.clear()
    assert any("runs as you" in w.value for w in at.warning)
    assert not at.button(key="write_kernel.run").disabled


def test_the_code_editor_is_drawn_when_its_bundle_is_built(isolated, monkeypatch):
    from ui.components import code_editor

    monkeypatch.delenv(code_editor.ENV_PLAIN)
    if not code_editor.BUNDLE.is_file():
        pytest.skip("the code editor's bundle is not built (`make editor`)")
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception, at.exception
    assert not at.text_area  # no plain text box: the component is there instead (AppTest cannot render it)
    protos = [
        e.proto
        for e in at.main
        if getattr(e, "type", "") == "bidi_component" or "bidi" in type(e.proto).__name__.lower()
    ]
    assert protos and protos[0].component_name == "kernel_lab.code_editor"
    assert not any(code_editor.FALLBACK_NOTE in c.value for c in at.caption)


def test_the_editor_is_sent_again_only_when_the_browser_loads_a_text(isolated, monkeypatch):
    """Typing leaves the element as it was (Streamlit sends a message it sent before by its hash; with each draft in
    it, every run after an edit carried the 500 KB bundle again); a run without the editor (another problem) makes
    the browser load the latest draft when it comes back."""
    import json

    from ui.components import code_editor

    monkeypatch.delenv(code_editor.ENV_PLAIN)
    if not code_editor.BUNDLE.is_file():
        pytest.skip("the code editor's bundle is not built (`make editor`)")

    def editor(at):
        (proto,) = [e.proto for e in at.main if getattr(e, "type", "") == "bidi_component"]
        return proto.id, json.loads(proto.json)["value"]

    at = AppTest.from_file(PAGE, default_timeout=60).run()
    first_id, loaded = editor(at)
    assert "def vector_add(a, b, out)" in loaded
    at.session_state["write_kernel.draft.vector-add.0"] = {"value": WRONG}  # what the browser sends as one types
    at.run()
    at.run()
    assert editor(at) == (first_id, loaded)  # the same element: the browser keeps its own text
    assert at.session_state["write_kernel.drafts"]["vector-add"] == WRONG  # the draft follows the typing
    at.selectbox(key="write_kernel.problem").set_value("matmul").run()
    at.selectbox(key="write_kernel.problem").set_value("vector-add").run()
    assert editor(at)[1] == WRONG  # drawn afresh: the browser loads the draft it had


def test_without_the_bundle_the_page_falls_back_to_a_text_box_and_says_so(isolated, monkeypatch):
    from ui.components import code_editor

    monkeypatch.delenv(code_editor.ENV_PLAIN)
    monkeypatch.setattr(code_editor, "BUNDLE", code_editor.BUNDLE.with_name("missing.js"))
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    assert "def vector_add(a, b, out)" in at.text_area(key="write_kernel.draft.vector-add").value
    assert any("make run" in c.value for c in at.caption)


def test_markers_for_a_refusal_a_race_and_a_mismatch():
    from types import SimpleNamespace as NS

    from gpu.sandbox.verdict import Verdict
    from ui.components.code_editor import Marker
    from ui.views.write_kernel import markers_for

    assert markers_for(None) == []
    refused = Verdict(
        "vector-add", "simulator", status="refused", refusal={"rule": "import", "line": 1, "message": "no os"}
    )
    assert markers_for(refused) == [Marker(1, "refusal", "import rule: no os")]
    who = lambda line: NS(line=line)  # noqa: E731
    report = NS(
        races=[NS(first=who(14), second=who(18))],
        sectors=[NS(kind="read", array="a", line=13), NS(kind="write", array="out", line=22)],
    )
    wrong = Verdict(
        "shared",
        "simulator",
        status="wrong",
        mismatch={"test": "t", "output": "out", "index": [0], "expected": 1.0, "got": 2.0},
    )
    marks = markers_for(wrong, report)
    assert [(m.line, m.kind) for m in marks] == [(14, "race"), (18, "race"), (22, "mismatch")]
    # a kernel that failed (the simulator's fault names its line): that line, with the fault's words, trace or not
    failed = Verdict("vector-add", "simulator", status="wrong",
                     mismatch={"test": "t", "error": "the kernel failed: undefined (…, line 13): x << 64", "line": 13})
    assert markers_for(failed) == [Marker(13, "mismatch", "the kernel failed: undefined (…, line 13): x << 64")]
    assert markers_for(failed, NS(races=[], sectors=[])) == markers_for(failed)
