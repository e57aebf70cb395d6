# Quick start: `make demo` (set up, run the offline demo) and `make test` (set up, run every check).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test quick lint typecheck pytest bench clean

# Compiled modules are kept (__pycache__, ignored by git) even where the environment says
# otherwise: the suite starts over a hundred Python processes (pytest's workers, the fork
# server, the command-line tests), and each would compile bot/ and tests/ from source again.
unexport PYTHONDONTWRITEBYTECODE

$(STAMP): pyproject.toml sandbox/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]' -e ./sandbox
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/followup-bot demo

# Lint first (it takes a second and fails fast), then mypy beside the tests: from a cold
# .mypy_cache mypy takes ~8 s of one core, which then overlaps the tests' collection.
# --output-sync=line keeps each line whole; either failing fails `make test`.
test: lint
	$(MAKE) --no-print-directory -j2 --output-sync=line typecheck pytest

# Local work: ruff, mypy and the fast tests, without coverage. It skips tests/e2e (the
# bot end to end through the stand-ins), tests/sandbox (the GitHub stand-in itself) and
# tests/cli (followup-bot run as a process): ~75% of the suite's time.
quick: lint typecheck
	$(PYTEST) --ignore=tests/e2e --ignore=tests/sandbox --ignore=tests/cli

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# One worker per core. An idle worker takes queued tests from a busy one (worksteal; the
# default split left one worker running alone for the last ~100 s), and tests/conftest.py
# hands out the longest tests first.
PYTEST := $(BIN)/pytest -q -n auto --dist worksteal

# The pure modules (the editors, the config schema, the ABI audit, the routing model, tag
# versions, the failure classes, the landing rules): every branch is tested, and the gate
# below keeps it so.
PURE := bot/edit/*,bot/config/*,bot/abi/*,bot/routing/*,bot/pins/versions.py,bot/pins/compared.py,bot/retry/classify.py,bot/retry/signature.py,bot/landing/rules.py,bot/main_red/signals.py,bot/main_red/culprit.py,bot/main_red/text.py,bot/images/consumed.py,bot/images/missing.py,bot/images/text.py,bot/images/model.py,bot/registry/reference.py,bot/registry/challenge.py,bot/registry/tokens.py,bot/registry/probe.py,bot/dashboard/red_text.py
# Statement coverage of bot/ and handlers/, rounded down from the measured level. The data
# has branches too (for the pure modules), and coverage's own total then counts them, so
# this gate reads the statements' share from the JSON report.
LINE_GATE := 96

pytest: $(STAMP)
	$(PYTEST) --cov --cov-report=term-missing:skip-covered
	@$(BIN)/coverage json -q -o - | $(BIN)/python -c 'import json, sys; \
		got = json.load(sys.stdin)["totals"]["percent_statements_covered"]; \
		print(f"Statements of bot/ and handlers/ covered: {got:.1f}% (gate $(LINE_GATE)%)"); \
		sys.exit(got < $(LINE_GATE))'
	$(BIN)/coverage report --include='$(PURE)' --fail-under=100

bench: $(STAMP)
	$(BIN)/python bench/bump_latency.py
	$(BIN)/python bench/webhook_intake.py
	$(BIN)/python bench/routing_model.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .coverage .coverage.*

# requirements.lock: the image's runtime dependencies (pyproject.toml's [project] dependencies),
# pinned with hashes for Python 3.11 on Linux, compiled by uv from a throwaway venv. Existing
# pins are kept unless pyproject.toml needs otherwise; LOCK_ARGS=--upgrade moves every one.
.PHONY: lock
lock:
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(PYTHON) -m venv "$$tmp/venv" && "$$tmp/venv/bin/python" -m pip install --quiet uv && \
	"$$tmp/venv/bin/uv" pip compile pyproject.toml --quiet --python-version 3.11 \
		--python-platform linux --generate-hashes --custom-compile-command 'make lock' \
		$(LOCK_ARGS) --output-file requirements.lock
