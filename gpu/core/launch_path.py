"""The engine's kernel launch: the fastest honest way to launch a Numba kernel from Python.

Why (issue 10, item 6): "launch from Python" measured 197–588 µs per vector add on an
H200. ``kernel[blocks, threads, stream](a, b, c)`` written per call looks up the launch
configuration and then has the dispatcher type every argument (``typeof`` on device
arrays goes through Python) before the driver is reached. A user timing a loop would
configure once and launch a specialised dispatcher — compiled for these argument
types, so no type dispatch per call — which is still an ordinary public Numba call.
The launch-overhead benchmark (``gpu.experiments.launch.overhead``) measures every
path side by side, so this choice stays checked against the fastest one.
"""

from __future__ import annotations

from collections.abc import Callable

from gpu.core.backend import BACKEND


def configured_launch(kernel, blocks: int, threads_per_block: int, stream, *example_args) -> Callable[..., None]:
    """A callable ``launch(*args)`` queuing ``kernel`` with this geometry on ``stream``.

    On hardware the dispatcher is specialised for the types of ``example_args`` and
    configured once; the simulator (which has no specialisation) configures only.
    """
    target = kernel
    if not BACKEND.simulated and example_args and hasattr(kernel, "specialize"):
        try:
            target = kernel.specialize(*example_args)
        except Exception:  # already specialised, or a dispatcher that cannot be: stay general
            target = kernel
    return target[blocks, threads_per_block, stream]


__all__ = ["configured_launch"]
