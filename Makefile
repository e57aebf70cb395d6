# Quick start: `make demo` (set up, run the offline demo) and `make test` (set up, run every check).
# The suite's Python is 3.12 (.python-version, which pyenv follows): there coverage measures
# statements through sys.monitoring at next to no cost, where 3.11's tracer made the suite's
# CPU half as much again. Any python3 from 3.11 on works (`make test PYTHON=python3.11`).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# The image's targets (deploy/image.mk), where that file is present. Plain `make` stays
# what it was before (setting up .venv), whatever that file's first target.
.DEFAULT_GOAL := $(STAMP)
-include deploy/image.mk

.PHONY: demo test test-steps quick quick-steps lint typecheck pytest pytest-pure pytest-rest \
	bench clean

# Compiled modules are kept (__pycache__, ignored by git) even where the environment says
# otherwise: the suite starts over a hundred Python processes (pytest's workers, the fork
# server, the command-line tests), and each would compile bot/ and tests/ from source again.
unexport PYTHONDONTWRITEBYTECODE

$(STAMP): pyproject.toml sandbox/pyproject.toml .python-version
	$(PYTHON) -m venv --clear $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]' -e ./sandbox
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/followup-bot demo

# The set-up first, before anything else runs (tools/test_setup.sh): the system packages
# the tests need (installed with apt-get as root; otherwise it names the command and stops),
# the pinned octokit npm packages, and a PostgreSQL server for the run, stopped when it ends.
SETUP = PYTHON='$(PYTHON)' TEST_TMPDIR='$(TEST_TMPDIR)' bash tools/test_setup.sh
test:
	$(SETUP) $(MAKE) --no-print-directory test-steps

# Lint first (it takes a second and fails fast), then mypy beside the tests: from a cold
# .mypy_cache mypy takes ~8 s of one core, which then overlaps the tests' collection.
# --output-sync=line keeps each line whole; either failing fails `make test`.
# As root (CI, a fresh machine) the container image is built and run beside them
# (deploy/image.mk); it needs root for podman and apt-get, so a user's run says it is left out.
IMAGE_STEP := $(if $(filter 0,$(shell id -u)),image,image-needs-root)
test-steps: lint
	$(MAKE) --no-print-directory -j3 --output-sync=line typecheck pytest $(IMAGE_STEP)

.PHONY: image-needs-root
image-needs-root:
	@echo "the container image check (make image) needs root: not run"

# Local work: ruff, mypy and the fast tests, without coverage. It skips tests/e2e (the
# bot end to end through the stand-ins), tests/sandbox (the GitHub stand-in itself) and
# tests/cli (followup-bot run as a process): ~75% of the suite's time.
quick:
	$(SETUP) $(MAKE) --no-print-directory quick-steps

quick-steps: lint typecheck
	$(PYTEST) --ignore=tests/e2e --ignore=tests/sandbox --ignore=tests/cli

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# The tests' temporary files (git repositories, databases: ~100k files a run) go to a RAM
# file system where there is one: on disk, making and removing them was half the suite's
# system time (tools/ram_tmpdir.py). `make test TEST_TMPDIR=` leaves TMPDIR as it is.
TEST_TMPDIR ?= $(shell $(PYTHON) tools/ram_tmpdir.py)
PYTEST_ONE = $(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR) )$(BIN)/pytest -q
# One worker per core. An idle worker takes queued tests from a busy one (worksteal; the
# default split left one worker running alone for the last ~100 s), and tests/conftest.py
# hands out the longest tests first.
PYTEST = $(PYTEST_ONE) -n auto --dist worksteal

# The pure modules (the editors, the config schema, the ABI audit, the routing model, tag
# versions, the failure classes, the landing rules): every branch is taken by their own
# example tests (marked branch_gate by tests/conftest.py), and the gate below keeps it so.
# A module that moves must be renamed here too: one left behind silently stops being
# measured (tests/core/test_layers.py checks that every entry names files that exist).
PURE := bot/edit/*,bot/config/*,bot/abi/*,bot/routing/*,bot/pins/versions.py,bot/pins/compared.py,bot/pins/decision.py,bot/pins/selection.py,bot/failures/classify.py,bot/failures/signature.py,bot/landing/rules.py,bot/main_red/signals.py,bot/main_red/culprit.py,bot/main_red/text.py,bot/images/consumed.py,bot/images/missing.py,bot/images/text.py,bot/images/model.py,bot/registry/reference.py,bot/registry/challenge.py,bot/registry/tokens.py,bot/registry/probe.py,bot/dashboard/red_text.py,bot/main_red/lanes.py,bot/main_red/images_text.py,bot/routing_check/trigger.py
# Statement coverage of bot/ and handlers/, rounded down from the measured level.
LINE_GATE := 96

# Two parts side by side. The pure modules' example tests are measured with branches,
# which needs coverage's C tracer before Python 3.14 (it slows all code down ~1.5x); every
# other test with statements only, through sys.monitoring (COVERAGE_CORE=sysmon, Python
# 3.12+; on 3.11 coverage says so and uses the tracer). The pure part runs in one process:
# its ~18 s of CPU took 28 s across two workers (their start, collection and messages),
# and it ends long before the rest part, which has the workers.
# coverage cannot combine the two kinds of data: tools/coverage_lines.py merges their lines
# for the statement gate.
# The branch gate is checked as soon as the pure part ends, while the rest part still runs.
pytest: pytest-pure pytest-rest
	$(BIN)/python tools/coverage_lines.py .coverage.lines .coverage.pure .coverage.rest
	$(BIN)/coverage report --data-file=.coverage.lines --fail-under=$(LINE_GATE)

pytest-pure: $(STAMP)
	COVERAGE_FILE=.coverage.pure $(PYTEST_ONE) -m branch_gate --cov --cov-branch --cov-report=
	$(BIN)/coverage report --data-file=.coverage.pure --include='$(PURE)' \
		--fail-under=100

pytest-rest: $(STAMP)
	COVERAGE_FILE=.coverage.rest COVERAGE_CORE=sysmon $(PYTEST) -m 'not branch_gate' \
		--cov --cov-report=

bench: $(STAMP)
	$(BIN)/python bench/bump_latency.py
	$(BIN)/python bench/webhook_intake.py
	$(BIN)/python bench/routing_model.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .coverage .coverage.*

# requirements.lock: the image's runtime dependencies (pyproject.toml's [project] dependencies),
# pinned with hashes for the image's Python (3.11, Debian bookworm's) on Linux, compiled by uv from a throwaway
# venv. Existing pins are kept unless pyproject.toml needs otherwise; LOCK_ARGS=--upgrade
# moves every one.
.PHONY: lock
lock:
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(PYTHON) -m venv "$$tmp/venv" && "$$tmp/venv/bin/python" -m pip install --quiet uv && \
	"$$tmp/venv/bin/uv" pip compile pyproject.toml --quiet --python-version 3.11 \
		--python-platform linux --generate-hashes --custom-compile-command 'make lock' \
		$(LOCK_ARGS) --output-file requirements.lock

# The status page's screenshots in docs/status/ (docs/status.md), taken by its browser tests
# in headless Chromium; a normal test run writes none.
.PHONY: screenshots
screenshots: $(STAMP)
	FOLLOWUP_BOT_SCREENSHOTS=docs/status $(PYTEST_ONE) -p no:cacheprovider tests/status/test_browser.py
