#!/usr/bin/env bash
# `make gpu-verify`: the prepared GPU verification, built to fit a lent GPU's minutes (at most 300 s,
# gpu/report/plan.py: VERIFY_S) and to be unable to pass without a GPU. After the carried wheels and
# the preflight (scripts/gpu_setup.sh), the plan `verify` runs its steps in order, each stopped at its
# own budget (python -m gpu.report.plan verify; tests/test_verify_plan.py sums them):
#   1. GPU-only tests  pytest -m gpu              -> pytest-gpu.txt, pytest-gpu.xml (a skip fails; the browser
#                                                 tests are left out: the GPU image has no Playwright)
#   2. the compiler    python -m gpu compile      -> compile.json, for this device's own target (every target
#                                                 is compiled before the visit: the compile gate in `make test`)
#   3. the check       python -m gpu check --plan verify -> check.json, check.md: headline sections first,
#                                                 each within its budget (plan.VERIFY_SECTIONS)
#   4. the pages       scripts/gpu_pages.py       -> pages.json (every page under AppTest on the GPU)
# into benchmarks/<gpu>-<date>/ (or $OUT) with plan.json (each step's seconds and exit) and a SUMMARY.md
# (scripts/gpu_verify_summary.py). Any failure exits non-zero; a preflight failure prints one line with the
# reason and writes nothing. Run `make gpu-first-look` first: it prints the figures needed first in 180 s.
source "$(dirname "$0")/gpu_setup.sh"
OUT=${OUT:-benchmarks/${gpu}-$(date -u +%Y-%m-%d)}
mkdir -p "$OUT"
step "writing to $OUT"

$PY -m gpu.report.plan verify --out "$OUT" --cc "$CC"
rcs=$($PY - "$OUT/plan.json" <<'PY'
import json, sys
steps = {s["name"]: s["rc"] for s in json.load(open(sys.argv[1]))["steps"]}
flags = {"tests": "GPU-only tests", "compile": "the compiler", "check": "gpu check", "pages": "every page"}
def rc(prefix):
    found = [v for k, v in steps.items() if k.startswith(prefix)]
    return "124" if found and found[0] is None else str(found[0]) if found else "127"
print(" ".join(f"--{flag}-rc {rc(prefix)}" for flag, prefix in flags.items()))
PY
)
step "summary"
# shellcheck disable=SC2086  # $rcs is a list of flags
$PY scripts/gpu_verify_summary.py "$OUT" $rcs --seconds "$(elapsed)"
