"""The compiler's facts on the Launch config inspector and the Kernels page, in the simulator
too: the sentence, the target picker, the PTX, and the line on what the simulator cannot tell."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]


def markdown_text(at) -> str:
    return "\n".join(m.value for m in at.markdown)


@pytest.fixture(scope="module")
def launch_page():
    return AppTest.from_file(str(ROOT / "pages/3_Launch_config.py"), default_timeout=180).run()


def test_launch_inspector_states_the_compilers_facts_for_the_h100_by_default(launch_page):
    at = launch_page
    assert not at.exception
    text = markdown_text(at)
    assert "compiled here for NVIDIA H100/H200 (sm_90) by NVVM/ptxas" in text
    assert "registers" in text and "bytes spilled" in text and "occupancy 100% at 256 threads per block" in text
    assert "static facts from the compiler, not measurements" in text
    assert any(".target sm_90" in c.value for c in at.code), "the PTX listing"
    assert any("What the simulator cannot tell" in c.value for c in at.caption)


def test_launch_inspector_target_picker_recompiles_for_a_t4(launch_page):
    at = launch_page
    picker = at.selectbox(key="launch.compile_target")
    for name in ("T4 · sm_75", "A100 · sm_80", "sm_86", "L4, RTX 40 · sm_89", "H100/H200 · sm_90"):
        assert any(name in option for option in picker.options), (name, picker.options)
    picker.set_value("sm_75").run()
    assert not at.exception
    assert "compiled here for NVIDIA T4 (sm_75)" in markdown_text(at)
    assert any(".target sm_75" in c.value for c in at.code)


def test_kernels_page_shows_each_steps_facts_and_ptx():
    at = AppTest.from_file(str(ROOT / "pages/7_Kernels.py"), default_timeout=180).run()
    assert not at.exception
    at.selectbox(key="kernels.kernel").set_value("transpose").run()
    text = markdown_text(at)
    kernels = [f"transpose_{step}_kernel" for step in ("naive", "tiled", "padded", "big_tile")]
    for kernel in kernels:
        assert f"**{kernel}** compiled here for NVIDIA H100/H200 (sm_90)" in text, kernel
    assert "4,224 bytes of shared memory" in text  # the padded tile: 32 x 33 float32
    table = next(d.value for d in at.dataframe if "registers per thread" in d.value.columns)
    assert list(table["kernel"]) == kernels
    # the padded 64 x 65 tile of the big-tile step: 16,640 bytes
    assert list(table["shared memory (bytes)"]) == [0, 4096, 4224, 16640] and set(table["compiles"]) == {"yes"}
    assert any("What the simulator cannot tell" in c.value for c in at.caption)
    at.selectbox(key="kernels.compile_target").set_value("sm_89").run()
    assert "**transpose_padded_kernel** compiled here for NVIDIA L4 / RTX 40 series (sm_89)" in markdown_text(at)


def test_kernels_page_occupancy_uses_the_block_size_of_the_form_not_the_launches_default():
    """Reduction runs 128 threads per block in the simulator: the facts table says so, not 256."""
    at = AppTest.from_file(str(ROOT / "pages/7_Kernels.py"), default_timeout=180).run()
    at.selectbox(key="kernels.kernel").set_value("reduction").run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "registers per thread" in d.value.columns)
    assert set(table["threads per block"]) == {128}
    assert all("at 128 threads/block" in o for o in table["occupancy"] if o)
    assert "at 256 threads" not in markdown_text(at)
