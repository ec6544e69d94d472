"""A missing toolkit is not a rejected kernel: where the compiler cannot run, every
place that shows its facts says they are unavailable, names what is missing and that `make run`
installs it, and never says the kernel does not compile; a genuinely bad kernel is still rejected.

The missing toolkit is real, not mocked in this process: the compile worker starts with a
``sitecustomize`` on its PYTHONPATH that makes cuda-pathfinder fail to find libNVVM exactly as
it does on a machine without the compiler wheels (DynamicLibNotFoundError: Failure finding
"libnvvm.so"), so numba-cuda, the worker and the pages see the error they would see there.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from gpu.core import compile_cache, compiler
from gpu.core.compiler import (
    REJECTED,
    UNAVAILABLE,
    Toolkit,
    compile_facts,
    compile_source_facts,
    missing_toolkit_part,
)
from gpu.kernels.vector_add import vector_add_kernel

ROOT = Path(__file__).resolve().parents[1]
VECTOR_ADD_SIG = "void(float32[::1], float32[::1], float32[::1])"
BLAME = ("does not compile", "rejects", "rejected", "reject")
NO_NVVM = '''
"""Kernel Lab's tests: this process finds no libNVVM, as on a machine without the compiler wheels."""
import cuda.pathfinder as _pathfinder

_load = _pathfinder.load_nvidia_dynamic_lib


def _load_without_nvvm(name):
    if name == "nvvm":
        raise _pathfinder.DynamicLibNotFoundError('Failure finding "libnvvm.so": No such file: libnvvm.so')
    return _load(name)


_pathfinder.load_nvidia_dynamic_lib = _load_without_nvvm
'''
BAD_VECTOR_ADD = '''from numba import cuda

THREADS_PER_BLOCK = 128


@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] + b
'''


def clear_page_caches() -> None:
    from ui.views.compile_facts import cached_facts

    cached_facts.clear()


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """No verdict from an earlier compile: an empty disk cache, memory cache and page cache."""
    monkeypatch.setenv("KERNEL_LAB_COMPILE_CACHE", str(tmp_path / "compile-cache"))
    monkeypatch.setattr(compile_cache, "_memory", OrderedDict())
    clear_page_caches()
    yield tmp_path / "compile-cache"
    clear_page_caches()


@pytest.fixture
def no_nvvm(fresh_cache, tmp_path, monkeypatch):
    """The compile worker cannot find libNVVM (the compiler wheels are not installed)."""
    site = tmp_path / "no-nvvm"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NO_NVVM)
    monkeypatch.setenv("PYTHONPATH", str(site))
    return fresh_cache


def assert_blames_nothing(text: str) -> None:
    for word in BLAME:
        assert word not in text.lower(), f"{word!r} in {text!r}"


def test_a_missing_nvvm_is_unavailable_never_rejected_and_not_cached(no_nvvm):
    facts = compile_facts(vector_add_kernel, VECTOR_ADD_SIG, "sm_90", 256)
    assert facts.status == UNAVAILABLE and not facts.ok and not facts.rejected
    assert "libnvvm.so" in facts.missing, facts.missing
    sentence = facts.sentence()
    assert "unavailable" in sentence and "make run" in sentence and "not at fault" in sentence
    assert "NVIDIA H100/H200 (sm_90)" in sentence
    assert_blames_nothing(sentence)
    assert facts.to_dict()["status"] == UNAVAILABLE
    assert not list(no_nvvm.glob("*.json")), "a missing library is not a fact about the kernel: never cached"


def test_a_bad_kernel_is_still_rejected_with_the_compilers_message(fresh_cache):
    facts = compile_source_facts(BAD_VECTOR_ADD, "vector_add", VECTOR_ADD_SIG, "sm_90", 128)
    assert facts.status == REJECTED and facts.rejected and not facts.unavailable and facts.missing is None
    assert "TypingError" in facts.error
    assert "rejected by the compiler for NVIDIA H100/H200 (sm_90)" in facts.sentence()
    assert "make run" not in facts.sentence()


def test_no_ptxas_is_unavailable_for_every_target(fresh_cache, monkeypatch):
    monkeypatch.setattr(compiler, "toolkit", lambda: Toolkit(None, None, None))
    facts = compiler.compile_many([compiler.request_for(vector_add_kernel, VECTOR_ADD_SIG)], ["sm_75", "sm_90"])
    assert [f.status for f in facts] == [UNAVAILABLE, UNAVAILABLE]
    assert all("ptxas" in f.missing and "make run" in f.sentence() for f in facts)


@pytest.mark.parametrize("error,part", [
    ('NVVM (sm_90): DynamicLibNotFoundError: Failure finding "libnvrtc.so.13 or libnvrtc.so.12": No such file',
     "libnvrtc.so.13 or libnvrtc.so.12 (NVRTC)"),
    ("NVVM (sm_90): NvvmSupportError: libNVVM cannot be found. Do `conda install cudatoolkit`", "libNVVM"),
    ("NVVM (sm_100): nvvmError: ERROR_INVALID_IR (6)", None),  # the compiler's verdict
    ("Numba front end: TypingError: Failed in cuda mode pipeline (step: nopython frontend)", None),
])
def test_missing_toolkit_parts_are_told_apart_from_compile_errors(error, part):
    found = missing_toolkit_part(error)
    assert (found is None) if part is None else (part in found), found


def test_gpu_compile_says_unavailable_and_make_run(no_nvvm, capsys):
    from gpu.__main__ import main

    assert main(["compile", "--kernel", "vector_add_kernel", "--target", "sm_90"]) == 1
    out = capsys.readouterr().out
    assert "UNAVAILABLE: " in out and "libnvvm.so" in out and "make run" in out and "FAILS" not in out


def page_text(at) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [e.value for kind in (at.error, at.warning, at.info) for e in kind]
    return "\n".join(parts)


def test_launch_inspector_without_nvvm_says_unavailable_and_make_run(no_nvvm):
    at = AppTest.from_file(str(ROOT / "pages/3_Launch_config.py"), default_timeout=180).run()
    assert not at.exception
    info = [i.value for i in at.info if "vector_add_kernel" in i.value]
    assert info, [i.value for i in at.info]
    assert "unavailable" in info[0] and "make run" in info[0] and "libnvvm.so" in info[0], info[0]
    assert "not at fault" in info[0]
    assert not [e.value for e in at.error if "vector_add_kernel" in e.value]
    assert "vector_add_kernel does not compile" not in page_text(at)
    assert_blames_nothing("\n".join(info))


def test_kernels_table_without_nvvm_has_dashes_a_caption_and_no_none(no_nvvm):
    at = AppTest.from_file(str(ROOT / "pages/7_Kernels.py"), default_timeout=180).run()
    at.selectbox(key="kernels.kernel").set_value("transpose").run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "registers per thread" in d.value.columns)
    cells = [str(v) for v in table.to_numpy().ravel()]
    assert "None" not in cells and "nan" not in cells, cells
    assert set(table["registers per thread"]) == {"—"} and set(table["compiles"]) == {"—"}
    assert not any(c.startswith("no") for c in table["compiles"])
    assert any("— where the compiler could not run here" in c.value for c in at.caption)
    notes = [i.value for i in at.info]
    assert any("unavailable" in n and "make run" in n and "not at fault" in n for n in notes), notes
    assert_blames_nothing(page_text(at))


def test_kernels_table_with_a_rejected_step_says_rejected(fresh_cache, monkeypatch):
    """The same table when the compiler did run and refused a step: its message, and '—' beside it."""
    from ui.views.compile_facts import facts_table, missing_figures_caption

    good = compile_facts(vector_add_kernel, VECTOR_ADD_SIG, "sm_90", 256, sass=False)
    bad = compile_source_facts(BAD_VECTOR_ADD, "vector_add", VECTOR_ADD_SIG, "sm_90", 128, sass=False)
    table = facts_table([good, bad])
    assert table["compiles"][0] == "yes" and table["compiles"][1].startswith("no, rejected: Numba front end")
    assert table["registers per thread"][1] == "—" and table["registers per thread"][0] != "—"
    assert "None" not in [str(v) for v in table.to_numpy().ravel()]
    assert "the compiler rejected the kernel" in missing_figures_caption([good, bad])


def test_write_a_kernel_facts_without_nvvm_are_unavailable_not_a_rejection(no_nvvm):
    from gpu.problems import get
    from gpu.sandbox.facts import compile_facts as submission_facts
    from tests.test_write_kernel_page import GOOD

    facts, note, status = submission_facts(get("vector-add"), GOOD, 128)
    assert facts is None and status == UNAVAILABLE
    assert "unavailable" in note and "make run" in note and "your kernel is not at fault" in note
    assert_blames_nothing(note)


def test_write_a_kernel_facts_of_a_bad_kernel_are_a_rejection(fresh_cache):
    from gpu.problems import get
    from gpu.sandbox.facts import compile_facts as submission_facts

    facts, note, status = submission_facts(get("vector-add"), BAD_VECTOR_ADD, 128)
    assert facts is None and status == REJECTED
    assert note.startswith("the real compiler rejects this kernel for NVIDIA H100/H200 (sm_90)")
    assert "make run" not in note


def test_write_a_kernel_page_without_nvvm_says_how_to_get_the_compiler(no_nvvm, tmp_path, monkeypatch):
    """The page's compiler panel, the facts computed as the sandboxed child computes them."""
    from gpu.sandbox import isolation, service
    from gpu.sandbox.facts import compile_facts as submission_facts
    from tests.test_write_kernel_page import GOOD, PAGE

    monkeypatch.setenv("KERNEL_LAB_DB", str(tmp_path / "h.sqlite3"))
    monkeypatch.setenv("KERNEL_LAB_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("KERNEL_LAB_PLAIN_EDITOR", "1")
    monkeypatch.delenv(isolation.ENV_REQUIRE, raising=False)

    def analysis_here(problem, source, *, threads=0, facts=True, trace=True, **_):
        from gpu.problems import get

        found, note, status = submission_facts(get(problem), source, threads or 128)
        return {"compile_facts": found, "note": note, "status": status, "trace": None}

    monkeypatch.setattr(service.judging, "analyse_in_child", analysis_here)
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    at.text_area(key="write_kernel.draft.vector-add").input(GOOD)
    at.button(key="write_kernel.run").click().run()
    assert not at.exception, at.exception
    assert any("Passed" in s.value for s in at.success), [e.value for e in at.error]
    from tests.analysis_wait import wait_for_analysis

    wait_for_analysis(at)  # the facts follow the verdict
    panel = [i.value for i in at.info if "What the compiler says" in i.value]
    assert panel and "make run" in panel[0] and "your kernel is not at fault" in panel[0], [i.value for i in at.info]
    assert_blames_nothing(page_text(at))
