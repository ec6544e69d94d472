"""Write SUMMARY.md for a `make gpu-verify` folder: device, versions, what passed, and the
catalog targets met / not met / not measurable, read from check.json and compile.json.

Usage: python scripts/gpu_verify_summary.py DIR [--tests-rc N] [--compile-rc N] [--check-rc N] [--seconds S]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


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


def summary(folder: Path, tests_rc: int | None, compile_rc: int | None, check_rc: int | None, seconds: float | None) -> str:
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
        + (f", {compiled['compiler']}, {len(compiled['kernels']) - compiled['failed']} of {len(compiled['kernels'])} kernel x target compiled" if compiled else ""),
        f"- check (`python -m gpu check`, check.json/check.md): {verdict(check_rc)}"
        + (f", overall {'PASS' if check.get('passed') else 'FAIL'}" if check else ""),
    ]
    if seconds is not None:
        lines.append(f"- wall time: {seconds:.0f} s")
    if compiled and compiled["failed"]:
        lines += ["", "## Kernels that did not compile", ""]
        lines += [f"- {k['kernel']} for {k['target']}: {(k['error'] or '').splitlines()[0][:200]}" for k in compiled["kernels"] if not k["ok"]]
    if check:
        lines += ["", "## Sections", ""]
        lines += [f"- {s.get('title', key)}: {'pass' if s.get('passed') else 'FAIL'}" for key, s in check.get("sections", {}).items()]
        found = list(_targets(check.get("sections", {})))
        groups = {"met": [], "NOT met": [], "not measurable": []}
        for section, t in found:
            label = {True: "met", False: "NOT met", None: "not measurable"}[t["met"]]
            sign = "≥" if t.get("higher_is_better", True) else "≤"
            value = "—" if t.get("measured") is None else f"{t['measured']:.3g}"
            groups[label].append(f"- {section}: {t['name']}: {value} (target {sign} {t['threshold']:g})")
        lines += ["", f"## Catalog targets: {len(groups['met'])} met, {len(groups['NOT met'])} not met, {len(groups['not measurable'])} not measurable"]
        for label, items in groups.items():
            if items:
                lines += ["", f"### {label}", "", *items]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    for name in ("tests", "compile", "check"):
        parser.add_argument(f"--{name}-rc", type=int, default=None)
    parser.add_argument("--seconds", type=float, default=None)
    args = parser.parse_args()
    text = summary(args.folder, args.tests_rc, args.compile_rc, args.check_rc, args.seconds)
    (args.folder / "SUMMARY.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
