"""Write a kernel for a learner, in AppTest: progress and hints kept across a reload (a new session on the same
database), the facts and trace arriving after the verdict without holding the page; on a class's demo a name is
needed, claimed once, refused to another browser; the class view exists only for the teacher."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from gpu.sandbox import isolation
from tests.analysis_wait import wait_for_analysis

ROOT = Path(__file__).resolve().parent.parent
PAGE = str(ROOT / "pages/9_Write_a_kernel.py")
CLASS_PAGE = str(ROOT / "pages/10_Class.py")
GOOD = """from numba import cuda

THREADS_PER_BLOCK = 128


@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] + b[i]
"""
WRONG = GOOD.replace("a[i] + b[i]", "a[i] - b[i]")


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_DB", str(tmp_path / "h.sqlite3"))
    monkeypatch.setenv("KERNEL_LAB_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("KERNEL_LAB_PLAIN_EDITOR", "1")
    monkeypatch.delenv(isolation.ENV_REQUIRE, raising=False)
    monkeypatch.delenv(isolation.ENV_SANDBOX, raising=False)
    monkeypatch.delenv("KERNEL_LAB_CLASS", raising=False)
    monkeypatch.delenv("KERNEL_LAB_TEACHER_TOKEN", raising=False)
    return tmp_path


def picker_lines(at: AppTest) -> list[str]:
    return list(at.selectbox(key="write_kernel.problem").options)  # as the picker shows them


def test_progress_and_hints_survive_a_reload_and_the_next_problem_follows_a_pass(isolated):
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert "1. Vector add — new" in picker_lines(at)
    at.button(key="write_kernel.hint.vector-add.1").click().run()  # the nudge, opened on purpose
    assert any("1 of 3 opened" in m.value for m in at.markdown)
    assert not any("out[i] = a[i] + b[i]`." in m.value for m in at.markdown)  # the line is not given away yet
    at.text_area(key="write_kernel.draft.vector-add").input(GOOD)
    at.button(key="write_kernel.run").click().run()
    assert any("Passed" in s.value for s in at.success), [e.value for e in at.error]
    assert at.button(key="write_kernel.next").label.startswith("Next problem: 2.")
    wait_for_analysis(at)
    # the facts arrived after the verdict (or, when the loaded machine held the compiler back, why not)
    assert any("What the compiler says" in e.value for e in [*at.markdown, *at.info]), [i.value for i in at.info]
    assert "1. Vector add — solved" in picker_lines(at)  # the page drawn again once the verdict was kept
    at.button(key="write_kernel.next").click().run()
    assert at.selectbox(key="write_kernel.problem").value == "map"  # the picker, set again before it is drawn

    again = AppTest.from_file(PAGE, default_timeout=120).run()  # a reload: a new session, the same database
    assert "1. Vector add — solved" in picker_lines(again)
    assert any("1 of 3 opened" in m.value for m in again.markdown)


def test_a_wrong_answer_marks_the_problem_tried(isolated):
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.text_area(key="write_kernel.draft.vector-add").input(WRONG)
    at.button(key="write_kernel.run").click().run()
    assert any("Wrong result" in e.value for e in at.error)
    assert "1. Vector add — tried" in picker_lines(AppTest.from_file(PAGE, default_timeout=60).run())


def test_on_a_class_demo_a_name_is_needed_and_kept_and_a_taken_one_is_refused(isolated, monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_CLASS", "1")
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert at.button(key="write_kernel.run").disabled
    assert any("Pick your name" in i.value for i in at.info)
    at.sidebar.text_input(key="learner.name").input("Ada")
    at.sidebar.button[0].click().run()
    assert not at.button(key="write_kernel.run").disabled
    assert any("Ada" in m.value for m in at.sidebar.markdown)

    other = AppTest.from_file(PAGE, default_timeout=60).run()  # another browser: no cookie, so another secret
    other.sidebar.text_input(key="learner.name").input("ada")
    other.sidebar.button[0].click().run()
    assert any("taken" in e.value for e in other.sidebar.error)
    assert other.button(key="write_kernel.run").disabled


def test_the_class_page_shows_nothing_without_the_teachers_token(isolated, monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_CLASS", "1")
    at = AppTest.from_file(CLASS_PAGE, default_timeout=60).run()
    assert not at.exception and not at.dataframe and not at.get("download_button")
    monkeypatch.setenv("KERNEL_LAB_TEACHER_TOKEN", "s3cret-token")
    at = AppTest.from_file(CLASS_PAGE, default_timeout=60)
    at.query_params["teacher"] = "wrong"
    at.run()
    assert not at.dataframe
    at = AppTest.from_file(CLASS_PAGE, default_timeout=60)
    at.query_params["teacher"] = "s3cret-token"
    at.run()
    assert not at.exception, at.exception
    assert any("No submissions yet" in i.value for i in at.info)


def test_the_class_page_counts_both_learners_and_shows_no_code(isolated, monkeypatch):
    from gpu.sandbox.progress import ProgressStore
    from gpu.sandbox.verdict import Verdict

    monkeypatch.setenv("KERNEL_LAB_CLASS", "1")
    monkeypatch.setenv("KERNEL_LAB_TEACHER_TOKEN", "s3cret-token")
    store = ProgressStore()
    passed = Verdict("vector-add", "simulator", status="passed", message="all 5 tests passed")
    oob = Verdict("vector-add", "simulator", status="wrong", message="out of bounds at line 7",
                  mismatch={"error": "the kernel failed: out of bounds (thread (3, 0, 0))"})
    store.record("ada", "Ada", passed, "SECRET_CODE_OF_ADA")
    store.record("bob", "Bob", oob, "SECRET_CODE_OF_BOB")
    at = AppTest.from_file(CLASS_PAGE, default_timeout=60)
    at.query_params["teacher"] = "s3cret-token"
    at.run()
    assert not at.exception, at.exception
    per_problem = at.dataframe[0].value
    row = per_problem[per_problem["Problem"] == "1. Vector add"].iloc[0]
    assert (row["Solved"], row["Tried, not solved"]) == (1, 1) and "out of bounds ×1 (e.g. Bob" in row[
        "Most common failures"]
    learners = at.dataframe[2].value
    assert set(learners["Learner"]) == {"Ada", "Bob"}
    shown = " ".join(str(df.value.to_csv()) for df in at.dataframe) + " ".join(m.value for m in at.markdown)
    assert "SECRET_CODE" not in shown


def test_a_reload_drafts_the_latest_submission(isolated):
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.text_area(key="write_kernel.draft.vector-add").input(WRONG)
    at.button(key="write_kernel.run").click().run()
    again = AppTest.from_file(PAGE, default_timeout=60).run()
    assert again.text_area(key="write_kernel.draft.vector-add").value == WRONG
