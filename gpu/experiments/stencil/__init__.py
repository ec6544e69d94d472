"""2D stencil (5-point blur), a catalog kernel: its kernels (``kernels``) and its declaration (``experiment``)."""
