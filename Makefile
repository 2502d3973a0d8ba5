# Two commands for a fresh machine with Python 3.11: `make repro` (the main job) and `make test` (everything CI checks).
# Both create or refresh the project's virtual environment in .venv/ (re-installed when settings.ini or setup.py change).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat settings.ini setup.py | sha256sum | cut -c1-16)
BATCH  ?= cpu
# zoo models trained at once on the CPU, each with the cores divided among them
# (invariances-repro --train-workers; on 2 cores two one-thread trainings beat the same two in turn:
# bench/bench_train_pool.py); one at a time for the gpu batch, whose models each take the whole accelerator
TRAIN_WORKERS ?= $(if $(filter gpu,$(BATCH)),1,2)
# the notebooks, as many at once, each in a process of its own (invariances-repro --run-workers; eight runs of
# the smoke batch finished 1.66x sooner two at once, six of the cpu batch 1.43x: bench/bench_run_pool.py); one at a
# time for the gpu batch. As many as TRAIN_WORKERS: one pool for both, each notebook starting once its models are trained
RUN_WORKERS ?= $(if $(filter gpu,$(BATCH)),1,2)
export MPLBACKEND := Agg
# passive OpenMP waiting: spinning threads make torch many times slower on a loaded CPU (nbs/32_runtime.ipynb; the
# batch runner gives its kernels the same, with huge pages for PyTorch: invariances.runtime.process_env)
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: venv test repro bench readme sync clean-runs docs notebooks

venv: $(STAMP)

$(STAMP):
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] >= (3, 11), f"Python 3.11+ needed, found {sys.version.split()[0]} at {sys.executable}"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# OpenCV's plain build and its contrib build (region proposals: cv2.ximgproc) both install cv2: only contrib may stay
	$(BIN)/python -m pip uninstall --quiet --yes opencv-python-headless opencv-python 2>/dev/null || true
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	# test-only: the ImageNet-C authors' packaged corruptions, the reference tests/test_corruptions.py checks ours against;
	# without its declared opencv-python (a GUI build that needs libGL): the library's opencv-contrib-python-headless provides cv2
	$(BIN)/python -m pip install --quiet --no-deps imagecorruptions==1.1.2
	rm -f $(VENV)/.installed-*
	touch $@

# The test command (CI runs exactly this): nbdev's CI checks, the import layers (pyproject.toml), the notebooks' own tests, pytest, the smoke batch.
# nbdev_test skips nbs/experiments/: the smoke batch executes every experiment notebook, through the runner, at the same
# smoke setting (tests/test_repro.py checks that it names each one), and running them twice cost about 15 minutes of CI.
# Real-data tests run when INVARIANCES_DATA names the data root (.ci/run sets it to ../shared/data when present); -rs prints why each skipped test skipped.
test: venv
	$(BIN)/python -m pytest -q tests/test_sync.py
	$(BIN)/lint-imports --no-cache
	$(BIN)/nbdev_test --flags slow --skip_folder_re '^([_.]|experiments$$)'
	$(BIN)/python -m pytest -q -rs tests
	$(BIN)/invariances-repro smoke

# The main job: the `cpu` batch on the embedded synthetic data (BATCH=real for real data under $$INVARIANCES_DATA).
repro: venv
	$(BIN)/invariances-repro $(BATCH) --train-workers $(TRAIN_WORKERS) --run-workers $(RUN_WORKERS) --report repro/$(if $(filter cpu,$(BATCH)),REPORT.md,REPORT-$(BATCH).md)

bench: venv
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

readme: venv
	$(BIN)/python -c "from invariances.report import update_rebuild_table; update_rebuild_table()"
	$(BIN)/python -c "from invariances.cli import write_docs; write_docs()"

# Regenerate the library and clean the notebooks after editing them.
sync: venv
	$(BIN)/nbdev_export && $(BIN)/nbdev_clean && $(MAKE) readme

# The docs site in _site/ (open _site/index.html): the report, README, architecture, API and the notebooks as stored,
# the experiments as the last `cpu` batch ran them (RUNS=dir for another run folder). Sphinx + myst-nb, offline.
docs: venv
	$(BIN)/python docs/build.py $(if $(RUNS),--runs $(RUNS))

# Execute the library notebooks in place, keeping outputs and figures (NB="nbs/22_display.ipynb ..." for some).
notebooks: venv
	$(BIN)/python docs/notebooks.py $(NB)
