"""Matrix transpose, a catalog kernel: its kernels (``kernels``) and its declaration (``experiment``)."""
