"""`gpu trace FILE` and `gpu solve FILE` on hostile input: never a traceback, never exit 1 ("a race" /
"a wrong result") for a failure that is not one. Exit codes, the same in both: 0 clean/passed, 1 a finding/a wrong
result, 2 refused (bad input, the checker, the parser, the sandbox's limits), 3 the lab itself failed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu.__main__ import main
from gpu.sandbox import checker

ROOT = Path(__file__).resolve().parent.parent
GOOD = """from numba import cuda

@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] + b[i]
"""
KERNEL = "from numba import cuda\n\n@cuda.jit\ndef vector_add(a, b, out):\n    i = cuda.grid(1)\n    x = {}\n"
HOSTILE = {
    "nested brackets": (KERNEL.format("(" * 5000 + "1" + ")" * 5000), "refused (syntax)"),
    "nested operators": (KERNEL.format("-" * 15000 + "1"), "refused (complexity)"),
    "a long chain": (KERNEL.format("+".join(["1"] * 5000)), "refused (complexity)"),
    "invalid bytes": (b"from numba import cuda\n\xff\xfe\n", "is not UTF-8 text"),
    "a NUL byte": (b"from numba import cuda\n\x00\n", "refused (syntax)"),
    "huge": ("# x\n" * 300_000, "is over 1,048,576 bytes"),
    "over the checker's size": ("# x\n" * 6_000 + GOOD, "refused (size)"),
    "a lone surrogate": ("from numba import cuda\nX = '\\ud800'\n", "refused (constant)"),
}


def write(tmp_path: Path, content) -> str:
    path = tmp_path / "kernel.py"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return str(path)


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_DB", str(tmp_path / "h.sqlite3"))
    monkeypatch.setenv("KERNEL_LAB_LOCK_DIR", str(tmp_path / "locks"))


def one_line_error(capsys) -> str:
    captured = capsys.readouterr()
    text = captured.err + captured.out
    assert "Traceback" not in text and text.strip().count("\n") == 0, text
    return text


@pytest.mark.parametrize("command", ["trace", "solve"])
@pytest.mark.parametrize("case", sorted(HOSTILE), ids=str)
def test_hostile_files_are_refused_with_exit_2(case, command, tmp_path, capsys):
    content, fragment = HOSTILE[case]
    path = write(tmp_path, content)
    args = ["trace", path, "--problem", "vector-add"] if command == "trace" else ["solve", "vector-add", path]
    assert main(args) == 2
    assert fragment in one_line_error(capsys)


@pytest.mark.parametrize("command", ["trace", "solve"])
def test_a_failing_checker_is_a_refusal_not_a_finding(command, tmp_path, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("the checker's own bug")

    monkeypatch.setattr(checker, "check_source", broken)
    path = write(tmp_path, GOOD)
    args = ["trace", path, "--problem", "vector-add"] if command == "trace" else ["solve", "vector-add", path]
    assert main(args) == 2
    text = one_line_error(capsys)
    assert "refused (checker)" in text and "could not check" in text and "ValueError" in text


@pytest.mark.parametrize("command", ["trace", "solve"])
def test_a_fault_of_the_lab_exits_3_in_one_line(command, tmp_path, capsys, monkeypatch):
    import gpu.sandbox.service
    import gpu.sandbox.trace_submission

    def broken(*args, **kwargs):
        raise RuntimeError("the lab's own bug")

    monkeypatch.setattr(gpu.sandbox.trace_submission, "trace_submission", broken)
    monkeypatch.setattr(gpu.sandbox.service, "submit", broken)
    path = write(tmp_path, GOOD)
    args = ["trace", path, "--problem", "vector-add"] if command == "trace" else ["solve", "vector-add", path]
    assert main(args) == 3
    text = one_line_error(capsys)
    assert "RuntimeError" in text and "the lab's own bug" in text


def test_a_lab_fault_anywhere_exits_3_in_one_line(capsys, monkeypatch):
    from gpu.trace import lab

    def broken(*args, **kwargs):
        raise KeyError("unexpected")

    monkeypatch.setattr(lab, "trace_lab_kernel", broken)
    if __import__("gpu").BACKEND.simulated:
        assert main(["trace", "transpose-naive"]) == 3
        assert "KeyError" in one_line_error(capsys)


@pytest.mark.parametrize("command", ["trace", "solve"])
def test_a_fifo_or_a_device_is_refused_without_reading_it(command, tmp_path, capsys):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)  # reading it would block for ever
    zero = tmp_path / "zero.py"
    zero.symlink_to("/dev/zero")  # reading it would never end
    for path in (fifo, zero):
        args = ["trace", str(path), "--problem", "vector-add"] if command == "trace" else ["solve", "vector-add",
                                                                                          str(path)]
        assert main(args) == 2
        assert "not a regular file" in one_line_error(capsys)


def test_the_exit_codes_are_documented_the_same_in_both_commands():
    done = subprocess.run([sys.executable, "-m", "gpu", "trace", "--help"], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    solve = subprocess.run([sys.executable, "-m", "gpu", "solve", "--help"], capture_output=True, text=True, cwd=ROOT,
                           timeout=120)
    for text in (done.stdout, solve.stdout):
        assert "3" in text and "the lab itself failed" in " ".join(text.split()), text
    doc = (ROOT / "docs" / "write-a-kernel.md").read_text()
    assert "**3**" in doc
