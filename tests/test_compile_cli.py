"""``python -m gpu compile``: every kernel's compiler facts per target, JSON and text, exit codes."""

from __future__ import annotations

import json

from gpu.__main__ import main
from gpu.report.kernel_index import find_kernels


def test_compile_json_lists_every_kernel_with_registers_spills_shared_memory_and_occupancy(capsys):
    assert main(["compile", "--target", "sm_90", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] and data["compiler"].startswith("NVVM/ptxas ")
    assert {k["kernel"] for k in data["kernels"]} == {k.name for k in find_kernels()}
    register = next(k for k in data["kernels"] if k["kernel"] == "matmul_register_kernel")
    assert register["target"] == "sm_90" and register["registers_per_thread"] > 128
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
