"""Vector-add chart builders on to_dict(): colours, scales, tooltips, estimates."""

import pandas as pd

from ui.charts import common as charts


def synthetic_frame(python_estimated=False) -> pd.DataFrame:
    rows = []
    for phase, s in (("h2d", 0.013), ("kernel", 0.0003), ("d2h", 0.0035), ("total", 0.017)):
        rows += [("gpu", phase, i, s * (1 + i / 100), False) for i in range(3)]
    rows += [("numpy", "cpu", i, 0.014, False) for i in range(3)]
    rows.append(("python", "cpu", 0, 3.0, python_estimated))
    return pd.DataFrame(rows, columns=["implementation", "phase", "sample", "seconds", "estimated"])


def layer_encodings(spec: dict) -> list[dict]:
    return [layer["encoding"] for layer in spec["layer"]]


def test_summary_has_one_row_per_measure_with_sample_counts():
    summary = charts.summarise(synthetic_frame())
    assert list(summary["measure"])[:4] == ["H2D copy", "Kernel", "D2H copy", "GPU end to end"]
    assert summary.set_index("measure").loc["Kernel", "samples"] == 3
    assert summary.set_index("measure").loc["Kernel", "median_ms"] == 0.3 * 1.01


def test_comparison_chart_uses_a_log_axis_and_the_shared_colours():
    spec = charts.time_comparison_chart(synthetic_frame(), "N = 10").to_dict()
    whiskers, dots, _labels = layer_encodings(spec)
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["rule", "point", "text"]  # no bars on a log axis
    assert dots["x"]["scale"]["type"] == "log" and whiskers["x"]["scale"]["type"] == "log"
    bars = dots
    scale = bars["color"]["scale"]
    assert scale["range"][scale["domain"].index("Kernel")] == charts.COLORS["Kernel"]
    titles = {t["title"] for t in bars["tooltip"]}
    assert {"median (ms)", "samples"} <= titles
    assert spec["title"]["subtitle"] == "N = 10"


def test_estimates_are_marked_as_such():
    summary = charts.summarise(synthetic_frame(python_estimated=True)).set_index("measure")
    assert summary.loc["Python loop", "kind"] == "estimate (not run)"
    assert summary.loc["Python loop", "samples"] == 0


def test_breakdown_stacks_gpu_phases_on_a_linear_axis():
    spec = charts.gpu_breakdown_chart(synthetic_frame(), "sub").to_dict()
    bars = layer_encodings(spec)[0]
    assert bars["x"]["stack"] == "zero"
    assert bars["x"].get("scale", {}).get("type", "linear") == "linear"
    data = next(iter(spec["datasets"].values()))
    assert {row["measure"] for row in data} >= {"H2D copy", "Kernel", "D2H copy"}
