# One entry point for people and CI. Every target installs what it needs first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint typecheck unit bench clean

# The virtualenv, rebuilt whenever pyproject.toml changes.
$(STAMP): pyproject.toml
	./scripts/bootstrap
	@touch $@

## run: play a game of Mexican Train in the terminal against bots
run: $(STAMP)
	$(BIN)/railyard play

## test: everything CI checks (lint, format, types, the whole test suite)
test: lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy --strict engine service

unit: $(STAMP)
	./scripts/install-redis
	$(BIN)/pytest -n 2 --doctest-modules engine tests

## bench: the engine benchmark (ratios against a baseline measured in the same run)
bench: $(STAMP)
	$(BIN)/python bench/engine.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis
