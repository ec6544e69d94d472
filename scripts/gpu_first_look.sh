#!/usr/bin/env bash
# `make gpu-first-look`: the figures a lent GPU is borrowed for first, in at most 180 s
# (gpu/report/plan.py: FIRST_LOOK_S), before `make gpu-verify`. After the carried wheels and the
# preflight (scripts/gpu_setup.sh), the plan `first-look` runs each step under its own budget:
#   1. the launch ladder     python -m gpu launch-overhead   -> launch-overhead.json (article, specialised,
#                                                              cuda.core, raw driver, CuPy; the engine ÷ CuPy)
#   2. the reduction steps   python -m gpu reduction --n 2^28 -> reduction.json (eight loads in flight: ≥ 85%
#                                                              of peak, ≤ 1.05x CuPy's sum)
#   3. the transpose steps   python -m gpu transpose --n 16384 -> transpose.json (64 × 64 tile: ≥ 75% of peak)
#   4. the Scaling sweep     python -m gpu scaling to 2^30    -> scaling.json (its overhead: < 10%)
# into benchmarks/<gpu>-<date>-first-look/ (or $OUT): each step's output and stderr, check.json and check.md,
# plan.json with each step's seconds and exit status, and HEADLINE.md (scripts/gpu_verify_summary.py --headline:
# the launch ratio and ladder, the sweep's overhead; the catalog targets are in check.md).
source "$(dirname "$0")/gpu_setup.sh"
OUT=${OUT:-benchmarks/${gpu}-$(date -u +%Y-%m-%d)-first-look}
mkdir -p "$OUT"
step "writing to $OUT"
$PY -m gpu.report.plan first-look --out "$OUT" --cc "$CC"
rc=$?
$PY scripts/gpu_verify_summary.py "$OUT" --headline
step "done (exit $rc): $OUT/plan.json, HEADLINE.md"
exit $rc
