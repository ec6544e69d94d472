"""In the simulator the Kernels page leads with what is real (agreement, which steps ran, the
algorithm's traffic and intensity), never with a simulated time; its agreement line says
why each kernel's check is exact or bounded, with the bound gpu/core/agreement.py applies."""

from streamlit.testing.v1 import AppTest

from gpu.catalog.declare import kernel_module
from gpu.core.backend import BACKEND


def _spec(kernel: str):

    return kernel_module(kernel).SPEC


def _kernels_view(kernel: str, params: dict) -> AppTest:
    def script(kernel, params):
        from gpu.catalog.declare import kernel_module
        from gpu.catalog.steps import run_kernel
        from gpu.core.timing import RepeatPolicy
        from ui.views.kernels import show_agreement, show_metrics

        spec = kernel_module(kernel).SPEC
        run = run_kernel(spec, params, RepeatPolicy.count(1, warmup=0), ("numpy",))
        show_agreement(run)
        show_metrics(run)

    return AppTest.from_function(script, args=(kernel, params), default_timeout=120).run()


def test_reduction_in_the_simulator_leads_with_agreement_and_the_steps_that_ran():
    at = _kernels_view("reduction", {"n": 200, "threads_per_block": 64})
    assert not at.exception
    verdict = at.success[0].value
    assert "bit for bit" in verdict and "whole numbers" in verdict and "same order" not in verdict, verdict
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Minimum traffic"] == "804 B", metrics  # 200 float32 read, one written
    assert not any(
        "time" in label.lower() or "bandwidth" in label.lower() or "best" in label.lower() for label in metrics
    ), metrics
    # The counts come from the declaration (a new step changes them, not this test): one CPU reference
    # (NumPy) agrees beside every step that runs.
    steps = _spec("reduction").steps
    needing = [s for s in steps if s.needs]
    if BACKEND.lab_simulator:  # the lab's simulator runs the shuffle steps too
        assert metrics["GPU steps run here"] == f"{len(steps)} of {len(steps)}", metrics
        assert metrics["Results agree"] == f"{len(steps) + 1} of {len(steps) + 1}", metrics
        assert not any("Not run here" in c.value for c in at.caption), [c.value for c in at.caption]
    else:
        ran = len(steps) - len(needing)
        assert needing, "the reduction declares steps the numba-cuda simulator cannot run"
        assert metrics["GPU steps run here"] == f"{ran} of {len(steps)}", metrics
        assert metrics["Results agree"] == f"{ran + 1} of {ran + 1}", metrics
        captions = [c.value for c in at.caption]
        assert any(all(s.label in c for s in needing) and "need warp shuffles" in c for c in captions), captions


def test_matmul_states_the_rounding_bound_the_checker_uses():
    at = _kernels_view("matmul", {"n": 8})
    assert not at.exception
    verdict = at.success[0].value
    assert "((1 + u)^k − 1)" in verdict and "γ_k" not in verdict and "dot product" in verdict, verdict
    assert {m.label: m.value for m in at.metric}[
        "Arithmetic intensity (FLOP/byte)"
    ] == "1.33"  # 2 · 8³ FLOPs ÷ (3 · 8² · 4 bytes)
