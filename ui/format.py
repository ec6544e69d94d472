"""Numbers in words for the pages: speedups, bandwidths, times people can read.

The ratio and bandwidth wording lives in ``gpu.core.words`` (the engine's prose uses it
too); this module adds what only pages need.
"""

from __future__ import annotations

from gpu.core.timing import format_seconds
from gpu.core.words import factor_text, format_gbps, times_words
from gpu.service.references import readable_time

__all__ = ["factor_text", "format_gbps", "format_seconds", "readable_time", "times_words"]
