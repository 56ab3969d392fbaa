# The two commands a new user needs: `make run` and `make test`.
# Each creates .venv and installs what is missing, then does its job.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
VAULT ?= examples/vault

.PHONY: run test lint typecheck unit bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/vaultpilot index --vault $(VAULT)
	$(BIN)/vaultpilot status --vault $(VAULT)

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python bench/run_index_bench.py --sizes 1000 10000 50000

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
