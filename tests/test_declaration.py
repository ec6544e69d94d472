"""One declaration per experiment: everything else is derived from it.

The toy experiment here is the walkthrough of docs/ARCHITECTURE.md ("How to add an
experiment"): registered in a test, it appears in the CLI, gets a page form with
admission, and saves a History row. If this file fails, the walkthrough is wrong.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from gpu.__main__ import main
from gpu.core.limits import InputError, load_config, parse_size
from gpu.experiments import registry
from gpu.experiments.base import Experiment, Param, PerBackend
from gpu.service.admission import admit

ROOT = Path(__file__).resolve().parent.parent


# --- the toy experiment of docs/ARCHITECTURE.md -----------------------------------------


@dataclass(frozen=True)
class SquareRun:
    n: int
    total: int

    agree = True

    def to_dict(self) -> dict:
        return {"experiment": "toy-square", "n": self.n, "total": self.total}

    def __str__(self) -> str:
        return f"sum of squares below {self.n:,}: {self.total:,}"


TOY = Experiment(
    key="toy-square",
    title="Toy square",
    summary="sum the squares below N (the walkthrough's example)",
    params=(Param("n", "N", lambda v: parse_size(v, "N"), PerBackend(1000, 10), "How many squares."),),
    run=lambda p, progress: SquareRun(p["n"], sum(i * i for i in range(p["n"]))),
    work=lambda p: p["n"],
    measures=lambda run: {"total": float(run.total)},
)


@pytest.fixture
def toy():
    registry.register(TOY)
    yield TOY
    registry._REGISTRY.pop(TOY.key, None)
    registry._ALIASES.pop(TOY.key, None)


def test_a_registered_experiment_gets_a_cli_subcommand_with_its_flags(toy, capsys):
    assert main(["toy-square", "--n", "1e2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"experiment": "toy-square", "n": 100, "total": 328350}
    assert main(["toy-square", "--n", "zero"]) == 2
    assert "N must be a whole number" in capsys.readouterr().err


def test_a_registered_experiment_is_admitted_against_the_work_budget(toy, monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_MAX_WORK", "50")
    with pytest.raises(InputError, match="Toy square run is too long"):
        admit(toy, toy.parse({"n": "100"}, simulated=True))
    assert admit(toy, toy.parse({"n": "50"}, simulated=True)) == 50


TOY_PAGE = """
import streamlit as st
from tests.test_declaration import TOY
from gpu.experiments import registry
from ui.forms import experiment_form
from ui.runner import run_declared

registry.register(TOY)
params = experiment_form(TOY)
if params is not None:
    st.session_state["toy.result"] = run_declared(TOY, params)
"""


def test_a_registered_experiment_gets_a_page_form_and_saves_a_history_row(toy, tmp_path, monkeypatch):
    from ui.resources import current_store

    at = AppTest.from_string(TOY_PAGE, default_timeout=60).run()
    assert not at.exception, at.exception
    at.text_input(key="toy-square.n").input("12")
    at.get("form_submit_button")[0].click()
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state["toy.result"].total == sum(i * i for i in range(12))
    row = current_store().runs(experiment="toy-square", limit=1)[0]
    assert row.params == {"n": 12}  # told by the declaration, not guessed
    assert row.result["measures"] == {"total": 506.0}


def test_a_rejected_form_shows_the_parser_message_and_runs_nothing(toy):
    at = AppTest.from_string(TOY_PAGE, default_timeout=60).run()
    at.text_input(key="toy-square.n").input("1e3x")
    at.get("form_submit_button")[0].click()
    at.run()
    assert any("whole number" in e.value for e in at.error)
    assert "toy.result" not in at.session_state


# --- every real experiment ------------------------------------------------------------------


@pytest.mark.parametrize("experiment", registry.experiments(), ids=lambda e: e.key)
def test_every_experiment_runs_its_defaults_within_the_admission_limits(experiment):
    params = experiment.parse({}, simulated=True)
    assert admit(experiment, params, load_config(simulated=True)) >= 0
    for param in experiment.params:
        assert param.help and param.label, f"{experiment.key}.{param.name} needs a label and help"
        assert param.cli_flag.startswith("--")


@pytest.mark.parametrize("experiment", registry.experiments(), ids=lambda e: e.key)
def test_every_experiment_has_a_cli_subcommand(experiment, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([experiment.key, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert all(p.cli_flag in out for p in experiment.params if p.cli)


LAUNCH_PAGE = str(ROOT / "pages/3_Launch_config.py")
TRANSFERS_PAGE = str(ROOT / "pages/4_Transfers.py")


def test_the_launch_sweep_form_refuses_a_run_over_the_simulators_budget():
    # N = 16,384 x 101 passes x 8 configurations: about 25x the simulator's budget
    at = AppTest.from_file(LAUNCH_PAGE, default_timeout=60).run()
    at.text_input(key="launch-sweep.n").input("16384")
    at.text_input(key="launch-sweep.repeats").input("100")
    next(b for b in at.button if b.label == "Run sweep").click().run()
    assert any("too long for the shared machine" in e.value for e in at.error), [e.value for e in at.error]
    assert "launch.sweep" not in at.session_state


def test_the_transfer_strategies_form_refuses_a_run_over_the_simulators_budget():
    at = AppTest.from_file(TRANSFERS_PAGE, default_timeout=60).run()
    at.text_input(key="transfers.n").input("16384")
    at.text_input(key="transfers.repeats").input("50")
    next(b for b in at.button if b.label == "Compare strategies").click().run()
    assert any("too long for the shared machine" in e.value for e in at.error), [e.value for e in at.error]
    assert "transfers.strategies" not in at.session_state


# --- the layers ---------------------------------------------------------------------------------

# Which layer may import which: primitives (core and the kernels, which time and inspect
# each other) -> experiments -> service -> report.
ALLOWED = {
    "core": {"core", "kernels"},
    "kernels": {"core", "kernels"},
    "experiments": {"core", "kernels", "experiments"},
    "service": {"core", "kernels", "experiments", "service"},
    "report": {"core", "kernels", "experiments", "service", "report"},
}


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_each_layer_imports_only_the_layers_below_it(layer):
    for path in sorted((ROOT / "gpu" / layer).glob("*.py")):
        for name in _imports(path):
            assert not name.startswith("streamlit"), f"{path.name} imports streamlit: gpu/ never does"
            parts = name.split(".")
            if parts[0] == "gpu" and len(parts) > 1 and parts[1] in ALLOWED:
                assert parts[1] in ALLOWED[layer], f"gpu/{layer}/{path.name} imports {name}: {layer} may use {sorted(ALLOWED[layer])}"
