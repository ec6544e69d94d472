"""Write a kernel's progress for the learner: solved / tried / new per problem, a next problem after a pass, and the
hint in three stages, each opened on purpose and recorded (``gpu.sandbox.progress``: kept in SQLite, so a reload or
a restarted server keeps them)."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from gpu.problems.base import HINT_STAGES, Problem
from gpu.sandbox.progress import NEW, SOLVED, TRIED, ProgressStore
from gpu.service.learners import LearnerId
from gpu.service.store import StoreError

MARKS = {SOLVED: "solved", TRIED: "tried", NEW: "new"}
HINTS_SEEN = "write_kernel.hints"  # (problem) -> stages opened, for a session with nobody to file them under
DRAWN = "write_kernel.progress_drawn"  # (learner, problem key, mark): what the picker's chosen line said this run


def progress_of(learner: LearnerId | None) -> dict[str, str]:
    """Problem key -> solved / tried for ``learner`` (new when absent); empty when nobody or the store is down."""
    if learner is None:
        return {}
    try:
        return ProgressStore().progress(learner.key)
    except StoreError:
        return {}


def last_source(learner: LearnerId | None, problem: Problem) -> str | None:
    """The learner's latest submission of ``problem`` (a reload's draft), or None."""
    if learner is None:
        return None
    try:
        latest = ProgressStore().attempts(learner.key, problem.key, limit=1)
    except StoreError:
        return None
    return latest[0].source if latest else None


def label(problem: Problem, progress: dict[str, str]) -> str:
    """The problem picker's line: "3. Guard — solved"."""
    return f"{problem.order}. {problem.title} — {MARKS[progress.get(problem.key, NEW)]}"


def mark_drawn(learner: LearnerId | None, problem: Problem, progress: dict[str, str]) -> None:
    """The mark the picker's chosen line was drawn with in this run (``mark_stale`` compares it with the store's)."""
    st.session_state[DRAWN] = (learner, problem.key, progress.get(problem.key, NEW))


def mark_stale() -> bool:
    """Whether the picker was drawn with another mark than the store has now: a verdict kept after it was drawn
    (new -> tried, tried -> solved) needs the page drawn again."""
    drawn = st.session_state.get(DRAWN)
    if drawn is None or drawn[0] is None:
        return False
    learner, key, mark = drawn
    return progress_of(learner).get(key, NEW) != mark


def next_problem(current: Problem, listed: Sequence[Problem], progress: dict[str, str]) -> Problem | None:
    """The first problem after ``current`` not yet solved, else the first unsolved before it, else None."""
    later = [p for p in listed if p.order > current.order] + [p for p in listed if p.order < current.order]
    return next((p for p in later if progress.get(p.key) != SOLVED), None)


def show_next(current: Problem, listed: Sequence[Problem], progress: dict[str, str], picker_key: str) -> None:
    """After a pass: a button to the next problem. Its callback sets the picker; the press, in Write a kernel's Run
    panel (a fragment, which a press reruns alone), then has the whole page drawn again with it."""
    following = next_problem(current, listed, progress)
    if following is None:
        st.success("Every problem solved. The leaderboards are below each problem.", icon=":material/celebration:")
        return

    def go() -> None:
        st.session_state[picker_key] = following.key

    if st.button(f"Next problem: {following.order}. {following.title}", on_click=go, type="primary",
                 icon=":material/arrow_forward:", key="write_kernel.next"):
        st.rerun()


def show_hints(problem: Problem, learner: LearnerId | None) -> None:
    """The hint in stages: each stage behind its own button, opened on purpose, recorded for the learner."""
    store = ProgressStore()
    seen = st.session_state.setdefault(HINTS_SEEN, {})
    try:
        opened = store.hints_opened(learner.key, problem.key) if learner else seen.get(problem.key, 0)
    except StoreError:
        opened = seen.get(problem.key, 0)
    stages = problem.hint.stages
    st.markdown(f"**Hints** ({opened} of {len(stages)} opened): a nudge, then the idea, then the line. "
                "Open the next only when the last did not help.")
    for stage, text in enumerate(stages[:opened], start=1):
        st.markdown(f"{stage}. *{HINT_STAGES[stage - 1].capitalize()}*: {text}")
    if opened < len(stages):
        if st.button(f"Show {HINT_STAGES[opened]}", key=f"write_kernel.hint.{problem.key}.{opened + 1}",
                     icon=":material/lightbulb:"):
            seen[problem.key] = opened + 1
            if learner is not None:
                try:
                    store.open_hint(learner.key, problem.key, opened + 1)
                except StoreError:
                    pass
            st.rerun()


__all__ = ["label", "last_source", "mark_drawn", "mark_stale", "next_problem", "progress_of", "show_hints", "show_next"]
