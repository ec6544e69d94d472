"""One declaration per experiment: every real experiment gets its CLI subcommand and fits
admission at its defaults, and each layer imports only the layers below it.

The walkthrough of docs/ARCHITECTURE.md ("How to add an experiment") is
tests/test_add_an_experiment.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from gpu.__main__ import main
from gpu.catalog import registry
from gpu.core.limits import SIMULATOR_MAX_N, load_config
from gpu.service.admission import admit

ROOT = Path(__file__).resolve().parent.parent


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
    # N at the simulator's cap x 101 passes x 8 configurations: about 25x (numba-cuda's) or 50x (the lab's) its budget
    at = AppTest.from_file(LAUNCH_PAGE, default_timeout=60).run()
    at.text_input(key="launch-sweep.n").input(str(SIMULATOR_MAX_N))
    at.text_input(key="launch-sweep.repeats").input("100")
    next(b for b in at.button if b.label == "Run sweep").click().run()
    assert any("too long for the shared machine" in e.value for e in at.error), [e.value for e in at.error]
    assert "launch.sweep" not in at.session_state


def test_the_transfer_strategies_form_refuses_a_run_over_the_simulators_budget():
    at = AppTest.from_file(TRANSFERS_PAGE, default_timeout=60).run()
    at.text_input(key="transfers.n").input(str(SIMULATOR_MAX_N))
    at.text_input(key="transfers.repeats").input("50")
    next(b for b in at.button if b.label == "Compare strategies").click().run()
    assert any("too long for the shared machine" in e.value for e in at.error), [e.value for e in at.error]
    assert "transfers.strategies" not in at.session_state


# --- the layers ---------------------------------------------------------------------------------

# Which package of gpu/ may import which: a strict order, so no two import each other and
# none imports one above it (the simulator, gpu/sim/, is below them all). The primitives
# (core) -> the shared kernels (and their inspector) -> the declaration and the catalog
# machinery (gpu/catalog/) -> the experiments' folders -> service -> report; beside them,
# Write a kernel: the trace -> the problems (whose solutions reuse the folders' kernels) ->
# the sandbox that judges them. An experiment's folder imports the service only from its
# faces (views, readback); tests/experiments/test_folders.py keeps that.
ALLOWED = {
    "core": {"core"},
    "kernels": {"core", "kernels"},
    "catalog": {"core", "kernels", "catalog"},
    "experiments": {"core", "kernels", "catalog", "experiments"},
    "service": {"core", "kernels", "catalog", "service"},
    "report": {"core", "kernels", "catalog", "experiments", "service", "report"},
    "trace": {"core", "kernels", "catalog", "trace"},
    "problems": {"core", "kernels", "experiments", "problems"},
    "sandbox": {"core", "kernels", "service", "trace", "problems", "sandbox"},
    # a free GPU: the notebook it writes (the lab's kernels and problems), and its result read back (History,
    # the leaderboard, and the sandbox's judge)
    "notebook": {"core", "kernels", "catalog", "experiments", "service", "problems", "sandbox", "notebook"},
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
                assert parts[1] in ALLOWED[layer], (
                    f"gpu/{layer}/{path.name} imports {name}: {layer} may use {sorted(ALLOWED[layer])}"
                )
