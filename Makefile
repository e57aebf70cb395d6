# Quick start: `make demo` (set up, run the offline demo) and `make test` (set up, run every check).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest bench clean

$(STAMP): pyproject.toml sandbox/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]' -e ./sandbox
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/followup-bot demo

test: lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest -q -n auto

bench: $(STAMP)
	$(BIN)/python bench/bump_latency.py
	$(BIN)/python bench/webhook_intake.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

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
