#!/usr/bin/env bash
# `make gpu-verify`: the prepared GPU verification, built to fit a lent GPU's minutes and to
# be unable to pass without a GPU. Steps, each under `timeout -k` with its own budget
# (20 + 140 + 60 + 180 + 50 = 450 s, 7.5 minutes, with set-up before):
#   0. preflight       scripts/gpu_preflight.py   driver, libcuda, numba on the real backend,
#                                                 the pinned versions, one kernel run and checked
#   1. GPU-only tests  pytest -m gpu              -> pytest-gpu.txt, pytest-gpu.xml (a skip fails)
#   2. the compiler    python -m gpu compile      -> compile.json (any failure fails the run)
#   3. the check       python -m gpu check        -> check.json, check.md
#   4. the pages       scripts/gpu_pages.py       -> pages.json (every page under AppTest on the GPU)
# into benchmarks/<gpu>-<date>/ (or $OUT) with a SUMMARY.md (scripts/gpu_verify_summary.py).
# Any failure exits non-zero; a preflight failure prints one line with the reason and writes nothing.
# Python: $PYTHON, else .venv/bin/python, else python3. Packages the machine lacks are installed
# from .whl/ (`make gpu-wheels`) into a virtualenv with --system-site-packages, so nothing the
# machine has (its numba, NumPy, PyTorch, CuPy) is shadowed.
set -uo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
elapsed() { echo $(( $(date +%s) - started )); }
step() { echo "[$(elapsed) s] $*"; }

PY=${PYTHON:-}
if [ -z "$PY" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi >/dev/null 2>&1; then
  echo "preflight failed: gpu-verify needs an NVIDIA GPU and driver (nvidia-smi failed); on this machine run \`make test\` instead." >&2
  exit 3
fi
if [ -n "${NUMBA_ENABLE_CUDASIM:-}" ] && [ "${NUMBA_ENABLE_CUDASIM}" != 0 ]; then
  echo "preflight failed: NUMBA_ENABLE_CUDASIM=$NUMBA_ENABLE_CUDASIM is set: numba would run its CUDA simulator, not the GPU; unset it" >&2
  exit 3
fi

missing=$($PY - <<'PY'
import importlib.util as u
names = {"streamlit": "streamlit", "altair": "altair", "pandas": "pandas", "pytest": "pytest",
         "pytest_timeout": "pytest-timeout", "platformdirs": "platformdirs", "numba": "numba"}
print(" ".join(pkg for mod, pkg in names.items() if u.find_spec(mod) is None))
PY
)
if [ -n "$missing" ]; then
  step "installing only what is missing ($missing) into a virtualenv over the machine's packages"
  venv=${GPU_VERIFY_VENV:-/tmp/kernel-lab-verify-venv}
  $PY -m venv --system-site-packages "$venv" || { echo "preflight failed: could not create a virtualenv at $venv" >&2; exit 3; }
  if [ -d .whl ]; then
    "$venv/bin/python" -m pip install -q --no-index --find-links .whl $missing \
      || { echo "preflight failed: could not install $missing from .whl/" >&2; exit 3; }
  else
    "$venv/bin/python" -m pip install -q $missing \
      || { echo "preflight failed: could not install $missing (no .whl/ folder; run \`make gpu-wheels\` where an index is reachable)" >&2; exit 3; }
  fi
  PY="$venv/bin/python"
fi
# SASS listings in compile.json: optional, never a reason to stop
if [ -d .whl ]; then
  $PY -m pip install -q --no-index --find-links .whl "nvidia-cuda-nvdisasm>=13.2,<14" 2>/dev/null || true
fi

step "0/4 preflight"
timeout -k 5 20 $PY scripts/gpu_preflight.py || exit 3
export NUMBA_ENABLE_CUDASIM=0 KERNEL_LAB_REQUIRE_GPU=1

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1 | tr '[:upper:]' '[:lower:]' | sed -e 's/nvidia //' -e 's/[^a-z0-9]\+/-/g' -e 's/^-//' -e 's/-$//')
OUT=${OUT:-benchmarks/${gpu}-$(date -u +%Y-%m-%d)}
mkdir -p "$OUT"
step "writing to $OUT"

step "1/4 GPU-only tests (a skipped GPU test fails the run)"
timeout -k 5 140 $PY -m pytest -m gpu -q -rs -p no:cacheprovider --junitxml="$OUT/pytest-gpu.xml" >"$OUT/pytest-gpu.txt" 2>&1
tests_rc=$?
tail -n 3 "$OUT/pytest-gpu.txt"

step "2/4 the real compiler, every kernel x target (cold compiles counted)"
timeout -k 5 60 $PY -m gpu compile --json >"$OUT/compile.json" 2>"$OUT/compile.stderr.txt"
compile_rc=$?

step "3/4 python -m gpu check"
timeout -k 5 180 $PY -m gpu check --out "$OUT" 2>"$OUT/check.stderr.txt"
check_rc=$?

step "4/4 every page under AppTest on the GPU"
timeout -k 5 50 $PY scripts/gpu_pages.py "$OUT" 2>"$OUT/pages.stderr.txt"
pages_rc=$?

step "summary"
$PY scripts/gpu_verify_summary.py "$OUT" --tests-rc $tests_rc --compile-rc $compile_rc --check-rc $check_rc \
  --pages-rc $pages_rc --seconds "$(elapsed)"
