"""Import a notebook's result file: checked, judged again by the lab, saved apart as self-reported.

An experiment's result (vector add) becomes one History run whose ``imported`` says
``self_reported: true`` and names the device; History lists it as "self-reported", and Compare GPUs
sets it beside the recorded GPUs under its own label. A problem's result becomes a leaderboard entry
whose device is "self-reported on <device>", so it is ranked only against other self-reported runs on
that device, never against the runs the lab timed itself.

What the lab trusts of a file, and why:
- its format, types and internal consistency (``gpu.notebook.selfreport``): checked field by field;
- the kernel: never the notebook's word. The vector-add kernel must be the lab's own, character for
  character; a learner's kernel is judged again in the lab's sandbox (``gpu.sandbox.service.submit``,
  the same entry point as the Write a kernel page), and a kernel the lab finds wrong is refused;
- the timing: shown as reported, with the device's facts, once it is possible — a kernel moving its
  bytes faster than the device's memory peak (from its own clock and bus width) is refused;
- nothing is written unless every check passes, and a file already imported is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from gpu.notebook.selfreport import SelfReport, SelfReportProblem, parse_self_report

SWEEPS = ("launch-sweep", "scaling", "transfers")  # the vector-add sweeps (gpu.notebook.sweeps, .transfers)


@dataclass(frozen=True)
class SelfReportImport:
    """What an import saved: a History run id or a leaderboard entry id, and one sentence for the learner."""

    report: SelfReport
    run_id: str | None = None
    entry_id: str | None = None

    def summary(self) -> str:
        where = f"History run {self.run_id[:8]}" if self.run_id else ""
        if self.entry_id:
            where = f"the {self.report.key!r} leaderboard" + (f" and {where}" if where else "")
        timed = ""
        kernel = self.report.kernel
        steps = len(self.report.data["phases"])
        if self.report.kind == "experiment" and "kernel" not in self.report.data["phases"]:  # catalog, sweeps
            timed = f": {steps} series checked and timed"
        elif kernel and not self.report.simulated:
            gbps = self.report.gbps
            timed = f": kernel median {kernel['median_s'] * 1e3:.4g} ms" + (f", {gbps:,.0f} GB/s" if gbps else "")
        return f"Imported the {self.report.kind} result {self.report.key!r}, {self.report.label}, into {where}{timed}."


def _lab_vector_add_source() -> str:
    from gpu.kernels import vector_add
    from gpu.notebook.cells import _function_source

    return _function_source(Path(vector_add.__file__), "vector_add_kernel")


def _check_catalog(report: SelfReport) -> None:
    """A catalog kernel's result: the lab's own kernels module at ``gpu check``'s size, every step checked."""
    from gpu.notebook.catalog import kernels_source, plan

    data, backend = report.data, "simulator" if report.simulated else "gpu"
    if report.kernel_source != kernels_source(report.key):
        raise SelfReportProblem(f"kernel_source: is not the lab's {report.key} kernels module, which the notebook runs "
                                "unchanged")
    expected = plan(report.key)[backend]
    if data.get("params") != expected["params"]:
        raise SelfReportProblem(f"params: {data.get('params')!r} is not the size the notebook measures "
                                f"({expected['params']!r})")
    if data["bytes_moved"] != expected["bytes_moved"]:
        raise SelfReportProblem(f"bytes_moved: {data['bytes_moved']!r} is not what the kernel moves at that size "
                                f"({expected['bytes_moved']:,})")
    skipped = data.get("skipped") or {}
    for step in expected["steps"]:
        may_skip = report.simulated and step["needs"]
        if step["key"] in skipped and not may_skip:
            raise SelfReportProblem(f"skipped.{step['key']}: only a step the simulator cannot run may be skipped")
        if step["key"] not in skipped and step["key"] not in data["phases"]:
            raise SelfReportProblem(f"phases: {step['key']} missing (the notebook times every step it checks)")
        if step["key"] not in skipped and step["label"] not in {c["name"] for c in data["checks"]}:
            raise SelfReportProblem(f"checks: {step['label']!r} missing (the notebook checks every step)")
    unknown = set(data["phases"]) - {s["key"] for s in expected["steps"]}
    if unknown:
        raise SelfReportProblem(f"phases: {', '.join(sorted(unknown))} is not a step of {report.key}")
    if not data["agree"]:
        raise SelfReportProblem("agree: false — the notebook's own check failed, so its times are not imported")


def _check_experiment(report: SelfReport) -> None:
    from gpu.notebook.build import EXPERIMENTS, VECTOR_ADD_N
    from gpu.notebook.catalog import CATALOG

    if report.key not in EXPERIMENTS:
        raise SelfReportProblem(f"key: {report.key!r} is not an experiment with a notebook ({', '.join(EXPERIMENTS)})")
    if report.key in CATALOG:
        return _check_catalog(report)
    if report.key in SWEEPS:
        from gpu.notebook import sweeps, transfers

        problem = (transfers.check_result(dict(report.data), report.simulated) if report.key == "transfers"
                   else sweeps.check_result(report.key, dict(report.data), report.simulated))
        if problem is None and not report.data["agree"]:
            problem = "agree: false — the notebook's own check failed, so its times are not imported"
        if problem:
            raise SelfReportProblem(problem)
        return None
    data = report.data
    if report.kernel_source != _lab_vector_add_source():
        raise SelfReportProblem("kernel_source: is not the lab's vector_add_kernel, which the vector-add notebook "
                                "runs unchanged; a changed kernel belongs on Write a kernel")
    n = data.get("n")
    expected_n = VECTOR_ADD_N["simulator" if report.simulated else "gpu"]
    if n != expected_n:
        raise SelfReportProblem(f"n: {n!r} is not the notebook's N ({expected_n:,})")
    if data["bytes_moved"] != 12 * n:
        raise SelfReportProblem(f"bytes_moved: {data['bytes_moved']!r} is not 12 bytes per element at N = {n:,}")
    missing = [p for p in ("h2d", "kernel", "d2h", "total") if p not in data["phases"]]
    if missing:
        raise SelfReportProblem(f"phases: {', '.join(missing)} missing (the notebook times all four)")
    if not data["agree"]:
        raise SelfReportProblem("agree: false — the notebook's own check failed, so its times are not imported")


def _check_problem(report: SelfReport):
    """The problem, and the lab's own verdict on the kernel (judged in the sandbox). Raises SelfReportProblem."""
    from gpu.core.limits import InputError
    from gpu.problems import get

    try:
        problem = get(report.key)
    except (InputError, KeyError) as exc:
        raise SelfReportProblem(f"key: {report.key!r} is not a Write-a-kernel problem ({exc})") from None
    data = report.data
    case = problem.perf["simulator" if report.simulated else "gpu"]
    if data.get("sizes") != dict(case.sizes):
        raise SelfReportProblem(f"sizes: {data.get('sizes')!r} is not the problem's performance size "
                                f"{dict(case.sizes)!r}")
    if data["bytes_moved"] != problem.bytes_moved(case.sizes):
        raise SelfReportProblem(f"bytes_moved: {data['bytes_moved']!r} is not what the problem moves at that size "
                                f"({problem.bytes_moved(case.sizes):,})")
    if not data["agree"] or "kernel" not in data["phases"]:
        raise SelfReportProblem("agree: false — the kernel failed the notebook's own tests; fix it, run the "
                                "notebook again and import the new file")
    from gpu.sandbox.service import submit

    judged = submit(problem.key, report.kernel_source, save=False, facts=False, trace=False)
    verdict = judged.verdict
    if verdict.status != "passed":
        raise SelfReportProblem(f"kernel_source: the lab's sandbox judged this kernel {verdict.status}: "
                                f"{verdict.message}")
    return problem, verdict


def _imported(report: SelfReport, source: str) -> dict:
    data = report.data
    return {"source": source, "sha256": report.sha256, "self_reported": True, "label": report.label,
            "device": report.device_name, "method": data["method"], "check_started_at": data["created_at"],
            "l2_flushed": data["l2_flushed"], "warmup": data["warmup"], "checks": data["checks"]}


def _catalog_record(report: SelfReport, source: str) -> dict:
    """A catalog kernel's History run: each step's kernel-alone samples where History's catalog reader finds them
    (``implementations.<step>.phases.kernel``), the steps the simulator skipped kept with their reason."""
    from gpu.core.provenance import METHODOLOGY_KEY, METHODOLOGY_VERSION
    from gpu.notebook.catalog import plan

    data = report.data
    steps = plan(report.key)["simulator" if report.simulated else "gpu"]["steps"]
    return {
        "experiment": report.key, "created_at": data["created_at"], "backend": data["backend"],
        "device": {**data["device"], "backend": data["backend"]}, "params": data["params"],
        "bytes_moved": data["bytes_moved"], "agree": data["agree"],
        "implementations": {s["key"]: {"label": s["label"], "phases": {"kernel": data["phases"][s["key"]]}}
                            for s in steps if s["key"] in data["phases"]},
        "skipped": data.get("skipped") or {},
        "imported": _imported(report, source),
        METHODOLOGY_KEY: METHODOLOGY_VERSION,
    }


def _sweep_record(report: SelfReport, source: str) -> dict:
    """A Launch config, Scaling or Transfers History run: one series per launch, size or strategy, as timed."""
    from gpu.core.provenance import METHODOLOGY_KEY, METHODOLOGY_VERSION

    data = report.data
    return {"experiment": report.key, "created_at": data["created_at"], "backend": data["backend"],
            "device": {**data["device"], "backend": data["backend"]}, "params": {"n": data["n"]},
            "agree": data["agree"],
            "notebook": {name: {**stats, "label": name} for name, stats in data["phases"].items()},
            "imported": _imported(report, source), METHODOLOGY_KEY: METHODOLOGY_VERSION}


def _history_record(report: SelfReport, source: str) -> dict:
    from gpu.core.provenance import METHODOLOGY_KEY, METHODOLOGY_VERSION
    from gpu.notebook.catalog import CATALOG

    if report.key in CATALOG:
        return _catalog_record(report, source)
    if report.key in SWEEPS:
        return _sweep_record(report, source)
    data = report.data
    backend = data["backend"]
    return {
        "experiment": report.key,
        "created_at": data["created_at"],
        "backend": backend,
        "device": {**data["device"], "backend": backend},
        "n": data["n"], "gpu_n": data["n"], "cpu_n": None,
        "threads_per_block": data["threads_per_block"],
        "agree": data["agree"],
        "gpu": {"phases": data["phases"]},
        "cpu": {},
        "imported": _imported(report, source),
        METHODOLOGY_KEY: METHODOLOGY_VERSION,  # warm-up, L2 flushed, events; no verified hold (its label says so)
    }


def import_self_report(raw: bytes, *, source: str = "result.json", store=None, submissions=None,
                       session_id: str | None = None, name: str | None = None) -> SelfReportImport:
    """Validate ``raw`` and save it apart as self-reported; SelfReportProblem (nothing saved) when refused.

    ``store``: the History store (default: the user's); ``submissions``: the leaderboard's store (default:
    the same database); ``name``: the learner's display name on the leaderboard. StoreError when they
    cannot be written."""
    report = parse_self_report(raw)
    if report.kind == "experiment":
        _check_experiment(report)
        from gpu.service.store import open_store

        history = store if store is not None else open_store()
        for existing in history.runs(limit=100_000):
            if (existing.result.get("imported") or {}).get("sha256") == report.sha256:
                raise SelfReportProblem(f"this file was already imported (run {existing.short_id}); nothing changed")
        ids = history.save_many([_history_record(report, source)], versions=report.data["versions"],
                                session_id=session_id)
        return SelfReportImport(report, run_id=ids[0])
    _problem, verdict = _check_problem(report)
    from gpu.sandbox.submissions import SubmissionStore

    board = submissions if submissions is not None else SubmissionStore()
    device = f"self-reported on {report.device_name}"
    kernel = report.kernel or {}
    median = None if report.simulated else kernel.get("median_s")
    for entry in board.all():
        if entry.device == device and entry.source == report.kernel_source and entry.median_s == median:
            raise SelfReportProblem(f"this result was already imported (entry {entry.id[:8]}); nothing changed")
    fraction = report.fraction_of_peak
    verdict = replace(verdict, device=device, backend=report.data["backend"], timing=None if median is None else {
        "median_s": median, "gbps": report.gbps,
        "percent_of_peak": 100 * fraction if fraction is not None else None, "self_reported": True,
        "samples": kernel.get("samples"), "min_s": kernel.get("min_s"), "max_s": kernel.get("max_s"),
    })
    entry_id = board.save(verdict, report.kernel_source, name or "self-reported")
    from gpu.service.store import open_store

    history = store if store is not None else open_store()
    record = _problem_record(report, source, entry_id)
    run_id = history.save_many([record], versions=report.data["versions"], session_id=session_id)[0]
    return SelfReportImport(report, run_id=run_id, entry_id=entry_id)


PROBLEM_RUN_PREFIX = "problem:"  # a problem's self-reported History run is "problem:<key>"


def _problem_record(report: SelfReport, source: str, entry_id: str) -> dict:
    """A problem's History run beside its leaderboard entry: the learner's kernel as the lab judged it, its
    timing as reported (in the simulator: Python's, never a GPU time)."""
    from gpu.core.provenance import METHODOLOGY_KEY, METHODOLOGY_VERSION

    data = report.data
    return {"experiment": PROBLEM_RUN_PREFIX + report.key, "created_at": data["created_at"],
            "backend": data["backend"], "device": {**data["device"], "backend": data["backend"]},
            "params": {"sizes": data["sizes"], "threads_per_block": data["threads_per_block"]},
            "agree": data["agree"], "notebook": {"kernel": dict(report.kernel)} if report.kernel else {},
            "imported": {**_imported(report, source), "leaderboard_entry": entry_id,
                         "kernel_sha256": data["kernel_sha256"]},
            METHODOLOGY_KEY: METHODOLOGY_VERSION}


__all__ = ["SelfReportImport", "import_self_report"]
