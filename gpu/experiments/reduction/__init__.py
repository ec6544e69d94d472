"""Reduction, a catalog kernel: its kernels (``kernels``) and its declaration (``experiment``)."""
