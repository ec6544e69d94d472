"""The trace's findings as pure functions, on hand-written records (no simulator)."""

from __future__ import annotations

from gpu.trace import analysis as an
from gpu.trace.record import ATOMIC, READ, WRITE, ArrayInfo, RawTrace, Site
from gpu.trace.report import TraceReport, analyse

SITES = [Site("k.py", "k", 10, None, None), Site("k.py", "k", 11, None, None), Site("k.py", "k", 12, None, None)]


def _trace(records, arrays=None, block=(64, 1, 1), grid=(1, 1, 1), barriers=None, blocks=(0,)) -> RawTrace:
    arrays = arrays or [
        ArrayInfo(0, "g", "global", (4096,), "float32", 4),
        ArrayInfo(1, "s", "shared", (4096,), "float32", 4),
    ]
    return RawTrace("k", grid, block, arrays, SITES, records, barriers or {}, blocks, 0, [], 0, None)


def rec(block, thread, interval, array, offset, kind, site, occurrence=0):
    return (block, thread, interval, array, offset, kind, site, occurrence)


def test_sectors_count_32_byte_sectors_and_elements_that_straddle_two():
    assert an.sectors([4 * i for i in range(32)], 4) == 4
    assert an.sectors([128 * i for i in range(32)], 4) == 32
    assert an.sectors([30], 4) == 2  # bytes 30..33 cross a sector boundary
    assert an.sectors([0, 0, 0], 4) == 1  # the same word for every thread: one sector


def test_bank_ways_are_distinct_words_per_bank_and_a_broadcast_is_free():
    assert an.bank_ways([4 * i for i in range(32)], 4) == 1
    assert an.bank_ways([128 * i for i in range(32)], 4) == 32
    assert an.bank_ways([132 * i for i in range(32)], 4) == 1  # rows of 33 words: one bank each
    assert an.bank_ways([0] * 32, 4) == 1
    assert an.bank_ways([0, 128, 0, 128], 4) == 2


def test_a_write_and_a_read_of_another_thread_in_one_interval_race_but_not_across_a_barrier():
    racy = _trace([rec(0, 1, 0, 1, 8, WRITE, 0), rec(0, 2, 0, 1, 8, READ, 1)])
    assert len(an.find_races(racy)) == 1
    ordered = _trace([rec(0, 1, 0, 1, 8, WRITE, 0), rec(0, 2, 1, 1, 8, READ, 1)])
    assert an.find_races(ordered) == []
    same_thread = _trace([rec(0, 1, 0, 1, 8, WRITE, 0), rec(0, 1, 0, 1, 8, READ, 1)])
    assert an.find_races(same_thread) == []
    two_reads = _trace([rec(0, 1, 0, 1, 8, READ, 0), rec(0, 2, 0, 1, 8, READ, 1)])
    assert an.find_races(two_reads) == []
    atomics = _trace([rec(0, 1, 0, 0, 8, ATOMIC, 0), rec(0, 2, 0, 0, 8, ATOMIC, 0)])
    assert an.find_races(atomics) == []


def test_a_race_repeated_over_many_addresses_is_one_finding_with_its_count():
    records = [rec(0, t, 0, 1, 4 * t, WRITE, 0) for t in range(32)] + [
        rec(0, t, 0, 1, 4 * ((t + 1) % 32), READ, 1) for t in range(32)
    ]
    races = an.find_races(_trace(records))
    assert len(races) == 1 and races[0].addresses == 32
    assert {races[0].first.line, races[0].second.line} == {10, 11}


def test_global_writes_from_two_blocks_race_but_shared_memory_is_per_block():
    records = [
        rec(0, 0, 0, 0, 0, WRITE, 0),
        rec(1, 0, 0, 0, 0, WRITE, 0),
        rec(0, 0, 0, 1, 0, WRITE, 0),
        rec(1, 0, 0, 1, 0, WRITE, 0),
    ]
    races = an.find_races(_trace(records, grid=(2, 1, 1), blocks=(0, 1)))
    assert [(r.array, r.scope) for r in races] == [("g", "between blocks")]


def test_a_thread_waiting_at_another_barrier_is_divergence():
    barriers = {(0, t): (0,) for t in range(32)} | {(0, t): (1,) for t in range(32, 64)}
    found = an.barrier_divergence(_trace([], barriers=barriers))
    assert len(found) == 1 and found[0].missed_did == "waited at line 11 instead" and found[0].reached == 32


def test_requests_group_one_warp_one_site_one_occurrence():
    # two warps, two occurrences each: 4 requests of 32 threads reading 32 consecutive floats
    records = [rec(0, t, 0, 0, 4 * (t + 64 * k), READ, 0, k) for t in range(64) for k in range(2)]
    [site] = an.coalescing(_trace(records))
    assert site.requests == 4 and site.sectors_per_request == 4 and site.ideal_sectors_per_request == 4


def test_the_report_survives_json():
    records = [rec(0, t, 0, 1, 4 * t, WRITE, 0) for t in range(4)] + [
        rec(0, t, 0, 1, 4 * ((t + 1) % 4), READ, 1) for t in range(4)
    ]
    report = analyse(_trace(records, block=(4, 1, 1)))
    again = TraceReport.from_dict(report.to_dict())
    assert again == report and again.problems


def test_the_trace_package_never_imports_streamlit_or_the_layers_above_it():
    import ast
    from pathlib import Path

    allowed = {"core", "kernels", "catalog", "experiments", "trace", "sandbox", "problems", "sim"}
    for path in sorted((Path(__file__).resolve().parent.parent / "gpu" / "trace").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module]
                if isinstance(node, ast.ImportFrom) and node.module
                else []
            )
            for name in names:
                parts = name.split(".")
                assert parts[0] != "streamlit", f"{path.name} imports streamlit"
                assert parts[0] != "ui", f"{path.name} imports the UI"
                if parts[0] == "gpu" and len(parts) > 1:
                    assert parts[1] in allowed, f"gpu/trace/{path.name} imports {name}"
