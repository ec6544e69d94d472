"""Widgets of the Write-a-kernel page: problem, editor with drafts, sandbox notice, verdict, leaderboard.

The Run button, where the judge is and the verdict are one fragment (``ui/views/run_panel.py``): a press reruns them,
not the page.

The learner's code never runs in this (Streamlit) process: ``gpu.sandbox.service.submit``
(the same call as ``python -m gpu solve``) starts a fresh sandboxed process per submission,
under the same device lock as every run, and a second one for its compiler's facts and trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pandas as pd
import streamlit as st

import gpu
from gpu.core.safe_text import shown
from gpu.core.timing import format_seconds
from gpu.problems import problems
from gpu.problems.base import Problem
from gpu.sandbox.isolation import ENV_REQUIRE, HOW_TO_ENABLE, SandboxStatus, sandbox_status
from gpu.sandbox.service import Submission
from gpu.sandbox.verdict import Verdict, mismatch_text
from gpu.service.learners import LearnerId
from ui import glossary
from ui.components.code_editor import FALLBACK_NOTE, EditorResult, Marker, available, code_editor
from ui.downloads import download

PREFIX = "write_kernel"
PROBLEM_KEY = f"{PREFIX}.problem"
DRAFTS_KEY = f"{PREFIX}.drafts"  # problem key -> source, for every problem this session edited
MAX_UPLOAD_BYTES = 64 * 1024
EDITOR_HELP = "Python with Numba CUDA: imports from numba and math, constants, and @cuda.jit functions."
# The toolbar's running figure, hidden on this page (the toolbar's Stop stays): the page says where a submission
# is in its own words (the queue's line, the judge's status box, the facts' line), and the figure, redrawn five times
# a second, costs every waiting learner's browser. Four pages of Write a kernel queued behind a held lock, 15 s,
# headless Chromium on this 2-core machine: 2.38 s of the browser's CPU with it, 0.98 and 1.09 s without (1.07 s with
# the whole status widget hidden: no more saved). A style alone goes to the page's event container: it leaves with
# the page.
QUIET_TOOLBAR = "<style>[data-testid='stStatusWidgetRunningIcon'] { display: none; }</style>"


def draft_key(problem: Problem) -> str:
    """The editor's (or text area's) key: one draft per problem, kept across reruns and problem switches."""
    return f"{PREFIX}.draft.{problem.key}"


def waited_key(problem: Problem) -> str:
    """How long this session's last submission for ``problem`` waited for its turn (``JudgeJob.waited``)."""
    return f"{PREFIX}.waited.{problem.key}"


def submission_key(problem: Problem) -> str:
    """This session's last submission for ``problem``: one ``Submission`` (its verdict, and its trace once the
    analysis came), replaced whole, never matched up from parts."""
    return f"{PREFIX}.submission.{problem.key}"


@st.cache_resource(max_entries=2, show_spinner="Testing the sandbox…")
def cached_sandbox_status(simulated: bool) -> SandboxStatus:
    """Tested once per app process (it starts one sandboxed process)."""
    return sandbox_status(simulated)


def pick_problem(progress: dict[str, str] | None = None, learner: LearnerId | None = None) -> Problem:
    """The problem picker; each line says solved / tried / new for ``learner`` (``progress``, None: no marks)."""
    from ui.views.progress import label, mark_drawn

    listed = problems()
    keys = [p.key for p in listed]
    by_key = {p.key: p for p in listed}

    def line(k: str) -> str:
        return label(by_key[k], progress) if progress is not None else f"{by_key[k].order}. {by_key[k].title}"

    if PROBLEM_KEY in st.session_state:
        # Set again before it is drawn, so the browser shows the chosen line as it reads now: Streamlit's frontend
        # keeps a keyed selectbox's old label when only the labels changed (every other run showed "— new" after
        # a pass, in Streamlit 1.67)
        st.session_state[PROBLEM_KEY] = st.session_state[PROBLEM_KEY]
    key = st.selectbox("Problem", keys, format_func=line, key=PROBLEM_KEY)
    if progress is not None:
        mark_drawn(learner, by_key[key], progress)
    return by_key[key]


def show_statement(problem: Problem, learner: LearnerId | None = None) -> None:
    st.markdown(problem.statement)
    cols = st.columns(2)
    cols[0].markdown(f"**Kernel** `{problem.signature}`  \n**Arguments** {problem.arguments}")
    choice = (
        f"  \nSet `THREADS_PER_BLOCK` to one of {', '.join(map(str, problem.thread_choices))}."
        if problem.thread_choices
        else ""
    )
    cols[1].markdown(f"**Launch** {problem.launch_text}.{choice}  \n**Equal means** {problem.tolerance.describe()}.")
    with st.expander("Hints and tests", icon=":material/lightbulb:"):
        from ui.views.progress import show_hints

        show_hints(problem, learner)
        sizes = "; ".join(f"{c.name} ({', '.join(f'{k} = {v:,}' for k, v in c.sizes.items())})" for c in problem.tests)
        st.caption(f"Tests: {sizes}. Inputs are fresh random values for every run, from a seed your code never sees.")


def quiet_toolbar() -> None:
    """Hide the toolbar's animated running figure on this page (``QUIET_TOOLBAR``)."""
    st.html(QUIET_TOOLBAR)


def sandbox_notice(status: SandboxStatus) -> bool:
    """Say how submissions run here; False when they cannot run at all (a demo without a sandbox)."""
    if status.works:
        st.caption(f":material/shield: Submissions run in a fresh sandboxed process: {status.reason}.")
        return True
    if not status.accepts:
        st.error(
            f"**Submissions are off on this server**: the sandbox does not work here ({status.reason}). "
            f"The administrator can {HOW_TO_ENABLE}, then restart the app. "
            f"(`{ENV_REQUIRE}=1`, set by `make demo`, keeps untrusted code off a server without one.)",
            icon=":material/block:",
        )
        return False
    st.warning(
        f"**No sandbox: your kernel runs as you, on this computer**, in a separate process with time and "
        f"size limits but with your files and network ({status.reason}). Fine for your own code on your "
        f"own machine; never serve this to others without it.",
        icon=":material/warning:",
    )
    return True


def editor(problem: Problem, markers: Sequence[Marker] = (), last: str | None = None) -> EditorResult:
    """The draft: a code editor (kept per problem; a text area without the bundle), upload, download, a preview.
    ``last``: the learner's latest submission of this problem, the draft of a new session (else the starter)."""
    key = draft_key(problem)
    first = last or problem.starter
    # Streamlit forgets a widget's value on a run where the widget is not drawn (another problem
    # is shown), so drafts live in a plain session dict and seed the editor when it returns.
    drafts = st.session_state.setdefault(DRAFTS_KEY, {})
    code = available()  # the bundle is built by the Makefile (`make run`), not committed
    if not code and key not in st.session_state:
        st.session_state[key] = drafts.get(problem.key, first)
    uploaded = st.file_uploader(
        "Load a .py file",
        type=["py"],
        max_upload_size=1,  # MB, the browser's own refusal (it said "200MB per file"); the 64 KiB cap is checked below
        key=f"{PREFIX}.upload.{problem.key}",
        help=f"Replaces the draft below (at most {MAX_UPLOAD_BYTES // 1024} KiB).",
    )
    seen_key = f"{PREFIX}.uploaded.{problem.key}"
    if uploaded is not None and st.session_state.get(seen_key) != uploaded.file_id:
        st.session_state[seen_key] = uploaded.file_id
        data = uploaded.getvalue()
        if len(data) > MAX_UPLOAD_BYTES:
            st.error(f"{uploaded.name} is {len(data):,} bytes; a kernel file may be at most {MAX_UPLOAD_BYTES:,}.")
        else:
            try:
                st.session_state[key] = drafts[problem.key] = data.decode("utf-8")
            except UnicodeDecodeError:
                st.error(f"{uploaded.name} is not UTF-8 text.")
    if code:
        st.markdown(
            "**Your kernel**",
            help=EDITOR_HELP + " Ctrl+Enter (Cmd+Enter) runs it; Tab and Shift+Tab indent and dedent.",
        )
        edited = code_editor(
            drafts.get(problem.key, first), key=key, height=380, markers=markers, label="Your kernel"
        )
    else:
        edited = EditorResult(
            st.text_area(
                "Your kernel",
                key=key,
                height=380,
                help=EDITOR_HELP + " Press Ctrl+Enter (or click outside) to keep your edits.",
            ),
            run_requested=False,
        )
        st.caption(FALLBACK_NOTE)
    source = edited.source
    drafts[problem.key] = source
    cols = st.columns([1, 1, 3])
    download("Download .py", source, f"{problem.kernel_name}.py", "text/x-python", key=f"{PREFIX}.download",
             where=cols[0])
    if cols[1].button(
        "Start over",
        key=f"{PREFIX}.reset.{problem.key}",
        icon=":material/restart_alt:",
        help="Replace the draft with the problem's starter code",
    ):
        st.session_state.pop(key, None)
        drafts.pop(problem.key, None)
        st.rerun()
    if not code:  # the editor highlights; the text area does not
        with st.expander("Highlighted preview", icon=":material/code:"):
            st.code(source, language="python", line_numbers=True)
    return edited


def markers_for(verdict: Verdict | None, report=None) -> list[Marker]:
    """The lines to mark in the editor: a refusal's line, the line where the kernel failed (a fault or an error), the
    races' two lines, the store sites of a mismatched output.

    ``report`` is the submission's TraceReport (races and store sites come from the trace), or None.
    """
    if verdict is None:
        return []
    marks = []
    r = verdict.refusal or {}
    if verdict.status == "refused" and r.get("line"):
        marks.append(Marker(int(r["line"]), "refusal", f"{r.get('rule', 'sandbox')} rule: {r.get('message', '')}"))
    miss = verdict.mismatch or {}
    if verdict.status == "wrong" and miss.get("error") and miss.get("line"):
        marks.append(Marker(int(miss["line"]), "mismatch", str(miss["error"])))
    if report is None:
        return marks
    for race in report.races:
        marks += [Marker(race.first.line, "race", str(race)), Marker(race.second.line, "race", str(race))]
    if miss.get("output"):
        marks += [
            Marker(s.line, "mismatch", f"writes {miss['output']}; first mismatch: {mismatch_text(miss)}")
            for s in report.sectors
            if s.kind == "write" and s.array == miss["output"]
        ]
    return marks


def marks_drawn(problem: Problem, markers: Sequence[Marker]) -> None:
    """The line marks the editor was drawn with in this run (``marks_stale`` compares them with the verdict's)."""
    st.session_state[f"{PREFIX}.marked.{problem.key}"] = list(markers)


def marks_stale(problem: Problem) -> bool:
    """Whether the code editor was drawn with other line marks than this session's last verdict has."""
    return available() and st.session_state.get(f"{PREFIX}.marked.{problem.key}", []) != line_markers(problem)


def line_markers(problem: Problem) -> list[Marker]:
    """This session's markers for the problem's last verdict."""
    from gpu.trace.report import TraceReport

    done = st.session_state.get(submission_key(problem))
    if done is None:
        return []
    return markers_for(done.verdict, done.trace if isinstance(done.trace, TraceReport) else None)


ANALYSIS_FOLLOWS = " · the compiler's facts and the memory trace follow"


def analysed(verdict: Verdict) -> bool:
    """Whether the compiler's facts and the trace follow this verdict (they do for a kernel that ran)."""
    return verdict.status in ("passed", "wrong")


SAME_AS_ABOVE = "the same as the test above"


def tests_table(tests: list[dict]) -> pd.DataFrame:
    """One row per test: its size, pass or FAIL, and why; a failure whose text is the failing test's just above it
    (a loop that never ends fails every test in the same words) says so instead of repeating it."""
    rows, previous = [], None
    for t in tests:
        text = "" if t["passed"] else shown(t["message"])
        rows.append({
            "Test": t["name"],
            "Size": ", ".join(f"{k} = {v:,}" for k, v in t["sizes"].items()),
            "Result": "pass" if t["passed"] else "FAIL",
            "Details": SAME_AS_ABOVE if text and text == previous else text,
        })
        previous = text
    return pd.DataFrame(rows)


def show_verdict(done: Submission, analysis: bool = True, waited: str = "") -> None:
    """Pass/fail per test; on a GPU the timing against the lab's kernel; in the simulator the compiler's facts and
    the memory trace.

    While its compiler's facts and trace are still coming (``ui/views/analysis.py``), where they are instead;
    ``analysis=False``: the verdict alone. ``waited``: how long the judge waited for its turn ("": it did not).
    """
    verdict = done.verdict
    if verdict.status == "passed":
        st.success(f"**Passed**: {verdict.message}.", icon=":material/check_circle:")
    elif verdict.status == "refused":
        r = verdict.refusal or {}
        where = f", line {r['line']}" if r.get("line") else ""
        st.error(
            f"**Refused** ({r.get('rule', 'sandbox')} rule{where}): {shown(r.get('message', verdict.message))}",
            icon=":material/block:",
        )
        stopped = str(r.get("rule", "")).endswith("-limit")  # it ran, and the sandbox stopped it at a limit
        st.caption(("It ran until the sandbox stopped it; nothing was saved." if stopped else
                    "Nothing ran and nothing was saved.") + " `python -m gpu solve` prints the same line."
                   + (f" It {waited}." if waited else ""))
        return
    elif verdict.status == "wrong":
        passed = sum(1 for t in verdict.tests if t["passed"])
        st.error(
            f"**Wrong result**: {passed} of {len(verdict.tests)} tests passed."
            if verdict.tests
            else f"**Wrong result**: {verdict.message}",
            icon=":material/error:",
        )
    else:
        st.warning(f"**Could not finish**: {verdict.message}", icon=":material/warning:")
    if verdict.tests:
        st.table(tests_table(verdict.tests), hide_index=True)  # a few rows of text: a plain table reads best
    if verdict.mismatch and "index" in verdict.mismatch:
        m = verdict.mismatch
        st.markdown(f"**First mismatch** in *{m['test']}*: {shown(mismatch_text(m))}.")
    for note in verdict.notes:  # e.g. a negative index that wrapped: right in Numba, a bug in CUDA C
        st.info(shown(note), icon=":material/info:")
    if verdict.timing:
        show_timing(verdict.timing)
    elif verdict.backend == "simulator" and verdict.status == "passed":
        st.info(
            "Simulator: correctness only. Simulated time is not GPU performance, so nothing is "
            "timed or ranked by speed here.",
            icon=":material/info:",
        )
    from ui.views import analysis as background

    if background.pending(verdict.problem) is not None:  # still coming: where they are, polled in a fragment
        from gpu.problems import get

        background.show(verdict.problem, lambda job: keep_analysis(get(verdict.problem), job),
                        stale=lambda: marks_stale(get(verdict.problem)))
    elif analysis:
        show_compile_facts(verdict)
        from ui.views.trace import show_submission_trace  # what the trace shows

        show_submission_trace(verdict.problem, done.trace)
        background.sent()  # (the judge log's milestone, when this run drew a finished analysis)
    st.caption(
        f"Sandbox: {verdict.sandbox or 'none'}"
        + (f" · judged in {format_seconds(verdict.wall_s)} by its sandboxed process (the queue not counted)"
           if verdict.wall_s else "")
        + (f" · {waited}" if waited else "")
        + (f" · {verdict.threads_per_block} threads per block" if verdict.threads_per_block else "")
    )


def show_timing(timing: dict) -> None:
    cols = st.columns(4)
    cols[0].metric(
        "Kernel time",
        format_seconds(timing["median_s"]),
        help=f"median of {timing['samples']} timed runs, "
        "each after a fresh sentinel fill, L2 flushed, timed by the lab's events",
    )
    cols[1].metric(
        "Bandwidth",
        f"{timing['gbps']:,.1f} GB/s",
        help=f"{timing['bytes']:,} bytes the problem must move at least, over the time",
    )
    pct = timing.get("percent_of_peak")
    cols[2].metric(
        "Share of peak",
        f"{pct:.0f} %" if pct is not None else "—",
        help=f"of the {timing['peak_gbps']:,.0f} GB/s memory peak" if timing.get("peak_gbps") else "peak unknown",
    )
    ratio = timing.get("ratio_to_reference")
    cols[3].metric(
        "Time vs the lab's kernel",
        f"{ratio:.2f}×" if ratio else "—",
        help="your time / the reference solution's time (lower is faster)",
    )
    if timing.get("gflops"):
        st.caption(f"{timing['gflops']:,.1f} GFLOP/s ({timing['flops']:,} floating-point operations at least).")
    if timing.get("faster_than_roof"):
        st.warning(
            "Faster than the memory roof allows for the bytes this problem must move: flagged and not ranked.",
            icon=":material/flag:",
        )


def show_compile_facts(verdict: Verdict) -> None:
    facts = verdict.compile_facts
    if facts:
        glossary.markdown(
            f"**What the compiler says** for {facts['target']} ({facts['compiler']}), without running on a GPU"
        )
        cols = st.columns(4)
        cols[0].metric("Registers per thread", facts["registers_per_thread"])
        cols[1].metric("Spilled to local memory", f"{facts['spilled_bytes']:,} bytes",
                       help=glossary.help_for("Spilled to local memory"))
        cols[2].metric("Shared memory per block", f"{facts['shared_memory_bytes']:,} bytes")
        occupancy = (facts["occupancy"] or "—").split(" (")
        cols[3].metric(
            "Theoretical occupancy",
            occupancy[0],
            help=glossary.help_for("occupancy", f"at {facts['threads_per_block']} threads per block"
                                   + (f"; {occupancy[1].rstrip(')')}" if len(occupancy) > 1 else "")),
        )
        st.caption("Static facts from the compiler, not measurements.")
    elif verdict.compile_facts_note and verdict.status in ("passed", "wrong"):
        note = verdict.compile_facts_note[0].upper() + verdict.compile_facts_note[1:]
        if verdict.compile_facts_status == "unavailable":  # the lab lacks the compiler: not the learner's kernel
            st.info(f"**What the compiler says**: {note}.", icon=":material/build:")
        elif verdict.compile_facts_status == "rejected":
            st.warning(f"**What the compiler says**: {note}.", icon=":material/error:")
        else:
            st.caption(f"Compiler facts: {verdict.compile_facts_note}.")


def show_leaderboard(problem: Problem, device: str) -> None:
    from gpu.sandbox.submissions import SubmissionStore
    from gpu.service.store import StoreError

    st.subheader("Leaderboard")
    try:
        entries = SubmissionStore().leaderboard(problem.key, device)
    except StoreError as exc:
        st.warning(f"The leaderboard is unavailable: {exc}")
        return
    if gpu.BACKEND.simulated:
        st.caption(f"{device}: passing submissions in the order they passed (the simulator does not time kernels).")
    else:
        st.caption(
            f"{device}: fastest passing submissions (a result faster than the memory roof allows is not ranked)."
        )
    if not entries:
        st.info("No passing submission for this problem on this device yet.")
        return
    if gpu.BACKEND.simulated:  # no timing to show: rank, name and when (the caption says why)
        rows = [
            {"Rank": i + 1, "Name": shown(e.name), "Passed at (UTC)": e.created_at.replace("T", " ")[:16]}
            for i, e in enumerate(entries)
        ]
    else:
        rows = [
            {
                "Rank": i + 1,
                "Name": shown(e.name),
                "Kernel time": format_seconds(e.median_s) if e.median_s else "not timed",
                "GB/s": f"{e.gbps:,.1f}" if e.gbps else "—",
                "Share of peak": f"{e.percent_of_peak:.0f} %" if e.percent_of_peak else "—",
                "vs the lab's kernel": f"{e.ratio_to_reference:.2f}×" if e.ratio_to_reference else "—",
                "Passed at (UTC)": e.created_at.replace("T", " ")[:16],
            }
            for i, e in enumerate(entries)
        ]
    st.table(pd.DataFrame(rows), hide_index=True)


def keep_analysis(problem: Problem, job) -> None:
    """A finished analysis: the submission with its verdict (carrying the compiler's facts) and its trace replaces
    the session's."""
    judged = st.session_state.get(submission_key(problem))
    if judged is None or judged.verdict.problem != problem.key:  # (the session's state was cleared meanwhile)
        return
    if job.state == "done":
        st.session_state[submission_key(problem)] = replace(judged, verdict=job.verdict, trace=job.trace)
        return
    why = job.error
    verdict = judged.verdict.with_facts(None, f"the compiler's facts are unavailable: {why}", "unavailable")
    st.session_state[submission_key(problem)] = replace(judged, verdict=verdict, trace=f"not traced: {why}")


__all__ = [
    "cached_sandbox_status",
    "draft_key",
    "analysed",
    "editor",
    "line_markers",
    "markers_for",
    "marks_drawn",
    "marks_stale",
    "pick_problem",
    "quiet_toolbar",
    "sandbox_notice",
    "show_leaderboard",
    "show_statement",
    "show_verdict",
    "submission_key",
    "waited_key",
]

