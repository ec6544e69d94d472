"""docs/ARCHITECTURE.md's "How to add an experiment", done for real: if this fails, the walkthrough is wrong.

A toy experiment — SAXPY, out = a·x + y — is written as a new contributor would: a folder
of its own (``saxpy/``: a one-line ``__init__.py``, the kernel, the declaration and the chart
builder) and a page. They live in a temporary folder (the package ``toylab``, holding experiment
folders as ``gpu/experiments/`` does, plus ``pages/``), found through ``$KERNEL_LAB_EXPERIMENTS``
exactly as ``gpu/experiments/`` is scanned, and no file of the lab is written or edited.
Everything the declaration promises is then checked: the CLI subcommand and its
``--help``, the form and admission, a History row with its columns, the sidebar link,
the downloads, the ``gpu check`` section and the recorded-run slot. Sizes are tiny
(64 simulated threads) so it takes seconds.
"""

from __future__ import annotations

import csv
import io
import json
import sys
import textwrap

import pytest
from streamlit.testing.v1 import AppTest

KEY = "toy-saxpy"

FOLDER = '''
"""Toy SAXPY: its kernel (``kernels``), declaration (``experiment``) and chart builder (``charts``)."""
'''

KERNEL = '''
"""SAXPY kernels: out = a * x + y, one thread per element."""

from gpu.core.backend import cuda


@cuda.jit
def saxpy_kernel(a, x, y, out):
    i = cuda.grid(1)
    if i < x.size:  # the last block may run past the end of the data
        out[i] = a * x[i] + y[i]
'''

DECLARATION = '''
"""Toy SAXPY: time out = a * x + y on the device and check it against NumPy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpu.core.backend import cuda
from gpu.core.kernel_timing import KernelTiming, time_on_device
from gpu.core.limits import check_n, check_repeats, check_threads
from gpu.core.series import Series
from gpu.core.timing import RepeatPolicy
from gpu.catalog.base import CheckSection, Experiment, PageLink, Param, PerBackend, Recorded
from gpu.catalog.registry import register
from gpu.kernels.geometry import blocks_for
from toylab.saxpy.kernels import saxpy_kernel

A = np.float32(2.0)


@dataclass(frozen=True)
class SaxpyRun:
    n: int
    threads_per_block: int
    kernel: KernelTiming
    agree: bool

    def to_dict(self) -> dict:
        return {"experiment": "toy-saxpy", "n": self.n, "threads_per_block": self.threads_per_block,
                "kernel": self.kernel.to_dict(), "agree": self.agree}

    def to_frame(self) -> pd.DataFrame:
        samples = self.kernel.stats.samples_s
        return pd.DataFrame({"series": "saxpy-kernel", "sample": range(len(samples)), "seconds": samples})

    def __str__(self) -> str:
        return f"SAXPY at N = {self.n:,}: kernel {self.kernel.median_s * 1e6:.1f} us, agrees: {self.agree}"


def run(params, progress) -> SaxpyRun:
    n, threads = params["n"], params["threads_per_block"]
    x, y = np.arange(n, dtype=np.float32), np.ones(n, dtype=np.float32)
    d_x, d_y, d_out = cuda.to_device(x), cuda.to_device(y), cuda.device_array(n, dtype=np.float32)
    progress.begin("kernel", "timing the SAXPY kernel")
    timing = time_on_device(saxpy_kernel, (A, d_x, d_y, d_out), blocks_for(n, threads), threads,
                            policy=RepeatPolicy.count(params["repeats"], warmup=0), working_set_bytes=12 * n)
    return SaxpyRun(n, threads, timing, bool(np.array_equal(d_out.copy_to_host(), A * x + y)))


EXPERIMENT = register(Experiment(
    key="toy-saxpy",
    title="Toy SAXPY",
    summary="time out = a * x + y on the device and check it against NumPy",
    params=(
        Param("n", "N (elements)", check_n, PerBackend(10_000_000, 64), "A whole number such as 1e6."),
        Param("threads_per_block", "Threads per block", check_threads, 256, "1 to 1024.", widget="int"),
        Param("repeats", "Repeats", check_repeats, PerBackend(10, 2), "Timed runs.", widget="int"),
    ),
    run=run,
    work=lambda p: p["n"] * p["repeats"],
    measures=lambda r: {"kernel_s": r.kernel.median_s},
    result_type=SaxpyRun,
    plan=lambda p, simulated: [("kernel", 1.0)],
    page=PageLink("Toy SAXPY", ":material/bolt:", 95, "the walkthrough's toy experiment", "PAGE_SCRIPT"),
    order=950,
    history_columns=("n", "repeats"),
    series=(Series("saxpy-kernel", "SAXPY kernel", "#8c564b"),),
    check=(CheckSection("toy-saxpy", at_defaults=True),),
    recorded=Recorded("toy-saxpy"),
))
'''

CHART = '''
"""Toy SAXPY's chart: every kernel sample, in microseconds."""

import altair as alt
import pandas as pd

from gpu.core.series import color, label


def samples_chart(frame: pd.DataFrame) -> alt.Chart:
    data = frame.assign(label=frame["series"].map(label), us=frame["seconds"] * 1e6)
    ids = list(dict.fromkeys(frame["series"]))
    return alt.Chart(data, title="SAXPY kernel samples").mark_tick().encode(
        x=alt.X("us:Q", title="Kernel time (µs)", axis=alt.Axis(format=",.1f", grid=False)),
        y=alt.Y("label:N", title=None),
        color=alt.Color(
            "label:N", scale=alt.Scale(domain=[label(i) for i in ids], range=[color(i) for i in ids]), legend=None
        ),
    )
'''

PAGE = '''
"""Toy SAXPY: the walkthrough's page."""

import streamlit as st

from toylab.saxpy.experiment import EXPERIMENT
from toylab.saxpy.charts import samples_chart
from ui.downloads import download_buttons
from ui.forms import experiment_form
from ui.frame import frame
from ui.reference import panel_after_run, panel_before_run
from ui.runner import run_declared

frame(EXPERIMENT.page.label, EXPERIMENT.page.icon)
panel_before_run(EXPERIMENT.recorded.name)
params = experiment_form(EXPERIMENT)
if params is not None:
    st.session_state["toy.result"] = run_declared(EXPERIMENT, params)
result = st.session_state.get("toy.result")
if result is not None:
    st.altair_chart(samples_chart(result.to_frame()), key="toy.chart")
    download_buttons(EXPERIMENT, result)
panel_after_run(EXPERIMENT.recorded.name)
'''


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The folder and the page in a temporary folder, registered through $KERNEL_LAB_EXPERIMENTS; removed afterwards."""
    from gpu.catalog import registry

    root = tmp_path_factory.mktemp("contributor")
    page = root / "pages" / "95_Toy_saxpy.py"
    files = {
        root / "toylab" / "saxpy" / "__init__.py": FOLDER,  # 0. the experiment's folder
        root / "toylab" / "saxpy" / "kernels.py": KERNEL,  # 1. kernel
        root / "toylab" / "saxpy" / "experiment.py": DECLARATION.replace("PAGE_SCRIPT", str(page)),  # 2. declaration
        root / "toylab" / "saxpy" / "charts.py": CHART,  # 3. chart builder
        page: PAGE,  # 4. page
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    assert len(files) == 5 and not (root / "toylab" / "__init__.py").exists()  # one folder and a page, nothing else
    patch = pytest.MonkeyPatch()
    patch.syspath_prepend(str(root))
    patch.setenv(registry.PACKAGES_ENV, "toylab")
    try:
        yield registry.get(KEY), page
    finally:
        registry.unregister(KEY)
        for name in [m for m in sys.modules if m == "toylab" or m.startswith("toylab.")]:
            del sys.modules[name]
        patch.undo()


def test_the_registry_imports_its_engine_and_never_its_chart_builder(toy):
    from gpu.catalog import registry

    assert registry.engine_modules("toylab.saxpy") == ["toylab.saxpy.experiment", "toylab.saxpy.kernels"]
    assert "toylab.saxpy.experiment" in sys.modules and "toylab.saxpy.charts" not in sys.modules


def test_it_has_a_cli_subcommand_with_help_that_runs_and_prints_json(toy, capsys):
    from gpu.__main__ import main

    with pytest.raises(SystemExit) as exit_:
        main([KEY, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert all(flag in out for flag in ("--n", "--threads-per-block", "--repeats", "--json"))
    assert main([KEY, "--n", "64", "--repeats", "2", "--json", "--quiet"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["experiment"] == KEY and data["agree"] is True and len(data["kernel"]["samples_s"]) == 2


def test_its_form_admits_and_refuses_against_the_work_budget(toy, monkeypatch):
    from gpu.core.limits import InputError
    from gpu.service.admission import admit

    experiment, _page = toy
    monkeypatch.setenv("KERNEL_LAB_MAX_WORK", "100")
    assert admit(experiment, experiment.parse({"n": "50", "repeats": "2"}, simulated=True)) == 100
    with pytest.raises(InputError, match="Toy SAXPY run is too long"):
        admit(experiment, experiment.parse({"n": "64", "repeats": "2"}, simulated=True))


def test_its_page_shows_the_recorded_slot_runs_the_form_saves_history_and_offers_downloads(toy):
    from gpu.core.series import label
    from ui.charts.history import runs_frame
    from ui.resources import current_store

    _experiment, page = toy
    at = AppTest.from_file(str(page), default_timeout=60).run()
    assert not at.exception, at.exception
    assert any("On a real GPU: no recorded run" in s.value for s in at.subheader)  # the recorded-run slot
    at.text_input(key=f"{KEY}.n").input("64")
    at.text_input(key=f"{KEY}.repeats").input("2")
    at.get("form_submit_button")[0].click()
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    result = at.session_state["toy.result"]
    assert result.agree and result.n == 64
    row = current_store().runs(experiment=KEY, limit=1)[0]
    assert row.params == {"n": 64, "threads_per_block": 256, "repeats": 2}
    assert row.result["measures"] == {"kernel_s": result.kernel.median_s}
    table = runs_frame([row])
    assert (table.loc[0, "n"], table.loc[0, "repeats"]) == (64, 2)  # its History columns
    assert sorted(runs_frame([row], key_params=("n",)).loc[0, "parameters"].split("; ")) == [
        "repeats=2",
        "threads_per_block=256",
    ]
    assert label("saxpy-kernel") == "SAXPY kernel"  # its series, from the declaration
    buttons = at.get("download_button")
    assert len(buttons) == 2, "the JSON and CSV downloads"


def test_its_downloads_hold_the_run_and_its_samples(toy):
    from gpu.catalog.base import Progress
    from ui.downloads import downloads

    experiment, _page = toy
    result = experiment.execute(experiment.parse({"n": "64", "repeats": "2"}, simulated=True), Progress())
    as_json, as_csv = downloads(experiment, result)
    assert json.loads(as_json.data)["experiment"] == KEY and as_json.file_name == "toy_saxpy.json"
    rows = list(csv.DictReader(io.StringIO(as_csv.data)))
    assert [r["series"] for r in rows] == ["saxpy-kernel"] * 2 and as_csv.file_name == "toy_saxpy.csv"


def test_its_sidebar_link_comes_from_the_declaration(toy, monkeypatch):
    import streamlit as st

    from ui.frame import navigation
    from ui.navigation import all_links

    _experiment, page = toy
    links = all_links()
    mine = next(link for link in links if link.label == "Toy SAXPY")
    assert (mine.script, mine.icon) == (str(page), ":material/bolt:")
    assert links[-1] is mine  # order 95: after every page of the lab
    drawn = []
    monkeypatch.setattr(st, "page_link", lambda script, label, icon: drawn.append((script, label, icon)))
    navigation()
    assert (str(page), "Toy SAXPY", ":material/bolt:") in drawn


def test_its_gpu_check_section_runs_and_is_written(toy, tmp_path):
    from gpu.report.check import declared_sections, run_check

    section = next(s for s in declared_sections() if s.__name__ == "toy_saxpy_section")
    report = run_check(tmp_path, quick=True, sections=[section])
    assert [s.key for s in report.sections] == [KEY] and report.passed
    data = json.loads((tmp_path / "check.json").read_text())
    assert data["sections"][KEY]["measures"]["kernel_s"] > 0
    assert "Toy SAXPY" in (tmp_path / "check.md").read_text()


def test_its_recorded_check_section_is_importable_and_fills_its_recorded_slot(toy, tmp_path, monkeypatch):
    """A check.json holding its section imports into History, and in a benchmarks folder gives its page a recorded run.

    The file is the toy's own section run by ``run_check`` in the simulator; it is marked a
    full hardware run only here, in a temporary folder, to stand in for a GPU's check.
    """
    from gpu.report.check import declared_sections, run_check
    from gpu.service import references as refs_module
    from gpu.service.check_schema import SECTION_KEYS, history_records
    from gpu.service.importer import parse_check_bytes
    from ui.resources import references

    _experiment, page = toy
    assert KEY in SECTION_KEYS  # declared, so readable: no list edited
    section = next(s for s in declared_sections() if s.__name__ == "toy_saxpy_section")
    run_check(tmp_path / "out", quick=True, sections=[section])
    data = {**json.loads((tmp_path / "out" / "check.json").read_text()), "backend": "cuda", "quick": False}
    records = history_records(parse_check_bytes(json.dumps(data).encode()), source="check.json", sha256="")
    assert [r["experiment"] for r in records] == [KEY] and len(records[0]["kernel"]["samples_s"]) == 2
    folder = tmp_path / "benchmarks"
    (folder / "gpu-a").mkdir(parents=True)
    (folder / "gpu-a" / "check.json").write_text(json.dumps(data))
    monkeypatch.setattr(refs_module, "BENCHMARKS_DIR", folder)
    refs_module.load_references.cache_clear()
    references.clear()
    try:
        assert refs_module.load_references().best(KEY).key == "gpu-a"
        at = AppTest.from_file(str(page), default_timeout=60).run()
        assert not at.exception, at.exception
        device = data["device"]["name"]
        assert any(s.value == f"On a real GPU: {device}" for s in at.subheader), [s.value for s in at.subheader]
        assert not any("no recorded run" in s.value for s in at.subheader)
    finally:
        refs_module.load_references.cache_clear()
        references.clear()
