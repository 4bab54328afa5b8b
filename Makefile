# Riacho: make run | make test | make bench | make dist
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
ARGS ?=
# NOTE: the example notes MCP server (tools that act, docs/tools.md); RUN_CONFIG= runs without it
RUN_CONFIG ?= examples/notes.toml
ARGS_CLUSTER ?=

.PHONY: setup run run-cluster test test-unit test-server-postgres test-server-cluster test-e2e test-e2e-cluster test-e2e-snapshot lint bench bench-cluster dist screenshots clean

$(VENV)/.runtime: requirements.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Riacho needs Python 3.11+")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	@touch $@

$(VENV)/.dev: $(VENV)/.runtime requirements-dev.txt
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-dev.txt
	@touch $@

setup: $(VENV)/.runtime
	$(PY) tools/vendor.py
	$(PY) tools/code_packages.py
	$(PY) tools/appwheel.py
	$(PY) tools/icons.py

run: setup
	$(PY) -m server --host 127.0.0.1 --port $(PORT) $(if $(RUN_CONFIG),--config $(RUN_CONFIG)) $(ARGS)

# Redis and a throwaway PostgreSQL (installed from the distribution when missing), WORKERS
# workers on that database and a round-robin proxy on PORT; ARGS go to every worker.
# ARGS_CLUSTER=--sqlite: the workers share .cache/cluster/riacho.db instead.
WORKERS ?= 2
run-cluster: setup
	$(PY) tools/cluster.py --workers $(WORKERS) --port $(PORT) $(ARGS_CLUSTER) -- $(ARGS)

# NOTE: separate pytest runs: Playwright's sync API keeps an event loop running in the main
# thread, which the asyncio tests of the core and the server cannot share. The server tests run
# on SQLite, then on PostgreSQL, then against two-worker clusters; the end-to-end suite against
# one process with every page a first visit (it boots normally and makes its snapshot), then
# against a cluster (redis + PostgreSQL + 2 workers + the proxy) with every page a second visit
# (booted from the snapshot the first made). The multi-process tests pick their databases
# themselves: they run once.
SERVER_AGAIN := $(PY) -m pytest tests/server --ignore=tests/server/test_workers.py
test: setup $(VENV)/.dev lint
	@echo "test: the boot's JavaScript modules under Node (static/boot/)"
	node --test tests/js/
	$(PY) -m pytest tests/unit tests/server
	@echo "test: the server tests again on PostgreSQL (RIACHO_TEST_DB=postgresql)"
	RIACHO_TEST_DB=postgresql $(SERVER_AGAIN)
	@echo "test: the server tests again against two-worker clusters (RIACHO_TEST_CLUSTER=1)"
	RIACHO_TEST_CLUSTER=1 $(SERVER_AGAIN)
	@CHROMIUM_PATH="$$($(PY) tools/chromium.py)" && export CHROMIUM_PATH && \
	  echo "test: end-to-end with $$CHROMIUM_PATH" && \
	  $(PY) -m pytest tests/e2e && \
	  echo "test: end-to-end again against a cluster, booted from the snapshot (RIACHO_E2E_CLUSTER=1 RIACHO_E2E_SNAPSHOT=1)" && \
	  RIACHO_E2E_CLUSTER=1 RIACHO_E2E_SNAPSHOT=1 $(PY) -m pytest tests/e2e

test-unit: setup $(VENV)/.dev
	node --test tests/js/
	$(PY) -m pytest tests/unit tests/server

# The server tests on a throwaway PostgreSQL (a new database per test) instead of SQLite.
test-server-postgres: setup $(VENV)/.dev
	RIACHO_TEST_DB=postgresql $(SERVER_AGAIN)

# The server tests with every server a cluster: 2 workers on PostgreSQL and a redis-server,
# behind the proxy.
test-server-cluster: setup $(VENV)/.dev
	RIACHO_TEST_CLUSTER=1 $(SERVER_AGAIN)

test-e2e: setup $(VENV)/.dev
	@CHROMIUM_PATH="$$($(PY) tools/chromium.py)" && export CHROMIUM_PATH && $(PY) -m pytest tests/e2e

# The end-to-end suite against redis + PostgreSQL + 2 workers + the proxy (tools/cluster.py).
test-e2e-cluster: setup $(VENV)/.dev
	@CHROMIUM_PATH="$$($(PY) tools/chromium.py)" && export CHROMIUM_PATH && \
	  RIACHO_E2E_CLUSTER=1 $(PY) -m pytest tests/e2e

# The end-to-end suite with every booted page a second visit, restored from the snapshot its
# first visit made (static/interpreter.mjs).
test-e2e-snapshot: setup $(VENV)/.dev
	@CHROMIUM_PATH="$$($(PY) tools/chromium.py)" && export CHROMIUM_PATH && \
	  RIACHO_E2E_SNAPSHOT=1 $(PY) -m pytest tests/e2e

bench: setup $(VENV)/.dev
	$(PY) tools/bench_sse.py
	$(PY) tools/bench/throughput.py
	@CHROMIUM_PATH="$$($(PY) tools/chromium.py)" && export CHROMIUM_PATH && $(PY) tools/bench/browser.py
	@CHROMIUM_PATH="$$($(PY) tools/chromium.py)" && export CHROMIUM_PATH && $(PY) tools/bench/coderun.py

bench-cluster: setup $(VENV)/.dev
	$(PY) tools/bench/cluster.py

screenshots: setup $(VENV)/.dev
	@CHROMIUM_PATH="$$($(PY) tools/chromium.py)" && export CHROMIUM_PATH && $(PY) tools/screenshots.py

dist: setup
	$(PY) tools/dist.py

lint: $(VENV)/.dev
	$(PY) -m ruff check app server tests tools
	$(PY) -m mypy app server

clean:
	rm -rf $(VENV) node_modules static/vendor static/app dist .cache
