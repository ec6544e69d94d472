"""One place for settings: every KERNEL_LAB_* variable is declared and read in gpu/core/settings.py."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from gpu.core import limits
from gpu.core import settings as lab_settings
from gpu.core.settings import SETTINGS, Settings, settings
from gpu.sandbox.isolation import Limits

ROOT = Path(__file__).resolve().parent.parent
SETTINGS_MODULE = Path("gpu/core/settings.py")
# The standalone simulator imports nothing of gpu, so it reads its one variable itself.
EXCEPTIONS = {Path("gpu/sim/engine.py"): {"KERNEL_LAB_SIM_SHUFFLE"}, Path("gpu/sim/vector.py"): {"KERNEL_LAB_SIM_TIER"},
              Path("gpu/sandbox/child.py"): {"KERNEL_LAB_OWN_SESSION"}}  # read before the child imports the lab
PREFIX = "KERNEL_LAB_"


def _sources() -> list[Path]:
    files = [ROOT / "app.py"]
    for folder in ("gpu", "ui", "pages", "scripts"):
        files += sorted((ROOT / folder).rglob("*.py"))
    return [f for f in files if "node_modules" not in f.parts]


def _is_environ(node: ast.AST) -> bool:
    """``os.environ`` or a bare ``environ`` (``from os import environ``)."""
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def _names_in(node: ast.AST, constants: dict[str, str]) -> set[str]:
    """The KERNEL_LAB_* names an expression spells: a string, or a module-level name bound to one."""
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value.startswith(PREFIX):
            found.add(sub.value)
        elif isinstance(sub, ast.Name) and constants.get(sub.id, "").startswith(PREFIX):
            found.add(constants[sub.id])
    return found


def env_reads(tree: ast.AST) -> set[str]:
    """KERNEL_LAB_* variables read through os.environ / os.getenv / environ.get (subscript, get, in, getenv)."""
    constants = {
        target.id: node.value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            getter = isinstance(func, ast.Attribute) and (
                (func.attr in ("get", "pop", "setdefault") and _is_environ(func.value))
                or (func.attr == "getenv" and isinstance(func.value, ast.Name) and func.value.id == "os")
            )
            getter = getter or (isinstance(func, ast.Name) and func.id == "getenv")
            if getter and node.args:
                read |= _names_in(node.args[0], constants)
        elif isinstance(node, ast.Subscript) and _is_environ(node.value) and isinstance(node.ctx, ast.Load):
            read |= _names_in(node.slice, constants)
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
            read |= _names_in(node.left, constants)
    return read


def test_only_the_settings_module_reads_kernel_lab_variables():
    offenders = {}
    for path in _sources():
        rel = path.relative_to(ROOT)
        if rel == SETTINGS_MODULE:
            continue
        read = env_reads(ast.parse(path.read_text(encoding="utf-8"), filename=str(rel)))
        read -= EXCEPTIONS.get(rel, set())
        if read:
            offenders[str(rel)] = sorted(read)
    assert offenders == {}, f"read KERNEL_LAB_* through gpu.core.settings.settings() instead: {offenders}"


def test_the_walk_finds_every_form_of_read():
    source = """
import os
from os import environ, getenv
NAME = "KERNEL_LAB_A"
os.environ.get(NAME)
os.environ["KERNEL_LAB_B"]
os.getenv("KERNEL_LAB_C", "x")
"KERNEL_LAB_D" in os.environ
environ.get("KERNEL_LAB_E")
getenv("KERNEL_LAB_F")
os.environ["KERNEL_LAB_WRITTEN"] = "1"
os.environ.get("PATH")
"""
    assert env_reads(ast.parse(source)) == {f"KERNEL_LAB_{c}" for c in "ABCDEF"}


def test_the_simulator_exception_is_the_declared_variable():
    from gpu.sim.engine import SHUFFLE_ENV

    assert SHUFFLE_ENV == lab_settings.SIM_SHUFFLE.name
    assert lab_settings.SIM_SHUFFLE.attribute is None


def test_names_kept_by_hand_are_the_declared_ones():
    from gpu.service.store import ENV_DB

    assert ENV_DB == lab_settings.DB.name


def test_one_declaration_per_variable_and_one_attribute_per_declaration():
    names = [s.name for s in SETTINGS]
    assert len(names) == len(set(names))
    assert all(name.startswith(PREFIX) for name in names)
    attributes = [s.attribute for s in SETTINGS if s.attribute is not None]
    assert attributes == [f.name for f in dataclasses.fields(Settings)]
    for s in SETTINGS:
        assert s.type
        assert s.default
        assert s.meaning
        assert s.readers


def test_every_kernel_lab_name_in_the_source_is_declared():
    declared = {s.name for s in SETTINGS}
    spelled = set()
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(PREFIX):
                spelled.add(node.value)
    assert spelled <= declared, sorted(spelled - declared)


def test_settings_imports_only_the_standard_library():
    tree = ast.parse((ROOT / SETTINGS_MODULE).read_text(encoding="utf-8"))
    modules = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    modules |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert modules <= set(sys.stdlib_module_names) | {"__future__"}, modules


def test_the_docs_table_is_what_the_declarations_produce():
    text = lab_settings.DOC_PATH.read_text(encoding="utf-8")
    assert lab_settings.document(text) == text, "docs/settings.md is out of date: run scripts/settings_doc.py"
    for s in SETTINGS:
        assert f"| `{s.name}` |" in text


def test_the_regeneration_script_checks_the_doc():
    proc = subprocess.run(
        [sys.executable, "scripts/settings_doc.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


def test_the_readme_links_the_settings_doc():
    assert "docs/settings.md" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_declared_defaults_match_the_code():
    gpu, sim = limits.DEFAULT_MAX_N
    assert lab_settings.MAX_N.default.startswith("2^30 on a GPU") and gpu == 2**30
    assert "2^20 in the lab's simulator" in lab_settings.MAX_N.default and limits.LAB_SIMULATOR_MAX_N == 2**20
    assert f"{limits.NUMBA_SIMULATOR_MAX_N:,} in numba-cuda's" in lab_settings.MAX_N.default
    assert lab_settings.MAX_REPEATS.default == f"{limits.DEFAULT_MAX_REPEATS[0]}" == f"{limits.DEFAULT_MAX_REPEATS[1]}"
    assert lab_settings.MAX_SWEEP_POINTS.default == f"{limits.DEFAULT_MAX_SWEEP_POINTS[0]}"
    assert limits.DEFAULT_MAX_WORK[0] == 2**32 and lab_settings.MAX_WORK.default.startswith("2^32 on a GPU")
    assert limits.DEFAULT_MAX_CPU_N == (2**30, 2**30) and lab_settings.MAX_CPU_N.default == "2^30"
    assert limits.DEFAULT_MAX_CPU_WORK == (2**34, 2**32)
    assert lab_settings.MAX_CPU_WORK.default == "2^34 on a GPU; 2^32 in a simulator"
    defaults = Limits()
    assert lab_settings.SUBMIT_WALL_S.default == f"{defaults.wall_s:.0f}"
    assert lab_settings.SUBMIT_CPU_S.default == f"{defaults.cpu_s}"
    assert lab_settings.SUBMIT_TASKS.default == f"{defaults.tasks}"
    assert lab_settings.SUBMIT_MEMORY_MB.default == f"{defaults.memory_bytes >> 20}"


# --- parsing -----------------------------------------------------------------------------------------


def test_defaults_when_nothing_is_set():
    given = settings({})
    assert given.simulator == "lab"
    assert given.db is None
    assert given.max_n is None
    assert given.sandbox_off is False
    assert given.require_sandbox is False
    assert given.submit_wall_s is None
    assert given.cluster is None
    assert given.cluster_gpus is None
    assert given.experiments == ()
    assert given.uploads is None
    assert given.chromium == "/usr/bin/chromium"


def test_simulator():
    assert settings({"KERNEL_LAB_SIMULATOR": " Numba "}).simulator == "numba"
    assert settings({"KERNEL_LAB_SIMULATOR": ""}).simulator == "lab"
    with pytest.raises(ValueError, match="KERNEL_LAB_SIMULATOR must be one of lab, numba, not 'cuda'"):
        settings({"KERNEL_LAB_SIMULATOR": "cuda"})


def test_cluster_gpus_bad_value_names_the_variable():
    assert settings({"KERNEL_LAB_CLUSTER_GPUS": "2"}).cluster_gpus == 2
    assert settings({"KERNEL_LAB_CLUSTER_GPUS": ""}).cluster_gpus is None
    with pytest.raises(ValueError, match="KERNEL_LAB_CLUSTER_GPUS must be a whole number.*'two'"):
        settings({"KERNEL_LAB_CLUSTER_GPUS": "two"})


def test_text_and_switches():
    given = settings(
        {
            "KERNEL_LAB_DB": "  ~/h.sqlite3 ",
            "KERNEL_LAB_CLUSTER": "   ",
            "KERNEL_LAB_SANDBOX": "OFF",
            "KERNEL_LAB_REQUIRE_SANDBOX": "yes",  # only "1" requires it
            "KERNEL_LAB_EXPERIMENTS": " a.b, ,c ",
            "KERNEL_LAB_UPLOADS": " Off ",
            "KERNEL_LAB_PLAIN_EDITOR": "1",
            "KERNEL_LAB_CHROMIUM": "",
        }
    )
    assert given.db == "~/h.sqlite3"
    assert given.cluster is None
    assert given.sandbox_off is True
    assert given.require_sandbox is False
    assert given.experiments == ("a.b", "c")
    assert given.uploads is False
    assert given.plain_editor is True
    assert given.chromium == ""
    assert settings({"KERNEL_LAB_UPLOADS": "maybe"}).uploads is None


def test_submit_limits_keep_the_default_when_malformed():
    given = settings(
        {
            "KERNEL_LAB_SUBMIT_WALL_S": "2.5",
            "KERNEL_LAB_SUBMIT_CPU_S": "1.5",  # not a whole number: the default
            "KERNEL_LAB_SUBMIT_TASKS": "-3",
            "KERNEL_LAB_SUBMIT_MEMORY_MB": "512",
        }
    )
    assert given.submit_wall_s == 2.5
    assert given.submit_cpu_s is None
    assert given.submit_tasks is None
    assert given.submit_memory_mb == 512


def test_limits_are_kept_as_written_and_parsed_by_load_config():
    assert settings({"KERNEL_LAB_MAX_N": " 2^10 "}).max_n == " 2^10 "
    assert settings({"KERNEL_LAB_MAX_N": "  "}).max_n is None
    config = limits.load_config({"KERNEL_LAB_MAX_N": "2^10", "KERNEL_LAB_MAX_REPEATS": "lots"})
    assert config.max_n == 1024
    assert config.max_repeats == limits.load_config({}).max_repeats
    assert any("KERNEL_LAB_MAX_REPEATS='lots' ignored" in p for p in config.problems)


def test_settings_reads_the_environment_at_each_call(monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_MAX_CPU_WORK", "1e6")
    assert settings().max_cpu_work == "1e6"
    assert limits.load_config().max_cpu_work == 10**6
    monkeypatch.setenv("KERNEL_LAB_MAX_CPU_WORK", "2^20")
    assert limits.load_config().max_cpu_work == 2**20
    monkeypatch.setenv("KERNEL_LAB_SUBMIT_WALL_S", "7")
    assert Limits.from_env().wall_s == 7.0


def test_settings_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings({}).db = "x"  # type: ignore[misc]
