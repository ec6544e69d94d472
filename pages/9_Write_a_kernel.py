"""Write a kernel: pick a problem, write the kernel, run it in a sandbox, see the verdict and the leaderboard."""

import streamlit as st

import gpu
from gpu.catalog.base import PageLink
from gpu.problems import problems
from gpu.sandbox.judging import keep_warm
from ui.frame import frame
from ui.learner import who
from ui.views.free_gpu import problem_notebook_button, self_report_upload, show_self_reported
from ui.views.progress import last_source, progress_of
from ui.views.run_panel import run_panel
from ui.views.trace import submission_test_ui
from ui.views.write_kernel import (
    cached_sandbox_status,
    editor,
    line_markers,
    marks_drawn,
    pick_problem,
    quiet_toolbar,
    sandbox_notice,
    show_statement,
)

PAGE = PageLink(
    "Write a kernel",
    ":material/edit_note:",
    65,
    "problems from vector add to matmul: write a kernel, see it checked, traced, timed and ranked",
)

device = frame(
    "Write a kernel",
    ":material/edit_note:",
    f"{len(problems())} problems from vector add to matrix multiply. Write the kernel, press **Run** (or Ctrl+Enter): "
    "it is checked, run on fresh inputs at several sizes against NumPy, traced for races, and on a GPU timed like "
    "every kernel in the lab and compared with the lab's own.",
    sidebar_lines_in_fragment=True,  # the Run panel's (ui/views/run_panel.py)
)
quiet_toolbar()  # the page says where a submission is; the toolbar's running figure only costs the browsers
status = cached_sandbox_status(gpu.BACKEND.simulated)
accepting = sandbox_notice(status)
if accepting:  # the next judge's process started ahead (the simulator only): a verdict in a fraction of a second
    keep_warm(sandbox=status)
# Who you are and how far you got: "you" on your own machine, the name picked in the sidebar on a class's demo
me = who()
if me.needs_name:
    st.info("**Pick your name in the sidebar** to run your kernels: your submissions, progress and hints are kept "
            "under it, on this browser, across reloads.", icon=":material/badge:")
progress = progress_of(me.learner)
problem = pick_problem(progress, me.learner)
show_statement(problem, me.learner)
markers = line_markers(problem)  # a refusal's, a mismatch's or a race's lines, from the last verdict
edited = editor(problem, markers, last_source(me.learner, problem))  # a reload keeps your latest submission
traced_test = submission_test_ui(problem)  # the size the memory trace runs at
can_run = accepting and not me.needs_name
marks_drawn(problem, markers)
# Run, the judge's progress, the verdict and the leaderboard: a fragment, which a press reruns alone
run_panel(problem, edited, me.learner, status, traced_test, can_run,
          "CUDA simulator" if gpu.BACKEND.simulated else device.name)

# Run it on a free GPU: a notebook of the kernel above, and its result imported back as self-reported
problem_notebook_button(problem.key, edited.source)
self_report_upload("write_kernel", name=me.learner.name if me.learner else None)
show_self_reported(problem)
