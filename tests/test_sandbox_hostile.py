"""Hostile submissions: each is refused or contained with a clear message, nothing is saved, the next one runs.

Two layers are tested separately: (1) submissions through the whole path (checker, child,
sandbox) with and without bubblewrap; (2) the sandbox alone, running code the checker would
never let through (``run_argv``), to show what contains it if the checker missed something.
Timeouts are small (a few seconds) so the suite stays bounded.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from dataclasses import replace

import pytest

from gpu.sandbox import isolation, judging
from gpu.sandbox.isolation import Limits, run_argv, sandbox_status
from gpu.sandbox.judging import judge_in_child
from gpu.sandbox.service import submit
from gpu.sandbox.submissions import SubmissionStore

SIMULATED = True  # the child runs in the simulator here (the GPU path is the same code with device nodes bound)
WALL_S = 8.0  # enough for a child to import Numba on a loaded two-core machine, small enough for a bounded suite
FAST = Limits(wall_s=WALL_S, cpu_s=20, address_space_bytes=4 << 30)
# For a kernel the simulator itself must stop (its loop limit, an undefined shift): about 1.5 s alone here, but the
# child runs at nice 10 and a fresh clone's loaded `make test` once let the 8 s wall clock win that race. The verdict
# then says which stopped it; the wall clock here is only the backstop, not part of what is tested.
SIMULATOR_STOPS = Limits(wall_s=60.0, cpu_s=20, address_space_bytes=4 << 30)
SANDBOX = sandbox_status(True)
needs_sandbox = pytest.mark.skipif(not SANDBOX.works, reason=f"bubblewrap does not work here: {SANDBOX.reason}")
OFF = isolation.SandboxStatus(False, "none", "switched off for this test", False)

GOOD = """from numba import cuda

@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] + b[i]
"""


def kernel(body: str, header: str = "from numba import cuda\n") -> str:
    return header + "\n@cuda.jit\ndef vector_add(a, b, out):\n" + textwrap.indent(textwrap.dedent(body), "    ")


REFUSED = {
    "import os": ("import os\n" + kernel("pass"), "import"),
    "import subprocess": ("import subprocess\n" + kernel("pass"), "import"),
    "import socket": ("from socket import socket\n" + kernel("pass"), "import"),
    "open()": (kernel("x = open('/etc/passwd')"), "builtin"),
    "__import__": (kernel("x = __import__('os')"), "dunder"),
    "eval": (kernel("x = eval('1')"), "builtin"),
    "exec": (kernel("exec('import os')"), "builtin"),
    "dunder walk": (kernel("x = ().__class__.__bases__[0].__subclasses__()"), "dunder"),
    "write a file": (kernel("a.tofile('/tmp/stolen')"), "attribute"),
    "read the expected output": (kernel("x = cuda.sys.modules"), "cuda-api"),
    "host loop at the top level": ("from numba import cuda\nwhile True:\n    pass\n" + kernel("pass"), "top-level"),
    "huge allocation": (
        kernel("big = cuda.local.array(1 << 30, float32)", "from numba import cuda, float32\n"),
        "array-size",
    ),
    "fork": (kernel("x = os.fork()"), "name"),
    "network": ("import urllib.request\n" + kernel("pass"), "import"),
    "patch the timer": ("import time\n" + kernel("pass"), "import"),
    "patch numba's events": ("from numba import cuda\ncuda.event = None\n" + kernel("pass"), "top-level"),
    "patch events in a kernel": (kernel("cuda.event = 0"), "attribute-assignment"),
    "cache between calls": ("from numba import cuda\nSEEN = (0.0,)\n" + kernel("SEEN[0] = a[0]"), "module-state"),
    # the simulator's rewrite: an alias would hide a barrier, a launch inside a kernel NVVM refuses, a global `range`
    "alias a synchronising device function": (
        "from numba import cuda\n@cuda.jit(device=True)\ndef stage(a):\n    cuda.syncthreads()\n    return a[0]\n"
        + kernel("f = stage\nout[0] = f(a)"), "device-call"),
    "launch from a kernel": (
        "from numba import cuda\n@cuda.jit\ndef inner(out):\n    out[0] = 1.0\n" + kernel("inner[1, 1](out)"),
        "kernel-launch"),
    "take the name range": ("from numba import cuda\nrange = 3\n" + kernel("pass"), "redefinition"),
}


@pytest.mark.parametrize("sandbox", [SANDBOX, OFF], ids=["sandbox", "no-sandbox"])
@pytest.mark.parametrize("case", sorted(REFUSED), ids=str)
def test_refused_by_the_checker_with_rule_and_line(case, sandbox):
    source, rule = REFUSED[case]
    verdict = judge_in_child("vector-add", source, limits=FAST, simulated=SIMULATED, sandbox=sandbox)
    assert verdict.status == "refused" and verdict.exit_code == 2
    assert verdict.refusal["rule"] == rule, verdict.message
    assert verdict.message.startswith(f"refused ({rule})") and "line" in verdict.message


@pytest.mark.parametrize("sandbox", [pytest.param(SANDBOX, marks=needs_sandbox), OFF], ids=["sandbox", "no-sandbox"])
def test_a_kernel_that_never_ends_is_killed_at_the_wall_clock_limit(sandbox):
    """A never-ending loop of loops whose every turn is long (128 array reads): the simulator's loop limit (each run of
    each loop) would take hours to reach and its work limit (2,097,152 turns of the launch) about half a minute, so only
    the wall clock stops it."""
    reads = " + ".join(["a[0]"] * 16)
    source = kernel("""
        i = cuda.grid(1)
        while i >= 0:
            for j in range(60000):
    """ + "".join(f"            i += {reads}\n" for _ in range(8)))
    verdict = judge_in_child("vector-add", source, limits=FAST, simulated=SIMULATED, sandbox=sandbox)
    assert verdict.status == "refused" and verdict.refusal["rule"] == "time-limit"
    assert f"{WALL_S:g} s wall-clock limit" in verdict.message


@pytest.mark.parametrize("sandbox", [pytest.param(SANDBOX, marks=needs_sandbox), OFF], ids=["sandbox", "no-sandbox"])
def test_a_loop_of_long_loops_is_stopped_by_the_simulators_work_limit_naming_its_line(sandbox):
    """Each turn of the outer loop is 60,000 turns of the inner one: the loop limit (65,536 turns of one run of one
    loop) would take hours to reach and the wall clock stopped it, "time-limit" after 20-60 s, differently on a busy
    server. The work limit (gpu/sim/loops.py: work_limit) counts every turn of the launch: a wrong result naming the
    inner loop's line, the same on any machine, in a fraction of a second of the child's time."""
    source = kernel("""
        i = cuda.grid(1)
        while i >= 0:
            for j in range(60000):
                i += 1
    """)
    verdict = judge_in_child("vector-add", source, limits=SIMULATOR_STOPS, simulated=SIMULATED, sandbox=sandbox)
    assert verdict.status == "wrong", verdict.message
    error = verdict.mismatch["error"]
    assert "loop limit (thread (0, 0, 0) of block (0, 0, 0), line 8)" in error, error  # the "for"
    assert "more than 2,097,152 turns in all its threads together, the simulator's work limit" in error, error
    assert verdict.wall_s is not None  # stopped by the simulator (the verdict above), not the wall clock


@pytest.mark.parametrize("sandbox", [pytest.param(SANDBOX, marks=needs_sandbox), OFF], ids=["sandbox", "no-sandbox"])
def test_a_loop_that_never_ends_is_stopped_by_the_simulator_naming_its_line(sandbox):
    """The common never-ending kernel (the index never reaches the bound) gets its verdict in about a second, with its
    thread and line, instead of waiting out the wall clock (gpu/sim/loops.py: loop_limit)."""
    source = kernel("""
        i = cuda.grid(1)
        while i >= 0:
            i += 1
    """)
    verdict = judge_in_child("vector-add", source, limits=SIMULATOR_STOPS, simulated=SIMULATED, sandbox=sandbox)
    assert verdict.status == "wrong", verdict.message
    error = verdict.mismatch["error"]
    assert "loop limit (thread (0, 0, 0) of block (0, 0, 0), line 7)" in error, error  # the "while"
    assert verdict.mismatch["line"] == 7
    assert "65,536 turns" in error and "a GPU has none: it would spin until the wall-clock limit" in error
    assert verdict.wall_s is not None  # stopped by the simulator (the verdict above), not the wall clock


@pytest.mark.parametrize("sandbox", [pytest.param(SANDBOX, marks=needs_sandbox), OFF], ids=["sandbox", "no-sandbox"])
def test_a_shift_past_63_places_is_a_fault_not_a_memory_hog(sandbox):
    """With Python's ints ``x << s`` (``s`` doubling) grew until the memory limit stopped the child; as Numba compiles
    it the shift by 64 is undefined, and the simulator says so at once, with the line (gpu/sim/arithmetic.py)."""
    source = kernel("""
        i = cuda.grid(1)
        if i == 0:
            x = 1
            s = 1
            while s > 0:
                x = x << s
                s = s * 2
            out[0] = x
    """)
    verdict = judge_in_child("vector-add", source, limits=SIMULATOR_STOPS, simulated=SIMULATED, sandbox=sandbox)
    assert verdict.status == "wrong", verdict.message
    error = verdict.mismatch["error"]
    assert "undefined (thread (0, 0, 0) of block (0, 0, 0), line 11)" in error, error  # the shift
    assert "<< 64: a shift by 64 places or more is undefined in compiled Numba" in error
    assert verdict.mismatch["line"] == 11  # the editor marks it (ui/views/write_kernel.py: markers_for)
    assert verdict.wall_s is not None  # stopped by the simulator (the verdict above), not the wall clock


@needs_sandbox
def test_caching_a_result_in_an_input_is_caught():
    source = kernel("""
        i = cuda.grid(1)
        if i < a.size:
            out[i] = a[i] + b[i]
            b[i] = 0.0
    """)
    verdict = judge_in_child("vector-add", source, limits=FAST, simulated=SIMULATED, sandbox=SANDBOX)
    assert verdict.status == "wrong" and "changed its input 'b'" in verdict.message


def test_nothing_hostile_is_saved_and_the_next_submission_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_DB", str(tmp_path / "h.sqlite3"))
    monkeypatch.setenv("KERNEL_LAB_LOCK_DIR", str(tmp_path / "locks"))
    for case in ("import os", "dunder walk", "cache between calls"):
        result = submit("vector-add", REFUSED[case][0], name="mallory", limits=FAST, sandbox=SANDBOX, facts=False)
        assert result.verdict.status == "refused" and result.saved_id is None
    result = submit("vector-add", GOOD, name="alice", limits=FAST, sandbox=SANDBOX, facts=False)
    assert result.verdict.status == "passed", result.verdict.message
    assert [e.name for e in SubmissionStore().all()] == ["alice"]


# --- the sandbox alone: code the checker would refuse, run the way a submission runs -----------------


def raw(code: str, limits: Limits = FAST, sandbox=SANDBOX) -> dict:
    """Run ``code`` in a child with the submission's limits applied (the child's own apply_limits)."""
    prelude = ("import json, os, sys\nfrom gpu.sandbox.child import "
               f"apply_limits\napply_limits({json.dumps(limits.for_child(True))})\n")
    run = run_argv([sys.executable, "-c", prelude + textwrap.dedent(code)], b"", limits, True, sandbox)
    run["text"] = run["stdout"].decode(errors="replace").strip()
    return run


@needs_sandbox
def test_the_system_and_the_lab_are_read_only_and_tmp_is_private(tmp_path):
    marker = tmp_path / "host-file"
    marker.write_text("host")
    run = raw(f"""
        out = {{}}
        for path in ({str(isolation.ROOT / 'written-by-a-submission')!r}, '/usr/written', '/etc/written'):
            try:
                open(path, 'w').write('x'); out[path] = 'written'
            except OSError as exc:
                out[path] = exc.strerror
        open('/tmp/mine', 'w').write('x')
        out['tmp'] = os.listdir('/tmp')
        out['host tmp visible'] = os.path.exists({str(marker)!r})
        out['database visible'] = os.path.exists({os.environ['KERNEL_LAB_DB']!r})
        out['root home visible'] = os.path.exists(os.path.expanduser('~root/.bash_history'))
        print(json.dumps(out))
    """)
    out = json.loads(run["text"])
    assert all(out[p] == "Read-only file system" for p in out if p.startswith("/")), out
    # the lab's own folder is bound read-only at its real path: where that is under /tmp (a
    # clone in /tmp), its first folder is the one other entry the private /tmp may show
    lab_mount = {isolation.ROOT.parts[2]} if isolation.ROOT.parts[:2] == ("/", "tmp") else set()
    assert set(out["tmp"]) - lab_mount == {"mine"} and not out["host tmp visible"] and not out["database visible"]
    assert not (isolation.ROOT / "written-by-a-submission").exists()


@needs_sandbox
def test_no_network():
    run = raw("""
        import socket
        try:
            socket.create_connection(('1.1.1.1', 80), timeout=2); print('connected')
        except OSError as exc:
            print('refused:', exc)
        print(sorted(n for n in socket.if_nameindex()) if hasattr(socket, 'if_nameindex') else '')
    """)
    assert run["text"].startswith("refused:") and "eth" not in run["text"], run["text"]


@needs_sandbox
def test_the_seed_is_in_no_environment_variable_or_file():
    run = raw("print(json.dumps(dict(os.environ)))")
    env = json.loads(run["text"])
    assert not any("seed" in k.lower() or "seed" in v.lower() for k, v in env.items())
    assert env["HOME"] == "/tmp"


@pytest.mark.parametrize("sandbox", [pytest.param(SANDBOX, marks=needs_sandbox), OFF], ids=["sandbox", "no-sandbox"])
def test_a_host_loop_is_killed_by_cpu_or_wall_clock(sandbox):
    run = raw("while True:\n    pass\n", replace(FAST, wall_s=3.0, cpu_s=1), sandbox)
    assert (
        run["rc"] in (-24, 128 + 24) or run["timed_out"]
    )  # SIGXCPU after 1 s of CPU, or the wall clock on a crowded machine
    verdict = judging.interpret(run, "vector-add", "simulator", replace(FAST, wall_s=3.0, cpu_s=1))
    assert verdict.status == "refused" and verdict.refusal["rule"] in ("cpu-limit", "time-limit")


@needs_sandbox
def test_a_huge_allocation_fails_inside_the_child():
    run = raw("""
        try:
            block = bytearray(16 << 30); print('allocated')
        except MemoryError:
            print('MemoryError')
    """, replace(FAST, address_space_bytes=2 << 30))
    assert run["text"] == "MemoryError"


@needs_sandbox
def test_large_files_are_cut_at_the_file_size_limit():
    run = raw("""
        try:
            open('/tmp/big', 'wb').write(b'x' * (4 << 20)); print('written')
        except OSError as exc:
            print(exc.strerror)
    """, replace(FAST, file_bytes=1 << 20))
    assert run["text"] == "File too large"


def survivors(marker: str) -> list[int]:
    """Processes on this host whose command line holds ``marker`` (not this test's own)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


@needs_sandbox
def test_forks_are_capped_and_die_with_the_submission():
    if not SANDBOX.pids_cgroup and os.geteuid() == 0:
        pytest.skip(
            "no pids cgroup here and root ignores RLIMIT_NPROC: only the checker stops a fork bomb "
            "(docs/write-a-kernel.md)"
        )
    marker = "fork-bomb-marker-7f3a"
    run = raw(f"""
        import time
        made = 0
        for _ in range(200):
            try:
                if os.fork() == 0:
                    time.sleep(600); os._exit(0)  # {marker}
                made += 1
            except OSError:
                break
        print(made, flush=True)
    """, replace(FAST, wall_s=30.0, tasks=32))
    assert 0 < int(run["text"]) < 32, run  # the pids cgroup stopped the forks
    assert survivors(marker) == []  # the sleeping children died with the submission


def test_the_verdict_is_read_up_to_a_cap():
    run = raw("sys.stdout.write('x' * (1 << 20))", replace(FAST, output_bytes=1024), OFF)
    assert run["output_over"] and len(run["stdout"]) == 1024
    assert (
        judging.interpret(run, "vector-add", "simulator", replace(FAST, output_bytes=1024)).refusal["rule"]
        == "output-limit"
    )


# --- without a sandbox -------------------------------------------------------------------------------


def test_sandbox_switched_off_still_runs_but_says_so(monkeypatch):
    monkeypatch.setenv(isolation.ENV_SANDBOX, "off")
    monkeypatch.delenv(isolation.ENV_REQUIRE, raising=False)
    status = sandbox_status(True)
    assert not status.works and status.accepts and "switched off" in status.reason
    verdict = judge_in_child("vector-add", GOOD, limits=FAST, simulated=True)
    assert verdict.status == "passed" and "ran as you" in verdict.sandbox


def test_a_demo_that_requires_the_sandbox_refuses_everything_without_it(monkeypatch):
    monkeypatch.setenv(isolation.ENV_SANDBOX, "off")
    monkeypatch.setenv(isolation.ENV_REQUIRE, "1")
    status = sandbox_status(True)
    assert not status.accepts
    verdict = judge_in_child("vector-add", GOOD, limits=FAST, simulated=True)
    assert (
        verdict.status == "refused"
        and verdict.refusal["rule"] == "sandbox"
        and "to enable it" in verdict.message
        or "switched off" in verdict.message
    )


def test_limits_from_the_environment(monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_SUBMIT_WALL_S", "12.5")
    monkeypatch.setenv("KERNEL_LAB_SUBMIT_CPU_S", "nonsense")
    limits = Limits.from_env()
    assert limits.wall_s == 12.5 and limits.cpu_s == Limits().cpu_s
    assert Limits().for_child(simulated=False)["address_space_bytes"] == 0  # never RLIMIT_AS on a GPU


def test_a_submission_waits_for_the_device_lock_like_every_run(tmp_path, monkeypatch):
    import threading
    import time

    from gpu.service.devicelock import FileFifoLock

    monkeypatch.setenv("KERNEL_LAB_DB", str(tmp_path / "h.sqlite3"))
    monkeypatch.setenv("KERNEL_LAB_LOCK_DIR", str(tmp_path / "locks"))
    (tmp_path / "locks").mkdir()
    held, release = threading.Event(), threading.Event()

    def another_run():
        with FileFifoLock(name="gpu0", directory=tmp_path / "locks").hold("someone's experiment"):
            held.set()
            release.wait(10)

    thread = threading.Thread(target=another_run)
    thread.start()
    held.wait(10)
    threading.Timer(2.0, release.set).start()
    started = time.perf_counter()
    result = submit("vector-add", GOOD, save=False, limits=FAST, sandbox=SANDBOX, facts=False)
    total = time.perf_counter() - started
    thread.join()
    assert result.verdict.status == "passed"
    assert total - result.verdict.wall_s >= 1.5  # queued behind the other run, then ran alone


@pytest.mark.parametrize("sandbox", [SANDBOX, OFF], ids=["sandbox", "no-sandbox"])
def test_a_submission_runs_below_the_app_even_in_a_session_of_its_own(sandbox):
    """A child in its own session (autogroup) weighs against the app's server by its session's nice, not only
    its own: both are lowered, so 16 learners' kernels cannot take the cores from the pages."""
    from gpu.sandbox.child import CHILD_NICENESS

    if sandbox is SANDBOX and not SANDBOX.works:
        pytest.skip(f"bubblewrap does not work here: {SANDBOX.reason}")
    run = raw("""
        import time
        print(os.getpriority(os.PRIO_PROCESS, 0))
        try:  # the kernel lets one autogroup change through per 0.1 s host-wide: the child tries again until then
            for _ in range(100):
                group = open('/proc/self/autogroup').read().split()[-1]
                if group != '0':
                    break
                time.sleep(0.05)
            print(group)
        except OSError:
            print('no autogroup')
    """, sandbox=sandbox)
    nice, group = run["text"].splitlines()
    assert int(nice) >= CHILD_NICENESS, run
    if group != "no autogroup":
        assert int(group) == CHILD_NICENESS, run


def test_a_sandbox_whose_binary_is_gone_never_runs_the_code_unsandboxed(tmp_path, monkeypatch):
    """The probe said bubblewrap works, then its binary went: the run stops, rather than run without it."""
    marker = tmp_path / "ran"
    works = isolation.SandboxStatus(True, "bubblewrap", "probed earlier in this test", False)
    monkeypatch.setattr(isolation, "bwrap_binary", lambda: None)
    with pytest.raises(RuntimeError, match="bubblewrap"):
        run_argv([sys.executable, "-c", f"open({str(marker)!r}, 'w').write('x')"], b"", FAST, True, works)
    assert not marker.exists()
