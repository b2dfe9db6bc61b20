VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/edge serve --host 127.0.0.1 --port 8080 --data ./edge-data

test: $(STAMP)
	$(PY) -m pytest

clean:
	rm -rf $(VENV) edge-data .pytest_cache
