"""gpu/core/compiler.py: the real compiler's facts for one kernel, from a dispatcher or a
source string, ptxas's log parsed, and a missing toolkit reported, not raised."""

from __future__ import annotations

import pytest

from gpu.core import compiler
from gpu.core.compiler import Toolkit, compile_facts, compile_source_facts, parse_ptxas_log
from gpu.experiments.reduction.kernels import reduce_shuffle_kernel

PTXAS_LOG = """ptxas info    : 24 bytes gmem
ptxas info    : Compiling entry function '_Z6kernel' for 'sm_90'
ptxas info    : Function properties for _Z6kernel
    48 bytes stack frame, 40 bytes spill stores, 36 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 4224 bytes smem, 380 bytes cmem[0]
"""


def test_ptxas_log_gives_registers_spills_shared_memory_and_stack():
    assert parse_ptxas_log(PTXAS_LOG) == {
        "registers_per_thread": 255, "shared_memory_bytes": 4224, "barriers": 1,
        "stack_frame_bytes": 48, "spill_stores_bytes": 40, "spill_loads_bytes": 36,
    }


def test_a_simulator_dispatcher_compiles_for_a_named_target_with_a_device_function_call(tmp_path, monkeypatch):
    """reduce_shuffle_kernel calls device functions: the path that asks for the current device."""
    monkeypatch.setenv("KERNEL_LAB_COMPILE_CACHE", str(tmp_path))
    facts = compile_facts(reduce_shuffle_kernel, "void(float32[::1], float32[::1])", "sm_80", 256, sass=False)
    assert facts.ok, facts.error
    assert (
        facts.target_label == "NVIDIA A100 (sm_80)" and ".target sm_80" in facts.ptx and "shfl.sync.down" in facts.ptx
    )
    assert 0 < facts.registers_per_thread < 64 and facts.spill_stores_bytes == 0 and facts.shared_memory_bytes == 128
    assert facts.occupancy.fraction == 1.0 and "occupancy 100% at 256 threads per block" in facts.sentence()
    again = compile_facts(reduce_shuffle_kernel, "void(float32[::1], float32[::1])", "sm_80", 256, sass=False)
    assert again.cached and again.registers_per_thread == facts.registers_per_thread


def test_a_source_without_the_function_is_a_failed_compile_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_COMPILE_CACHE", str(tmp_path))
    facts = compile_source_facts("from numba import cuda\n", "missing", "void()", "sm_90")
    assert not facts.ok and "defines no function named 'missing'" in facts.error


def test_without_the_toolkit_wheels_every_request_says_what_to_install(monkeypatch):
    monkeypatch.setattr(compiler, "toolkit", lambda: Toolkit(None, None, None))
    facts = compile_facts(reduce_shuffle_kernel, "void(float32[::1], float32[::1])", "sm_90")
    assert not facts.ok and facts.unavailable and not facts.rejected and "ptxas" in facts.missing
    assert "make run" in facts.sentence() and "not at fault" in facts.sentence()


def test_an_unknown_target_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="choose one of sm_75"):
        compile_facts(reduce_shuffle_kernel, "void(float32[::1], float32[::1])", "sm_61")


# --- on a GPU: the offline compiler and the table agree with the driver ------------------------


@pytest.mark.gpu
def test_on_a_gpu_the_offline_facts_match_the_kernel_numba_loads():
    from gpu.core.arch import target_for_cc
    from gpu.core.device import device_info
    from gpu.experiments.reduction.kernels import LAUNCHES

    cc = tuple(int(x) for x in device_info().compute_capability.split("."))
    target = target_for_cc(cc)
    if target is None:
        pytest.skip(f"compute capability {cc} is not in gpu/core/arch.py's table")
    sig = LAUNCHES["reduce_shuffle_kernel"].signatures[0]
    facts = compile_facts(reduce_shuffle_kernel, sig, target.name, 256, sass=False)
    loaded = reduce_shuffle_kernel.compile(sig)
    assert facts.shared_memory_bytes == loaded.shared_mem_per_block
    # numba builds sm_90a where we build sm_90: allow the register allocator a little room
    assert abs(facts.registers_per_thread - loaded.regs_per_thread) <= max(2, loaded.regs_per_thread // 10)


@pytest.mark.gpu
def test_on_a_gpu_one_wave_from_the_table_equals_the_drivers_occupancy():
    from gpu.core.device import device_info
    from gpu.experiments.histogram.kernels import LAUNCHES, histogram_shared_kernel
    from gpu.kernels.geometry import kernel_resident_blocks

    device = device_info()
    compiled = histogram_shared_kernel.compile(LAUNCHES["histogram_shared_kernel"].signatures[0])
    for threads in (64, 256, 1024):
        driver_wave = int(compiled.max_cooperative_grid_blocks(threads))
        assert kernel_resident_blocks(histogram_shared_kernel, 2**30, threads, device) == driver_wave, threads
