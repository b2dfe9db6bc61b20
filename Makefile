# bash, so a pipe fails when its first command does (the install's progress goes through grep)
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
VENV ?= .venv
# the interpreter the venv is made from (make bench-peers VENV=.venv-pgo PYTHON=/usr/bin/python3:
# the benches on another build of CPython, as README: Performance tells)
PYTHON ?= python3
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-runtime

.PHONY: run demo test test-postgres test-cluster check fuzz bench bench-cluster bench-peers bench-asking bench-instructions bench-layers binary image lock clean

# The first install takes a minute or two: each step says what it does, pip names each package.
# Dependencies come from a locked, hashed list; the project itself is installed on top,
# editable, with nothing more. $(1): what the venv is set up for, $(2): what the lock holds,
# $(3): the lock.
define install
	@echo "edge: setting up $(VENV)$(1)"
	@test -x $(PY) || { echo "edge: [1/3] creating the virtual environment $(VENV)"; $(PYTHON) -m venv $(VENV); }
	@echo "edge: [2/3] installing $(2) ($(3), checked by their hashes)"
	@$(PY) -m pip install --progress-bar off --require-hashes --no-deps -r $(3) | { grep --line-buffered -E '^(Collecting|Installing|Successfully)' || true; }
	@echo "edge: [3/3] installing edge itself"
	@$(PY) -m pip install -q --no-deps -e .
endef

# Everything: running, testing and checking (make test, make check ...).
$(STAMP): pyproject.toml requirements/dev.lock
	$(call install, (the first time takes a minute or two),the locked dependencies,requirements/dev.lock)
	@touch $(STAMP) $(RUN_STAMP)
	@echo "edge: installed"

# What running needs and nothing more (make run, make demo): the runtime lock, the container's
# own; the test and development tools come with the first make test or make check.
$(RUN_STAMP): pyproject.toml requirements/runtime.lock
	$(call install, to run the node (the first time takes a minute),what running needs,requirements/runtime.lock)
	@touch $(RUN_STAMP)
	@echo "edge: installed"

# Update the locks after changing pyproject.toml's dependencies (pip-tools, in a venv of its own;
# the machine's pip configuration is left out so the lock names only PyPI's files). The runtime
# lock (the container's) holds the cluster extra: one image runs a node on LMDB or in cluster
# mode, and a node without EDGE_STORE never loads psycopg.
lock:
	test -x build/locktool/bin/pip-compile || (python3 -m venv build/locktool \
	  && PIP_CONFIG_FILE=/dev/null build/locktool/bin/pip install -q 'pip-tools==7.6.2')
	PIP_CONFIG_FILE=/dev/null build/locktool/bin/pip-compile -q --generate-hashes --allow-unsafe \
	  --strip-extras --no-emit-index-url --no-emit-find-links --extra cluster \
	  --output-file requirements/runtime.lock pyproject.toml
	PIP_CONFIG_FILE=/dev/null build/locktool/bin/pip-compile -q --generate-hashes --allow-unsafe \
	  --strip-extras --no-emit-index-url --no-emit-find-links --extra test --extra dev --extra cluster \
	  --output-file requirements/dev.lock pyproject.toml

run: $(RUN_STAMP)
	@echo "edge: serving on http://127.0.0.1:8080 with its data in ./edge-data (Ctrl-C stops)"
	$(VENV)/bin/edge serve --host 127.0.0.1 --port 8080 --data ./edge-data

# The demo keeps its data apart from a real node's: ./edge-demo-data.
demo: $(RUN_STAMP)
	@echo "edge: the demo, with its data in ./edge-demo-data (Ctrl-C stops)"
	$(VENV)/bin/edge serve --demo --host 127.0.0.1 --port 8080 --data ./edge-demo-data

# The suite on worker processes (pytest-xdist), each test file whole on one (its module's
# fixtures made once): most tests wait on nodes, browsers and servers they start, not on a CPU.
# TEST_WORKERS=0 runs it in this one process.
TEST_WORKERS ?= 3
TEST_RUN = $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile

test: $(STAMP)
	$(TEST_RUN)

POSTGRES_SUITE = tests/e2e tests/contract tests/http

# The node-driven tests again, with the node on the PostgreSQL engine in cluster mode (its
# own database and leases): the other engine behind the same interface (docs/cluster.md).
test-postgres: $(STAMP)
	EDGE_TEST_STORE=postgresql $(TEST_RUN) $(POSTGRES_SUITE)

# Cluster mode for real: PostgreSQL, HAProxy and three node processes on loopback, one
# SIGKILLed and one SIGSTOPped under load (tests/cluster; make test runs them too).
test-cluster: $(STAMP)
	$(PY) -m pytest tests/cluster

# The long fuzz runs: schemathesis with 1,000 examples an operation (make test runs 100).
fuzz: $(STAMP)
	EDGE_FUZZ_EXAMPLES=1000 EDGE_FUZZ_RUNS=200 $(PY) -m pytest tests/reference tests/e2e/test_fuzz_contract.py

# Format, lint and types: zero findings (CI runs this before the tests).
check: $(STAMP)
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# Benchmarks (README: Performance); about 17 minutes, loopback only, every run bounded in time.
bench: $(STAMP)
	command -v wrk >/dev/null || (apt-get update && apt-get install -y wrk)
	test -x $(VENV)/bin/py-spy || $(PY) -m pip install -q py-spy || echo "no py-spy: no profiles"
	$(PY) -m bench.run

# Cluster mode's costs (README: Performance, Cluster mode); about 5 minutes, loopback only: one
# node on PostgreSQL against one on LMDB, three nodes against one behind HAProxy, with a
# throwaway PostgreSQL server. It installs Debian's wrk, haproxy and postgresql when missing.
bench-cluster: $(STAMP)
	command -v wrk >/dev/null && test -x /usr/sbin/haproxy && ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 \
	  || (apt-get update && apt-get install -y wrk haproxy postgresql)
	$(PY) -m bench.cluster

# The node against what merchants write instead (README: Performance, Against what merchants
# write instead); about 8 minutes, loopback only: FastAPI on PostgreSQL and on SQLite, and
# Express on PostgreSQL, each with the node's two routes, measured in turn with the node. It
# installs Debian's wrk, postgresql, nodejs and npm when missing; the peers' own packages go
# into bench/results/peers-env (a venv and an npm install), never into the project's locks.
bench-peers: $(STAMP)
	command -v wrk >/dev/null && command -v npm >/dev/null && ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 \
	  || (apt-get update && apt-get install -y wrk postgresql nodejs npm)
	$(PY) -m bench.peers

# What asking providers costs them (README: Performance, Asking the provider); a few minutes:
# 10,000 pending Stripe checkouts with every webhook dropped, the node's requests a second to
# the account against EDGE_SYNC_RATE, and how soon a payment is known without its webhook.
bench-asking: $(STAMP)
	$(PY) -m bench.asking

# What each layer of a webhook's path costs in CPU (README: Performance); about 3 minutes:
# a worktree of the revision answering at each cut point in turn, at peak.
bench-layers: $(STAMP)
	command -v wrk >/dev/null || (apt-get update && apt-get install -y wrk)
	$(PY) -m bench.layers

# The instructions a fresh webhook costs the node, for git revisions (README: Performance;
# REVS="aa11c7b HEAD"), counted by valgrind's callgrind: steady where CPU time on a shared
# machine moves 10 to 20 %; a few minutes. It installs Debian's valgrind when missing.
bench-instructions: $(STAMP)
	command -v valgrind >/dev/null || (apt-get update && apt-get install -y valgrind)
	$(PY) -m bench.instructions $(REVS)

# One executable file, dist/edge, that runs the node with nothing else installed (PyInstaller:
# the interpreter, the packages and edge's own static files in one file).
binary: $(STAMP)
	$(VENV)/bin/pyinstaller --onefile --name edge --collect-data edge --noconfirm \
	  --log-level WARN --distpath dist --workpath build/pyinstaller --specpath build \
	  edge/__main__.py
	dist/edge --version

# The container image (Containerfile), with podman or docker. BASE=... builds from another
# base than the pinned one (.ci/container makes a Debian 12 base locally where no registry is
# reachable, and runs the image's smoke test).
IMAGE ?= edge:latest
ENGINE ?= $(shell command -v podman || command -v docker)
image:
	$(ENGINE) build $(if $(findstring podman,$(ENGINE)),--format docker) \
	  $(if $(BASE),--build-arg BASE=$(BASE)) -t $(IMAGE) .

clean:
	rm -rf $(VENV) edge-data edge-demo-data .pytest_cache build dist
