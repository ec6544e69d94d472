"""The Transfers notebook: the article's vector add done the ways that matter, on the notebook's GPU.

The strategies of the Transfers page (``gpu.experiments.transfers``), with the lab's own vector-add kernel,
each checked bit for bit against NumPy and timed as the page ranks them: wall-clock seconds per vector add,
the L2 flushed before every sample (``harness.time_wall``):

- ``article``: c zeroed on the host, a, b and c copied in (allocating as they copy), the kernel, c out;
- ``careful``: device arrays allocated first, only a and b copied in, the kernel, c out;
- ``pinned``: as careful, from and to pinned (page-locked) host memory;
- ``resident``: a and b copied in once, the kernel K times, c out once: the cost per vector add;
- ``chunked``: pinned memory in CHUNKS pieces over STREAMS streams, so copies and kernels overlap;
- ``mapped``: the kernel reads and writes mapped (zero-copy) host memory itself, no copies.

In the simulator every strategy runs at a small N and is checked, but copies are NumPy copies and streams
run one after another: the times mean nothing there, and the file says so (``backend: "simulator"``).
"""

from __future__ import annotations

N = {"gpu": 10_000_000, "simulator": 256}  # the article's N; in numba-cuda's simulator, seconds for all six
ITERATIONS = {"gpu": 100, "simulator": 3}  # the page's K for "resident"
CHUNKS, STREAMS = 8, 4  # the page's defaults
THREADS = 256
STRATEGIES = ("article", "careful", "pinned", "resident", "chunked", "mapped")

RUN = '''
# The lab's vector-add kernel (gpu/kernels/vector_add.py), exactly as it runs in the lab.
KERNEL_SOURCE = {source!r}
namespace = {{}}
exec(KERNEL_SOURCE, namespace)
kernel = namespace["vector_add_kernel"]
backend = "simulator" if simulated() else "gpu"
N, K, CHUNKS, STREAMS, THREADS = {n!r}[backend], {iterations!r}[backend], {chunks}, {streams}, {threads}
SAMPLES, WARMUP = {samples!r}[backend], {warmup}
BLOCKS = (N + THREADS - 1) // THREADS
rng = np.random.default_rng(0)
a, b = rng.random(N, dtype=np.float32), rng.random(N, dtype=np.float32)
want = a + b
out = np.empty(N, dtype=np.float32)
stream = cuda.stream()
flush = L2Flush(stream, device_facts()["l2_bytes"])
d_a, d_b, d_c = (cuda.device_array(N, dtype=np.float32) for _ in range(3))
p_a, p_b, p_out = (cuda.pinned_array(N, dtype=np.float32) for _ in range(3))
p_a[:], p_b[:] = a, b


def article():
    c = np.zeros_like(a)
    da, db, dc = cuda.to_device(a, stream=stream), cuda.to_device(b, stream=stream), cuda.to_device(c, stream=stream)
    kernel[BLOCKS, THREADS, stream](da, db, dc)
    dc.copy_to_host(out, stream=stream)
    stream.synchronize()
    return out


def careful(host_a=a, host_b=b, host_out=out):
    d_a.copy_to_device(host_a, stream=stream)
    d_b.copy_to_device(host_b, stream=stream)
    kernel[BLOCKS, THREADS, stream](d_a, d_b, d_c)
    d_c.copy_to_host(host_out, stream=stream)
    stream.synchronize()
    return host_out


def pinned():
    return careful(p_a, p_b, p_out)


def resident():
    d_a.copy_to_device(a, stream=stream)
    d_b.copy_to_device(b, stream=stream)
    for _ in range(K):
        kernel[BLOCKS, THREADS, stream](d_a, d_b, d_c)
    d_c.copy_to_host(out, stream=stream)
    stream.synchronize()
    return out


pool = [cuda.stream() for _ in range(STREAMS)]
edges = [N * i // CHUNKS for i in range(CHUNKS + 1)]


def chunked():
    for i in range(CHUNKS):
        lo, hi, s = edges[i], edges[i + 1], pool[i % STREAMS]
        d_a[lo:hi].copy_to_device(p_a[lo:hi], stream=s)
        d_b[lo:hi].copy_to_device(p_b[lo:hi], stream=s)
        kernel[(hi - lo + THREADS - 1) // THREADS, THREADS, s](d_a[lo:hi], d_b[lo:hi], d_c[lo:hi])
        d_c[lo:hi].copy_to_host(p_out[lo:hi], stream=s)
    for s in pool:
        s.synchronize()
    return p_out


runs = {{"article": (article, 1), "careful": (careful, 1), "pinned": (pinned, 1), "resident": (resident, K),
        "chunked": (chunked, 1)}}
skipped = {{}}
try:
    m_a, m_b, m_c = (cuda.mapped_array(N, dtype=np.float32) for _ in range(3))
    m_a[:], m_b[:] = a, b

    def mapped():
        kernel[BLOCKS, THREADS, stream](m_a, m_b, m_c)
        stream.synchronize()
        return m_c.copy_to_host() if simulated() else np.asarray(m_c)

    runs["mapped"] = (mapped, 1)
except Exception as exc:  # a device that cannot map host memory
    skipped["mapped"] = f"mapped host memory is not available here: {{exc}}"[:200]

phases, checks = {{}}, []
for name, (run, per) in runs.items():
    d_c.copy_to_device(np.full(N, np.nan, dtype=np.float32))  # poisoned: every element must be written
    p_out[:] = np.nan
    checks.append(compare(f"{{name}}: c = a + b, bit for bit", np.array(run()), want))
    if not checks[-1]["passed"]:
        print(f"{{name:>9}}: WRONG: {{checks[-1]['detail']}}")
        continue
    phases[name] = time_wall(run, flush=flush, warmup=WARMUP, samples=SAMPLES, per=per)
    tag = " (Python in the simulator: not GPU performance)" if simulated() else ""
    print(f"{{name:>9}}: {{phases[name]['median_s'] * 1e3:.4f}} ms per vector add{{tag}}")
result = {{**result_header("experiment", "transfers", KERNEL_SOURCE), "n": N, "threads_per_block": THREADS,
          "iterations": K, "chunks": CHUNKS, "streams": STREAMS, "bytes_moved": 12 * N, "warmup": WARMUP,
          "l2_flushed": flush.done, "phases": phases, "checks": checks, "skipped": skipped,
          "agree": all(c["passed"] for c in checks)}}
'''


def transfers_cells(*, samples: dict[str, int], warmup: int) -> tuple[str, list[dict]]:
    from gpu.notebook.cells import _code
    from gpu.notebook.sweeps import scaling_source

    source = scaling_source()  # the vector-add kernel alone
    return source, [_code(RUN.format(source=source, n=N, iterations=ITERATIONS, chunks=CHUNKS, streams=STREAMS,
                                     threads=THREADS, samples=samples, warmup=warmup))]


def check_result(data: dict, simulated: bool) -> str | None:
    """What is wrong with a Transfers result ("field: why"), None if nothing: the lab's kernel at the notebook's N,
    every strategy checked and timed (mapped may be skipped where the device cannot map host memory)."""
    from gpu.notebook.sweeps import scaling_source

    backend = "simulator" if simulated else "gpu"
    if data["kernel_source"] != scaling_source():
        return "kernel_source: is not the lab's vector_add_kernel, which the notebook runs unchanged"
    if data.get("n") != N[backend] or data["bytes_moved"] != 12 * N[backend]:
        return f"n: {data.get('n')!r} is not the notebook's N ({N[backend]:,})"
    skipped = set(data.get("skipped") or {})
    if skipped - {"mapped"}:
        return f"skipped: {', '.join(sorted(skipped - {'mapped'}))} (only mapped memory may be unavailable)"
    wrong = (set(STRATEGIES) - skipped) ^ set(data["phases"])
    if wrong:
        return f"phases: {', '.join(sorted(wrong))} not as the notebook times them (one per strategy)"
    return None


__all__ = ["N", "STRATEGIES", "check_result", "transfers_cells"]
