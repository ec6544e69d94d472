"""The teacher's class view: where a class stands on Write a kernel, read from the same store as the learners'
progress (``gpu.sandbox.progress``). Per problem: how many solved, tried, stuck, and the most common failure kinds
with an example each; per learner: their latest submission and verdict; every submission as CSV. No code is shown:
the view quotes each verdict's one line."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from gpu.problems import problems
from gpu.sandbox.progress import STUCK_AFTER, Attempt, ProgressStore, class_summary, csv_text, latest_per_learner
from ui.downloads import download


def problems_frame(attempts: list[Attempt], hints: dict | None = None) -> pd.DataFrame:
    """One row per problem: solved, tried, stuck, how far learners opened its hint (``hints``: problem -> Counter of
    the highest stage each learner opened), and its two most common failure kinds with an example."""
    listed = problems()
    titles = {p.key: f"{p.order}. {p.title}" for p in listed}
    rows = []
    for row in class_summary(attempts, [p.key for p in listed]):
        kinds = [f"{kind} ×{n} (e.g. {name}: {detail[:90]})" for kind, n, name, detail in row.kinds[:2]]
        opened = (hints or {}).get(row.problem, {})
        rows.append({"Problem": titles[row.problem], "Solved": row.solved, "Tried, not solved": row.tried,
                     "Stuck": row.stuck,
                     "Hints opened (nudge / idea / line)": " / ".join(str(opened.get(k, 0)) for k in (1, 2, 3)),
                     "Most common failures": " · ".join(kinds) or "—"})
    return pd.DataFrame(rows)


def kinds_frame(attempts: list[Attempt]) -> pd.DataFrame:
    """Every failure kind across the class, most common first, with the latest example of each."""
    counts: dict[str, list[Attempt]] = {}
    for a in attempts:
        if a.kind != "passed":
            counts.setdefault(a.kind, []).append(a)
    rows = [{"Failure": kind, "Submissions": len(seen), "Learners": len({a.learner for a in seen}),
             "Example": f"{seen[-1].name}, {seen[-1].problem}: {seen[-1].detail}"}
            for kind, seen in sorted(counts.items(), key=lambda kv: -len(kv[1]))]
    return pd.DataFrame(rows)


def learners_frame(attempts: list[Attempt]) -> pd.DataFrame:
    solved: dict[str, set[str]] = {}
    for a in attempts:
        if a.status == "passed":
            solved.setdefault(a.learner, set()).add(a.problem)
    titles = {p.key: f"{p.order}. {p.title}" for p in problems()}
    rows = [{"Learner": a.name, "Problems solved": len(solved.get(a.learner, ())),
             "Latest problem": titles.get(a.problem, a.problem), "Verdict": a.kind,
             "At (UTC)": a.created_at.replace("T", " ")[:19], "Detail": a.detail[:120]}
            for a in latest_per_learner(attempts)]
    return pd.DataFrame(rows)


def show_class() -> None:
    store = ProgressStore()
    attempts = store.every_attempt()
    if not attempts:
        st.info("No submissions yet: when learners press Run on Write a kernel, where they stand appears here.",
                icon=":material/school:")
        return
    learners = len({a.learner for a in attempts})
    st.caption(f"{len(attempts):,} submissions by {learners} learner{'s' if learners != 1 else ''}. "
               f"Stuck: tried {STUCK_AFTER} times or more without a pass.")
    st.subheader("Per problem")
    st.dataframe(problems_frame(attempts, store.hint_counts()), hide_index=True, width="stretch")
    st.caption("Hints opened: how many learners went as far as each stage of the problem's hint.")
    st.subheader("Where the class goes wrong")
    st.dataframe(kinds_frame(attempts), hide_index=True, width="stretch")
    st.subheader("Per learner: the latest submission")
    st.dataframe(learners_frame(attempts), hide_index=True, width="stretch")
    download("Download every submission (CSV)", csv_text(attempts), "class-submissions.csv", "text/csv",
             key="class.csv")  # verdicts, not measurements: no methodology stamp


__all__ = ["kinds_frame", "learners_frame", "problems_frame", "show_class"]
