"""Write a kernel's facts and trace follow the verdict from a background thread (ui/views/analysis.py); AppTest does
not run a fragment's timer, so a test runs the page again until they have been shown."""

from __future__ import annotations

import time

from streamlit.testing.v1 import AppTest

STILL_COMING = ("queued behind", "being made")  # the info line, and past the page's bound its warning


def wait_for_analysis(at: AppTest, timeout_s: float = 120.0) -> AppTest:
    """Run ``at`` again until the page no longer says the facts and trace are coming; AssertionError after
    ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        at.run()
        assert not at.exception, at.exception
        coming = [i.value for i in [*at.info, *at.warning] if any(s in i.value for s in STILL_COMING)]
        if not coming:
            return at
        if time.monotonic() > deadline:
            raise AssertionError(f"the facts and trace did not arrive within {timeout_s:g} s: {coming}")
        time.sleep(0.5)
