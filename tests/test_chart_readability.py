"""Readable charts: launch overhead rows tall enough with whole labels; Scaling's time chart
draws the series that carry the lesson (the others in a second chart)."""

from __future__ import annotations

import pandas as pd

from gpu.experiments.launch import charts as launch
from gpu.experiments.launch.overhead import PATHS
from gpu.experiments.scaling import charts as scaling
from tests.experiments.scaling.test_sweep import crossing_run, fake_peaks


def _overhead_frame(samples: int = 5) -> pd.DataFrame:
    rows = []
    for i, key in enumerate(("numba-article", "numba-configured", "article-vector-add", "torch-add-args")):
        for s in range(samples):
            rows.append({"path": key, "label": PATHS[key], "us": 3.0 * (i + 1) + s * 0.1, "few_samples": False})
    return pd.DataFrame(rows)


def test_launch_overhead_gives_each_path_a_row_of_at_least_28_px_and_whole_labels():
    frame = _overhead_frame()
    spec = launch.launch_overhead_chart(frame, "CUDA simulator (simulator); 5 launches per sample").to_dict()
    assert spec["height"] == {"step": launch.OVERHEAD_ROW_PX} and launch.OVERHEAD_ROW_PX >= 28
    axis = spec["layer"][0]["encoding"]["y"]["axis"]
    longest = max(len(label) for label in frame["label"])
    assert axis["labelLimit"] >= longest * 11 * 0.6  # about 0.6 em per character at 11 px: nothing cut off
    # what was measured, how many samples, on what
    assert spec["title"]["subtitle"] == (
        "CUDA simulator (simulator); 5 launches per sample · 4 launch paths, 5 samples each"
    )


def test_scaling_time_chart_draws_the_lesson_series_and_the_rest_in_a_second_chart():
    run = crossing_run(peaks=fake_peaks())
    frame = run.to_frame()
    extra = frame[frame["series"] == "numpy"].assign(series="numba", label="Numba @njit")
    frame = pd.concat([frame, extra, extra.assign(series="torch", label="PyTorch a + b")], ignore_index=True)
    crossovers = [c.to_dict() for c in run.crossovers()]
    main = scaling.time_chart(frame, crossovers, "s").to_dict()
    line = main["layer"][1]["encoding"]
    assert set(line["color"]["scale"]["domain"]) <= {"Kernel", "GPU end to end", "NumPy"}
    assert len(line["color"]["scale"]["domain"]) <= 4
    assert scaling.other_series(frame) == ["numba", "torch"]
    second = scaling.time_chart(frame, crossovers, "s", series=scaling.other_series(frame)).to_dict()
    assert set(second["layer"][1]["encoding"]["color"]["scale"]["domain"]) == {"Numba @njit", "PyTorch a + b"}
    assert not [layer for layer in second["layer"] if layer["mark"].get("type") == "rule"]  # no crossover of theirs
    assert len(scaling.time_chart(frame, crossovers, "s", series=None).to_dict()["layer"][1]["encoding"]["color"][
        "scale"]["domain"]) == 5
    assert "each point the median of 3 samples" in main["title"]["subtitle"][1]
