# Kernel Lab. The two commands a newcomer needs:
#   make run    set up .venv with the CUDA compiler wheels (no GPU needed), build the code editor's bundle (npm)
#               and start the app (http://localhost:8501)
#   make test   set up .venv (dev, and Ray for the cluster tests), the editor's bundle, Debian's chromium and
#               bubblewrap, then run ruff, mypy (beside the tests) and every test
# Each target creates what it needs; stamps make repeat runs fast.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q
CHROMIUM := /usr/bin/chromium

.PHONY: run demo lint test test-fast test-class check info docs-screenshots cuda-wheels compiler-wheels cluster-deps chromium bubblewrap clean gpu-first-look gpu-verify gpu-wheels editor

run: $(VENV)/.runtime $(VENV)/.compiler editor
	$(PY) -m streamlit run app.py

# The shared demo: one server on all interfaces for many browsers (docs/shared-demo.md).
# Viewer-only toolbar, no tracebacks or exception text in browsers (they go to this
# console), no file watcher, nothing uploaded. DEMO_HOSTS="lab.example.org" restricts the
# Host header (server.allowedHosts) behind a reverse proxy.
DEMO_PORT  ?= 8501
DEMO_ADDRESS ?= 0.0.0.0
DEMO_HOSTS ?=
# Importing check files from the browser is off on the shared demo; DEMO_UPLOADS=1 allows it.
# Write a kernel accepts submissions on the demo only when its sandbox works (docs/write-a-kernel.md).
DEMO_UPLOADS ?= 0
# A class: each learner picks a display name (kept by a browser cookie); KERNEL_LAB_TEACHER_TOKEN=... in the
# environment adds the teacher's Class page, opened as /Class?teacher=<the token> (docs/shared-demo.md).
demo: $(VENV)/.runtime $(VENV)/.compiler editor
	KERNEL_LAB_CLASS=1 KERNEL_LAB_UPLOADS=$(DEMO_UPLOADS) KERNEL_LAB_REQUIRE_SANDBOX=1 $(PY) -m streamlit run app.py \
	  --server.address $(DEMO_ADDRESS) --server.port $(DEMO_PORT) --server.headless true \
	  --server.fileWatcherType none --server.runOnSave false \
	  --server.maxUploadSize $(if $(filter 1,$(DEMO_UPLOADS)),5,1) --server.enableStaticServing false \
	  --client.toolbarMode viewer --client.showErrorDetails none \
	  --browser.gatherUsageStats false --runner.fastReruns true \
	  $(foreach host,$(DEMO_HOSTS),--server.allowedHosts $(host))

# Ruff (style, imports, likely bugs) and mypy (gpu, ui, pages) read their settings from pyproject.toml.
lint: $(VENV)/.dev
	$(PY) -m ruff check .
	$(PY) -m mypy

# Three pytest workers (pytest-xdist, a file per worker at a time): most of a test's time is waiting (a browser,
# a sandboxed child, a Streamlit server), so they overlap well on two cores. The main run, side by side on this
# 2-core machine (2,001 tests): three workers 465 s and 493 s, two 525 s and 523 s, the cores busy 97 % against
# 91 % (/proc/stat); four were slower (550 s against 488 s for two). mypy (about 40 s of one core from a fresh
# clone) runs beside them; its report follows theirs and either failing fails the target. Then the class test
# alone: 8 browsers and a demo server.
TEST_WORKERS ?= 3
test: $(VENV)/.dev $(VENV)/.cluster $(VENV)/.compiler chromium bubblewrap editor
	$(PY) -m ruff check .
	@$(PY) -m mypy > $(VENV)/mypy.log 2>&1 & mypy=$$!; \
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m "not classroom"; tests=$$?; \
	wait $$mypy; typed=$$?; echo "mypy:"; cat $(VENV)/mypy.log; test $$tests -eq 0 -a $$typed -eq 0
	$(PY) -m pytest -m classroom tests/test_browser_class.py

# The fast lane for an edit: every test but those that drive a browser, start a server or a child process
# (a sandboxed submission, the compiler's worker, the CLI in a subprocess): those are skipped when they try
# (tests/conftest.py). `make test` stays the whole suite.
FAST_WORKERS ?= 2  # its tests hardly wait: one worker per core
test-fast: $(VENV)/.dev
	KERNEL_LAB_FAST_LANE=1 $(PY) -m pytest -q -n $(FAST_WORKERS) --dist loadfile --no-loadscope-reorder -m "not browser and not classroom and not slow"

# A class at once: 8 browsers press Run together on one demo server (tests/test_browser_class.py; the benchmark
# benchmarks/class_submit.py runs 16);
# part of `make test` too, this runs it alone.
test-class: $(VENV)/.dev $(VENV)/.compiler chromium bubblewrap editor
	$(PY) -m pytest -m classroom tests/test_browser_class.py

info: $(VENV)/.runtime
	$(PY) -m gpu info

# The pictures docs/ shows of Write a kernel and the Kernels and Roofline pages, redrawn by their browser
# tests (a plain `make test` draws them into test-artifacts/docs/ and leaves the checkout untouched).
docs-screenshots: $(VENV)/.dev $(VENV)/.compiler chromium bubblewrap editor
	KERNEL_LAB_UPDATE_DOCS=1 $(PY) -m pytest -q tests/test_browser_write_kernel.py tests/test_browser_code_editor.py \
	  tests/catalog/test_browser_catalog.py

check: $(VENV)/.runtime
	$(PY) -m gpu check --out benchmarks/latest

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip

$(VENV)/.runtime: requirements.txt | $(PY)
	$(PIP) install -r requirements.txt
	$(MAKE) --no-print-directory cuda-wheels
	touch $@

# What the tests need, in one pip run: the runtime, the dev tools, Ray (the cluster tests) and the compiler wheels
# (a fresh clone's setup here: 70-72 s in one run against 85-87 s in four, side by side, pip reading a local cache);
# then the bytecode on both cores (pip compiles on one: 63 s in all against 70 s, side by side), for the sandboxed
# children, which import from a read-only .venv and so could never keep their own. The packages' own test suites
# (a fifth of the source: pandas', numba's, NumPy's) are left out: nothing here imports them, and they took 3-7 s of
# the 16-18 s (the site-packages' sources copied twice to /tmp, `compileall -j 0` with and without `-x`).
# A file a package ships that this Python cannot compile is skipped, as pip skips it. It stands for the other stamps
# too (on a fresh clone; a .venv made before keeps their own rules).
$(VENV)/.dev: requirements.txt requirements-dev.txt requirements-cluster.txt | $(PY)
	$(PIP) install --no-compile -r requirements-dev.txt -r requirements-cluster.txt $(COMPILER_PKGS)
	$(PY) -m compileall -q -j 0 -x 'site-packages/.*/tests/' $(VENV)/lib >/dev/null || true
	$(MAKE) --no-print-directory cuda-wheels
	touch $(VENV)/.runtime $(VENV)/.cluster $(VENV)/.compiler $@

# Cluster mode's optional extra (Ray), docs/cluster.md; the app runs without it.
cluster-deps: $(VENV)/.cluster

$(VENV)/.cluster: requirements-cluster.txt $(VENV)/.runtime
	$(PIP) install -r requirements-cluster.txt
	touch $@

# numba-cuda needs the CUDA toolkit wheels to compile for a real GPU; they are large,
# so only fetch them where an NVIDIA driver exists. Driver 580+ speaks CUDA 13.
# nvidia-ml-py (the pynvml module) reads GPU telemetry through the driver's NVML; it is
# useless without a driver, so it is installed here and not in requirements.txt.
cuda-wheels: | $(PY)
	@if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then \
	  major=$$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n1 | cut -d. -f1); \
	  if [ "$$major" -ge 580 ]; then extra=cu13; else extra=cu12; fi; \
	  echo "NVIDIA driver $$major found: installing numba-cuda[$$extra]"; \
	  $(PIP) install "numba-cuda[$$extra]==0.30.4"; \
	  echo "installing nvidia-ml-py for GPU telemetry (clocks, temperature, power, throttling)"; \
	  $(PIP) install "nvidia-ml-py>=13,<14"; \
	else \
	  echo "No NVIDIA driver: kernels will run in the CUDA simulator (the compiler wheels come from .compiler)."; \
	fi

# The compiler's facts (the Launch config inspector, each Kernels step, Write a kernel, `python -m gpu compile`)
# and the compile gate (tests/test_compile_gate.py) run the real CUDA compiler on every machine, GPU or not,
# so `make run`, `make demo` and `make test` all install it. NVVM comes with numba-cuda's toolkit extra,
# ptxas with the toolkit's nvcc wheel, nvdisasm (SASS listings) with its own wheel (CUDA 13's, which reads
# CUDA 12's cubins too). CUDA 13 wherever no driver constrains the choice (no driver: compiling needs none)
# or the driver speaks it (580+): its NVVM compiles float32 atomics for sm_100/sm_120, CUDA 12.9's does not.
# CUDA 12 only for an older driver, which cannot load CUDA 13's libraries. About 600 MB; on a fresh clone
# here it took 10 s (local wheel cache; minutes from PyPI on a slow link).
compiler-wheels: $(VENV)/.compiler

# The packages, for this machine's driver (read when a recipe uses them, not on every make).
COMPILER_EXTRA = $(shell if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1 && \
  [ "$$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n1 | cut -d. -f1)" -lt 580 ]; \
  then echo cu12; else echo cu13; fi)
COMPILER_PKGS = "numba-cuda[$(COMPILER_EXTRA)]==0.30.4" $(if $(filter cu13,$(COMPILER_EXTRA)),"cuda-toolkit[nvcc]==13.*") \
  "nvidia-cuda-nvdisasm>=13.2,<14"

$(VENV)/.compiler: $(VENV)/.runtime
	@echo 'installing the CUDA compiler wheels, for the compiler facts: '$(COMPILER_PKGS)
	$(PIP) install $(COMPILER_PKGS)
	touch $@

# On a lent GPU machine, in this order (README, "On a real GPU"; the plans and their budgets:
# gpu/report/plan.py, summed by tests/test_verify_plan.py):
# gpu-first-look (at most 180 s): the launch ladder, the reduction and transpose steps, the Scaling sweep
# and its overhead, into benchmarks/<gpu>-<date>-first-look/ (scripts/gpu_first_look.sh);
# gpu-verify (at most 300 s): the GPU-only tests, `gpu compile` for the device's target, `gpu check`
# headline sections first, each within its budget, and the pages, into benchmarks/<gpu>-<date>/ with a
# SUMMARY.md (scripts/gpu_verify.sh).
gpu-first-look:
	bash scripts/gpu_first_look.sh

gpu-verify:
	bash scripts/gpu_verify.sh

# Wheels for a GPU machine that cannot reach a package index: downloaded here into .whl/
# (gitignored), carried with the tree, installed by scripts/gpu_verify.sh. They are built
# for that machine (CPython $(GPU_PYTHON), x86-64 Linux), not this one. numba and NumPy are
# carried at requirements.txt's pins (the H200's numba 0.68.0 and NumPy 2.5 failed the
# preflight); pandas, PyArrow, Pillow and llvmlite are dropped: a GPU image has them (llvmlite 0.50, as numba 0.68 needs), and carrying
# them would pass the 64 MiB a tree may carry to a lent GPU machine (this set: about 48 MB).
GPU_PYTHON ?= 3.12
gpu-wheels: | $(PY)
	rm -rf .whl
	$(PIP) download -d .whl --only-binary=:all: --python-version $(GPU_PYTHON) --implementation cp \
	  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
	  "streamlit>=1.67,<1.68" "altair>=6.3,<7" "platformdirs>=4.0,<5" "cattrs>=26.2,<27" "pytest>=9.0,<10" "pytest-timeout>=2.4,<3" \
	  $$(grep -E '^(numba|numpy)[=<>]' requirements.txt)
	rm -f .whl/pandas-* .whl/pyarrow-* .whl/pillow-* .whl/llvmlite-*
	@du -sh .whl

# Write a kernel's code editor (CodeMirror 6, ui/components/code_editor): its JavaScript bundle is
# built here (npm ci + esbuild, exact versions from package-lock.json), not committed (dist/ is
# git-ignored). Without npm the page falls back to a plain text box.
EDITOR_DIR    := ui/components/code_editor
EDITOR_BUNDLE := $(EDITOR_DIR)/dist/code_editor.js
editor: $(EDITOR_BUNDLE)

$(EDITOR_DIR)/frontend/node_modules/.stamp: $(EDITOR_DIR)/frontend/package.json $(EDITOR_DIR)/frontend/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  echo "npm ci: the code editor's packages"; \
	  cd $(EDITOR_DIR)/frontend && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.stamp; \
	else \
	  echo "npm not found: Write a kernel shows a plain text box (install Node.js 20 and npm for the code editor)"; \
	fi

$(EDITOR_BUNDLE): $(EDITOR_DIR)/frontend/node_modules/.stamp $(wildcard $(EDITOR_DIR)/frontend/src/*.js)
	@if [ -f $(EDITOR_DIR)/frontend/node_modules/.stamp ]; then \
	  cd $(EDITOR_DIR)/frontend && npm run --silent build -- --log-level=warning; \
	fi

# The browser tests drive Debian's chromium (Playwright cannot download browsers here).
chromium:
	@if [ ! -x $(CHROMIUM) ]; then \
	  echo "Installing Debian's chromium for the browser tests"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
	fi

# Write a kernel runs each submission inside bubblewrap (docs/write-a-kernel.md); the hostile-submission
# tests need it. The server needs it too: `make demo` refuses submissions without a working sandbox.
bubblewrap:
	@if [ ! -x /usr/bin/bwrap ] && ! command -v bwrap >/dev/null 2>&1; then \
	  echo "Installing Debian's bubblewrap (the Write-a-kernel sandbox)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq bubblewrap >/dev/null; \
	fi

clean:
	rm -rf $(VENV) .pytest_cache test-artifacts .whl $(EDITOR_DIR)/dist $(EDITOR_DIR)/frontend/node_modules
