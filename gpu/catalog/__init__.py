"""The catalog machinery: a kernel declared as a sequence of steps (``steps``), timed and checked into one
``KernelRun`` (``step_result``), and declared as an experiment of the Kernels page (``declare``). The
catalog's kernels themselves are experiment folders in ``gpu/experiments/``."""
