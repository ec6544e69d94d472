"""The notebooks of the Kernels page's catalog kernels: every step of a kernel's ladder, checked and timed.

``catalog_notebook("reduction")`` returns the notebook (nbformat 4) of one catalog kernel. It carries the
kernel's own module (``gpu/experiments/<key>/kernels.py``) verbatim but for its two lab imports, which a
small prelude replaces (``cuda`` from numba, ``Launch`` kept for its signatures), and each step's launch as
the lab declares it (``KernelSpec.steps``: passes, scratch arrays, scalars), computed here at the sizes
``gpu check`` measures (``check_problems``): the full size on a GPU, the quick one in the simulator. A
step whose grid is one wave of the device (a grid-stride loop) has that grid computed in the notebook, on
its own GPU, from the kernel's occupancy (``harness.one_wave``).

The inputs and the reference are the lab's, written out in NumPy (``INPUTS``, ``REFERENCES``); the tests
hold them to the lab's own ``make_inputs`` and ``reference``, bit for bit. Each step is checked as the
lab checks it (bit-exact, or matmul against float64 within the float32 bound of its summation depth),
then its kernel alone is timed with the lab's method. A step the CUDA simulator cannot run (it ``needs``
warp shuffles) is skipped there and says so.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np

from gpu.core.limits import InputError

CATALOG = ("reduction", "transpose", "histogram", "stencil", "matmul")
WAVE_STEPS = {  # steps whose grid is one wave of the device: (the kernel whose occupancy decides it)
    "reduction": {"grid-stride": "reduce_grid_stride_kernel", "two-pass": "reduce_partials_kernel",
                  "unrolled": "reduce_unrolled_kernel"},
    "histogram": {"shared": "histogram_shared_kernel"},
}
SEED = 0  # the inputs' seed (the lab's engine uses its own; the inputs are drawn the same way)
LAB_IMPORTS = ("from __future__ import annotations\n", "from gpu.core.backend import BACKEND, cuda\n",
               "from gpu.core.launch_spec import Launch\n")
PRELUDE = '''from numba import cuda


class Launch:  # the lab's launch declaration (gpu/core/launch_spec.py): the signatures each kernel compiles with
    def __init__(self, signatures, threads_per_block):
        self.signatures, self.threads_per_block = signatures, threads_per_block
'''

# The lab's make_inputs (gpu/experiments/<key>/experiment.py), written out in NumPy.
INPUTS = {
    "reduction": '''
def make_inputs(p, seed):
    # whole numbers whose total is at most 2^24: every order of addition is exact in float32 (ExactSumInputs)
    n, rng = p["n"], np.random.default_rng(seed)
    if n <= 2**24:
        return {"x": rng.integers(1, min(255, 2**24 // n), size=n, endpoint=True).astype(np.float32)}
    spacing = 1 << math.ceil(math.log2(n / 2**24))  # one 1 per aligned run of `spacing` elements
    x = np.zeros(n, dtype=np.float32)
    starts = np.arange(0, n, spacing, dtype=np.int64)
    x[starts + rng.integers(0, np.minimum(spacing, n - starts))] = 1.0
    return {"x": x}
''',
    "transpose": '''
def make_inputs(p, seed):
    return {"a": np.random.default_rng(seed).random((p["n"], p["n"]), dtype=np.float32)}
''',
    "histogram": '''
def make_inputs(p, seed):
    rng, n, kind = np.random.default_rng(seed), p["n"], p["distribution"]
    if kind == "uniform":
        return {"data": rng.integers(0, 256, n, dtype=np.uint8)}
    if kind == "skewed":
        return {"data": np.minimum(rng.exponential(4.0, n), 255).astype(np.uint8)}
    return {"data": np.full(n, 42, dtype=np.uint8)}
''',
    "stencil": '''
def make_inputs(p, seed):
    return {"u": np.random.default_rng(seed).random((p["n"], p["n"]), dtype=np.float32)}
''',
    "matmul": '''
def make_inputs(p, seed):
    rng, n = np.random.default_rng(seed), p["n"]
    return {"a": rng.random((n, n), dtype=np.float32), "b": rng.random((n, n), dtype=np.float32)}
''',
}

# The lab's reference: ("exact", expected) compared bit for bit, or ("bounded", float64 result, float64 sum of
# |terms|) compared within the float32 bound of the step's summation depth.
REFERENCES = {
    "reduction": '''
def reference(inputs, p):
    return "exact", np.array([int(inputs["x"].sum(dtype=np.float64))], dtype=np.float32)  # the exact total
''',
    "transpose": '''
def reference(inputs, p):
    return "exact", np.ascontiguousarray(inputs["a"].T)
''',
    "histogram": '''
def reference(inputs, p):
    return "exact", np.bincount(inputs["data"], minlength=256).astype(np.uint32)
''',
    "stencil": '''
def reference(inputs, p):
    # boundary copied, interior ((((centre + up) + down) + left) + right) x 0.2 in float32, in that order
    u = inputs["u"]
    out = u.copy()
    c = u[1:-1, 1:-1]
    out[1:-1, 1:-1] = ((((c + u[:-2, 1:-1]) + u[2:, 1:-1]) + u[1:-1, :-2]) + u[1:-1, 2:]) * np.float32(0.2)
    return "exact", out
''',
    "matmul": '''
def reference(inputs, p):
    a, b = inputs["a"].astype(np.float64), inputs["b"].astype(np.float64)
    return "bounded", a @ b, np.abs(a) @ np.abs(b)
''',
}


def _module(key: str):
    if key not in CATALOG:
        raise InputError(f"{key!r} is not a catalog kernel ({', '.join(CATALOG)})")
    return importlib.import_module(f"gpu.experiments.{key}.experiment")


def kernels_source(key: str) -> str:
    """The kernel's module as the notebook runs it: the lab's file, its two lab imports replaced by PRELUDE and
    ``cache=`` off (code run by ``exec`` has no file to cache to). ValueError if the file has other lab imports."""
    module = _module(key)
    text = Path(importlib.import_module(f"gpu.experiments.{key}.kernels").__file__ or "").read_text(encoding="utf-8")
    for line in LAB_IMPORTS:
        text = text.replace(line, "", 1)
    text = text.replace("@cuda.jit(cache=not BACKEND.simulated)", "@cuda.jit")
    text = text.replace("@cuda.jit(device=True, cache=not BACKEND.simulated)", "@cuda.jit(device=True)")
    if "BACKEND" in text or "from gpu" in text or "import gpu" in text:
        raise ValueError(f"{module.__name__}'s kernels use more of the lab than the notebook's prelude replaces")
    return PRELUDE + text


def params(key: str) -> dict[str, dict[str, Any]]:
    """The parameters ``gpu check`` measures the kernel at: {"gpu": the full size's, "simulator": the quick one's}."""
    module = _module(key)
    drop = ("repeats", "cpu")
    return {backend: {k: v for k, v in module.check_problems(quick)[0].items() if k not in drop}
            for backend, quick in (("gpu", False), ("simulator", True))}


def _json(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_json(v) for v in value]
    return value.item() if isinstance(value, np.generic) else value


def _steps(key: str, p: dict) -> list[dict]:
    """Each step's launches at ``p``, as the lab's ``Step.launches`` makes them, in JSON terms."""
    from gpu.core.device import device_info
    from gpu.kernels.geometry import blocks_for, kernel_resident_blocks

    module = _module(key)
    spec = module.SPEC
    inputs = list(spec.make_inputs({**p, "n": 4}, 0))  # the inputs' names, in order (a tiny draw)
    out = []
    for step in spec.steps:
        wave_kernel = WAVE_STEPS.get(key, {}).get(step.key)
        wave = None
        if wave_kernel:
            kernel = getattr(importlib.import_module(f"gpu.experiments.{key}.kernels"), wave_kernel)
            wave = {"kernel": wave_kernel, "value": kernel_resident_blocks(kernel, p["n"], p["threads_per_block"],
                                                                         device_info()),
                    "needed": blocks_for(p["n"], p["threads_per_block"]), "block": p["threads_per_block"]}
        out.append({
            "key": step.key, "label": step.label, "needs": step.needs,
            "depth": step.depth(p) if step.depth else None,
            "passes": [{"kernel": ps.kernel.py_func.__name__, "grid": _json(ps.grid(p)), "block": _json(ps.block(p)),
                        "args": list(ps.args)} for ps in step.passes(inputs)],
            "scratch": [{"name": s.name, "shape": _json(tuple(s.shape(p))), "dtype": np.dtype(s.dtype).name}
                        for s in step.scratch],
            "scalars": [{"name": s.name, "dtype": np.dtype(s.dtype).name, "value": _json(s.of(p))}
                        for s in step.scalars],
            "wave": wave,
        })
    return out


def plan(key: str) -> dict[str, dict[str, Any]]:
    """Per backend: parameters, steps, output, bytes moved: everything the notebook and the import check agree on."""
    spec = _module(key).SPEC
    out = {}
    for backend, p in params(key).items():
        out[backend] = {"params": p, "steps": _steps(key, p), "bytes_moved": int(spec.bytes_moved(p)),
                        "output": {"shape": _json(tuple(spec.output.shape(p))),
                                   "dtype": np.dtype(spec.output.dtype).name, "zeroed": spec.output.zeroed},
                        "size": spec.size_label(p)}
    return out


RUN = '''
namespace = {{}}
exec(KERNEL_SOURCE, namespace)  # the lab's kernels module: every step's kernel and its device functions
backend = "simulator" if simulated() else "gpu"
PLAN = {plan!r}[backend]
P = PLAN["params"]
SAMPLES, WARMUP = {samples!r}[backend], {warmup}
inputs = make_inputs(P, {seed})
expected = reference(inputs, P)
stream = cuda.stream()
d_inputs = {{name: cuda.to_device(value, stream=stream) for name, value in inputs.items()}}
flush = L2Flush(stream, device_facts()["l2_bytes"])
OUT = PLAN["output"]


def fresh_output():
    if OUT["zeroed"]:  # atomics add into it
        return cuda.to_device(np.zeros(OUT["shape"], OUT["dtype"]), stream=stream)
    return cuda.device_array(OUT["shape"], OUT["dtype"], stream=stream)


def resolve(value, wave, blocks):
    # a grid, shape or scalar the lab computed as one wave of its device becomes one wave of this one
    if isinstance(value, list):
        return tuple(resolve(v, wave, blocks) for v in value)
    return blocks if wave and value == wave["value"] else value


phases, checks, skipped, launches = {{}}, [], {{}}, {{}}
for step in PLAN["steps"]:
    if step["needs"] and simulated():
        skipped[step["key"]] = f"needs {{step['needs']}}, which the CUDA simulator lacks"
        print(f"{{step['label']:<40}} skipped: {{skipped[step['key']]}}")
        continue
    wave = step["wave"]
    blocks = wave and wave["value"]
    if wave and not simulated():
        kernel = namespace[wave["kernel"]]
        blocks = one_wave(kernel, namespace["LAUNCHES"][wave["kernel"]].signatures[0], wave["needed"], wave["block"])
    named = dict(d_inputs)
    named.update({{s["name"]: np.dtype(s["dtype"]).type(resolve(s["value"], wave, blocks)) for s in step["scalars"]}})
    named.update({{s["name"]: cuda.device_array(resolve(s["shape"], wave, blocks), s["dtype"], stream=stream)
                  for s in step["scratch"]}})
    named["out"] = fresh_output()
    queued = [(namespace[ps["kernel"]], resolve(ps["grid"], wave, blocks), resolve(ps["block"], None, None),
               tuple(named[a] for a in ps["args"])) for ps in step["passes"]]
    launches[step["key"]] = [[ps["kernel"], [int(v) for v in np.atleast_1d(g)], [int(v) for v in np.atleast_1d(b)]]
                             for ps, (_, g, b, _) in zip(step["passes"], queued)]

    def launch():
        for kernel, grid, block, args in queued:
            kernel[grid, block, stream](*args)

    launch()  # once on a fresh output: the output the lab checks
    got = named["out"].copy_to_host(stream=stream)
    stream.synchronize()
    if expected[0] == "exact":
        checks.append(compare(step["label"], got, expected[1]))
    else:
        checks.append(compare_bounded(step["label"], got, expected[1], expected[2], step["depth"]))
    if not checks[-1]["passed"]:
        print(f"{{step['label']:<40}} WRONG: {{checks[-1]['detail']}} (not timed)")
        continue
    phases[step["key"]] = time_it(launch, stream=stream, flush=flush, warmup=WARMUP, samples=SAMPLES)
    stats = phases[step["key"]]
    if simulated():
        shown = f"{{stats['median_s'] * 1e3:.1f}} ms of Python in the simulator (not GPU performance)"
    else:
        shown = (f"median {{stats['median_s'] * 1e3:.4f}} ms, {{PLAN['bytes_moved'] / stats['median_s'] / 1e9:,.1f}} "
                 f"GB/s, spread {{stats['spread'] or 0:.1%}}")
    print(f"{{step['label']:<40}} {{shown}}; {{checks[-1]['detail']}}")

result = {{**result_header("experiment", {key!r}, KERNEL_SOURCE), "params": P, "size": PLAN["size"],
          "threads_per_block": int(P.get("threads_per_block", 0)), "bytes_moved": PLAN["bytes_moved"],
          "warmup": WARMUP, "l2_flushed": flush.done, "phases": phases, "checks": checks, "skipped": skipped,
          "launches": launches, "agree": all(c["passed"] for c in checks)}}
'''


def catalog_cells(key: str, *, samples: dict[str, int], warmup: int) -> tuple[str, list[dict]]:
    """The source the notebook carries and its code cells (``gpu.notebook.build`` adds the rest)."""
    from gpu.notebook.cells import _code

    source = kernels_source(key)
    setup = (f"# The lab's {key} kernels (gpu/experiments/{key}/kernels.py), its inputs and its reference.\n"
             f"import math\nKERNEL_SOURCE = {source!r}\n" + INPUTS[key] + REFERENCES[key])
    run = RUN.format(plan=plan(key), samples=samples, warmup=warmup, seed=SEED, key=key)
    return source, [_code(setup), _code(run)]


__all__ = ["CATALOG", "INPUTS", "REFERENCES", "catalog_cells", "kernels_source", "params", "plan"]
