"""The leaderboard's store and the figures a GPU verdict ranks by (no GPU needed: verdicts are data)."""

from __future__ import annotations

import pytest

from gpu.problems import get
from gpu.sandbox.harness import ROOF_MARGIN, figures
from gpu.sandbox.submissions import MAX_NAME_CHARS, SubmissionStore, clean_name
from gpu.sandbox.verdict import Verdict
from gpu.service.store import StoreError


def gpu_verdict(median_s: float, faster_than_roof: bool = False, status: str = "passed") -> Verdict:
    return Verdict("vector-add", "cuda", status=status, device="NVIDIA H200",
                   timing={"median_s": median_s, "gbps": 1.0, "percent_of_peak": 10.0, "ratio_to_reference": 1.5,
                           "faster_than_roof": faster_than_roof})


def test_leaderboard_is_fastest_first_per_device_and_skips_flagged(tmp_path):
    store = SubmissionStore(tmp_path / "h.sqlite3")
    slow = store.save(gpu_verdict(2e-3), "src", "slow")
    store.save(gpu_verdict(1e-3), "src", "fast")
    store.save(gpu_verdict(1e-6, faster_than_roof=True), "src", "too fast to be true")
    other = Verdict("vector-add", "simulator", status="passed")
    store.save(other, "src", "sim")
    board = store.leaderboard("vector-add", "NVIDIA H200")
    assert [e.name for e in board] == ["fast", "slow"]
    assert [e.name for e in store.leaderboard("vector-add", "CUDA simulator")] == ["sim"]
    assert store.count() == 4 and set(store.devices("vector-add")) == {"NVIDIA H200", "CUDA simulator"}
    assert store.delete([slow[:8]]) == 1 and [e.name for e in store.leaderboard("vector-add", "NVIDIA H200")] == [
        "fast"
    ]


def test_only_passing_submissions_are_saved_and_ids_must_be_exact_enough(tmp_path):
    store = SubmissionStore(tmp_path / "h.sqlite3")
    with pytest.raises(StoreError):
        store.save(gpu_verdict(1e-3, status="wrong"), "src", "x")
    with pytest.raises(StoreError, match="not a submission id"):
        store.delete(["'; DROP TABLE submissions; --"])
    with pytest.raises(StoreError, match="matches 0"):
        store.delete(["abc"])


def test_names_are_trimmed_printable_and_default_to_anonymous():
    assert clean_name("  ada\n") == "ada" and clean_name("") == "anonymous" and clean_name(None) == "anonymous"
    assert len(clean_name("x" * 500)) == MAX_NAME_CHARS


def test_a_result_faster_than_the_memory_roof_is_flagged():
    problem, case = get("vector-add"), get("vector-add").perf["gpu"]
    nbytes = problem.bytes_moved(case.sizes)
    at_peak_s = nbytes / 4800e9  # exactly the H200's 4.8 TB/s
    honest = figures(problem, case, at_peak_s, 4800.0)
    assert honest["percent_of_peak"] == pytest.approx(100) and not honest["faster_than_roof"]
    assert figures(problem, case, at_peak_s / (ROOF_MARGIN * 1.01), 4800.0)["faster_than_roof"]
    assert figures(problem, case, at_peak_s, None)["percent_of_peak"] is None  # no peak known: no share, no flag


def test_history_lists_saved_kernels_with_their_code(tmp_path, monkeypatch):
    """History's "Kernels you wrote" tab: every saved submission in words, and the chosen one's source."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("KERNEL_LAB_DB", str(tmp_path / "history.sqlite3"))
    store = SubmissionStore()
    store.save(gpu_verdict(1e-3), "# ada's kernel\n", "ada")
    store.save(Verdict("vector-add", "simulator", status="passed"), "# grace's kernel\n", "grace")
    at = AppTest.from_file("../pages/5_History.py", default_timeout=60).run()
    assert not at.exception, at.exception
    table = next(df.value for df in at.dataframe if "Problem" in df.value.columns)
    assert list(table["Name"]) == ["grace", "ada"]  # newest first
    assert set(table["Problem"]) == {get("vector-add").title} and "threads_per_block" not in table.columns
    assert list(table["Kernel time"]) == ["not timed (simulator)", "1 ms"]
    assert any("# grace's kernel" in c.value for c in at.code)


def test_history_drops_timing_columns_when_every_shown_kernel_is_simulated(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("KERNEL_LAB_DB", str(tmp_path / "history.sqlite3"))
    SubmissionStore().save(Verdict("vector-add", "simulator", status="passed"), "# grace's kernel\n", "grace")
    at = AppTest.from_file("../pages/5_History.py", default_timeout=60).run()
    assert not at.exception, at.exception
    table = next(df.value for df in at.dataframe if "Problem" in df.value.columns)
    assert list(table["Name"]) == ["grace"]
    assert not {"Kernel time", "GB/s", "Share of peak", "vs the lab's kernel"} & set(table.columns)
    assert any("does not time them" in c.value for c in at.caption)
