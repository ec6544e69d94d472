"""``python -m gpu compile``: every kernel's compiler facts per target, JSON and text, exit codes."""

from __future__ import annotations

import json

from gpu.__main__ import main
from gpu.catalog.kernel_index import find_kernels


def test_compile_json_lists_every_kernel_with_registers_spills_shared_memory_and_occupancy(capsys):
    assert main(["compile", "--target", "sm_90", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] and data["compiler"].startswith("NVVM/ptxas ")
    assert {k["kernel"] for k in data["kernels"]} == {k.name for k in find_kernels()}
    register = next(k for k in data["kernels"] if k["kernel"] == "matmul_register_kernel")
    assert register["target"] == "sm_90" and register["registers_per_thread"] > 64  # 8 x 8 accumulators per thread
    assert register["spill_stores_bytes"] is not None and register["shared_memory_bytes"] > 8192
    assert register["occupancy"]["threads_per_block"] == 256 and register["occupancy"]["fraction"] <= 0.25
    assert "ptx" not in register  # listings only with --code


def test_compile_text_names_the_target_and_says_the_facts_are_static(capsys):
    assert main(["compile", "--kernel", "vector_add_kernel", "--target", "7.5"]) == 0
    out = capsys.readouterr().out
    assert "NVIDIA T4 (sm_75)" in out and "not measurements" in out
    assert "vector_add_kernel" in out and "1 of 1 compiled" in out


def test_compile_refuses_an_unknown_kernel_or_target_with_what_is_allowed(capsys):
    assert main(["compile", "--kernel", "no_such_kernel"]) == 2
    assert "choose one of" in capsys.readouterr().err
    assert main(["compile", "--target", "sm_52"]) == 2
    assert "sm_75, sm_80" in capsys.readouterr().err


BAD_MODULE = '''
from numba import cuda, float32
from gpu.core.launch_spec import Launch

TILE = 32

@cuda.jit
def computed_shape_kernel(a):
    tile = cuda.shared.array((TILE, TILE + 1), float32)
    tile[0, 0] = a[0]
    a[0] = tile[0, 0]

LAUNCHES = {"computed_shape_kernel": Launch(("void(float32[::1])",), threads_per_block=128)}
'''


def test_compile_exits_1_and_names_kernel_target_and_message_when_a_kernel_does_not_compile(
    tmp_path, monkeypatch, capsys
):
    import importlib

    from gpu.catalog.kernel_index import FoundKernel
    from gpu.report import compile as compile_command

    (tmp_path / "bad_kernels_for_cli.py").write_text(BAD_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # the compile worker imports it by name
    monkeypatch.setenv("KERNEL_LAB_COMPILE_CACHE", str(tmp_path / "cache"))
    module = importlib.import_module("bad_kernels_for_cli")
    found = FoundKernel(
        "bad_kernels_for_cli",
        "computed_shape_kernel",
        module.computed_shape_kernel,
        module.LAUNCHES["computed_shape_kernel"],
    )
    monkeypatch.setattr(compile_command, "find_kernels", lambda: (found,))
    assert main(["compile", "--target", "sm_80"]) == 1
    out = capsys.readouterr().out
    assert "computed_shape_kernel" in out and "sm_80" in out and "FAILS: Numba front end: TypingError" in out
    assert "0 of 1 compiled; 1 failed" in out
