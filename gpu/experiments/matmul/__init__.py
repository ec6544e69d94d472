"""Matrix multiply, a catalog kernel: its kernels (``kernels``) and its declaration (``experiment``)."""
