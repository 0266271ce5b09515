# Two commands a newcomer needs (see README): `make demo` and `make test`.
# Each one installs what it needs into .venv first; a second run reuses it.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint typecheck clean-venv

$(STAMP): pyproject.toml scripts/setup.sh
	PY=$(PY) VENV=$(VENV) bash scripts/setup.sh
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m workbench.run experiment=demo

test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy  # files and settings: [tool.mypy] in pyproject.toml

clean-venv:
	rm -rf $(VENV)
