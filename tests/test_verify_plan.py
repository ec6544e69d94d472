"""The verification plans fit a lent GPU: budgets summed against the device tool's limits, without a GPU."""

from __future__ import annotations

import argparse

import pytest

from gpu.report import plan

SCRIPTS = {"first-look": "scripts/gpu_first_look.sh", "verify": "scripts/gpu_verify.sh"}


@pytest.mark.parametrize("name", sorted(plan.PLANS))
def test_each_plan_fits_its_own_limit_and_one_device_call(name):
    steps, limit_s = plan.PLANS[name]
    assert plan.total_s(name) == plan.SETUP_S[name] + sum(step.budget_s for step in steps)
    assert plan.total_s(name) <= limit_s <= plan.CALL_LIMIT_S, (name, plan.total_s(name), limit_s)
    assert all(step.budget_s > 0 for step in steps)


def test_a_machine_start_and_both_plans_fit_one_session_with_time_to_rerun_the_first_look():
    spent = plan.MACHINE_START_S + plan.FIRST_LOOK_S + plan.VERIFY_S
    assert plan.SESSION_DEVICE_S - spent >= 120  # the transfers and the idle waits between calls
    assert plan.FIRST_LOOK_S <= 180 and plan.VERIFY_S <= 300


@pytest.mark.parametrize("name", sorted(plan.PLANS))
def test_the_check_sections_budgets_add_up_to_the_check_steps_budget(name):
    check = next(step for step in plan.PLANS[name][0] if "check" in step.argv)
    planned = sum(plan.SECTIONS[name].values())
    assert planned <= check.budget_s - 5, (name, planned, check.budget_s)  # 5 s: the process's start and imports


def test_the_verify_plan_names_every_declared_check_section_once_headline_first():
    from gpu.report.check import planned_sections, section_key

    functions, budgets = planned_sections("verify")
    assert [section_key(fn) for fn in functions] == list(plan.VERIFY_SECTIONS) == list(budgets)
    assert list(plan.VERIFY_SECTIONS)[1:3] == ["reduction", "transpose"]  # the headline targets come first


def test_a_plan_that_leaves_a_declared_section_out_is_refused(monkeypatch):
    from gpu.report.check import planned_sections

    monkeypatch.setitem(plan.SECTIONS, "verify", {k: v for k, v in plan.VERIFY_SECTIONS.items() if k != "matmul"})
    with pytest.raises(ValueError, match=r"declared but not planned: \['matmul'\]"):
        planned_sections("verify")


@pytest.mark.parametrize("rehearse", [False, True])
@pytest.mark.parametrize("name", sorted(plan.PLANS))
def test_every_engine_command_of_a_plan_parses_with_the_cli(name, rehearse):
    """A flag misspelt in a plan would waste a step of a visit: each `python -m gpu` command parses here."""
    from gpu.__main__ import build_parser

    parser = build_parser()
    for step in plan.PLANS[name][0]:
        argv = plan.command(step, rehearse, python="python", out="OUT", cc="9.0")
        if argv[1:3] != ["-m", "gpu"]:
            continue
        try:
            parser.parse_args(argv[3:])
        except SystemExit as exc:  # argparse's way of saying no
            raise AssertionError(f"{name}: {step.name}: {' '.join(argv)} does not parse") from exc
        assert isinstance(parser, argparse.ArgumentParser)


@pytest.mark.parametrize("name", sorted(plan.PLANS))
def test_each_make_target_runs_its_plan(name):
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    script = (root / SCRIPTS[name]).read_text()
    assert f"-m gpu.report.plan {name}" in script
    assert f"gpu-{name}:" in (root / "Makefile").read_text()


def test_a_check_run_by_the_verify_plan_records_each_budget_and_imports_into_history(tmp_path, monkeypatch):
    import json

    from gpu.__main__ import main
    from gpu.report.check import run_check

    monkeypatch.setenv("KERNEL_LAB_DB", str(tmp_path / "history.sqlite3"))
    report = run_check(tmp_path, quick=True, plan="verify")
    data = json.loads((tmp_path / "check.json").read_text())
    assert data["plan"] == "verify" and list(data["sections"]) == list(plan.VERIFY_SECTIONS)
    assert {k: s["budget_s"] for k, s in data["sections"].items()} == plan.VERIFY_SECTIONS
    assert report.passed and "of its 15 s" in (tmp_path / "check.md").read_text()
    assert main(["history", "import", str(tmp_path / "check.json")]) == 0  # the schema takes plan and budget_s


def test_an_unknown_compute_capability_compiles_every_target_instead_of_passing_an_empty_one():
    compile_step = next(step for step in plan.VERIFY if "compile" in step.argv)
    assert plan.command(compile_step, False, python="py", out="o", cc="9.0")[-2:] == ["--target", "9.0"]
    assert "--target" not in plan.command(compile_step, False, python="py", out="o", cc="")


def test_pytest_collects_only_the_files_that_hold_gpu_only_tests():
    files = plan.gpu_test_files()
    assert "tests/test_gpu_hardware.py" in files and "tests/catalog/test_gpu_catalog.py" in files
    assert "tests/test_verify_plan.py" not in files  # no GPU-only tests in it
    tests_step = next(step for step in plan.VERIFY if "pytest" in step.argv)
    argv = plan.command(tests_step, False, python="py", out="o", cc="9.0")
    assert argv[3:3 + len(files)] == files and "{gpu_tests}" not in argv
