"""Every page leads with what is real: the recorded GPU's figures (or a plain "not measured") come before
the simulated run, each quoted from the newest section measured under today's rules, and Home's ratios
name both of their sides."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent


def _texts(at: AppTest) -> list[str]:
    return [e.value for kind in ("subheader", "markdown", "caption", "info", "warning") for e in at.get(kind)
            if isinstance(getattr(e, "value", None), str)]


def test_kernels_page_shows_each_recorded_step_before_the_form_by_default():
    at = AppTest.from_file(str(ROOT / "pages/7_Kernels.py"), default_timeout=60).run()
    assert not at.exception
    assert any(s.value == "On a real GPU: NVIDIA H200" for s in at.subheader)
    text = "\n".join(_texts(at))
    assert "0.047% → 77.9% of the memory peak" in text  # the reduction's ladder, recorded 4 Dec under today's rules
    assert "benchmarks/h200-2026-12-04/check.json" in text and "cut short after this section" in text
    table = at.dataframe[0].value
    assert list(table["step"])[:2] == ["1 · global atomics", "2 · shared-memory tree"]
    assert {"time", "GB/s", "% of peak"} <= set(table.columns)
    assert "the simulated times do not rank the steps" in text  # what the simulated run can and cannot show


def test_kernels_page_says_plainly_when_no_real_gpu_measured_a_kernel():
    at = AppTest.from_file(str(ROOT / "pages/7_Kernels.py"), default_timeout=60).run()
    at.selectbox(key="kernels.kernel").set_value("stencil").run()
    assert not at.exception
    assert any(s.value == "On a real GPU: not measured yet" for s in at.subheader)
    assert any("so no real-GPU figure is shown for it" in c.value for c in at.caption)


def test_home_headline_names_both_sides_of_every_ratio_and_the_rules_it_was_measured_under():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception
    labels = [m.label for m in at.metric]
    assert "H200 kernel vs H200 host's NumPy" in labels and "H200 + copies vs H200 host's NumPy" in labels
    text = "\n".join(_texts(at))
    assert "on 4 Dec 2026, 17:44 UTC, under today's measurement rules" in text
    assert "not your NumPy" in text


def test_a_headline_from_an_older_run_carries_its_caveat_in_the_sentence_and_every_metric():
    from gpu.core.provenance import PRE_RULES_CAVEAT
    from gpu.experiments.vector_add.home import headline_intro, headline_metrics
    from gpu.service.references import load_references

    refs = load_references()
    old = refs.get("h200-final")
    assert PRE_RULES_CAVEAT in headline_intro(old, 10**7)
    recorded = [m for m in headline_metrics(old, refs.article) if "published" not in m[0]]
    assert recorded and all(PRE_RULES_CAVEAT in why for _label, _value, why in recorded)
    assert "today's measurement rules" in headline_intro(refs.get("h200-2026-12-04"), 10**7)


def test_roofline_opens_on_the_recorded_run_under_todays_rules_with_points_at_several_intensities():
    at = AppTest.from_file(str(ROOT / "pages/8_Roofline.py"), default_timeout=60).run()
    assert not at.exception
    box = at.selectbox(key="roofline.set")
    assert box.options[box.index].startswith("recorded: h200-2026-12-04 — NVIDIA H200, today's rules")
    assert "h200-first" not in " ".join(box.options)  # its kernel time held Python's launch: not drawn
    intensities = {round(x, 6) for x in at.dataframe[0].value["intensity"]}
    assert len(intensities) >= 2, intensities  # not three dots at one x value
    assert not any("recorded before L2 flushing" in w.value for w in at.warning)
    old = next(i for i, o in enumerate(box.options) if o.startswith("recorded: h200-final"))
    at.selectbox(key="roofline.set").set_value(old).run()
    assert any("recorded before L2 flushing" in w.value for w in at.warning)  # an older run carries its caveat


def test_a_step_added_after_the_recorded_run_is_listed_as_not_measured_not_left_out():
    """The ladder on Kernels is the whole ladder: a step the recorded run lacks says no GPU has timed it."""
    from gpu.catalog.declare import kernel_module
    from gpu.report.recorded_steps import recorded_kernel
    from gpu.service.references import load_references

    recorded = recorded_kernel("reduction", load_references())
    assert recorded is not None
    steps = [s for s in recorded.steps if s.kind == "step"]
    assert [s.key for s in steps] == [s.key for s in kernel_module("reduction").SPEC.steps]
    unmeasured = {s.key: s for s in steps if s.seconds is None}
    assert "unrolled" in unmeasured and "not measured on a GPU yet" in (unmeasured["unrolled"].why_not or "")
    assert all(s.seconds for s in steps if s.key != "unrolled")  # the recorded ones keep their figures
