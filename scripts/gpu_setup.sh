# Sourced by scripts/gpu_first_look.sh and scripts/gpu_verify.sh: the Python to use, the carried
# wheels and the preflight. Sets PY, PYTHONPATH, gpu (the device's name for folder names), CC
# (the device's compute capability, e.g. 9.0), and the functions elapsed and step. Exits 3, with one
# line on stderr and nothing written, when this is no GPU machine or the preflight fails.
# Python: $PYTHON, else .venv/bin/python, else python3. Carried wheels (.whl/, `make gpu-wheels`)
# go into a folder on PYTHONPATH: they replace the machine's numba and NumPy with the pinned ones
# and add Streamlit and Altair; its PyTorch, CuPy and pandas are used as they are. Without .whl/,
# only what is missing is installed from an index into a virtualenv over the machine's packages.
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
  echo "preflight failed: this needs an NVIDIA GPU and driver (nvidia-smi failed); on this machine run \`make test\` instead." >&2
  exit 3
fi
if [ -n "${NUMBA_ENABLE_CUDASIM:-}" ] && [ "${NUMBA_ENABLE_CUDASIM}" != 0 ]; then
  echo "preflight failed: NUMBA_ENABLE_CUDASIM=$NUMBA_ENABLE_CUDASIM is set: numba would run its CUDA simulator, not the GPU; unset it" >&2
  exit 3
fi

missing=$($PY - <<'PY'
import importlib.util as u
import re
from importlib import metadata
names = {"streamlit": "streamlit", "altair": "altair", "pandas": "pandas", "pytest": "pytest",
         "pytest_timeout": "pytest-timeout", "platformdirs": "platformdirs", "numba": "numba", "cattrs": "cattrs"}
missing = [pkg for mod, pkg in names.items() if u.find_spec(mod) is None]
try:  # numba and NumPy off requirements.txt's pins count as missing: the carried ones replace them
    from packaging.specifiers import SpecifierSet
    for line in open("requirements.txt"):
        m = re.match(r"^(numba|numpy)([=<>!~].*)$", line.strip())
        if m and m[1] not in missing:
            try:
                if metadata.version(m[1]) not in SpecifierSet(m[2]):
                    missing.append(m[1])
            except metadata.PackageNotFoundError:
                missing.append(m[1])
except ImportError:
    pass
print(" ".join(missing))
PY
)
# The lent H200's python3 is itself a virtualenv (/opt/torch/.venv): a virtualenv made from it with
# --system-site-packages sees the base interpreter's packages, not its NumPy, and pip then looks for
# NumPy in .whl/ (seen 2026-12-04). So carried wheels go into a folder of their own on PYTHONPATH,
# with the repository first; their pinned numba and NumPy replace the machine's (its NumPy 2.5 broke
# numba 0.68.1: `np.row_stack`).
if [ -n "$missing" ] && [ -d .whl ]; then
  site=${GPU_VERIFY_SITE:-/tmp/kernel-lab-verify-site}
  step "missing or off the pins: $missing; installing the carried wheels (.whl/, \`make gpu-wheels\`) into $site"
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl \
    || { echo "preflight failed: could not install the wheels in .whl/ into $site" >&2; exit 3; }
  export PYTHONPATH="$PWD:$site${PYTHONPATH:+:$PYTHONPATH}"
elif [ -n "$missing" ]; then
  step "installing only what is missing ($missing) into a virtualenv over the machine's packages"
  venv=${GPU_VERIFY_VENV:-/tmp/kernel-lab-verify-venv}
  $PY -m venv --system-site-packages "$venv" || { echo "preflight failed: could not create a virtualenv at $venv" >&2; exit 3; }
  "$venv/bin/python" -m pip install -q -c requirements.txt $missing \
    || { echo "preflight failed: could not install $missing (no .whl/ folder; run \`make gpu-wheels\` where an index is reachable)" >&2; exit 3; }
  PY="$venv/bin/python"
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
else
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi

step "preflight"
timeout -k 5 20 $PY scripts/gpu_preflight.py || exit 3
export NUMBA_ENABLE_CUDASIM=0 KERNEL_LAB_REQUIRE_GPU=1

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1 | tr '[:upper:]' '[:lower:]' | sed -e 's/nvidia //' -e 's/[^a-z0-9]\+/-/g' -e 's/^-//' -e 's/-$//')
CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n1 | tr -d ' ')
