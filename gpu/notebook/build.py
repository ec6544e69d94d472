"""Write a self-contained Jupyter notebook that runs one of the lab's kernels on whatever GPU it has.

``experiment_notebook("vector-add")`` and ``problem_notebook("vector-add", source)`` return the notebook
as a dict in nbformat 4 (``json.dumps`` it to a ``.ipynb``). Each notebook: installs numba-cuda when it is
missing (nothing else: Colab and Kaggle ship NumPy), carries ``harness.py`` verbatim (the lab's timing
method and checks), runs the kernel's checks, times it, and writes one result file
(``kernel-lab-result-<key>.json``) that ``python -m gpu import FILE`` reads back. Nothing here runs a
kernel: the lab only writes the notebook.

A problem's notebook embeds the problem's own tests — inputs drawn by the lab and the outputs its NumPy
reference expects — so the learner's kernel is checked in the notebook as the lab checks it, and times it
on random inputs of the performance size's shapes, types and ranges. The lab trusts none of it on import:
it judges the kernel again in its sandbox (``gpu.notebook.importing``).
"""

from __future__ import annotations

import ast
import base64
import copy
import io
import json
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import numpy as np

from gpu.core.limits import InputError
from gpu.notebook.cells import _code, _function_source, _markdown, _notebook
from gpu.sim import pyast

HARNESS = Path(__file__).with_name("harness.py")
NUMBA_CUDA_PIN = "0.30.4"  # the numba-cuda the recorded H200 runs used (Makefile)
VECTOR_ADD_N = {"gpu": 10_000_000, "simulator": 512}  # the article's N (the recorded breakdown's); the simulator's
SAMPLES = {"gpu": 20, "simulator": 3}  # as the recorded breakdown: 20 samples of the kernel alone
WARMUP = 2
SEED = 20261204  # the test inputs embedded in a problem's notebook (the lab judges again with its own seed)
MAX_EMBEDDED_BYTES = 4 * 2**20  # a problem's tests, compressed: the notebook stays small


def result_name(key: str) -> str:
    return f"kernel-lab-result-{key}.json"


INSTALL = f'''
# numba-cuda is the only package this notebook installs (Colab and Kaggle ship NumPy). The CUDA wheels
# follow the driver: cu13 from driver 580 on, cu12 before (as the lab's Makefile chooses).
import importlib.util, subprocess, sys
if importlib.util.find_spec("numba_cuda") is None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout
        major = int(out.split(".")[0])
    except Exception:
        major = 0
    extra = "cu13" if major >= 580 else "cu12"
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", f"numba-cuda[{{extra}}]=={NUMBA_CUDA_PIN}"])
'''

GPU_CHECK = '''
import os
RESULT_PATH = os.environ.get("KERNEL_LAB_RESULT", {name!r})
if not simulated() and not cuda.is_available():
    raise RuntimeError("No CUDA GPU here. Colab: Runtime > Change runtime type > T4 GPU. "
                       "Kaggle: Settings > Accelerator > GPU T4. Then run all cells again.")
print("running on", device_facts()["name"])
'''

WRITE = '''
write_result(result, RESULT_PATH)
print("wrote", RESULT_PATH, "- import it into Kernel Lab: python -m gpu import", RESULT_PATH,
      "(or History > Import a result from a notebook)")
try:  # in Colab, offer the file for download
    from google.colab import files
    files.download(RESULT_PATH)
except ImportError:
    pass
'''


def _intro(title: str, what: str, key: str) -> dict:
    return _markdown(f"""
# Kernel Lab on your own GPU: {title}

{what}

**How:** in Colab choose *Runtime → Change runtime type → T4 GPU* (on Kaggle: *Settings → Accelerator → GPU T4*),
then *Run all*. The notebook installs numba-cuda if it is missing, checks the kernel's results, times it with
the lab's method (warm-up launches, the L2 cache written over before every sample, CUDA events, the median
and spread of the samples) and writes **`{result_name(key)}`**.

**Back in the lab:** `python -m gpu import {result_name(key)}`, or upload it on History (or Write a kernel).
The lab shows it as *self-reported on your GPU*, apart from the runs it measured itself, and checks it
first: a kernel is judged again in the lab's sandbox, and a time faster than your GPU's memory allows is
refused.
""")


# --- the experiments ------------------------------------------------------------------------------


def _vector_add_cells() -> tuple[str, list[dict]]:
    from gpu.kernels import vector_add as kernels

    source = _function_source(Path(kernels.__file__), "vector_add_kernel")
    run = f'''
# The lab's own vector-add kernel (gpu/kernels/vector_add.py), exactly as it runs in the lab.
KERNEL_SOURCE = {source!r}
namespace = {{}}
exec(KERNEL_SOURCE, namespace)
kernel = namespace["vector_add_kernel"]

backend = "simulator" if simulated() else "gpu"
N = {VECTOR_ADD_N!r}[backend]
THREADS = 256
BLOCKS = (N + THREADS - 1) // THREADS  # ceil division: the last block may run past the end
SAMPLES, WARMUP = {SAMPLES!r}[backend], {WARMUP}
rng = np.random.default_rng(0)
a = rng.random(N, dtype=np.float32)
b = rng.random(N, dtype=np.float32)
stream = cuda.stream()
d_a, d_b = cuda.to_device(a, stream=stream), cuda.to_device(b, stream=stream)
d_c = cuda.device_array(N, dtype=np.float32, stream=stream)  # the output is allocated on the device
flush = L2Flush(stream, device_facts()["l2_bytes"])


def h2d():
    d_a.copy_to_device(a, stream=stream)
    d_b.copy_to_device(b, stream=stream)


def launch():
    kernel[BLOCKS, THREADS, stream](d_a, d_b, d_c)


def d2h():
    d_c.copy_to_host(stream=stream)


def total():
    h2d(); launch(); d2h()


phases = {{name: time_it(step, stream=stream, flush=flush, warmup=WARMUP, samples=SAMPLES)
          for name, step in (("h2d", h2d), ("kernel", launch), ("d2h", d2h), ("total", total))}}
checks = [compare("c = a + b, bit for bit against NumPy", d_c.copy_to_host(), a + b)]
result = {{**result_header("experiment", "vector-add", KERNEL_SOURCE), "n": N, "threads_per_block": THREADS,
          "blocks_per_grid": BLOCKS, "bytes_moved": 12 * N, "warmup": WARMUP, "l2_flushed": flush.done,
          "phases": phases, "checks": checks, "agree": all(c["passed"] for c in checks)}}
tag = " (Python in the simulator: not GPU performance)" if simulated() else ""
for name, stats in phases.items():
    print(f"{{name:>7}}: median {{stats['median_s'] * 1e3:.4f}} ms over {{stats['samples']}} samples, "
          f"spread {{stats['spread'] or 0:.1%}}{{tag}}")
print(checks[0]["detail"], "- agree:", result["agree"])
'''
    return source, [_code(run)]


def _catalog(key: str) -> Callable[[], tuple[str, list[dict]]]:
    from gpu.notebook.catalog import catalog_cells

    return lambda: catalog_cells(key, samples=SAMPLES, warmup=WARMUP)


def _sweep(key: str) -> Callable[[], tuple[str, list[dict]]]:
    from gpu.notebook import sweeps
    from gpu.notebook.transfers import transfers_cells

    cells = {"launch-sweep": sweeps.launch_cells, "scaling": sweeps.scaling_cells, "transfers": transfers_cells}[key]
    return lambda: cells(samples=SAMPLES, warmup=WARMUP)


def _ladder(what: str) -> str:
    return (f"Every step of the Kernels page's {what} ladder, checked as the lab checks it and timed kernel "
            "alone with the lab's method, at the size `gpu check` measures.")


EXPERIMENTS: dict[str, tuple[str, str, Callable[[], tuple[str, list[dict]]]]] = {
    "vector-add": (
        "Vector add",
        "The article's experiment: `c = a + b` for 10,000,000 float32 elements with the lab's own kernel — the "
        "copies in, the kernel alone, the copy back, and end to end.",
        _vector_add_cells,
    ),
    "scaling": (
        "Scaling",
        "The article's vector add at every size from 2^10 to 2^28 (as far as your GPU's memory goes): the kernel "
        "alone, with its copies, and NumPy on this machine's CPU — where does the GPU start to pay?",
        _sweep("scaling"),
    ),
    "launch-sweep": (
        "Launch config",
        "The article's vector-add kernel at N = 2^26 with 32 to 1,024 threads per block (and an odd 100), and a "
        "grid-stride version with 1 to 32 blocks per multiprocessor: what the launch configuration costs.",
        _sweep("launch-sweep"),
    ),
    "transfers": (
        "Transfers",
        "The article's vector add at N = 10,000,000 done the ways that matter — as in the article, careful, pinned, "
        "data kept on the device, chunked streams and mapped memory — each checked and timed per vector add.",
        _sweep("transfers"),
    ),
    "reduction": ("Reduction (Kernels)", _ladder("reduction (the sum of N float32 values)"), _catalog("reduction")),
    "transpose": ("Transpose (Kernels)", _ladder("matrix transpose"), _catalog("transpose")),
    "histogram": ("Histogram (Kernels)", _ladder("256-bin histogram"), _catalog("histogram")),
    "stencil": ("Stencil (Kernels)", _ladder("5-point blur"), _catalog("stencil")),
    "matmul": ("Matrix multiply (Kernels)", _ladder("matrix multiply"), _catalog("matmul")),
}


def experiment_notebook(key: str) -> dict:
    """The notebook of experiment ``key``; InputError naming the experiments that have one."""
    if key not in EXPERIMENTS:
        raise InputError(f"no notebook for experiment {key!r}: notebooks exist for {', '.join(sorted(EXPERIMENTS))} "
                         "and for every Write-a-kernel problem (python -m gpu notebook PROBLEM KERNEL.py)")
    title, what, cells = EXPERIMENTS[key]
    _source, run = cells()
    return _notebook([_intro(title, what, key), _code(INSTALL), _code(HARNESS.read_text(encoding="utf-8")),
                      _code(GPU_CHECK.format(name=result_name(key))), *run, _code(WRITE)])


# --- Write a kernel's problems ----------------------------------------------------------------------


def threads_per_block(source: str) -> int | None:
    """The learner's module-level ``THREADS_PER_BLOCK = <whole number>``, None when absent (read, never run)."""
    try:
        tree = pyast.parse(source)
    except SyntaxError as exc:
        raise InputError(f"the kernel file does not parse: line {exc.lineno}: {exc.msg}") from None
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "THREADS_PER_BLOCK" and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, int)):
            return node.value.value
    return None


def _pack(arrays: dict[str, np.ndarray]) -> str:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)  # type: ignore[arg-type]  # numpy stubs: allow_pickle shadows **kwds
    return base64.b64encode(buffer.getvalue()).decode()


def _recipe(name: str, value) -> dict:
    """How the notebook draws an input of the performance size: shape, dtype and range of the lab's own draw."""
    array = np.asarray(value)
    if array.ndim == 0:
        return {"name": name, "scalar": array.item(), "dtype": array.dtype.name}
    return {"name": name, "shape": list(array.shape), "dtype": array.dtype.name, "integral": _integral(array),
            "low": float(array.min()), "high": float(array.max())}


def _integral(array: np.ndarray) -> bool:
    """Whether every value is a whole number (NaN and inf are not). A fractional value among the first few thousand
    answers at once; else the whole array is compared with its truncation (a GPU-size draw is hundreds of MB: its
    remainder by 1, as before, took about 0.3 s per 32M floats, the truncation 0.03 s)."""
    if np.issubdtype(array.dtype, np.integer):
        return True
    flat = array.reshape(-1)
    with np.errstate(invalid="ignore"):
        return bool(np.array_equal(flat[:4096], np.trunc(flat[:4096])) and np.array_equal(flat, np.trunc(flat))
                    and np.isfinite(flat).all())


@lru_cache(maxsize=32)
def _perf_plan(problem_key: str, threads: int) -> dict:
    """Per backend: the performance size, its launch, and a recipe for each input (drawn once per process:
    at the GPU's size this draws the lab's full inputs, hundreds of MB, only to read their shapes and ranges)."""
    from gpu.problems import get

    problem = get(problem_key)
    perf = {}
    for backend, case in problem.perf.items():
        args = problem.args(np.random.default_rng(SEED), case.sizes)
        grid, block = problem.launch(case.sizes, threads)
        perf[backend] = {"sizes": dict(case.sizes), "grid": list(grid), "block": list(block),
                         "inputs": [_recipe(name, args[name]) for name in args],
                         "bytes_moved": int(problem.bytes_moved(case.sizes))}
        del args
    return perf


def _problem_data(problem, threads: int) -> dict:
    """The tests (inputs and expected outputs, drawn and computed by the lab) and the performance sizes."""
    rng = np.random.default_rng(SEED)
    arrays: dict[str, np.ndarray] = {}
    tests = []
    for number, case in enumerate(problem.tests):
        args = problem.args(rng, case.sizes)
        want = problem.reference(args, case.sizes)
        grid, block = problem.launch(case.sizes, threads)
        for name, value in args.items():
            arrays[f"t{number}.in.{name}"] = np.asarray(value)
        for name, value in want.items():
            arrays[f"t{number}.want.{name}"] = np.asarray(value)
        tests.append({"name": case.name, "grid": list(grid), "block": list(block)})
    perf = copy.deepcopy(_perf_plan(problem.key, threads))
    packed = _pack(arrays)
    if len(packed) > MAX_EMBEDDED_BYTES:
        raise InputError(f"the tests of problem {problem.key!r} are too large to embed in a notebook "
                         f"({len(packed):,} bytes, at most {MAX_EMBEDDED_BYTES:,})")
    return {"tests": tests, "perf": perf, "packed": packed,
            "accumulate": list(problem.accumulate), "rtol": problem.tolerance.rtol, "atol": problem.tolerance.atol}


PROBLEM_RUN = '''
# The problem's own tests: inputs drawn by the lab and the outputs its NumPy reference expects.
import base64, io
DATA = np.load(io.BytesIO(base64.b64decode(PACKED)))
namespace = {{}}
exec(KERNEL_SOURCE, namespace)
kernel = namespace[{kernel_name!r}]
PARAMS, ACCUMULATE = {params!r}, {accumulate!r}
stream = cuda.stream()


def fresh(shape, dtype, name):
    # accumulated outputs start at zero; every other output starts as a sentinel the kernel must overwrite
    if name in ACCUMULATE:
        return np.zeros(shape, dtype)
    floating = np.issubdtype(np.dtype(dtype), np.floating)
    return np.full(shape, np.nan if floating else np.iinfo(np.dtype(dtype)).max, dtype)


def run_case(grid, block, values):
    device = {{}}
    for name in PARAMS:
        if name in values and np.ndim(values[name]) == 0:
            device[name] = values[name][()] if isinstance(values[name], np.ndarray) else values[name]
        elif name in values:
            device[name] = cuda.to_device(values[name], stream=stream)
    kernel[tuple(grid), tuple(block), stream](*(device[name] for name in PARAMS))
    stream.synchronize()
    return device


checks = []
for number, test in enumerate(TESTS):
    values = {{k.split(".", 2)[2]: DATA[k] for k in DATA.files if k.startswith(f"t{{number}}.in.")}}
    wants = {{k.split(".", 2)[2]: DATA[k] for k in DATA.files if k.startswith(f"t{{number}}.want.")}}
    for name, want in wants.items():
        values[name] = fresh(want.shape, want.dtype, name)
    device = run_case(test["grid"], test["block"], values)
    for name, want in wants.items():
        checks.append(compare(f"{{test['name']}}: {{name}}", device[name].copy_to_host(), want, RTOL, ATOL))
passed = all(c["passed"] for c in checks)
for c in checks:
    print("ok  " if c["passed"] else "FAIL", c["name"], "-", c["detail"])

# The performance size: random inputs with the shapes, types and ranges of the lab's own.
backend = "simulator" if simulated() else "gpu"
perf = PERF[backend]
rng = np.random.default_rng(1)
values = {{}}
for spec in perf["inputs"]:
    if "scalar" in spec:
        values[spec["name"]] = np.dtype(spec["dtype"]).type(spec["scalar"])
    elif spec["integral"]:
        values[spec["name"]] = rng.integers(int(spec["low"]), int(spec["high"]) + 1, size=spec["shape"]).astype(
            spec["dtype"])
    else:
        values[spec["name"]] = (spec["low"] + (spec["high"] - spec["low"]) * rng.random(spec["shape"])).astype(
            spec["dtype"])
device = {{name: (cuda.to_device(v, stream=stream) if np.ndim(v) else v) for name, v in values.items()}}
for name, (shape, dtype) in OUTPUTS_AT[backend].items():
    device[name] = cuda.to_device(fresh(shape, dtype, name), stream=stream)
arguments = [device[name] for name in PARAMS]
flush = L2Flush(stream, device_facts()["l2_bytes"])


def launch():
    kernel[tuple(perf["grid"]), tuple(perf["block"]), stream](*arguments)


timing = time_it(launch, stream=stream, flush=flush, warmup={warmup}, samples={samples!r}[backend]) if passed else None
result = {{**result_header("problem", {key!r}, KERNEL_SOURCE), "threads_per_block": THREADS_PER_BLOCK,
          "sizes": perf["sizes"], "bytes_moved": perf["bytes_moved"], "warmup": {warmup},
          "l2_flushed": flush.done, "phases": {{"kernel": timing}} if timing else {{}}, "checks": checks,
          "agree": passed}}
if timing and simulated():
    print(f"kernel: {{timing['median_s'] * 1e3:.1f}} ms of Python in the simulator at {{perf['sizes']}} "
          "(not GPU performance)")
elif timing:
    print(f"kernel: median {{timing['median_s'] * 1e3:.4f}} ms over {{timing['samples']}} samples at "
          f"{{perf['sizes']}}, {{perf['bytes_moved'] / timing['median_s'] / 1e9:,.1f}} GB/s")
else:
    print("not timed: fix the failing tests first (the result file still records them)")
'''


def problem_notebook(problem_key: str, source: str) -> dict:
    """The notebook that checks and times the learner's ``source`` for problem ``problem_key``.

    InputError for an unknown problem, a file that does not parse, or a THREADS_PER_BLOCK the problem refuses.
    The source is embedded as text and runs only in the learner's own notebook."""
    from gpu.problems import get
    from gpu.problems.base import Refusal

    problem = get(problem_key)
    try:
        threads = problem.threads_for(threads_per_block(source))
    except Refusal as exc:
        raise InputError(str(exc)) from None
    data = _problem_data(problem, threads)
    outputs_at = {backend: {name: [list(shape), np.dtype(dtype).name]
                            for name, (shape, dtype) in problem.outputs(case.sizes).items()}
                  for backend, case in problem.perf.items()}
    setup = (
        f"# Your kernel, as you submitted it, and the problem's tests.\n"
        f"KERNEL_SOURCE = {source!r}\nTHREADS_PER_BLOCK = {threads}\n"
        f"TESTS = {data['tests']!r}\nPERF = {data['perf']!r}\nOUTPUTS_AT = {outputs_at!r}\n"
        f"RTOL, ATOL = {data['rtol']!r}, {data['atol']!r}\n"
    )
    packed = f"# The tests' inputs and expected outputs (NumPy .npz, base64)\nPACKED = {data['packed']!r}\n"
    run = PROBLEM_RUN.format(kernel_name=problem.kernel_name, params=list(problem.params),
                             accumulate=data["accumulate"], warmup=WARMUP,
                             samples={"gpu": SAMPLES["gpu"], "simulator": SAMPLES["simulator"]}, key=problem.key)
    what = (f"Problem {problem.order}: {problem.statement}\n\nYour kernel runs against the problem's "
            f"{len(problem.tests)} tests, then is timed at the performance size.")
    harness, check = HARNESS.read_text(encoding="utf-8"), GPU_CHECK.format(name=result_name(problem.key))
    return _notebook([_intro(f"problem {problem.order}, {problem.title}", what, problem.key), _code(INSTALL),
                      _code(harness), _code(check), _code(setup), _code(packed), _code(run), _code(WRITE)])


def write_notebook(notebook: dict, path: str | Path) -> Path:
    out = Path(path)
    out.write_text(json.dumps(notebook, indent=1) + "\n", encoding="utf-8")
    return out


__all__ = ["experiment_notebook", "problem_notebook", "result_name", "threads_per_block", "write_notebook"]
