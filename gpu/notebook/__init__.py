"""Run a kernel of the lab on a GPU of your own: the notebook it writes, and reading its result back."""
