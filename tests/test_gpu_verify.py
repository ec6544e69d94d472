"""`make gpu-verify` cannot pass without a GPU: on this GPU-less machine, with a fake
`nvidia-smi` that claims an H200, or with numba's simulator requested, it stops in seconds with a
non-zero exit and one line that says why, and writes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FAKE_SMI = """#!/bin/sh
case "$*" in
  *name,driver_version*) echo "NVIDIA H200, 580.65.06" ;;
  *driver_version*) echo "580.65.06" ;;
  *name*) echo "NVIDIA H200" ;;
  *) echo "NVIDIA-SMI 580.65.06   Driver Version: 580.65.06   CUDA Version: 13.0" ;;
esac
exit 0
"""


def verify(tmp_path: Path, script: str = "gpu_verify.sh", **env: str) -> subprocess.CompletedProcess:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    smi = bin_dir / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(0o755)
    environment = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    environment.update(PATH=f"{bin_dir}:{environment['PATH']}", PYTHON=sys.executable, OUT=str(tmp_path / "out"), **env)
    return subprocess.run(["bash", str(ROOT / "scripts" / script)], capture_output=True, text=True,
                          env=environment, timeout=120)


def one_reason(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in done.stderr.splitlines() if line.startswith("preflight failed:")]
    assert len(lines) == 1, done.stderr + done.stdout
    return lines[0]


@pytest.mark.parametrize("script", ["gpu_verify.sh", "gpu_first_look.sh"])
def test_a_fake_nvidia_smi_does_not_make_a_pass(tmp_path, script):
    done = verify(tmp_path, script)
    assert done.returncode == 3
    reason = one_reason(done)
    assert "libcuda" in reason or "no usable GPU" in reason
    assert not (tmp_path / "out").exists(), "nothing is written before the preflight passes"


def test_the_simulator_in_the_environment_is_refused_first(tmp_path):
    done = verify(tmp_path, NUMBA_ENABLE_CUDASIM="1")
    assert done.returncode == 3
    assert "NUMBA_ENABLE_CUDASIM=1" in one_reason(done)
    assert not (tmp_path / "out").exists()


def test_no_driver_at_all(tmp_path):
    environment = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    environment.update(PATH="/usr/bin:/bin", PYTHON=sys.executable, OUT=str(tmp_path / "out"))
    done = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_verify.sh")], capture_output=True, text=True,
                          env=environment, timeout=60)
    assert done.returncode == 3 and "nvidia-smi failed" in one_reason(done)


@pytest.mark.parametrize("check, expect", [
    ("versions_match_the_pins", None),
    ("no_simulator_requested", None),
])
def test_preflight_checks_pass_where_they_should(check, expect, monkeypatch):
    sys.path.insert(0, str(ROOT / "scripts"))
    import gpu_preflight

    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    assert getattr(gpu_preflight, check)() == expect
    assert set(gpu_preflight.pins()) == {"numba", "numba-cuda"}


def test_a_version_off_the_pin_is_the_reason(monkeypatch):
    sys.path.insert(0, str(ROOT / "scripts"))
    import gpu_preflight

    monkeypatch.setattr(gpu_preflight, "pins", lambda: {"numba": "0.0.1"})
    assert "pins numba==0.0.1" in gpu_preflight.versions_match_the_pins()


def test_the_summary_fails_on_skipped_or_absent_gpu_tests(tmp_path):
    sys.path.insert(0, str(ROOT / "scripts"))
    import gpu_verify_summary as summary

    assert "no GPU-only test report (pytest-gpu.xml)" in summary.failures(tmp_path, {"tests": 0})
    (tmp_path / "pytest-gpu.xml").write_text(
        '<testsuites><testsuite tests="24" skipped="24" failures="0"/></testsuites>'
    )
    assert summary.failures(tmp_path, {"tests": 0}) == ["24 of 24 GPU-only tests were skipped on a GPU"]
    (tmp_path / "pytest-gpu.xml").write_text(
        '<testsuites><testsuite tests="24" skipped="0" failures="0"/></testsuites>'
    )
    assert summary.failures(tmp_path, {"tests": 0, "compile": 1}) == ["compile exited 1"]
    assert summary.failures(tmp_path, {"tests": 0, "compile": 0}) == []
