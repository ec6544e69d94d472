"""The history store: schema, round trip, WAL, and damaged or unwritable files."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from gpu.service.store import (
    COLUMNS,
    ENV_DB,
    HistoryStore,
    StoreError,
    default_path,
    open_store,
    params_of,
)

ROOT = Path(__file__).resolve().parent.parent
VERSIONS = {"numba": "0.0-test"}


def _result(n: int = 64, experiment: str = "vector-add", backend: str = "simulator") -> dict:
    return {
        "experiment": experiment,
        "created_at": "2026-01-02T03:04:05+00:00",
        "n": n,
        "threads_per_block": 128,
        "backend": backend,
        "device": {"name": "CUDA simulator (no GPU)", "index": 0, "backend": backend},
        "policy": {"n_repeat": 3, "warmup": 1},
        "gpu": {"phases": {"kernel": {"median_s": 2e-3, "samples_s": [1e-3, 2e-3, 3e-3]}}},
        "max_abs_diff": float("nan"),
    }


def test_default_path_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_DB, str(tmp_path / "x.sqlite3"))
    assert default_path() == tmp_path / "x.sqlite3"
    monkeypatch.delenv(ENV_DB)
    assert default_path().name == "history.sqlite3" and "kernel-lab" in str(default_path())


def test_schema_has_the_columns_and_wal_mode(tmp_path):
    store = open_store(tmp_path / "h.sqlite3")
    assert store.available and store.writable and store.problem is None
    conn = sqlite3.connect(store.path)
    columns = {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
    assert set(COLUMNS) <= columns
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "1"


def test_round_trip_keeps_every_sample_and_labels_simulated_runs(tmp_path):
    store = open_store(tmp_path / "h.sqlite3")
    run_id = store.save(_result(), versions=VERSIONS, device_index=0)
    store.save(_result(n=128, backend="cuda", experiment="scaling"), versions=VERSIONS)
    (back,) = store.runs(experiment="vector-add")
    assert back.run_id == run_id and store.get(run_id[:6]).run_id == run_id
    assert back.result["gpu"]["phases"]["kernel"]["samples_s"] == [1e-3, 2e-3, 3e-3]
    assert back.result["max_abs_diff"] is None  # NaN stored as strict JSON null
    assert back.params["n"] == 64 and back.params["policy"] == {"n_repeat": 3, "warmup": 1}
    assert back.versions == VERSIONS and back.device_name == "CUDA simulator (no GPU)"
    assert back.simulated and "simulated" in back.backend_label
    assert [r.experiment for r in store.runs()] == ["scaling", "vector-add"]  # newest first
    assert store.runs(backend="cuda")[0].simulated is False
    assert store.count() == 2 and store.integrity() == "ok"
    json.dumps(back.to_dict(), allow_nan=False)


def test_params_prefer_an_explicit_params_mapping():
    assert params_of({"experiment": "x", "params": {"sizes": [1, 2]}, "n": 3}) == {"sizes": [1, 2]}
    assert params_of({"experiment": "x", "n": 3, "device": {}, "gpu": {}}) == {"n": 3}


def test_save_without_an_experiment_name_is_refused(tmp_path):
    store = open_store(tmp_path / "h.sqlite3")
    with pytest.raises(StoreError):
        store.save({"n": 1}, versions=VERSIONS)
    assert store.save({"n": 1}, experiment="fallback", versions=VERSIONS)


def test_delete_needs_an_exact_or_unique_id(tmp_path):
    store = open_store(tmp_path / "h.sqlite3")
    ids = [store.save(_result(n), versions=VERSIONS) for n in (1, 2)]
    with pytest.raises(StoreError):
        store.delete(["not-hex"])
    with pytest.raises(StoreError):
        store.delete(["0" * 32])
    assert store.delete([ids[0]]) == 1
    assert [r.run_id for r in store.runs()] == [ids[1]]


def test_a_corrupt_file_is_moved_aside_and_history_starts_afresh(tmp_path):
    path = tmp_path / "h.sqlite3"
    path.write_bytes(b"this is not a database " * 200)
    store = open_store(path)
    assert store.available and store.writable
    assert store.moved_aside is not None and store.moved_aside.read_bytes().startswith(b"this is not")
    assert "moved" in store.problem
    store.save(_result(), versions=VERSIONS)
    assert store.count() == 1


def test_a_truncated_database_is_moved_aside(tmp_path):
    path = tmp_path / "h.sqlite3"
    good = open_store(path)
    for n in range(50):
        good.save(_result(n + 1), versions=VERSIONS)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] + b"\x00garbage" * 64)
    store = open_store(path)
    assert store.available and store.moved_aside is not None
    assert store.count() == 0


def test_an_unwritable_folder_makes_history_unavailable_but_not_an_error(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the folder should be")
    store = open_store(blocker / "sub" / "h.sqlite3")
    assert not store.available and not store.writable
    assert store.problem.startswith("History is unavailable") and "Experiments still run" in store.problem
    with pytest.raises(StoreError):
        store.save(_result(), versions=VERSIONS)
    with pytest.raises(StoreError):
        store.runs()


def test_a_readonly_database_is_classified_as_readonly(tmp_path, monkeypatch):
    """SQLite's own read-only error leaves history readable and saving refused."""
    path = tmp_path / "h.sqlite3"
    open_store(path).save(_result(), versions=VERSIONS)
    real_connect = HistoryStore._connect

    def connect(self, readonly=False):
        conn = real_connect(self, readonly=True)  # every connection read-only, like a 0444 file
        return conn

    monkeypatch.setattr(HistoryStore, "_connect", connect)
    store = open_store(path)
    assert store.available and not store.writable and "read-only" in store.problem
    assert store.count() == 1
    with pytest.raises(StoreError, match="read-only"):
        store.save(_result(), versions=VERSIONS)


READONLY_PROBE = textwrap.dedent(
    """
    import importlib.util, json, sys
    spec = importlib.util.spec_from_file_location("store", sys.argv[1])
    store_mod = importlib.util.module_from_spec(spec)
    sys.modules["store"] = store_mod  # dataclasses look their module up
    spec.loader.exec_module(store_mod)
    s = store_mod.open_store(sys.argv[2])
    out = {"available": s.available, "writable": s.writable, "problem": s.problem}
    out["count"] = s.count() if s.available else None
    try:
        s.save({"experiment": "x", "backend": "cuda"}, versions={})
        out["saved"] = True
    except store_mod.StoreError as exc:
        out["saved"] = False
    print(json.dumps(out))
    """
)


def test_a_file_the_server_may_not_write_keeps_history_readable(tmp_path):
    """A real 0444 file (run as an unprivileged user when the tests run as root)."""
    # a folder every user can reach (pytest's own tmp folder is private to its user)
    folder = Path(tempfile.mkdtemp(prefix="kernel-lab-ro-", dir="/tmp" if os.path.isdir("/tmp") else None))
    path = folder / "h.sqlite3"
    open_store(path).save(_result(), versions=VERSIONS)
    os.chmod(path, 0o444)
    os.chmod(folder, 0o555)
    try:
        if os.geteuid() == 0:
            if not shutil.which("runuser") or not Path("/usr/bin/python3").exists():
                pytest.skip("running as root without runuser: file permissions do not bind root")
            cmd = [
                "runuser",
                "-u",
                "nobody",
                "--",
                "/usr/bin/python3",
                "-c",
                READONLY_PROBE,
                str(ROOT / "gpu" / "service" / "store.py"),
                str(path),
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            if proc.returncode != 0 and "Permission denied" in proc.stderr:
                pytest.skip(f"the unprivileged user cannot reach the files: {proc.stderr[-200:]}")
        else:
            proc = subprocess.run(
                [sys.executable, "-c", READONLY_PROBE, str(ROOT / "gpu" / "service" / "store.py"), str(path)],
                capture_output=True,
                text=True,
                timeout=60,
            )
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        assert out["available"] and not out["writable"] and not out["saved"], out
        assert out["count"] == 1 and "read-only" in out["problem"]
    finally:
        os.chmod(folder, 0o755)
        shutil.rmtree(folder, ignore_errors=True)


def test_a_process_killed_mid_write_loses_nothing_saved_before(tmp_path):
    path = tmp_path / "h.sqlite3"
    store = open_store(path)
    for n in range(5):
        store.save(_result(n + 1), versions=VERSIONS)
    script = textwrap.dedent(
        f"""
        import os, signal, sqlite3
        conn = sqlite3.connect({str(path)!r}, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        for i in range(200):
            conn.execute("INSERT INTO runs (run_id, experiment, created_at, saved_at, backend, simulated, versions, "
                         "params, result) VALUES (?, 'half', '', '', 'cuda', 0, '{{}}', '{{}}', '{{}}')",
                         (f"{{i:032x}}",))
        os.kill(os.getpid(), signal.SIGKILL)  # die inside the open transaction
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], timeout=60)
    assert proc.returncode == -9
    after = open_store(path)
    assert after.available and after.writable and after.moved_aside is None
    assert after.count() == 5 and after.integrity() == "ok"
    assert {r.experiment for r in after.runs()} == {"vector-add"}
