"""Per-architecture limits and theoretical occupancy (gpu/core/arch.py), and the grid-stride
wave of gpu/kernels/geometry.py built on them."""

from __future__ import annotations

import pytest

from gpu.core.arch import TARGETS, target_named, theoretical_occupancy
from gpu.kernels.geometry import resident_blocks


def test_a_small_block_is_held_back_by_the_blocks_per_sm_limit_not_threads():
    occ = theoretical_occupancy(TARGETS["sm_90"], 32)
    assert (occ.blocks_per_sm, occ.limiter, occ.fraction) == (32, "blocks", 0.5)
    assert theoretical_occupancy(TARGETS["sm_75"], 32).blocks_per_sm == 16


@pytest.mark.parametrize("target, per_sm", [("sm_75", 4), ("sm_80", 8), ("sm_86", 6), ("sm_89", 6), ("sm_90", 8)])
def test_256_thread_blocks_fill_each_sm_exactly(target, per_sm):
    occ = theoretical_occupancy(TARGETS[target], 256)
    assert occ.blocks_per_sm == per_sm and occ.fraction == 1.0


def test_registers_are_allocated_per_warp_in_units_of_256():
    # 196 registers x 32 lanes = 6272 -> 6400 per warp; 65536 // 6400 = 10 warps -> one 8-warp block
    occ = theoretical_occupancy(TARGETS["sm_90"], 256, registers_per_thread=196)
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limiter) == (1, 8, "registers")
    assert occ.fraction == 0.125
    # 33 registers cost as much as 40: 1280 per warp -> 51 warps -> 6 blocks of 8 warps
    assert theoretical_occupancy(TARGETS["sm_90"], 256, registers_per_thread=33).blocks_per_sm == 6


def test_shared_memory_counts_the_per_block_reservation():
    # 40 KB + 1 KB reserved per block on sm_90: 228 // 41 = 5 blocks
    occ = theoretical_occupancy(TARGETS["sm_90"], 128, shared_bytes_per_block=40 * 1024)
    assert (occ.blocks_per_sm, occ.limiter) == (5, "shared memory")
    assert theoretical_occupancy(TARGETS["sm_86"], 128, shared_bytes_per_block=100 * 1024).blocks_per_sm == 0


def test_a_block_over_1024_threads_is_refused_with_the_limit():
    with pytest.raises(ValueError, match="1 to 1024"):
        theoretical_occupancy(TARGETS["sm_90"], 2048)


def test_targets_are_named_by_sm_or_compute_capability():
    assert target_named("9.0") is TARGETS["sm_90"] and target_named("SM_75") is TARGETS["sm_75"]
    with pytest.raises(ValueError, match="sm_75, sm_80"):
        target_named("sm_52")


@pytest.mark.parametrize("cc, sms", [("7.5", 40), ("8.6", 84), ("8.9", 58), ("9.0", 132)])
def test_a_grid_stride_launch_is_exactly_one_wave(cc, sms):
    """The old fixed 2,048 threads per SM launched 1.33-2 waves on 7.5, 8.6 and 8.9."""
    target = next(t for t in TARGETS.values() if f"{t.cc[0]}.{t.cc[1]}" == cc)
    blocks = resident_blocks(2**28, 256, sms, cc)
    assert blocks * 256 == sms * target.max_threads_per_sm


def test_the_wave_shrinks_with_the_kernels_registers():
    assert resident_blocks(2**28, 256, 132, "9.0", registers_per_thread=196) == 132
    assert resident_blocks(2**28, 32, 132, (9, 0)) == 132 * 32  # 32 blocks per SM, not 64


def test_an_unknown_device_uses_the_nearest_older_row_and_never_more_than_n_needs():
    assert resident_blocks(2**28, 256, 10, "8.7") == resident_blocks(2**28, 256, 10, "8.6")
    assert resident_blocks(1000, 256, 132, "9.0") == 4
    assert resident_blocks(2**28, 256, None, None) == 8  # the simulator: one pretend SM, H100/H200 limits
