"""The notebooks of Launch config and Scaling: the article's vector-add kernel swept over launches and sizes.

Both carry the lab's own kernels (``gpu/kernels/vector_add.py``: ``vector_add_kernel`` and, for Launch
config, ``vector_add_grid_stride_kernel``), check every output bit for bit against NumPy, and time with
the lab's method (``harness.time_it``). Each phase of the result is named so that the lab knows what it
timed and how many bytes it moved without trusting the file (``phase_bytes``):

- Launch config: ``"<t> threads per block"`` for the block sizes ``gpu check`` sweeps, and
  ``"grid-stride, <k> x SMs"`` (256 threads per block, k x the GPU's multiprocessors), at N = 2^26 on a GPU;
- Scaling: per size N, ``"kernel N=<N>"`` (device-resident inputs), ``"with copies N=<N>"`` (copies in, the
  kernel, the copy back: up to ``END_TO_END_MAX_N`` as ``gpu check``) and ``"numpy N=<N>"`` (NumPy's
  ``a + b`` on the notebook machine's CPU, wall clock). The sizes are powers of 4 from 2^10 to 2^28 (less
  where the GPU's memory holds less); the notebook prints where the GPU with its copies overtakes NumPy.
"""

from __future__ import annotations

import re
from pathlib import Path

LAUNCH_N = {"gpu": 2**26, "simulator": 512}  # as `gpu check`: 805 MB moved per kernel, past every cache
LAUNCH_BLOCK_SIZES = {"gpu": [32, 64, 100, 128, 256, 512, 1024], "simulator": [32, 256]}  # with the odd 100
LAUNCH_SM_MULTIPLES = {"gpu": [1, 4, 8, 32], "simulator": [1]}
GRID_STRIDE_THREADS = 256
SCALING_SIZES = {"gpu": [4**k for k in range(5, 15)], "simulator": [64, 256]}  # 2^10 .. 2^28
END_TO_END_MAX_N = 2**26  # as `gpu check`: above it the copies, not the kernel, fill the time
SIMULATED_SMS = 4  # the grid-stride launch's multiprocessors in the simulator (it has none)
SCALING_MEMORY_SHARE = 0.8  # a size runs when its three vectors fit in this share of the GPU's free memory

_LAUNCH_PHASE = re.compile(r"^(?:(\d+) threads per block|grid-stride, (\d+) x SMs)$")
_SCALING_PHASE = re.compile(r"^(kernel|with copies|numpy) N=(\d+)$")


def _sources(*names: str) -> str:
    from gpu.kernels import vector_add
    from gpu.notebook.cells import _function_source

    path = Path(vector_add.__file__)
    return "\n\n".join(_function_source(path, name) for name in names)


def launch_source() -> str:
    return _sources("vector_add_kernel", "vector_add_grid_stride_kernel")


def scaling_source() -> str:
    return _sources("vector_add_kernel")


def phase_bytes(key: str, phase: str, data: dict) -> int | None:
    """The bytes a kernel-alone phase moves, from its name and the lab's sizes; None for a phase that is not the
    kernel alone (copies, NumPy) or whose name the lab does not know. ValueError for an unknown name."""
    if key == "launch-sweep":
        if not _LAUNCH_PHASE.match(phase):
            raise ValueError(f"{phase!r} is not a launch the notebook times")
        return 12 * int(data["n"])
    match = _SCALING_PHASE.match(phase)
    if not match:
        raise ValueError(f"{phase!r} is not a series the notebook times")
    return 12 * int(match.group(2)) if match.group(1) == "kernel" else None


def expected_phases(key: str, backend: str) -> set[str]:
    """Every phase the notebook times on ``backend`` (Scaling: at its largest; a GPU with less memory stops early)."""
    if key == "launch-sweep":
        return ({f"{t} threads per block" for t in LAUNCH_BLOCK_SIZES[backend]}
                | {f"grid-stride, {k} x SMs" for k in LAUNCH_SM_MULTIPLES[backend]})
    out = set()
    for n in SCALING_SIZES[backend]:
        out |= {f"kernel N={n}", f"numpy N={n}"} | ({f"with copies N={n}"} if n <= END_TO_END_MAX_N else set())
    return out


def check_result(key: str, data: dict, simulated: bool) -> str | None:
    """What is wrong with a Launch config or Scaling result the lab did not measure ("field: why"), None if nothing.

    Launch config: at the notebook's N, every launch timed. Scaling: the notebook's sizes from the smallest up, each
    with its kernel and NumPy series (a GPU with less memory stops early), and its copies up to END_TO_END_MAX_N."""
    backend = "simulator" if simulated else "gpu"
    source = launch_source() if key == "launch-sweep" else scaling_source()
    if data["kernel_source"] != source:
        return "kernel_source: is not the lab's vector-add kernels, which the notebook runs unchanged"
    if key == "launch-sweep":
        if data.get("n") != LAUNCH_N[backend]:
            return f"n: {data.get('n')!r} is not the notebook's N ({LAUNCH_N[backend]:,})"
        missing = expected_phases(key, backend) - set(data["phases"])
        return f"phases: {', '.join(sorted(missing))} missing (the notebook times every launch)" if missing else None
    sizes = SCALING_SIZES[backend]
    measured = [n for n in sizes if f"kernel N={n}" in data["phases"]]
    if not measured or measured != sizes[:len(measured)]:
        return f"phases: the sizes {measured!r} are not the notebook's, from {sizes[0]:,} up"
    wanted = {p for p in expected_phases(key, backend) if int(p.rsplit("=", 1)[1]) in measured}
    if set(data["phases"]) != wanted:
        return f"phases: {', '.join(sorted(wanted ^ set(data['phases'])))} not as the notebook times them"
    if data.get("n") != measured[-1] or data["bytes_moved"] != 12 * measured[-1]:
        return f"n: {data.get('n')!r} is not the largest size measured ({measured[-1]:,})"
    return None


LAUNCH_RUN = '''
# The lab's vector-add kernels (gpu/kernels/vector_add.py), exactly as they run in the lab.
KERNEL_SOURCE = {source!r}
namespace = {{}}
exec(KERNEL_SOURCE, namespace)
backend = "simulator" if simulated() else "gpu"
N = {n!r}[backend]
SAMPLES, WARMUP = {samples!r}[backend], {warmup}
rng = np.random.default_rng(0)
a, b = rng.random(N, dtype=np.float32), rng.random(N, dtype=np.float32)
stream = cuda.stream()
d_a, d_b = cuda.to_device(a, stream=stream), cuda.to_device(b, stream=stream)
d_c = cuda.device_array(N, dtype=np.float32, stream=stream)
flush = L2Flush(stream, device_facts()["l2_bytes"])
sms = device_facts()["multiprocessors"] or {simulated_sms}
launches = [(f"{{t}} threads per block", namespace["vector_add_kernel"], (N + t - 1) // t, t)
            for t in {blocks!r}[backend]]
launches += [(f"grid-stride, {{k}} x SMs", namespace["vector_add_grid_stride_kernel"], k * sms, {gs_threads})
             for k in {multiples!r}[backend]]
phases, checks, geometry = {{}}, [], {{}}
for label, kernel, blocks, threads in launches:
    d_c.copy_to_device(np.full(N, np.nan, dtype=np.float32), stream=stream)  # poisoned: every element must be written

    def launch():
        kernel[blocks, threads, stream](d_a, d_b, d_c)

    launch()
    checks.append(compare(f"{{label}}: c = a + b, bit for bit", d_c.copy_to_host(stream=stream), a + b))
    if checks[-1]["passed"]:
        phases[label] = time_it(launch, stream=stream, flush=flush, warmup=WARMUP, samples=SAMPLES)
    geometry[label] = {{"blocks": int(blocks), "threads_per_block": int(threads)}}
    stats = phases.get(label)
    shown = ("WRONG: " + checks[-1]["detail"]) if stats is None else (
        f"{{stats['median_s'] * 1e3:.1f}} ms of Python (simulated)" if simulated() else
        f"median {{stats['median_s'] * 1e3:.4f}} ms, {{12 * N / stats['median_s'] / 1e9:,.1f}} GB/s")
    print(f"{{label:<26}} {{blocks:>10,}} blocks: {{shown}}")
result = {{**result_header("experiment", "launch-sweep", KERNEL_SOURCE), "n": N,
          "threads_per_block": {gs_threads}, "bytes_moved": 12 * N, "warmup": WARMUP, "l2_flushed": flush.done,
          "phases": phases, "checks": checks, "launches": geometry, "agree": all(c["passed"] for c in checks)}}
'''

SCALING_RUN = '''
# The lab's vector-add kernel (gpu/kernels/vector_add.py), exactly as it runs in the lab.
import time
KERNEL_SOURCE = {source!r}
namespace = {{}}
exec(KERNEL_SOURCE, namespace)
kernel = namespace["vector_add_kernel"]
backend = "simulator" if simulated() else "gpu"
SIZES, SAMPLES, WARMUP, THREADS = {sizes!r}[backend], {samples!r}[backend], {warmup}, 256
stream = cuda.stream()
flush = L2Flush(stream, device_facts()["l2_bytes"])
phases, checks = {{}}, []
free_bytes = None if simulated() else cuda.current_context().get_memory_info()[0]
for N in SIZES:
    if free_bytes is not None and 12 * N > {share} * free_bytes:
        print(f"N = {{N:,}}: 3 vectors of {{4 * N / 1e9:.1f}} GB do not fit this GPU's free memory; the sweep stops")
        break
    rng = np.random.default_rng(N)
    a, b = rng.random(N, dtype=np.float32), rng.random(N, dtype=np.float32)
    d_a, d_b = cuda.to_device(a, stream=stream), cuda.to_device(b, stream=stream)
    d_c = cuda.device_array(N, dtype=np.float32, stream=stream)
    blocks = (N + THREADS - 1) // THREADS

    def launch():
        kernel[blocks, THREADS, stream](d_a, d_b, d_c)

    def with_copies():
        d_a.copy_to_device(a, stream=stream)
        d_b.copy_to_device(b, stream=stream)
        launch()
        d_c.copy_to_host(stream=stream)

    launch()
    checks.append(compare(f"N = {{N}}: c = a + b, bit for bit", d_c.copy_to_host(stream=stream), a + b))
    if not checks[-1]["passed"]:
        print(f"N = {{N:,}}: WRONG: {{checks[-1]['detail']}}")
        continue
    phases[f"kernel N={{N}}"] = time_it(launch, stream=stream, flush=flush, warmup=WARMUP, samples=SAMPLES)
    if N <= {end_to_end}:
        phases[f"with copies N={{N}}"] = time_it(with_copies, stream=stream, flush=flush, warmup=WARMUP,
                                                 samples=SAMPLES)
    cpu = []
    for _ in range(WARMUP + SAMPLES):
        start = time.perf_counter()
        np.add(a, b)
        cpu.append(time.perf_counter() - start)
    phases[f"numpy N={{N}}"] = summarise(cpu[WARMUP:])
    del d_a, d_b, d_c
    row = [f"{{name}} {{phases[f'{{name}} N={{N}}']['median_s'] * 1e3:.4f}} ms" for name in ("kernel", "with copies",
           "numpy") if f"{{name}} N={{N}}" in phases]
    print(f"N = {{N:>11,}}: " + ", ".join(row) + (" (Python in the simulator)" if simulated() else ""))
overtakes = [N for N in SIZES if f"with copies N={{N}}" in phases
             and phases[f"with copies N={{N}}"]["median_s"] < phases[f"numpy N={{N}}"]["median_s"]]
if not simulated():
    print("the GPU with its copies beats NumPy on this machine's CPU from N =", f"{{overtakes[0]:,}}" if overtakes
          else "no size measured")
largest = max([int(k.split("=")[1]) for k in phases] or [0])
result = {{**result_header("experiment", "scaling", KERNEL_SOURCE), "n": largest, "threads_per_block": THREADS,
          "bytes_moved": 12 * largest, "warmup": WARMUP, "l2_flushed": flush.done, "phases": phases,
          "checks": checks, "agree": all(c["passed"] for c in checks)}}
'''


def launch_cells(*, samples: dict[str, int], warmup: int) -> tuple[str, list[dict]]:
    from gpu.notebook.cells import _code

    source = launch_source()
    return source, [_code(LAUNCH_RUN.format(
        source=source, n=LAUNCH_N, samples=samples, warmup=warmup, simulated_sms=SIMULATED_SMS,
        blocks=LAUNCH_BLOCK_SIZES, multiples=LAUNCH_SM_MULTIPLES, gs_threads=GRID_STRIDE_THREADS))]


def scaling_cells(*, samples: dict[str, int], warmup: int) -> tuple[str, list[dict]]:
    from gpu.notebook.cells import _code

    source = scaling_source()
    return source, [_code(SCALING_RUN.format(source=source, sizes=SCALING_SIZES, samples=samples, warmup=warmup,
                                             share=SCALING_MEMORY_SHARE, end_to_end=END_TO_END_MAX_N))]


__all__ = ["END_TO_END_MAX_N", "LAUNCH_N", "SCALING_SIZES", "check_result", "expected_phases", "launch_cells",
           "launch_source", "phase_bytes", "scaling_cells", "scaling_source"]
