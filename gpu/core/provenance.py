"""Which measurement rules a recorded result was taken under, and the caveat it must carry.

Every result written from now on (``check.json``, History, downloads) carries
``METHODOLOGY_VERSION``. Version 2 is the README's "How it measures": L2 flushed before
every GPU sample, the kernel alone behind a verified stream hold, at least 3 samples
before a budget stops a series, the catalog measured by the same timing primitive
(``gpu.core.kernel_timing``). A recorded run without a version (such as
``benchmarks/h200*``, recorded before those rules) is shown with ``PRE_RULES_CAVEAT``
on every surface, and its single-sample and L2-resident points are marked.
"""

from __future__ import annotations

from collections.abc import Mapping

METHODOLOGY_VERSION = 2
METHODOLOGY_KEY = "methodology_version"
PRE_RULES_CAVEAT = "recorded before L2 flushing and verified holds; single-sample points marked"
# The first line of every text output in the simulator (CLI, `gpu check`, check.md).
SIMULATOR_WARNING = (
    "WARNING: CUDA simulator — timings are not GPU performance (no CUDA GPU found; kernels ran in a CUDA simulator)."
)


def methodology_of(data: Mapping | None) -> int:
    """The rules version a recorded result was taken under (1: before the version existed)."""
    if not data:
        return 1
    try:
        return int(data.get(METHODOLOGY_KEY) or 1)
    except (TypeError, ValueError):
        return 1


def caveat_for(data: Mapping | None) -> str | None:
    """The caveat to show beside a recorded result's figures, None when it follows the current rules."""
    return PRE_RULES_CAVEAT if methodology_of(data) < METHODOLOGY_VERSION else None


def stamp(data: dict) -> dict:
    """``data`` with the current methodology version added (for anything written to disk)."""
    return {METHODOLOGY_KEY: METHODOLOGY_VERSION, **data}


__all__ = [
    "METHODOLOGY_KEY",
    "METHODOLOGY_VERSION",
    "PRE_RULES_CAVEAT",
    "SIMULATOR_WARNING",
    "caveat_for",
    "methodology_of",
    "stamp",
]
