"""The shared frame: the first call of every page (page config, backend badge, sidebar).

The sidebar's page list is drawn here (Streamlit's own list is turned off in
``.streamlit/config.toml``) so the home page reads "Home", not the script's file name,
and every entry has a Material icon: emoji render as empty boxes where no emoji font is
installed (headless Chromium, many lab PCs). The list comes from the declarations and the
pages' own ``PAGE = PageLink(...)`` (ui/navigation.py): no list of pages is kept here.
"""

from __future__ import annotations

import streamlit as st

import gpu
from gpu.core.device import DeviceInfo
from gpu.core.limits import kernel_cap, max_vector_n
from ui.glossary import help_for
from ui.learner import sidebar as learner_sidebar
from ui.learner import teacher
from ui.navigation import visible_links
from ui.resources import device_facts
from ui.runner import sidebar_status

APP_NAME = "Kernel Lab"


SIMULATOR_TITLE = "**CUDA simulator — timings are not GPU performance.**"


def simulator_banner() -> str:
    """The warning every page shows when kernels run in the simulator."""
    cap, vector_cap = max_vector_n(), kernel_cap(vectorised=True)
    upto = f"up to N = {cap:,}"
    if vector_cap is not None and vector_cap > cap:  # the vectorised tier's own cap, as the sidebar and forms say
        upto += f", {vector_cap:,} where its vectorised tier runs the kernel"
    return (
        f"{SIMULATOR_TITLE} No GPU here: {gpu.BACKEND.label} runs each kernel "
        f"on your CPU (checked exactly, {upto}); your CPU is timed at your N, and a run "
        "recorded on a real GPU is under **On a real GPU**."
    )


def navigation() -> None:
    """The sidebar's page list: Home first, each page with its Material icon."""
    for page in visible_links(teacher()):
        try:
            st.page_link(page.script, label=page.label, icon=page.icon)
        except Exception:  # AppTest runs a page file alone, without the app's page registry
            return


def frame(
    title: str, icon: str = ":material/science:", intro: str | None = None, simulator_note: str | None = None,
    sidebar_lines_in_fragment: bool = False,
) -> DeviceInfo:
    """Set up a page: config, title, backend badge and sidebar facts. Returns the device.

    ``icon`` is a Material icon (":material/name:"). The browser tab reads
    "<title> · Kernel Lab", or "Kernel Lab" alone on the home page. ``simulator_note`` — what this page's
    simulated run can and cannot show — follows the banner's title in place of its general sentence (one
    banner, not two stacked, and the page's form still in the first screen). ``sidebar_lines_in_fragment``: the
    page's fragment draws the sidebar's device lines (``ui.runner.fragment_lines``).
    """
    st.set_page_config(
        page_title=title if title == APP_NAME else f"{title} · {APP_NAME}", page_icon=icon, layout="wide"
    )
    device = device_facts()
    st.title(f"{icon} {title}")
    if gpu.BACKEND.simulated:
        banner = f"{SIMULATOR_TITLE} {simulator_note}" if simulator_note else simulator_banner()
        st.warning(banner, icon=":material/warning:")
    if intro:
        st.markdown(intro, help=help_for(intro))  # the page's one sentence: its jargon explained there
    with st.sidebar:
        navigation()
        learner_sidebar()  # who you are: "you", or on a class's demo the name you picked
        st.divider()
        badge(device)
        sidebar_status(sidebar_lines_in_fragment)  # device picker, queue state, admission limits, history status
    return device


def badge(device: DeviceInfo) -> None:
    """One line on where kernels run, coloured by backend, plus the key facts."""
    if gpu.BACKEND.simulated:
        st.markdown(":orange-badge[CUDA simulator] timings are not GPU performance")
    else:
        st.markdown(f":green-badge[CUDA] {device.name}")
        facts = [f"compute capability {device.compute_capability}", f"{device.multiprocessors} SMs"]
        if device.total_memory_bytes:
            facts.append(f"{device.total_memory_bytes / 2**30:.0f} GiB")
        st.caption(" · ".join(facts))
