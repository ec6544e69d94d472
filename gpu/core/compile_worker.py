"""The compile worker: ``python -m gpu.core.compile_worker`` compiles kernels for targets.

Run by ``gpu.core.compiler`` in a subprocess with ``NUMBA_ENABLE_CUDASIM=0``: a process
that chose Numba's simulator cannot compile (numba fixes the choice at import), and the
compiler needs no GPU or driver, only the CUDA toolkit wheels (NVVM and ptxas).

Reads one JSON request on stdin::

    {"targets": [{"name": "sm_75", "cc": [7, 5]}, ...], "ptxas": PATH, "nvdisasm": PATH or null,
     "jobs": [{"module": "gpu.experiments.reduction.kernels", "name": "reduce_tree_kernel", "signature": "void(...)"}
              or {"source": "...python...", "name": "my_kernel", "signature": "void(...)"}]}

and writes one JSON list on stdout: per job, a list with one object per target in order:
``ok``, ``error`` (the compiler's message), ``ptx``, ``ptxas_log`` (ptxas ``-v``:
registers, spills, shared memory, stack), ``sass`` (or null), ``compile_s``.

Each kernel goes through Numba's front end (typing, lowering to NVVM IR) once, and NVVM
then generates PTX from that IR for each target (numba-cuda's code library caches PTX
per compute capability), which is what makes compiling 20+ kernels for 7 targets fast.
One lowering serves every target because numba-cuda's lowering only branches on the
compute capability at 7.5 and below (float atomics at 6.0, fast tanh at 7.5,
numba_cuda/numba/cuda/nvvmutils.py and mathimpl.py), and every target of gpu.core.arch
is 7.5 or newer; each PTX's ``.target`` comes from NVVM's arch option.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

# Set before numba is imported (gpu.core.backend respects it): this process compiles only.
os.environ["NUMBA_ENABLE_CUDASIM"] = "0"


def _python_function(job: dict):
    """The plain Python function of a job: an importable dispatcher's ``py_func``, or a
    function defined by executing the job's source in a fresh namespace."""
    if "source" in job:
        namespace: dict = {"__name__": "kernel_lab_source"}
        exec(compile(job["source"], "<kernel source>", "exec"), namespace)  # the caller sandboxes user code
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


def _lower(job: dict, cc: tuple[int, int]):
    """Numba's front end for one kernel: the code library NVVM compiles per target
    (``gpu.core.numba_internals.lower_kernel``)."""
    from gpu.core.numba_internals import lower_kernel

    return lower_kernel(_python_function(job), job["signature"], cc)


def compile_job(job: dict, targets: list[dict], ptxas: str, nvdisasm: str | None) -> list[dict]:
    """One kernel for every target: one raw result per target."""
    started = time.perf_counter()
    try:
        lib = _lower(job, tuple(targets[0]["cc"]))
    except Exception as exc:  # the compiler's own message is the point of the gate
        error = f"Numba front end: {type(exc).__name__}: {exc}"
        spent = time.perf_counter() - started
        return [
            {"ok": False, "error": error, "ptx": None, "ptxas_log": None, "sass": None, "compile_s": spent}
            for _ in targets
        ]
    lowered_s = time.perf_counter() - started
    return [_assemble(lib, t["name"], tuple(t["cc"]), ptxas, nvdisasm, lowered_s) for t in targets]


def _assemble(lib, target: str, cc: tuple[int, int], ptxas: str, nvdisasm: str | None, lowered_s: float) -> dict:
    """NVVM for one target, then ptxas -v (and nvdisasm where installed)."""
    started = time.perf_counter()
    out: dict = {"ok": False, "error": None, "ptx": None, "ptxas_log": None, "sass": None}
    try:
        ptxes = lib.get_asm_strs(cc=cc)
        if len(ptxes) != 1:
            raise RuntimeError(f"NVVM produced {len(ptxes)} PTX modules, expected one")
        ptx = ptxes[0]
    except Exception as exc:
        out["error"] = f"NVVM ({target}): {type(exc).__name__}: {exc}"
        out["compile_s"] = lowered_s + time.perf_counter() - started
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
    out["compile_s"] = lowered_s + time.perf_counter() - started
    return out


def main() -> int:
    request = json.load(sys.stdin)
    targets = request["targets"]
    import gpu.core.backend  # noqa: F401  (numba-cuda's NumPy 2.5 fix; respects NUMBA_ENABLE_CUDASIM=0)
    from gpu.core.numba_internals import pretend_current_device

    pretend_current_device(tuple(targets[0]["cc"]))  # gpu.core.numba_internals says why
    results = [compile_job(job, targets, request["ptxas"], request.get("nvdisasm")) for job in request["jobs"]]
    json.dump(results, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
