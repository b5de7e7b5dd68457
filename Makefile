# Two commands for a newcomer: `make demo` and `make test`. Both create the
# virtual environment on first use (torch pinned through constraints.txt).
VENV ?= .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: demo test lint env clean

$(VENV)/.installed: pyproject.toml constraints.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e ".[dev]"
	touch $@

env: $(VENV)/.installed

demo: env
	$(VENV)/bin/ctxsent demo

test: env
	$(PY) -m pytest -n auto --dist loadfile

lint: env
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/lint-imports

clean:
	rm -rf $(VENV) .pytest_cache
