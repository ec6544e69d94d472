"""Histogram (256 bins), a catalog kernel: its kernels (``kernels``) and its declaration (``experiment``)."""
