"""The compile worker: ``python -m gpu.core.compile_worker`` compiles kernels for ONE target.

Run by ``gpu.core.compiler`` in a subprocess with ``NUMBA_ENABLE_CUDASIM=0``: a process
that chose Numba's simulator cannot compile (numba fixes the choice at import), and the
compiler needs no GPU or driver, only the CUDA toolkit wheels (NVVM and ptxas).

Reads one JSON request on stdin::

    {"target": "sm_90", "cc": [9, 0], "ptxas": PATH, "nvdisasm": PATH or null,
     "jobs": [{"module": "gpu.kernels.reduction", "name": "reduce_tree_kernel", "signature": "void(...)"}
              or {"source": "...python...", "name": "my_kernel", "signature": "void(...)"}]}

and writes one JSON list on stdout, one object per job in order: ``ok``, ``error`` (the
compiler's message), ``ptx``, ``ptxas_log`` (ptxas ``-v``: registers, spills, shared
memory, stack), ``sass`` (or null), ``compile_s``. Parsing is the parent's job.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import types

# Only a process that compiles for one target may pretend its "current device" is that
# target: see _pretend_current_device.
os.environ["NUMBA_ENABLE_CUDASIM"] = "0"


def _pretend_current_device(cc: tuple[int, int]) -> None:
    """Make numba-cuda believe the current device has compute capability ``cc``.

    compile_ptx(..., cc=cc) passes cc to the kernel, but numba-cuda 0.30 compiles any
    *device function* a kernel calls (``warp_sum`` in the reduction) through
    ``CUDADispatcher.compile_device``, which asks ``get_current_device().compute_capability``
    -- and reading ``cuda.warpsize`` types through the same path. With no driver that
    call raises CudaSupportError. numba_cuda/numba/cuda/dispatcher.py imports
    ``get_current_device`` by name, so we replace that name in the dispatcher module with
    a stand-in device that only knows the target's compute capability. It is safe here
    because this process compiles for one target only and never launches anything; the
    device functions' compiled IR is cached per argument types, so a process that switched
    targets would reuse code typed for the first one -- hence one process per target.
    """
    import numba.cuda.dispatcher as dispatcher

    device = types.SimpleNamespace(compute_capability=tuple(cc), name=f"compile target cc {cc[0]}.{cc[1]}")
    dispatcher.get_current_device = lambda: device


def _python_function(job: dict):
    """The plain Python function of a job: an importable dispatcher's ``py_func``, or a
    function defined by executing the job's source in a fresh namespace."""
    if "source" in job:
        namespace: dict = {"__name__": "kernel_lab_source"}
        exec(compile(job["source"], "<kernel source>", "exec"), namespace)  # noqa: S102 (the caller sandboxes user code)
        if job["name"] not in namespace:
            raise NameError(f"the source defines no function named {job['name']!r}")
        obj = namespace[job["name"]]
    else:
        import importlib

        obj = importlib.import_module(job["module"])
        for part in job["name"].split("."):
            obj = getattr(obj, part)
    return getattr(obj, "py_func", obj)


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def compile_job(job: dict, target: str, cc: tuple[int, int], ptxas: str, nvdisasm: str | None) -> dict:
    from numba.cuda import compile_ptx

    started = time.perf_counter()
    out: dict = {"ok": False, "error": None, "ptx": None, "ptxas_log": None, "sass": None}
    try:
        ptx, _ = compile_ptx(_python_function(job), job["signature"], cc=tuple(cc))
    except Exception as exc:  # the compiler's own message is the point of the gate
        out["error"] = f"NVVM front end: {type(exc).__name__}: {exc}"
        out["compile_s"] = time.perf_counter() - started
        return out
    out["ptx"] = ptx
    with tempfile.TemporaryDirectory(prefix="kernel-lab-ptxas-") as tmp:
        ptx_path, cubin_path = os.path.join(tmp, "kernel.ptx"), os.path.join(tmp, "kernel.cubin")
        with open(ptx_path, "w") as f:
            f.write(ptx)
        assembled = _run([ptxas, f"-arch={target}", "-v", "-o", cubin_path, ptx_path])
        out["ptxas_log"] = assembled.stdout + assembled.stderr
        if assembled.returncode != 0:
            out["error"] = f"ptxas: {out['ptxas_log'].strip()}"
        else:
            out["ok"] = True
            if nvdisasm:
                listing = _run([nvdisasm, "-c", cubin_path])
                out["sass"] = listing.stdout if listing.returncode == 0 else None
    out["compile_s"] = time.perf_counter() - started
    return out


def main() -> int:
    request = json.load(sys.stdin)
    cc = tuple(request["cc"])
    import gpu.core.backend  # noqa: F401  (numba-cuda's NumPy 2.5 fix; respects NUMBA_ENABLE_CUDASIM=0)

    _pretend_current_device(cc)
    results = [compile_job(job, request["target"], cc, request["ptxas"], request.get("nvdisasm")) for job in request["jobs"]]
    json.dump(results, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
