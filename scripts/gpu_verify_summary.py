"""Write SUMMARY.md for a `make gpu-verify` folder: device, versions, what passed, and the
catalog targets met / not met / not measurable, read from check.json and compile.json.

Usage: python scripts/gpu_verify_summary.py DIR [--tests-rc N] [--compile-rc N] [--check-rc N] [--pages-rc N]
    [--seconds S]

Exit status: 0 only when every step passed, at least one GPU-only test ran and none was skipped
(a skip on a GPU means the real backend was not used for that test).
"""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET
from pathlib import Path


def _check_result(check: dict) -> str:
    """PASS, FAIL, or INCOMPLETE for a check.json a time limit cut (``finished: false``; older files lack the key)."""
    if check.get("finished") is False:
        done = sum(1 for _ in check.get("sections", {}))
        return f"INCOMPLETE ({done} sections written)"
    return "PASS" if check.get("passed") else "FAIL"


def _targets(node, where=""):
    """Every {"name", "met", ...} found under a "targets" key, with the section it sits in."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "targets" and isinstance(value, list) and all(isinstance(t, dict) and "met" in t for t in value):
                yield from ((where, t) for t in value)
            else:
                yield from _targets(value, where or key)
    elif isinstance(node, list):
        for item in node:
            yield from _targets(item, where)


def _load(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def gpu_test_counts(folder: Path) -> tuple[int, int] | None:
    """(tests run, tests skipped) from pytest-gpu.xml, or None without a readable report."""
    try:
        root = ET.parse(folder / "pytest-gpu.xml").getroot()
    except (OSError, ET.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    return (sum(int(s.get("tests", 0)) for s in suites), sum(int(s.get("skipped", 0)) for s in suites))


def failures(folder: Path, rcs: dict) -> list[str]:
    """Every reason this verification did not pass (empty when it passed)."""
    reasons = [f"{name} exited {rc}" for name, rc in rcs.items() if rc not in (None, 0)]
    counts = gpu_test_counts(folder)
    if counts is None:
        reasons.append("no GPU-only test report (pytest-gpu.xml)")
    elif counts[0] == 0:
        reasons.append("no GPU-only test ran")
    elif counts[1]:
        reasons.append(f"{counts[1]} of {counts[0]} GPU-only tests were skipped on a GPU")
    return reasons


BYTES_PER_ELEMENT = 12  # vector add: read a and b, write c (float32)


def peak_claims(check: dict) -> list[str]:
    """Each kernel's best bandwidth against the peak, with what the claim rests on (the 91%).

    For the article's kernel and the 4-per-thread one at the sweep's largest N: the bytes
    counted (12 per element), the peak's formula and value, the L2 state, the samples.
    """
    run = (check.get("sections", {}).get("scaling") or {}).get("run") or {}
    limits = (run.get("peaks") or {}).get("limits") or {}
    peak = limits.get("device_peak") or {}
    config = run.get("config") or {}
    out = []
    for series, name in (("gpu-kernel", "the article's kernel"), ("gpu-ilp", "the 4-per-thread kernel")):
        points = [p for p in run.get("points", []) if p.get("series") == series and p.get("stats")]
        if not points or not peak.get("gbps"):
            continue
        top = max(points, key=lambda p: p["n"])
        stats = top["stats"]
        gbps = BYTES_PER_ELEMENT * top["n"] / stats["median_s"] / 1e9
        l2 = "L2 warm (not flushed)" if config.get("warm_l2") else "L2 flushed before every sample"
        out.append(
            f"- {name} at N = {top['n']:,}: {BYTES_PER_ELEMENT} B/element x N = {BYTES_PER_ELEMENT * top['n']:,} bytes "
            f"in a median of {stats['median_s'] * 1e3:.3f} ms ({stats.get('samples', '?')} samples): "
            f"{gbps:,.0f} GB/s = "
            f"{gbps / peak['gbps']:.0%} of the peak {peak['gbps']:,.0f} GB/s ({peak.get('how', 'formula unknown')}); "
            f"{l2}; working set {BYTES_PER_ELEMENT * top['n'] / 2**30:.1f} GiB"
        )
    return out


def headline(check: dict | None, launch: dict | None = None) -> list[str]:
    """The figures a visit is for, each beside its target: the engine's launch ÷ the fastest launch with the
    same arguments and the launch ladder (``launch``: a launch-overhead run's JSON; else the methodology
    section's), the sweep's overhead, and each section's time against its plan's budget."""
    sections = (check or {}).get("sections", {})
    launch = launch or (sections.get("methodology") or {}).get("launch_overhead")
    simulated = "simulator" in ((check or {}).get("backend"), (launch or {}).get("backend"))
    out = ["- **simulated: none of these is a GPU figure, and none is judged**"] if simulated else []
    if launch:
        ratio, target = launch.get("engine_ratio"), launch.get("engine_target")
        verdict = ("not judged" if simulated else "not compared" if ratio is None
                   else "met" if ratio <= target else "NOT met")
        shown = "—" if ratio is None else f"{ratio:.2f}x"
        out.append(f"- engine launch ÷ the fastest with the same three arrays ({launch.get('engine_baseline')}): "
                   f"{shown} (target ≤ {target:g}x): {verdict}")
        for rung in launch.get("ladder", []):
            figure = "skipped" if rung.get("median_s") is None else f"{rung['median_s'] * 1e6:.2f} µs"
            factor = f", {rung['vs_cupy']:.2f}x CuPy's" if rung.get("vs_cupy") is not None else ""
            out.append(f"  - {rung['label']}: {figure}{factor}")
    overhead = ((sections.get("scaling") or {}).get("targets") or {}).get("overhead")
    if overhead:
        verdict = "not judged" if simulated else "met" if overhead["met"] else "NOT met"
        out.append(f"- Scaling sweep overhead: {overhead['fraction']:.1%} "
                   f"(target < {overhead['target']:.0%}): {verdict}")
    for _section, t in _targets(sections):
        value = "—" if t.get("measured") is None else f"{t['measured']:.3g}"
        sign = "≥" if t.get("higher_is_better", True) else "≤"
        verdict = "not judged" if simulated else {True: "met", False: "NOT met", None: "not measurable"}[t["met"]]
        out.append(f"- {t['name']}: {value} (target {sign} {t['threshold']:g}): {verdict}")
    over = [f"{key} {s['duration_s']:.0f} s of {s['budget_s']:g} s" for key, s in sections.items()
            if s.get("budget_s") is not None and s.get("duration_s", 0) > s["budget_s"]]
    if any(s.get("budget_s") is not None for s in sections.values()):
        out.append(f"- sections over their plan's budget: {', '.join(over) if over else 'none'}")
    return out


def summary(folder: Path, tests_rc: int | None, compile_rc: int | None, check_rc: int | None, seconds: float | None,
            pages_rc: int | None = None) -> str:
    check = _load(folder / "check.json")
    compiled = _load(folder / "compile.json")
    verdict = lambda rc: "not run" if rc is None else ("passed" if rc == 0 else f"FAILED (exit {rc})")  # noqa: E731
    lines = [f"# GPU verification: {folder.name}", ""]
    if check:
        dev, ver = check.get("device", {}), check.get("versions", {})
        lines += [
            f"- device: {dev.get('name')} (cc {dev.get('compute_capability')}, {dev.get('multiprocessors')} SMs), "
            f"driver {dev.get('driver_version')}, runtime {dev.get('runtime_version')}",
            "- versions: " + ", ".join(f"{k} {v}" for k, v in ver.items() if v),
            f"- started: {check.get('started_at')}",
        ]
    lines += [
        f"- GPU-only tests (`pytest -m gpu`, pytest-gpu.txt): {verdict(tests_rc)}",
        f"- compile (`python -m gpu compile --json`, compile.json): {verdict(compile_rc)}"
        + (
            f", {compiled['compiler']}, {len(compiled['kernels']) - compiled['failed']} of {len(compiled['kernels'])} "
            "kernel x target compiled"
            if compiled
            else ""
        ),
        f"- check (`python -m gpu check`, check.json/check.md): {verdict(check_rc)}"
        + (f", overall {_check_result(check)}" if check else ""),
    ]
    counts = gpu_test_counts(folder)
    if counts:
        lines.append(f"- GPU-only tests run: {counts[0]}, skipped: {counts[1]} (a skip on a GPU fails the run)")
    lines.append(f"- pages (`scripts/gpu_pages.py`, pages.json): {verdict(pages_rc)}")
    if seconds is not None:
        lines.append(f"- wall time: {seconds:.0f} s")
    reasons = failures(folder, {"tests": tests_rc, "compile": compile_rc, "check": check_rc, "pages": pages_rc})
    lines.append(f"- **verification: {'PASSED' if not reasons else 'FAILED: ' + '; '.join(reasons)}**")
    if compiled and compiled["failed"]:
        lines += ["", "## Kernels that did not compile", ""]
        lines += [
            f"- {k['kernel']} for {k['target']}: {(k['error'] or '').splitlines()[0][:200]}"
            for k in compiled["kernels"]
            if not k["ok"]
        ]
    if check and (figures := headline(check)):
        lines += ["", "## Headline figures", "", *figures]
    if check and (claims := peak_claims(check)):
        lines += ["", "## Bandwidth against the peak, and what it rests on", "", *claims]
    if check:
        lines += ["", "## Sections", ""]
        lines += [
            f"- {s.get('title', key)}: {'pass' if s.get('passed') else 'FAIL'}"
            for key, s in check.get("sections", {}).items()
        ]
        found = list(_targets(check.get("sections", {})))
        groups = {"met": [], "NOT met": [], "not measurable": []}
        for section, t in found:
            label = {True: "met", False: "NOT met", None: "not measurable"}[t["met"]]
            sign = "≥" if t.get("higher_is_better", True) else "≤"
            value = "—" if t.get("measured") is None else f"{t['measured']:.3g}"
            groups[label].append(f"- {section}: {t['name']}: {value} (target {sign} {t['threshold']:g})")
        lines += [
            "",
            f"## Catalog targets: {len(groups['met'])} met, {len(groups['NOT met'])} not met, "
            f"{len(groups['not measurable'])} not measurable",
        ]
        for label, items in groups.items():
            if items:
                lines += ["", f"### {label}", "", *items]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    for name in ("tests", "compile", "check", "pages"):
        parser.add_argument(f"--{name}-rc", type=int, default=None)
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--headline", action="store_true",
                        help="only the headline figures (make gpu-first-look): into HEADLINE.md, with "
                             "launch-overhead.json's ladder")
    args = parser.parse_args()
    if args.headline:
        text = "\n".join(["# First look: headline figures", "",
                          *headline(_load(args.folder / "check.json"), _load(args.folder / "launch-overhead.json"))])
        (args.folder / "HEADLINE.md").write_text(text + "\n")
        print(text)
        return 0
    text = summary(args.folder, args.tests_rc, args.compile_rc, args.check_rc, args.seconds, args.pages_rc)
    (args.folder / "SUMMARY.md").write_text(text)
    print(text)
    rcs = {"tests": args.tests_rc, "compile": args.compile_rc, "check": args.check_rc, "pages": args.pages_rc}
    return 1 if failures(args.folder, rcs) else 0


if __name__ == "__main__":
    raise SystemExit(main())
