#!/usr/bin/env bash
# `make gpu-verify`: the prepared GPU verification (issue 17, item 7), under 8 minutes on
# an H200 (each step has its own time limit: 150 + 60 + 260 s). On a machine with an NVIDIA GPU it runs, in order:
#   1. the GPU-only tests            pytest -m gpu            -> pytest-gpu.txt
#   2. the real compiler on the GPU  python -m gpu compile    -> compile.json
#   3. the GPU validation run        python -m gpu check      -> check.json, check.md
# into benchmarks/<gpu>-<date>/ and writes SUMMARY.md there (scripts/gpu_verify_summary.py):
# device, versions, and the catalog targets met / not met / not measurable.
# Python: $PYTHON, else .venv/bin/python, else python3. Missing packages (a GPU box often
# has numba-cuda, NumPy and pandas but not Streamlit or Altair) are installed from .whl/
# when it exists (`make gpu-wheels` fills it on a machine with an index), else from the index.
set -uo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)

PY=${PYTHON:-}
if [ -z "$PY" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi >/dev/null 2>&1; then
  echo "gpu-verify needs an NVIDIA GPU and driver (nvidia-smi failed); on this machine run \`make test\` instead." >&2
  exit 2
fi

missing=$($PY - <<'PY'
import importlib.util as u
names = {"streamlit": "streamlit", "altair": "altair", "pandas": "pandas", "pytest": "pytest",
         "pytest_timeout": "pytest-timeout", "platformdirs": "platformdirs", "numba": "numba"}
print(" ".join(pkg for mod, pkg in names.items() if u.find_spec(mod) is None))
PY
)
if [ -n "$missing" ]; then
  echo "installing missing packages: $missing"
  if [ -d .whl ]; then
    # into the interpreter's site-packages where it is writable, else beside it on PYTHONPATH
    # (a GPU image's Python is often read-only)
    if ! $PY -m pip install -q --no-index --find-links .whl $missing 2>/dev/null; then
      site=/tmp/kernel-lab-site
      $PY -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$site" .whl/*.whl \
        || { echo "could not install $missing from .whl/" >&2; exit 2; }
      export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
    fi
  else
    $PY -m pip install -q $missing || { echo "could not install $missing (no .whl/ folder; run \`make gpu-wheels\` where an index is reachable)" >&2; exit 2; }
  fi
fi
# SASS listings in compile.json: optional, never a reason to stop
if [ -d .whl ]; then
  $PY -m pip install -q --no-index --find-links .whl "nvidia-cuda-nvdisasm>=13.2,<14" 2>/dev/null || true
fi

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1 | tr '[:upper:]' '[:lower:]' | sed -e 's/nvidia //' -e 's/[^a-z0-9]\+/-/g' -e 's/^-//' -e 's/-$//')
OUT=${OUT:-benchmarks/${gpu}-$(date -u +%Y-%m-%d)}
mkdir -p "$OUT"
echo "writing to $OUT"

echo "1/3 GPU-only tests"
timeout 150 $PY -m pytest -m gpu -q -p no:cacheprovider >"$OUT/pytest-gpu.txt" 2>&1
tests_rc=$?
tail -n 3 "$OUT/pytest-gpu.txt"

echo "2/3 the real compiler, every kernel x target"
timeout 60 $PY -m gpu compile --json >"$OUT/compile.json" 2>"$OUT/compile.stderr.txt"
compile_rc=$?

echo "3/3 python -m gpu check"
timeout 260 $PY -m gpu check --out "$OUT" 2>"$OUT/check.stderr.txt"
check_rc=$?

$PY scripts/gpu_verify_summary.py "$OUT" --tests-rc $tests_rc --compile-rc $compile_rc --check-rc $check_rc --seconds $(( $(date +%s) - started ))
[ $tests_rc -eq 0 ] && [ $check_rc -eq 0 ]
