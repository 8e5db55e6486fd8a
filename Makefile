# referee: the two commands are `make serve` and `make test`.
VENV   ?= .venv
PYTHON ?= python3
PY     := $(VENV)/bin/python
HOST   ?= 127.0.0.1
PORT   ?= 8000
STAMP  := $(VENV)/.installed

.PHONY: install serve test test-long prepare lint typecheck unit bench clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import ensurepip, venv' 2>/dev/null || { echo "make: $(PYTHON) has no venv module: apt-get install python3-venv" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]' --config-settings editable_mode=strict
	touch $(STAMP)

install: $(STAMP)

## serve: create .venv, install, start the API (embedded: no Redis, no GPU) on $(HOST):$(PORT)
serve: $(STAMP)
	$(VENV)/bin/referee serve --host $(HOST) --port $(PORT)

## test: prepare the machine (tests/prepare.sh), lint, type-check, then the whole test suite
test: prepare lint typecheck
	$(PY) -m pytest

## test-long: the long peer runs the default suite leaves out (marker `long`: veRL's and NeMo
## Gym's own environments end to end, the schemathesis budget); CI runs them after `make test`
test-long: prepare
	$(PY) -m pytest -m long

## prepare: what the tests need besides .venv (as root: packages, dockerd, the sandbox image)
prepare: $(STAMP)
	bash tests/prepare.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy verifiers sandbox services client genrm trainer_adapter

unit: $(STAMP)
	$(PY) -m pytest tests/unit

## bench: the benchmarks (reports go to bench/out/; docs/benchmarks.md quotes them)
bench: $(STAMP)
	$(PY) -m bench.math
	$(PY) -m bench.sandbox
	$(PY) -m bench.judge
	$(PY) -m bench.environments
	$(PY) -m bench.trainer
	$(PY) -m bench.verifiers
	$(PY) -m bench.verifiers_exec
	$(PY) -m bench.sessions

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache
