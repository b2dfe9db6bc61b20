VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test check fuzz bench binary clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,dev]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/edge serve --host 127.0.0.1 --port 8080 --data ./edge-data

test: $(STAMP)
	$(PY) -m pytest

# The long fuzz runs: schemathesis with 1,000 examples an operation (make test runs 300).
fuzz: $(STAMP)
	EDGE_FUZZ_EXAMPLES=1000 EDGE_FUZZ_RUNS=200 $(PY) -m pytest tests/reference tests/e2e/test_fuzz_contract.py

# Format, lint and types: zero findings (CI runs this before the tests).
check: $(STAMP)
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# Benchmarks (README: Performance); about 6 minutes, loopback only, every run bounded in time.
bench: $(STAMP)
	command -v wrk >/dev/null || (apt-get update && apt-get install -y wrk)
	test -x $(VENV)/bin/py-spy || $(PY) -m pip install -q py-spy || echo "no py-spy: no profiles"
	$(PY) -m bench.run

# One executable file, dist/edge, that runs the node with nothing else installed (PyInstaller:
# the interpreter, the packages and edge's own static files in one file).
binary: $(STAMP)
	$(PY) -m pip install -q 'pyinstaller==6.22.3'
	$(VENV)/bin/pyinstaller --onefile --name edge --collect-data edge --noconfirm \
	  --log-level WARN --distpath dist --workpath build/pyinstaller --specpath build \
	  edge/__main__.py
	dist/edge --version

clean:
	rm -rf $(VENV) edge-data .pytest_cache build dist
